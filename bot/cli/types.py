"""argparse value types for the command line: paths made absolute at once, numbers checked against a range.

A bad value raises argparse.ArgumentTypeError, so argparse reports it as a usage error (exit 2) that names
the option and the allowed range.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

#: Trajectories per job: the same bounds as the policy key `agent.trajectories` and the `/fix` command.
MAX_TRAJECTORIES = 32


def absolute_path(value: str) -> Path:
    """A path argument made absolute against the current directory now, before anything changes directory."""
    if not value or "\x00" in value:
        raise argparse.ArgumentTypeError(f"not a usable path: {value!r}")
    return Path(os.path.abspath(os.path.expanduser(value)))


def output_dir(value: str) -> Path:
    """An output folder argument: absolute, and not an existing file (found now, not after a long run)."""
    path = absolute_path(value)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a folder")
    return path


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` inclusive."""

    def parse(value: str) -> int:
        try:
            number = int(value.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, not {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {number}")
        return number

    parse.__name__ = f"whole number {low}..{high}"
    return parse


def float_range(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` to `high` inclusive."""

    def parse(value: str) -> float:
        try:
            number = float(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number from {low:g} to {high:g}, not {value!r}") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, not {value}")
        return number

    parse.__name__ = f"number {low:g}..{high:g}"
    return parse


def k_list(value: str) -> str:
    """`--k`: comma-separated whole numbers from 1 to MAX_TRAJECTORIES, or M (the trajectory count)."""
    items = [item.strip() for item in value.split(",")]
    check = int_range(1, MAX_TRAJECTORIES)
    for item in items:
        if item != "M":
            try:
                check(item)
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"each k {exc} (or M), in {value!r}") from None
    return ",".join(items)

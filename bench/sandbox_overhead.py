"""Benchmark: per-command sandbox overhead for `python3 -c pass`, warm and cold, as ratios to a bare subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the repository importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandboxes.base import Sandbox, SandboxSpec
from sandboxes.bwrap import BwrapSandbox
from sandboxes.factory import available_backends
from sandboxes.none import NoneSandbox

PYTHON = "/usr/bin/python3"  # the interpreter both sides run, so only the wrapping differs


async def _bare() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(PYTHON, "-c", "pass")
    await proc.wait()
    return time.perf_counter() - started


async def _sandboxed(sandbox: Sandbox) -> float:
    started = time.perf_counter()
    res = await sandbox.run([PYTHON, "-c", "pass"], timeout=60)
    if not res.ok:
        raise RuntimeError(f"sandboxed run failed: {res.output}")
    return time.perf_counter() - started


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


async def _measure(n: int, docker: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="reprobot-bench-") as tmp:
        ws = Path(tmp)
        async with contextlib.AsyncExitStack() as stack:
            sides: dict[str, Sandbox] = {}
            for name, cls, mode in (
                ("bwrap_cold", BwrapSandbox, "cold"),
                ("bwrap_warm", BwrapSandbox, "warm"),
                ("none_cold", NoneSandbox, "cold"),
                ("none_warm", NoneSandbox, "warm"),
            ):
                sides[name] = await stack.enter_async_context(cls(SandboxSpec(workspace=ws, session=mode)))
            if docker:
                from sandboxes.docker import DockerSandbox

                sides["docker_warm"] = await stack.enter_async_context(DockerSandbox(SandboxSpec(workspace=ws)))
            for _ in range(3):  # warm caches (and start the sessions) so the first samples do not dominate
                await _bare()
                for sb in sides.values():
                    await _sandboxed(sb)
            samples: dict[str, list[float]] = {"bare": [], **{name: [] for name in sides}}
            # Interleaved, so drift in machine load hits every side alike.
            for _ in range(n):
                samples["bare"].append(await _bare())
                for name, sb in sides.items():
                    samples[name].append(await _sandboxed(sb))
    med = {name: _ms(values) for name, values in samples.items()}
    bare = med["bare"]
    result: dict[str, object] = {"n": n, "command": f"{PYTHON} -c pass"}
    for name, value in med.items():
        result[f"{name}_median_ms"] = value
    for name in sides:
        result[f"{name}_ratio"] = round(med[name] / bare, 2)
        result[f"{name}_overhead_ms"] = round(med[name] - bare, 2)
    # Kept for readers of the old output: the sandbox as jobs run it, and its ratio.
    result["bwrap_median_ms"] = med["bwrap_warm"]
    result["none_backend_median_ms"] = med["none_warm"]
    result["ratio"] = result["bwrap_warm_ratio"]
    acceptance = {
        "bwrap_warm_le_1.5x_bare": med["bwrap_warm"] <= 1.5 * bare,
        "none_warm_le_1.2x_bare": med["none_warm"] <= 1.2 * bare,
    }
    if "docker_warm" in med:
        acceptance["docker_warm_le_bare_plus_30ms"] = med["docker_warm"] <= bare + 30
    result["acceptance"] = acceptance
    return result


def measure(n: int = 50) -> dict[str, object]:
    """Median wall time of `python3 -c pass` bare and through each backend, warm and cold, side by side.

    The sandbox timings include everything run() does per command (capped output pipes, timeout, the
    cgroup, rlimits, the namespace for a cold bwrap, the exec agent's fork for a warm session). Docker's
    warm exec is measured when docker is usable here. Needs bwrap; raises RuntimeError when it is unavailable.
    """
    if n < 1:
        raise ValueError("n must be positive")
    backends = available_backends()
    if backends["bwrap"] is not None:
        raise RuntimeError(f"bwrap unavailable: {backends['bwrap']}")
    return asyncio.run(_measure(n, backends["docker"] is None))


def main() -> None:
    """Print the measurement as JSON."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(json.dumps(measure(max(n, 50)), indent=2))


if __name__ == "__main__":
    main()

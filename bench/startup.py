"""Start-up: `reprobot --help`, and `reprobot serve` until it answers /healthz, before and after, in one run.

Each is measured as a ratio to `python -c pass` (the interpreter's own start), in the same rounds on the same
machine: every round runs the baseline, the `before` tree and the `after` tree, in an order that rotates, and
the medians are compared. `before` is the code of a commit (BASE, default 0bc5a54, before the CLI's imports
were made lazy), exported with `git archive` into a temporary folder; `after` is this checkout, copied beside
it. Both run with this interpreter and its installed dependencies, the tree on PYTHONPATH, from a folder outside
the checkout.

    python bench/startup.py [--base COMMIT] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "0bc5a54"
PACKAGES = ("bot", "handlers", "agents", "sandboxes", "patch_selectors")


def export(commit: str, into: Path) -> Path:
    """The packages as they were at `commit`, read with `git archive` (the repository is not written to)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, *PACKAGES], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def env_for(tree: Path | None, data_dir: Path) -> dict[str, str]:
    """This environment without reprobot settings, with `tree` first on the import path."""
    # Bytecode may be written and read: both trees are compiled first (`compile_tree`), as an install is.
    drop = ("REPROBOT_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["REPROBOT_DATA_DIR"] = str(data_dir)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def copy_checkout(into: Path) -> Path:
    """This checkout's packages as they are now, copied beside `before` (the same file system for both)."""
    import shutil

    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def compile_tree(tree: Path) -> None:
    """Byte-compile the packages, as pip does on install: neither side pays for compiling in the rounds."""
    folders = [str(tree / p) for p in PACKAGES]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, stdout=subprocess.DEVNULL)


def timed_run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one process, start to exit."""
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_to_healthz(tree: Path, scratch: Path) -> float:
    """Seconds from starting `reprobot serve` (a fresh data dir) to its first 200 on /healthz."""
    data = Path(tempfile.mkdtemp(dir=scratch))
    port = free_port()
    url = f"http://127.0.0.1:{port}/healthz"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", "--port", str(port)],
        env=env_for(tree, data),
        cwd=scratch,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"reprobot serve ({tree}) exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - started
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.005)
    finally:
        proc.terminate()
        proc.wait(30)


def measure(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median seconds of each case over `rounds` rounds, the order rotating each round."""
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(cases[name]())
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    """Print both start-ups before and after, in seconds and as ratios to `python -c pass`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help=f"the `before` commit (default {BASE})")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reprobot-bench-startup-") as tmp:
        scratch = Path(tmp)
        before, after = export(args.base, scratch / "before"), copy_checkout(scratch / "after")
        for tree in (before, after):
            compile_tree(tree)
        env_b, env_a, env_0 = (env_for(t, scratch / "data") for t in (before, after, None))
        python = [sys.executable]
        help_times = measure(
            {
                "python -c pass": lambda: timed_run([*python, "-c", "pass"], env_0, scratch),
                "before --help": lambda: timed_run([*python, "-m", "bot.cli", "--help"], env_b, scratch),
                "after --help": lambda: timed_run([*python, "-m", "bot.cli", "--help"], env_a, scratch),
            },
            args.rounds,
        )
        serve_times = measure(
            {
                "python -c pass": lambda: timed_run([*python, "-c", "pass"], env_0, scratch),
                "before serve": lambda: time_to_healthz(before, scratch),
                "after serve": lambda: time_to_healthz(after, scratch),
            },
            max(3, args.rounds // 2),
        )
    print(f"start-up, median of rounds; before = {args.base}, after = this checkout ({sys.executable})")
    for label, times, b, a in (
        ("reprobot --help", help_times, "before --help", "after --help"),
        ("serve → /healthz", serve_times, "before serve", "after serve"),
    ):
        base = times["python -c pass"]
        print(
            f"  {label:<17} before {times[b] * 1000:7.0f} ms ({times[b] / base:5.1f}x python -c pass)   "
            f"after {times[a] * 1000:7.0f} ms ({times[a] / base:5.1f}x)   after/before {times[a] / times[b]:.2f}"
        )
    print(f"  python -c pass    {help_times['python -c pass'] * 1000:7.0f} ms")


if __name__ == "__main__":
    main()

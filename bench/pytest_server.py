"""Benchmark, side by side in one run: a tiny pytest run in a warm bwrap session, ordinary vs the pytest server.

Both sides are the same TestSuite.run (JUnit XML report written and parsed) of one small test file in one
sandbox with the project's real environment (pytest, pytest-timeout, coverage); only the spec's
pytest_server setting differs, so the difference is the interpreter start and pytest import per run.
"""

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

from sandboxes.base import Limits, Sandbox, SandboxSpec
from sandboxes.bwrap import BwrapSandbox
from sandboxes.environment import BuiltEnvironment, prepare_environment
from sandboxes.factory import available_backends
from sandboxes.testrun import TestSuite

PYTHON = Path("/usr/bin/python3")
PROJECT = {
    "setup.py": "from setuptools import setup\nsetup(name='tiny', version='0.1', py_modules=['tiny'])\n",
    "tiny.py": "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
    "tests/test_tiny.py": (
        "import tiny\n\n\ndef test_gcd():\n    assert tiny.gcd(12, 18) == 6\n\n\n"
        "def test_zero():\n    assert tiny.gcd(5, 0) == 5\n"
    ),
}


async def _one(runner: TestSuite, sandbox: Sandbox) -> float:
    started = time.perf_counter()
    run = await runner.run(sandbox, ["tests/test_tiny.py"])
    if not run.all_passed:
        raise RuntimeError(f"the tiny run failed: {run.result.output[-2000:]}")
    return time.perf_counter() - started


async def _measure(n: int, work: Path) -> dict[str, object]:
    env: BuiltEnvironment | None = None
    sides: dict[str, tuple[TestSuite, Sandbox]] = {}
    async with contextlib.AsyncExitStack() as stack:
        for name, server in (("ordinary", False), ("server", True)):
            ws = work / name
            ws.mkdir()
            for rel, text in PROJECT.items():
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_text(text)
            if env is None:
                env = await prepare_environment(ws, work / "cache", python=PYTHON)
            spec = SandboxSpec(
                workspace=ws, mounts=env.mounts, limits=Limits(wall_seconds=120), session="warm", pytest_server=server
            )
            sb = await stack.enter_async_context(BwrapSandbox(spec))
            sides[name] = (TestSuite(env, timeout=120), sb)
        for _ in range(3):  # start the sessions (and the server) so the first samples do not dominate
            for runner, sb in sides.values():
                await _one(runner, sb)
        samples: dict[str, list[float]] = {name: [] for name in sides}
        # Interleaved, so drift in machine load hits both sides alike.
        for _ in range(n):
            for name, (runner, sb) in sides.items():
                samples[name].append(await _one(runner, sb))
    med = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "n": n,
        "run": "TestSuite.run of a 2-test file, JUnit XML parsed, warm bwrap session",
        "ordinary_median_s": round(med["ordinary"], 4),
        "server_median_s": round(med["server"], 4),
        "speedup": round(med["ordinary"] / max(med["server"], 1e-9), 2),
    }


def measure(n: int = 20) -> dict[str, object]:
    """Median seconds of a tiny pytest run, ordinary vs through the pytest server; needs bwrap."""
    if n < 1:
        raise ValueError("n must be positive")
    problem = available_backends()["bwrap"]
    if problem is not None:
        raise RuntimeError(f"bwrap unavailable: {problem}")
    with tempfile.TemporaryDirectory(prefix="reprobot-bench-") as tmp:
        return asyncio.run(_measure(n, Path(tmp)))


def main() -> None:
    """Print the measurement as JSON."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(json.dumps(measure(max(n, 5)), indent=2))


if __name__ == "__main__":
    main()

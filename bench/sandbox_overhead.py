"""Benchmark: bwrap sandbox start-up overhead for `python3 -c pass`, as a ratio to a bare subprocess."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the repository importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandboxes.base import SandboxSpec
from sandboxes.bwrap import BwrapSandbox
from sandboxes.factory import available_backends
from sandboxes.none import NoneSandbox

PYTHON = "/usr/bin/python3"  # the interpreter both sides run, so only the wrapping differs


async def _bare() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(PYTHON, "-c", "pass")
    await proc.wait()
    return time.perf_counter() - started


async def _sandboxed(sandbox: BwrapSandbox | NoneSandbox) -> float:
    started = time.perf_counter()
    res = await sandbox.run([PYTHON, "-c", "pass"], timeout=60)
    if not res.ok:
        raise RuntimeError(f"sandboxed run failed: {res.output}")
    return time.perf_counter() - started


async def _measure(n: int) -> dict[str, float | int | str]:
    with tempfile.TemporaryDirectory(prefix="reprobot-bench-") as tmp:
        spec = SandboxSpec(workspace=Path(tmp))
        async with BwrapSandbox(spec) as bwrap, NoneSandbox(spec) as none:
            for _ in range(3):  # warm caches so the first samples do not dominate
                await _bare()
                await _sandboxed(bwrap)
            bare: list[float] = []
            boxed: list[float] = []
            runner: list[float] = []
            # Interleaved, so drift in machine load hits all three alike.
            for _ in range(n):
                bare.append(await _bare())
                boxed.append(await _sandboxed(bwrap))
                runner.append(await _sandboxed(none))
    bare_ms = statistics.median(bare) * 1000
    bwrap_ms = statistics.median(boxed) * 1000
    none_ms = statistics.median(runner) * 1000
    return {
        "n": n,
        "command": f"{PYTHON} -c pass",
        "bare_median_ms": round(bare_ms, 2),
        "bwrap_median_ms": round(bwrap_ms, 2),
        "none_backend_median_ms": round(none_ms, 2),
        "bwrap_overhead_ms": round(bwrap_ms - bare_ms, 2),
        "ratio": round(bwrap_ms / bare_ms, 2),
    }


def measure(n: int = 50) -> dict[str, float | int | str]:
    """Median wall time of `python3 -c pass` bare, via BwrapSandbox and via NoneSandbox, and the ratio.

    The sandbox timings include everything run() does per command (cgroup set-up and removal,
    rlimits, capped output pipes). Needs bwrap; raises RuntimeError when it is unavailable.
    """
    if n < 1:
        raise ValueError("n must be positive")
    problem = available_backends()["bwrap"]
    if problem is not None:
        raise RuntimeError(f"bwrap unavailable: {problem}")
    return asyncio.run(_measure(n))


def main() -> None:
    """Print the measurement as JSON."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(json.dumps(measure(max(n, 50)), indent=2))


if __name__ == "__main__":
    main()

"""Run a trusted host-side tool (venv, pip, cargo vendor, fetch steps) with a wall timeout; never repo code."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HostRun:
    """How one host command ended; `stdout` holds stderr too when it was merged."""

    code: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False


async def run_host(
    argv: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = True,
) -> HostRun:
    """Run argv in its own session; past `timeout` the whole process group is killed (code -1, timed_out)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=None if env is None else dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        # A tool's children (pip's build backends, cargo's fetchers) must not outlive it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return HostRun(-1, f"timed out after {timeout:.0f}s", timed_out=True)
    code = proc.returncode if proc.returncode is not None else -1
    return HostRun(code, out.decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace"))

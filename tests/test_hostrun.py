"""Host-side tool runs: output, exit codes, and a timeout that takes the whole process group down."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandboxes.hostrun import run_host


async def test_output_and_exit_code(tmp_path: Path) -> None:
    run = await run_host(["sh", "-c", "pwd; echo err >&2; exit 3"], timeout=30, cwd=tmp_path)
    assert run.code == 3 and not run.timed_out
    assert run.stdout.split() == [str(tmp_path), "err"]
    split = await run_host(["sh", "-c", "echo out; echo err >&2"], timeout=30, merge_stderr=False)
    assert (split.stdout, split.stderr) == ("out\n", "err\n")


async def test_timeout_kills_the_tools_children_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    run = await run_host(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], timeout=1)
    assert run.timed_out and run.code == -1 and "timed out" in run.stdout
    assert time.monotonic() - started < 30
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the background child outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purpose (and may be reaped while we look).
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False

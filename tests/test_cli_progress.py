"""The progress of `reprobot fix|reproduce` on stderr: a line per stage as it happens, plain when piped, no
source location on a terminal, and an elapsed time that moves while a stage runs."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from bot.cli.progress import StageProgress
from tests.test_cli import ISSUE, REPROBOT, calc_repo


class Clock:
    """A clock the test moves by hand (no sleeping, no timing thresholds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_piped_progress_writes_one_plain_line_per_stage_when_it_starts() -> None:
    stream, clock = io.StringIO(), Clock()
    with StageProgress(stream=stream, clock=clock) as progress:
        progress.stage("environment", "building")
        # Written (and flushed) at once, not held for the end of the job.
        assert stream.getvalue() == "[   0.0s] environment building\n"
        clock.now += 41.0
        progress.tick("environment", "pip install")  # a detail: the status line only
        progress.stage("baseline", "")
    assert stream.getvalue().splitlines() == ["[   0.0s] environment building", "[  41.0s] baseline"]


def test_quiet_progress_prints_nothing() -> None:
    stream = io.StringIO()
    with StageProgress(stream=stream, quiet=True) as progress:
        progress.stage("environment", "building")
    assert stream.getvalue() == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_stage_lines_carry_no_source_location() -> None:
    stream = Terminal()
    with StageProgress(stream=stream) as progress:
        progress.stage("environment", "building")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    assert "environment building" in text
    assert ".py:" not in text


def test_the_status_line_ticks_while_a_stage_runs() -> None:
    clock = Clock()
    with StageProgress(stream=Terminal(), clock=clock) as progress:
        progress.stage("environment", "building")
        assert progress._status is not None
        spinner = progress._status.renderable

        def shown() -> str:
            console = Console(file=io.StringIO(), width=100, color_system=None)
            with console.capture() as capture:
                console.print(spinner.render(0.0))
            return capture.get()

        assert "[   0.0s]" in shown()
        clock.now += 41.0  # nothing reports anything for 41 s: the line still moves on its own
        assert "[  41.0s]" in shown() and "environment building" in shown()


@pytest.fixture
def data_dir(tmp_path: Path, env_cache: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    return data


def test_fix_piped_prints_the_stages_as_plain_lines(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data_dir)}
    run = subprocess.run(
        [REPROBOT, "fix", "--repo", str(repo), "--issue", str(issue), "--no-branch"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    stages = [line for line in run.stderr.splitlines() if re.match(r"\[ *\d+\.\d+s\] \w", line)]
    assert len(stages) >= 3, run.stderr
    assert "\x1b[" not in run.stderr and ".py:" not in run.stderr
    names = [line.split("] ", 1)[1].split()[0] for line in stages]
    assert names[0] != "publish" and "status:" in run.stdout

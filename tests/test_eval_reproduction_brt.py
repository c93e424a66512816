"""The eval scores the BRT a job outputs even when no trajectory fixed the bug: its diff must apply."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.evaluate.run import new_file_diff


def test_new_file_diff_applies_with_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for name, source in (
        ("tests/test_a.py", "import x\n\n\ndef test_a():\n    assert x.f() == 1\n"),
        ("b.py", "y = 1"),
    ):
        diff = new_file_diff(name, source)
        subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=diff.encode(), check=True)
        assert (tmp_path / name).read_text() == source

"""The oracle scorer on a small repo of our own: right verdicts, each distinct patch scored once, runs in parallel."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.evaluate.scoring import OracleScorer
from bot.settings.config import Settings
from sandboxes.factory import available_backends
from tests.conftest import one_module_project
from tests.test_envspec import write

pytestmark = pytest.mark.timeout(300)

BUGGY = "def double(x):\n    return x + 2\n"
FIXED = "def double(x):\n    return x * 2\n"
ORACLE_BRT = "import mod\n\n\ndef test_double():\n    assert mod.double(3) == 6\n"
OWN_BRT = "import mod\n\n\ndef test_double_own():\n    assert mod.double(5) == 10\n"


def git(cwd: Path, *argv: str) -> str:
    """Run git in cwd and return its stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The diff that turns repo's committed tree into one with files written, then undo it."""
    write(repo, files)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    return diff


async def test_patches_are_scored_against_the_oracle_once_each_and_in_parallel(
    tmp_path: Path, settings: Settings
) -> None:
    if (problem := available_backends()["bwrap"]) is not None:
        pytest.skip(f"bwrap unavailable: {problem}")
    repo = one_module_project(tmp_path / "repo", BUGGY)
    oracle = write(tmp_path / "oracle", {"test_brt.py": ORACLE_BRT})
    (oracle / "fix.diff").write_text(diff_of(repo, {"mod.py": FIXED}))
    good = diff_of(repo, {"mod.py": FIXED, "tests/test_own.py": OWN_BRT})
    # A wrong fix whose test passes on the buggy code: neither the fix nor the test is plausible.
    wrong = diff_of(repo, {"mod.py": BUGGY.replace("x + 2", "x - 2"), "tests/test_own.py": "def test_t():\n    pass\n"})
    scorer = OracleScorer(repo, oracle, {}, settings, "bwrap", tmp_path / "work", parallel=2)
    running = peak = calls = 0
    run_one = scorer._run_one

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, peak, calls
        running, calls = running + 1, calls + 1
        peak = max(peak, running)
        try:
            return await run_one(*args, **kwargs)
        finally:
            running -= 1

    scorer._run_one = counted  # type: ignore[method-assign]
    scores = await scorer.score_all([good, wrong, good])
    assert [(s.plausible_fix, s.plausible_brt, s.candidate_brt) for s in scores] == [
        (True, True, True),
        (False, False, False),
        (True, True, True),
    ]
    assert scores[1].note == "the patch's test does not fail on the buggy code"
    # Two distinct patches with a test each: four runs apiece, never more than two at once.
    assert calls == 8 and peak == 2
    # Asked again later, a patch is not run again.
    assert await scorer.score(wrong) is scores[1] and calls == 8

"""Reviewers on a real bench case, in real sandboxes: the BRT and build & test reviewers reject what they must."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.settings.config import Settings
from patch_selectors.records import make_record
from patch_selectors.reviewers import (
    DEFAULT_REVIEWERS,
    BrtReviewer,
    BuildTestReviewer,
    ReviewEnv,
    ReviewSubject,
    SmellReviewer,
    review_patch,
)
from tests.conftest import QUIXBUGS, require_shared
from tests.review_envs import case_checkout, sandboxed_review_env

pytestmark = pytest.mark.shared


def new_test_file(path: str, body: str) -> str:
    """A git diff that adds one file."""
    lines = body.splitlines()
    added = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{added}"
    )


#: Blank context lines in a diff are a single space, written out here so editors keep them.
FIX = "\n".join(
    [
        "diff --git a/gcd.py b/gcd.py",
        "--- a/gcd.py",
        "+++ b/gcd.py",
        "@@ -2,7 +2,7 @@ def gcd(a, b):",
        "     if b == 0:",
        "         return a",
        "     else:",
        "-        return gcd(a % b, b)",
        "+        return gcd(b, a % b)",
        " ",
        " ",
        ' """',
        "",
    ]
)

BREAKS_REGRESSION = """diff --git a/gcd.py b/gcd.py
--- a/gcd.py
+++ b/gcd.py
@@ -1,5 +1,5 @@
 def gcd(a, b):
     if b == 0:
-        return a
+        return a + 1
     else:
         return gcd(a % b, b)
"""

GOOD_BRT = "from gcd import gcd\n\n\ndef test_equal_arguments():\n    assert gcd(13, 13) == 13\n"
PASSING_BRT = "from gcd import gcd\n\n\ndef test_zero():\n    assert gcd(5, 0) == 5\n"
IMPORT_ERROR_BRT = (
    "from gcd import greatest_common_divisor\n\n\ndef test_it():\n    assert greatest_common_divisor(4, 2) == 2\n"
)


@pytest.fixture
async def review_env(tmp_path: Path, settings: Settings) -> ReviewEnv:
    """The gcd case as a git checkout, its environment, and its baseline run."""
    base = case_checkout(require_shared(QUIXBUGS / "gcd"), tmp_path / "base")
    env, run = await sandboxed_review_env(base, tmp_path / "scratch", settings)
    assert run.tests and all(s == "passed" for s in run.tests.values())
    yield env
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


async def test_brt_that_passes_on_the_buggy_code_is_rejected(review_env: ReviewEnv) -> None:
    record = make_record("p", FIX + new_test_file("tests/test_brt.py", PASSING_BRT))
    review = await BrtReviewer().review(ReviewSubject(record), review_env)
    assert not review.accepted
    assert "passes on the buggy code" in review.reason
    assert "1 passed" in review.evidence["before_output"]


async def test_brt_that_errors_at_import_is_rejected_with_that_reason(review_env: ReviewEnv) -> None:
    record = make_record("p", FIX + new_test_file("tests/test_brt.py", IMPORT_ERROR_BRT))
    review = await BrtReviewer().review(ReviewSubject(record), review_env)
    assert not review.accepted
    assert "errors at import" in review.reason
    assert "greatest_common_divisor" in review.evidence["before_output"]


async def test_brt_that_fails_before_and_passes_after_is_accepted(review_env: ReviewEnv) -> None:
    record = make_record("p", FIX + new_test_file("tests/test_brt.py", GOOD_BRT))
    reviews = await review_patch(ReviewSubject(record, last_test_passed=True), review_env, DEFAULT_REVIEWERS)
    assert [r.reviewer for r in reviews] == ["smell", "build-test", "brt"]
    assert all(r.accepted for r in reviews), [r.reason for r in reviews]
    brt = reviews[-1]
    assert "RecursionError" in brt.evidence["before_output"]
    assert brt.evidence["failing_before"] == ["tests/test_brt.py::test_equal_arguments"]


async def test_fix_that_breaks_a_passing_test_is_rejected(review_env: ReviewEnv) -> None:
    review = await BuildTestReviewer().review(ReviewSubject(make_record("p", BREAKS_REGRESSION)), review_env)
    assert not review.accepted and "passed before now fail" in review.reason
    assert "tests/test_gcd.py" in review.reason


async def test_patch_without_test_is_a_no_op_for_the_brt_reviewer(review_env: ReviewEnv) -> None:
    review = await BrtReviewer().review(ReviewSubject(make_record("p", FIX)), review_env)
    assert review.accepted and "no test" in review.reason


@pytest.mark.parametrize(
    ("diff", "last_passed", "reason"),
    [
        ("", None, "empty"),
        (new_test_file(".github/workflows/ci.yml", "on: push"), None, ".github/workflows"),
        (FIX, False, "last test run"),
    ],
)
async def test_smell_rejections(review_env: ReviewEnv, diff: str, last_passed: bool | None, reason: str) -> None:
    review = await SmellReviewer().review(ReviewSubject(make_record("p", diff), last_passed), review_env)
    assert not review.accepted and reason in review.reason


async def test_a_fix_that_does_not_apply_to_the_base_is_rejected_not_a_crash(review_env: ReviewEnv) -> None:
    """A candidate whose fix part adds a file the base commit already has (a stray file a run left in the
    candidate's workspace) fails the BRT review with the reason; the job goes on."""
    clash = new_test_file("gcd.py", "def gcd(a, b):\n    return 1\n")
    record = make_record("p", clash + new_test_file("tests/test_brt.py", GOOD_BRT))
    review = await BrtReviewer().review(ReviewSubject(record), review_env)
    assert not review.accepted
    assert "does not apply to the base commit" in review.reason and "gcd.py" in review.reason

"""MajorityWatch: a job's vote is settled only when the remaining trajectories cannot change its winner."""

from __future__ import annotations

from patch_selectors.majority import MajorityWatch


def fix(body: str) -> str:
    """A one-line fix of m.py (a test part changes nothing about which fix it votes for)."""
    return f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 0\n+x = {body}\n"


def with_test(diff: str, name: str) -> str:
    """The same fix plus a new test file."""
    return diff + (
        f"diff --git a/tests/test_{name}.py b/tests/test_{name}.py\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/tests/test_{name}.py\n@@ -0,0 +1 @@\n+def test_{name}(): pass\n"
    )


def test_settled_once_the_lead_beats_the_runner_up_plus_everything_left() -> None:
    watch = MajorityWatch(8)
    for _ in range(4):
        watch.finish(True, fix("1"))
    assert not watch.settled  # 4 vs 0 with 4 left: the others could still tie
    watch.finish(True, with_test(fix("1"), "own"))  # same fix, another test: the same vote
    assert watch.settled and watch.remaining == 3
    assert watch.describe().startswith("stopped early: 5 of 5 finished trajectories agree on one fix")


def test_a_competing_fix_and_failed_trajectories_count_as_they_should() -> None:
    watch = MajorityWatch(5)
    watch.finish(True, fix("1"))
    watch.finish(True, fix("2"))
    watch.finish(False, "")  # no fix: no vote, but one fewer left
    watch.finish(True, fix("1"))
    assert not watch.settled  # 2 vs 1 with 1 left: a tie is still possible
    assert MajorityWatch(3).settled is False  # nothing finished, nothing settled


def test_nothing_left_is_never_settled() -> None:
    watch = MajorityWatch(1)
    watch.finish(True, fix("1"))
    assert watch.remaining == 0 and not watch.settled

"""Tests for the four patch selectors on hand-made patch sets where they must disagree."""

from __future__ import annotations

import difflib
import itertools

import pytest

from patch_selectors.classify import DEFAULT_CLASSIFIER
from patch_selectors.records import PatchRecord, Review, make_record
from patch_selectors.selectors import DEFAULT_SELECTOR, SELECTORS, Selection, select


def git_diff(path: str, old: str | None, new: str) -> str:
    """A git-style diff of one file (old=None: new file), built with difflib."""
    a = old.splitlines() if old else []
    head = [f"diff --git a/{path} b/{path}"] + (["new file mode 100644"] if old is None else [])
    src = "/dev/null" if old is None else f"a/{path}"
    return "\n".join(head + list(difflib.unified_diff(a, new.splitlines(), src, f"b/{path}", lineterm=""))) + "\n"


SRC = "src/stats.py"
BASE = "def mean(values):\n    total = sum(values)\n    count = len(values)\n    return total / count\n"
# Fix A: guard the empty case. Two spellings that differ only in spacing and a comment normalize alike.
FIX_A = git_diff(SRC, BASE, BASE.replace("    return", "    if count == 0:\n        return 0.0\n    return"))
FIX_A_NOISY = git_diff(
    SRC, BASE, BASE.replace("    return", "    if count==0:  # empty input\n        return 0.0\n    return")
)
# Fix B: a different (and here, wrong) fix: it never divides by zero but gives mean([5]) right and mean([]) 0.
FIX_B = git_diff(SRC, BASE, BASE.replace("total / count", "total / max(count, 1)"))

# Three BRTs for the same bug. Test code varies more than fix code: no two normalize alike.
T1 = git_diff(
    "tests/test_stats.py", None, "from stats import mean\n\n\ndef test_empty():\n    assert mean([]) == 0.0\n"
)
T2 = git_diff(
    "tests/test_stats.py",
    None,
    "import pytest\nfrom stats import mean\n\n\ndef test_empty_list():\n    result = mean([])\n"
    "    assert result == pytest.approx(0)\n",
)
T3 = git_diff(
    "tests/test_stats.py",
    None,
    "from stats import mean\n\n\ndef test_nothing():\n    assert mean([]) == 0.0\n    assert mean([2, 4]) == 3\n",
)
SHORT_T = git_diff("tests/test_stats.py", None, "from stats import mean\nassert mean([]) == 0\n")

OK = Review(accepted=True, reviewer="build&test", reason="all tests pass")


def rec(id: str, *diffs: str, reviews: tuple[Review, ...] = (OK,)) -> PatchRecord:
    return make_record(id, "".join(diffs), reviews, trajectory_id=f"t-{id}", agent="test")


def chosen(sel: Selection) -> str | None:
    return sel.selected.id if sel.selected else None


def run_all(records: list[PatchRecord]) -> dict[str, str | None]:
    return {name: chosen(select(name, records)) for name in SELECTORS}


def test_records_split_and_hash_as_expected() -> None:
    a1, a2, a_noisy, b = rec("a1", FIX_A, T1), rec("a2", FIX_A, T2), rec("an", FIX_A_NOISY), rec("b", FIX_B)
    assert a1.has_test and not a_noisy.has_test
    assert a1.fix_hash == a2.fix_hash == a_noisy.fix_hash != b.fix_hash
    assert a1.patch_hash != a2.patch_hash  # different tests, so different whole patches
    assert (a1.fix_lines, a1.total_lines) == (2, 2 + 5)
    assert a1.test_part.paths == ("tests/test_stats.py",) and a1.fix_part.paths == (SRC,)


def test_test_bearing_patches_split_up_and_lose_under_default() -> None:
    # Seed §3.3: three patches share fix A but carry different tests, so the whole-patch vote splits them
    # into three singletons; two test-free copies of fix B form the largest group.
    records = [
        rec("a1", FIX_A, T1),
        rec("a2", FIX_A, T2),
        rec("a3", FIX_A, T3),
        rec("b1", FIX_B),
        rec("b2", FIX_B),
    ]
    got = run_all(records)
    assert got["default"] == "b1"
    assert got["ranked"] == "a1"  # fix A is the majority fix; a1 has a test and the smallest patch
    assert got["dual-level"] == "a1"  # (fix A, test) x3 beats (fix B, no test) x2
    assert got["reject-no-test"] == "a1"  # three singletons tie on size; a1 is the smallest

    sel = select("default", records)
    assert [g.size for g in sel.groups] == [2, 1, 1, 1]
    assert sel.groups[0].won and sel.groups[0].member_ids == ("b1", "b2")
    assert "largest group (2 vs 1)" in sel.explanation

    ranked = select("ranked", records)
    assert [g.size for g in ranked.groups] == [3, 2]
    assert "with a test first" in ranked.explanation and "a1 ranks ahead of a3" in ranked.explanation
    assert "Other groups lost: fix:" in ranked.explanation and "(2 vs 3 patches)" in ranked.explanation


def test_ranked_prefers_the_test_bearing_copy_of_the_majority_fix() -> None:
    # Same fix everywhere; two copies have no test. Default and dual-level keep the shorter test-free patch.
    records = [rec("n1", FIX_A), rec("n2", FIX_A_NOISY), rec("t1", FIX_A, T1), rec("t2", FIX_A, T2)]
    got = run_all(records)
    assert got["default"] == "n1"  # whole-patch groups: {n1, n2} x2 beats the two singletons
    assert got["dual-level"] == "n1"  # (A, no test) x2 ties (A, test) x2; fewer lines wins
    assert got["ranked"] == "t1"  # one group of 4; a test ranks first, then fewer lines (t1 < t2)
    assert got["reject-no-test"] == "t1"
    assert "ties on size (2)" in select("dual-level", records).explanation


def test_dual_level_picks_a_test_only_when_test_bearing_patches_are_the_majority() -> None:
    records = [
        rec("t1", FIX_A, T1),
        rec("t2", FIX_A, T1),
        rec("t3", FIX_A, T2),
        rec("n1", FIX_A),
        rec("n2", FIX_A),
    ]
    assert chosen(select("dual-level", records)) == "t1"
    assert chosen(select("dual-level", records[2:])) == "n1"  # 1 with a test vs 2 without


def test_reject_no_test_drops_right_fixes_without_tests() -> None:
    # Fix A (right) appears three times without a test and once with one; fix B (wrong) comes with a
    # shorter test. Reject-no-test throws away the test-free majority and the smaller B patch wins the tie.
    records = [
        rec("a1", FIX_A),
        rec("a2", FIX_A),
        rec("a3", FIX_A),
        rec("at", FIX_A, T3),
        rec("bt", FIX_B, SHORT_T),
    ]
    got = run_all(records)
    assert got["default"] == "a1"
    assert got["ranked"] == "at"
    assert got["reject-no-test"] == "bt"
    sel = select("reject-no-test", records)
    assert sel.excluded == ("a1", "a2", "a3")
    assert "Dropped (no test changes): a1, a2, a3" in sel.explanation
    assert "fewer changed lines (4 vs 8)" in sel.explanation


def test_ties_go_to_fewer_lines_then_id_regardless_of_order() -> None:
    records = [rec("z-small", FIX_B), rec("a-big", FIX_A)]  # one vote each; B changes 2 lines, A 2 lines
    sizes = {r.id: r.total_lines for r in records}
    assert sizes == {"z-small": 2, "a-big": 2}
    # Equal size and lines: the id decides, so input order cannot.
    for perm in itertools.permutations(records):
        assert chosen(select("default", list(perm))) == "a-big"
    bigger = rec("a-big", FIX_A, T1)
    for name in ("default", "dual-level"):
        assert chosen(select(name, [bigger, records[0]])) == "z-small"


def test_every_selector_is_order_independent() -> None:
    records = [
        rec("a1", FIX_A, T1),
        rec("a2", FIX_A, T2),
        rec("b1", FIX_B),
        rec("b2", FIX_B),
        rec("n", FIX_A),
    ]
    for name in SELECTORS:
        expected = chosen(select(name, records))
        for perm in itertools.permutations(records):
            assert chosen(select(name, list(perm))) == expected, name


def test_rejected_patches_are_not_candidates_and_are_explained() -> None:
    bad = Review(accepted=False, reviewer="smell", reason="last test run failed")
    records = [rec("b1", FIX_B, reviews=(OK, bad)), rec("b2", FIX_B, reviews=(bad,)), rec("a1", FIX_A, T1)]
    for name in SELECTORS:
        sel = select(name, records)
        assert chosen(sel) == "a1"
        assert sel.rejected == ("b1", "b2")
        assert "b1 (smell: last test run failed)" in sel.explanation


def test_nothing_to_select() -> None:
    bad = Review(False, "build&test", "regression in test_sum")
    for name in SELECTORS:
        empty = select(name, [])
        assert empty.selected is None and empty.groups == []
        sel = select(name, [rec("x", FIX_A, reviews=(bad,))])
        assert sel.selected is None and "nothing is selected" in sel.explanation
    only_no_test = select("reject-no-test", [rec("n", FIX_A)])
    assert only_no_test.selected is None and only_no_test.excluded == ("n",)


def test_registry_and_names() -> None:
    assert DEFAULT_SELECTOR == "ranked" and set(SELECTORS) == {
        "default",
        "dual-level",
        "ranked",
        "reject-no-test",
    }
    records = [rec("a", FIX_A, T1)]
    assert select("Reject_No_Test", records).selector == "reject-no-test"
    with pytest.raises(ValueError, match="default, dual-level, ranked, reject-no-test"):
        select("majority", records)


def test_policy_classifier_changes_what_counts_as_a_test() -> None:
    # A repo whose checks live in qa/: without the override the "test" is part of the fix.
    qa = git_diff("qa/check_mean.py", None, "from stats import mean\nassert mean([]) == 0\n")
    plain = make_record("p", FIX_A + qa)
    custom = make_record("c", FIX_A + qa, classifier=DEFAULT_CLASSIFIER.with_overrides(extra_test_globs=["qa/**"]))
    assert not plain.has_test and custom.has_test
    assert custom.fix_hash == rec("a", FIX_A).fix_hash != plain.fix_hash


def test_accepted_requires_every_review() -> None:
    r = rec("a", FIX_A, reviews=())
    assert r.accepted  # nothing has rejected it yet
    r2 = r.with_reviews(OK, Review(False, "spec", "misses requirement 2", {"requirement": 2}))
    assert not r2.accepted and [v.reviewer for v in r2.rejections] == ["spec"]

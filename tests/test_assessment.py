"""Patch-correctness assessment: the pure checks on hand-made traces, and the harness in a real sandbox."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.pipeline.select import assessment_pool
from bot.settings.config import Settings
from patch_selectors.assess_run import assess_records
from patch_selectors.assessment import (
    Assessment,
    Target,
    TraceRun,
    behaviour_changes,
    changed_lines,
    deletes_only,
    departures,
    disagreements,
    documented_examples,
    enclosing_functions,
    fix_shape,
    judge,
    literal_only,
    new_crashes,
    orphans_left,
    semantic_size,
    table_entry_lines,
    touched_targets,
)
from patch_selectors.patch import Patch
from patch_selectors.probe_harness import _variants, norm_repr
from patch_selectors.records import Review, make_record
from patch_selectors.reviewers import ReviewEnv
from tests.conftest import make_git_repo
from tests.review_envs import sandboxed_review_env

SHAPES = """\
class Box:
    def area(self, w, h):
        return w * h


def perimeter(w, h):
    total = 2 * w
    return total + 2 * h
"""


def test_touched_targets_name_the_innermost_function_on_both_sides() -> None:
    new = SHAPES.replace("return w * h", "return w * h * 1").replace("total = 2 * w", "total = w + w")
    diff = (
        "diff --git a/shapes.py b/shapes.py\n--- a/shapes.py\n+++ b/shapes.py\n"
        "@@ -2,3 +2,3 @@ class Box:\n     def area(self, w, h):\n-        return w * h\n+        return w * h * 1\n \n"
        "@@ -6,3 +6,3 @@\n def perimeter(w, h):\n-    total = 2 * w\n+    total = w + w\n     return total + 2 * h\n"
    )
    patch = Patch.parse(diff)
    old_lines, new_lines = changed_lines(patch.files[0])
    assert old_lines == {3, 7} and new_lines == {3, 7}
    targets = touched_targets(patch, {"shapes.py": SHAPES}, {"shapes.py": new})
    assert targets == [Target("shapes.py", "Box.area"), Target("shapes.py", "perimeter")]
    assert enclosing_functions(SHAPES, [1]) == set()  # a class line is not inside a function


def test_semantic_size_ignores_formatting_and_counts_ast_edits() -> None:
    reformatted = SHAPES.replace("return w * h", "return (w *   h)  # same")
    assert semantic_size({"s.py": SHAPES}, {"s.py": reformatted}) == 0
    one = semantic_size({"s.py": SHAPES}, {"s.py": SHAPES.replace("2 * h", "3 * h")})
    two = semantic_size({"s.py": SHAPES}, {"s.py": SHAPES.replace("2 * h", "h + h + h")})
    assert 0 < one < two
    assert semantic_size({"s.py": SHAPES}, {"s.py": "def broken(:\n"}) == -1


def test_a_fix_that_only_deletes_code_is_recognized() -> None:
    guarded = "def pay(acct, amount):\n    if amount > 0 and acct.open:\n        acct.total += amount\n"
    dropped = guarded.replace(" and acct.open", "")
    assert deletes_only({"a.py": guarded}, {"a.py": dropped})
    assert not deletes_only({"a.py": guarded}, {"a.py": guarded.replace("> 0", ">= 0")})
    assert not deletes_only({"a.py": guarded}, {"a.py": guarded})
    verdict = judge(TraceRun(), TraceRun(), brt_prefix="t", targets=[], deletion=True)
    assert verdict.verdict == "unsure" and "only deletes code" in verdict.reasons[0]


def test_an_operand_turned_into_its_identity_is_a_deletion() -> None:
    scan = "def peak(xs):\n    best = 0\n    for x in xs[1:]:\n        best = max(best, x)\n    return best\n"
    assert deletes_only({"a.py": scan}, {"a.py": scan.replace("xs[1:]", "xs[0:]")})
    assert deletes_only({"a.py": scan}, {"a.py": scan.replace("xs[1:]", "xs[::1]")})
    assert not deletes_only({"a.py": scan}, {"a.py": scan.replace("xs[1:]", "xs[2:]")})
    shift = "def last(xs, n):\n    return xs[n - 1] * 2\n"
    assert deletes_only({"a.py": shift}, {"a.py": shift.replace("n - 1", "n - 0")})
    assert deletes_only({"a.py": shift}, {"a.py": shift.replace("* 2", "* 1")})
    assert not deletes_only({"a.py": shift}, {"a.py": shift.replace("n - 1", "n + 1")})
    # A literal 0 that is the value itself, not an operand's identity, is an ordinary change.
    assert not deletes_only({"a.py": scan}, {"a.py": scan.replace("best = 0", "best = 1")})


def test_a_fix_that_adds_a_raise_is_never_confident() -> None:
    """A new error's type and message are the fix's own choice: a suggestion, never a PR (made up)."""
    loose = "def load(text):\n    return text.replace('\\r', '')\n"
    strict = "def load(text):\n    if not isinstance(text, str):\n        raise TypeError(text)\n" + loose[16:]
    assert fix_shape({"a.py": loose}, {"a.py": strict}) == (False, True, False, False)
    assert fix_shape({"a.py": strict}, {"a.py": strict.replace("TypeError", "ValueError")}) == (
        False,
        False,
        False,
        False,
    )
    event = _event("load", 0, "('a',)", "'a'")
    run = TraceRun(events={"t::a": [event]}, outcomes={"t::a": "passed"})
    assert judge(run, run, brt_prefix="t/brt", targets=[]).verdict == "confident"
    verdict = judge(run, run, brt_prefix="t/brt", targets=[], raising=True)
    assert verdict.verdict == "unsure" and "raises a new exception" in verdict.reasons[0]


def test_a_fix_that_catches_an_exception_is_never_confident() -> None:
    """What a new handler does instead of raising is the fix's own choice: a suggestion, never a PR (made up)."""
    bare = "def first(items):\n    return next(iter(items))\n"
    handler = "    except StopIteration:\n        return\n"
    caught = bare.replace("    return next", "    try:\n        return next") + handler
    assert fix_shape({"a.py": bare}, {"a.py": caught}) == (False, False, True, False)
    renamed = caught.replace("StopIteration", "LookupError")
    assert fix_shape({"a.py": caught}, {"a.py": renamed}).silencing is False
    event = _event("first", 0, "([1],)", "1")
    run = TraceRun(events={"t::a": [event]}, outcomes={"t::a": "passed"})
    verdict = judge(run, run, brt_prefix="t/brt", targets=[], silencing=True)
    assert verdict.verdict == "unsure" and "catches an exception" in verdict.reasons[0]


def test_a_fix_that_leaves_computed_work_unused_is_never_confident() -> None:
    """`return seen` -> `return names` passes the example by bypassing the loop that builds `seen` (made up)."""
    dedupe = (
        "def dedupe(names):\n    seen = []\n    for name in names:\n        if name not in seen:\n"
        "            seen.append(name)\n    return seen\n"
    )
    bypass = dedupe.replace("return seen", "return names")
    assert orphans_left({"a.py": dedupe}, {"a.py": bypass}) and fix_shape({"a.py": dedupe}, {"a.py": bypass}).orphaning
    # Fixes that keep every computed value in use are ordinary, whatever they change.
    assert not orphans_left({"a.py": dedupe}, {"a.py": dedupe.replace("name not in seen", "name.lower() not in seen")})
    span = "def span(a, b):\n    lo = min(a, b)\n    hi = max(a, b)\n    return lo - hi\n"
    assert not orphans_left({"a.py": span}, {"a.py": span.replace("lo - hi", "hi - lo")})
    # A value that was never used before the fix is not the fix's doing.
    idle = "def idle(xs):\n    n = len(xs)\n    return xs\n"
    assert not orphans_left({"a.py": idle}, {"a.py": idle.replace("return xs", "return xs[:]")})
    event = _event("dedupe", 0, "(['a'],)", "['a']")
    run = TraceRun(events={"t::a": [event]}, outcomes={"t::a": "passed"})
    verdict = judge(run, run, brt_prefix="t/brt", targets=[], orphaning=True)
    assert verdict.verdict == "unsure" and "computes unused" in verdict.reasons[0]


def test_a_fix_checked_only_by_a_changed_result_is_never_confident() -> None:
    """A test that only asserts the reported output changed passes with any change: never a PR on it alone."""
    run = TraceRun(events={"t::a": [_event("pad", 0, "('a', 3)", "'a  '")]}, outcomes={"t::a": "passed"})
    assert judge(run, run, brt_prefix="t/brt", targets=[]).verdict == "confident"
    verdict = judge(run, run, brt_prefix="t/brt", targets=[], changed_only=True)
    assert verdict.verdict == "unsure" and "only checks that the reported result changed" in verdict.reasons[0]


def _event(name: str, depth: int, args: str, ret: str, hit: bool = True) -> list[str]:
    return [f"m.py::{name}", str(depth), args, ret, args, "1" if hit else "0"]


def test_a_passing_test_whose_top_level_result_changes_is_flagged() -> None:
    before = TraceRun(events={"t::a": [_event("f", 0, "(3,)", "9")]}, outcomes={"t::a": "passed"})
    after = TraceRun(events={"t::a": [_event("f", 0, "(3,)", "10")]}, outcomes={"t::a": "passed"})
    tests, calls, diffs = behaviour_changes(before, after, exclude_prefix="t_brt")
    assert (tests, calls) == (1, 1)
    assert diffs == ["t::a: f(3,) returned 10 instead of 9"]


def test_extra_nested_calls_are_fine_but_the_same_call_must_return_the_same() -> None:
    # A fix may recurse one level deeper (a new base case): that alone changes nothing a test relied on.
    before = TraceRun(
        events={"t::a": [_event("f", 0, "([1, 2],)", "3"), _event("f", 1, "([2],)", "2")]},
        outcomes={"t::a": "passed"},
    )
    deeper = TraceRun(
        events={
            "t::a": [_event("f", 0, "([1, 2],)", "3"), _event("f", 1, "([2],)", "2"), _event("f", 2, "([],)", "0")]
        },
        outcomes={"t::a": "passed"},
    )
    assert behaviour_changes(before, deeper, exclude_prefix="x")[2] == []
    # A step of the recursion that no test calls itself is not pinned: the bug may have been there.
    step = TraceRun(
        events={"t::a": [_event("f", 0, "([1, 2],)", "3"), _event("f", 1, "([2],)", "5")]},
        outcomes={"t::a": "passed"},
    )
    assert behaviour_changes(before, step, exclude_prefix="x")[2] == []
    # The same call made at the top of another passing test is pinned, wherever it happens.
    pinned = {"t::b": [_event("f", 0, "([2],)", "2")]}
    before = TraceRun(events={**before.events, **pinned}, outcomes={"t::a": "passed", "t::b": "passed"})
    inconsistent = TraceRun(events={**step.events, **pinned}, outcomes={"t::a": "passed", "t::b": "passed"})
    assert behaviour_changes(before, inconsistent, exclude_prefix="x")[2] == ["t::a: f([2],) returned 5 instead of 2"]


def test_the_brt_and_tests_that_failed_before_do_not_pin_behaviour() -> None:
    before = TraceRun(
        events={"t_brt::b": [_event("f", 0, "(1,)", "0")], "t::c": [_event("f", 0, "(2,)", "0")]},
        outcomes={"t_brt::b": "failed", "t::c": "failed"},
    )
    after = TraceRun(
        events={"t_brt::b": [_event("f", 0, "(1,)", "1")], "t::c": [_event("f", 0, "(2,)", "2")]},
        outcomes={"t_brt::b": "passed", "t::c": "passed"},
    )
    assert behaviour_changes(before, after, exclude_prefix="t_brt") == (0, 0, [])


def test_printed_output_of_a_passing_test_is_part_of_its_behaviour() -> None:
    before = TraceRun(outcomes={"t::p": "passed"}, stdout={"t::p": "a b\n"})
    after = TraceRun(outcomes={"t::p": "passed"}, stdout={"t::p": "a  b\n"})
    assert behaviour_changes(before, after, exclude_prefix="x")[2] == ["t::p: its printed output changed"]


def _probes(**rows: dict[str, str]) -> dict[str, dict[str, str]]:
    return {key: {"key": key, **row} for key, row in rows.items()}


def test_a_new_crash_or_hang_on_a_near_input_is_flagged_but_a_fixed_crash_is_not() -> None:
    original = TraceRun(
        probes=_probes(
            a={"outcome": "ok", "value": "1"},
            b={"outcome": "ok", "value": "2"},
            c={"outcome": "raise", "exc": "IndexError"},
        )
    )
    patched = TraceRun(
        probes=_probes(
            a={"outcome": "raise", "exc": "ZeroDivisionError"},
            b={"outcome": "timeout"},
            c={"outcome": "ok", "value": "3"},
        )
    )
    compared, crashes = new_crashes(original, patched)
    assert compared == 2
    assert crashes == ["a raises ZeroDivisionError (the original returned)", "b hangs (the original returned)"]


def test_candidates_that_disagree_on_a_near_input_both_hear_of_it() -> None:
    one = TraceRun(probes=_probes(k={"outcome": "ok", "value": "2"}, j={"outcome": "ok", "value": "7"}))
    two = TraceRun(probes=_probes(k={"outcome": "ok", "value": "3"}, j={"outcome": "ok", "value": "7"}))
    found = disagreements({"p1": one, "p2": two})
    assert found == {"p1": ["k: 2 here, 3 with p2"], "p2": ["k: 3 here, 2 with p1"]}
    # Only a change no larger than yours casts doubt on you: the smaller fix keeps its confidence.
    sized = disagreements({"p1": one, "p2": two}, {"p1": 2, "p2": 7})
    assert sized == {"p1": [], "p2": ["k: 3 here, 2 with p1"]}
    assert disagreements({"p1": one, "p2": two}, {"p1": 4, "p2": 4}) == found
    # A fix that only retunes a literal is doubted by a larger fix that disagrees with it, and still doubts it.
    assert disagreements({"p1": one, "p2": two}, {"p1": 1, "p2": 3}, literal={"p1"}) == found


def test_a_fix_that_only_changes_literal_values_is_recognized() -> None:
    counter = "def runs(text):\n    out = []\n    for ch in text:\n        if out and out[-1][0] == ch:\n"
    counter += "            out[-1][1] = 1\n        else:\n            out.append([ch, 1])\n    return out\n"
    assert literal_only({"a.py": counter}, {"a.py": counter.replace("[1] = 1", "[1] = 2")})
    assert literal_only({"a.py": counter}, {"a.py": counter.replace("out[-1][0]", "out[0][0]")})
    assert not literal_only({"a.py": counter}, {"a.py": counter.replace("[1] = 1", "[1] += 1")})
    assert not literal_only({"a.py": counter}, {"a.py": counter})


def test_verdicts() -> None:
    clean_before = TraceRun(
        events={"t::a": [_event("f", 0, "(1,)", "1")]},
        outcomes={"t::a": "passed"},
        probes=_probes(k={"outcome": "ok", "value": "1"}),
    )
    clean_after = TraceRun(
        events={"t::a": [_event("f", 0, "(1,)", "1")]},
        outcomes={"t::a": "passed"},
        probes=_probes(k={"outcome": "ok", "value": "2"}),
    )
    targets = [Target("m.py", "f")]
    ok = judge(clean_before, clean_after, brt_prefix="t_brt", targets=targets, size=3)
    assert ok.verdict == "confident" and ok.confident and ok.semantic_size == 3
    assert ok.to_json()["probes_compared"] == 1
    doubted = judge(clean_before, clean_after, brt_prefix="t_brt", targets=targets, others_disagree=["k: 2 vs 3"])
    assert doubted.verdict == "unsure" and "another validated candidate" in doubted.reasons[0]
    # Nothing but the BRT ran the changed code: no evidence is not confidence.
    empty = judge(TraceRun(), TraceRun(), brt_prefix="t_brt", targets=targets)
    assert empty.verdict == "unsure" and "no evidence beyond the BRT" in empty.reasons[0]
    broken = judge(TraceRun(error="the trace run timed out"), clean_after, brt_prefix="t_brt", targets=targets)
    assert broken.verdict == "unsure" and "could not run" in broken.reasons[0]


def test_checks_that_never_run_the_changed_lines_are_no_evidence() -> None:
    # The passing test calls the function but takes another branch, and the original raised on every near
    # input: nothing but the BRT ever ran the changed line, so the same results prove nothing.
    before = TraceRun(
        events={"t::a": [_event("f", 0, "(1,)", "1", hit=False)]},
        outcomes={"t::a": "passed"},
        probes=_probes(k={"outcome": "raise", "exc": "IndexError"}),
    )
    after = TraceRun(
        events={"t::a": [_event("f", 0, "(1,)", "1", hit=False)]},
        outcomes={"t::a": "passed"},
        probes=_probes(k={"outcome": "ok", "value": "2", "hit": "1"}),
    )
    verdict = judge(before, after, brt_prefix="t_brt", targets=[Target("m.py", "f")])
    assert verdict.verdict == "unsure" and verdict.exercised == 0 and verdict.calls_compared == 1
    assert "runs the changed lines" in verdict.reasons[0]
    # The same test running the changed line is evidence.
    ran = TraceRun(events={"t::a": [_event("f", 0, "(1,)", "1")]}, outcomes={"t::a": "passed"})
    assert judge(before, ran, brt_prefix="t_brt", targets=[Target("m.py", "f")]).verdict == "confident"


def test_pool_prefers_confident_then_the_smallest_semantic_change() -> None:
    records = [make_record(f"p{i}", "", [Review(True, "smell")]) for i in range(4)]
    rejected = make_record("r", "", [Review(False, "smell")])

    def verdict(v: str, size: int) -> Assessment:
        return Assessment(verdict=v, reasons=("x",), semantic_size=size)  # type: ignore[arg-type]

    sure = {"p0": verdict("confident", 9), "p1": verdict("confident", 4), "p2": verdict("unsure", 1)}
    pool = assessment_pool([*records[:3], rejected], sure)
    assert [r.id for r in pool] == ["p1", "r"]
    unsure = {"p0": verdict("unsure", 9), "p2": verdict("unsure", 1)}
    assert [r.id for r in assessment_pool([records[0], records[2]], unsure)] == ["p2"]


def test_harness_mutations_keep_the_type_and_stay_near() -> None:
    assert _variants(5) == [6, 4]
    assert _variants(True) == [False]
    # A run the example had grows at either end: "aab" also runs as "aaab" (a count that tops out at 2).
    assert _variants("aab") == ["aa", "ab", "aabb", "aaab"]
    lists = _variants([1, 2, 3])
    assert [1, 2] in lists and [2, 3] in lists and [1, 2, 3, 3] in lists and [1, 2, 4] in lists
    assert [1, 1, 2, 3] in lists
    assert all(isinstance(v, tuple) for v in _variants((1, 2)))
    assert _variants(object()) == []
    assert norm_repr(object()).startswith("<object object") and "0x" not in norm_repr(object())


# ---- the harness in a real sandbox, on a project of our own -------------------------------------------

MIDDLE = '''\
def middle(items):
    """The middle element; the lower of the two middle ones for an even length."""
    return items[len(items) // 2]
'''

# The regression test only checks that some element comes back: it passes on the buggy code, and the traces
# are what notice that a patch changed the element returned.
REGRESSION = """\
from middle import middle


def test_single():
    assert middle([7]) == 7


def test_returns_an_element():
    assert middle(["a", "b", "c"]) in "abc"
"""

BRT = "from middle import middle\n\n\ndef test_even_length():\n    assert middle([1, 2, 3, 4]) == 2\n"


def _fix(new_line: str) -> str:
    return (
        "diff --git a/middle.py b/middle.py\n--- a/middle.py\n+++ b/middle.py\n@@ -1,3 +1,3 @@\n"
        ' def middle(items):\n     """The middle element; the lower of the two middle ones for an even length."""\n'
        f"-    return items[len(items) // 2]\n+    {new_line}\n"
    )


def _new_file(path: str, body: str) -> str:
    lines = body.splitlines()
    added = "".join(f"+{line}\n" for line in lines)
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{added}"


CORRECT = _fix("return items[(len(items) - 1) // 2]") + _new_file("tests/test_brt.py", BRT)
# Passes the BRT and both regression tests, but returns "a" instead of "b" for three items.
OVERFIT = _fix("return items[len(items) // 2 - 1]") + _new_file("tests/test_brt.py", BRT)


async def _project_env(tmp_path: Path, settings: Settings, name: str, module: str, tests: str) -> ReviewEnv:
    """A one-module project of our own with its environment and baseline, in real sandboxes."""
    files = {
        f"{name}.py": module,
        f"tests/test_{name}.py": tests,
        "pyproject.toml": f'[project]\nname = "{name}"\nversion = "0"\n[tool.pytest.ini_options]\n'
        'pythonpath = ["."]\ntestpaths = ["tests"]\n',
    }
    base = make_git_repo(tmp_path / "base", files)
    env, run = await sandboxed_review_env(base, tmp_path / "scratch", settings)
    assert run.all_passed, run.result.output
    return env


@pytest.fixture
async def middle_env(tmp_path: Path, settings: Settings) -> AsyncIterator[ReviewEnv]:
    """The middle() project."""
    yield await _project_env(tmp_path, settings, "middle", MIDDLE, REGRESSION)
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


async def test_sandboxed_assessment_trusts_the_right_fix_and_doubts_the_overfitting_one(middle_env: ReviewEnv) -> None:
    good = make_record("good", CORRECT, [Review(True, "brt")])
    [verdict] = (await assess_records([good], middle_env)).values()
    assert verdict.verdict == "confident", verdict.reasons
    assert verdict.targets == ("middle.py::middle",)
    assert verdict.tests_compared == 2 and verdict.calls_compared == 2
    # The report's call middle([1, 2, 3, 4]) was replayed on nearby lists ([1, 2, 3], [2, 3, 4], ...).
    assert verdict.probes_compared >= 4

    bad = make_record("bad", OVERFIT, [Review(True, "brt")])
    [doubt] = (await assess_records([bad], middle_env)).values()
    assert doubt.verdict == "unsure"
    assert any("returned 'a' instead of 'b'" in c for c in doubt.behaviour_changes), doubt.behaviour_changes

    both = await assess_records([good, bad], middle_env)
    # The overfitting patch is flagged on its own, so it does not cast doubt on the clean one.
    assert both["good"].verdict == "confident" and both["bad"].verdict == "unsure"
    assert [r.id for r in assessment_pool([good, bad], both)] == ["good"]


BOUNDS = """\
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x < hi:
        return hi
    return x
"""
BOUNDS_TESTS = "from clamp import clamp\n\n\ndef test_below():\n    assert clamp(-3, 0, 10) == 0\n"
BOUNDS_BRT = "from clamp import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n"


def _bounds_fix(old: str, new: str, line: int) -> str:
    before = BOUNDS.splitlines()
    after = [new if i == line - 1 else text for i, text in enumerate(before)]
    assert before[line - 1] == old
    body = "".join(f" {a}\n" if a == b else f"-{a}\n+{b}\n" for a, b in zip(before, after, strict=True))
    header = "diff --git a/clamp.py b/clamp.py\n--- a/clamp.py\n+++ b/clamp.py\n@@ -1,6 +1,6 @@\n"
    return header + body + _new_file("tests/test_brt.py", BOUNDS_BRT)


async def test_fixes_that_disagree_once_x_passes_hi_are_both_unsure(tmp_path: Path, settings: Settings) -> None:
    """clamp(5, 0, 10) alone cannot tell `return x` from `x > hi`; clamp(11, 0, 10), a near input, can."""
    env = await _project_env(tmp_path, settings, "clamp", BOUNDS, BOUNDS_TESTS)
    right = make_record("right", _bounds_fix("    if x < hi:", "    if x > hi:", 4), [Review(True, "brt")])
    wrong = make_record("wrong", _bounds_fix("        return hi", "        return x", 5), [Review(True, "brt")])
    alone = await assess_records([wrong], env)
    assert alone["wrong"].verdict == "confident"  # nothing else to compare it with: the BRT and tests agree
    both = await assess_records([right, wrong], env)
    assert both["right"].verdict == "unsure" and both["wrong"].verdict == "unsure"
    assert any("clamp(11, 0, 10)" in d for d in both["wrong"].disagreements), both["wrong"].disagreements
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


def _countdown(n):  # type: ignore[no-untyped-def]
    while n > 0:
        yield n
        n -= 1


def test_a_generator_call_is_one_event_with_everything_it_yielded() -> None:
    import sys

    from patch_selectors.probe_harness import Tracer

    tracer = Tracer([{"file": "tests/test_assessment.py", "qualname": "_countdown"}], "none")
    tracer._test = "t::gen"
    sys.setprofile(tracer.profile)
    try:
        assert list(_countdown(3)) == [3, 2, 1]
    finally:
        sys.setprofile(None)
    [event] = tracer.events["t::gen"]
    assert event[0] == "tests/test_assessment.py::_countdown" and event[2] == "(3)"
    assert event[3] == "yields: 3 | 2 | 1 | None"


def test_alternative_fixes_become_peers_once_each_and_never_duplicate_a_candidate() -> None:
    from agents.trajectory import Trajectory
    from bot.pipeline.review import MAX_PEERS, _alternatives

    other = _fix("return items[len(items) // 2 - 1]")
    t0 = Trajectory(id="t0", agent="classic", seed=0, diff=CORRECT, alternatives=[OVERFIT, CORRECT])
    t1 = Trajectory(id="t1", agent="classic", seed=1, diff=CORRECT, alternatives=[OVERFIT])
    records = [make_record("t0", CORRECT), make_record("t1", CORRECT)]
    peers = _alternatives([t0, t1], records)
    # OVERFIT once (t1 found it too); CORRECT is already a candidate; the fix part alone decides identity.
    assert [p.id for p in peers] == ["t0-alt0"]
    assert peers[0].fix_hash == make_record("x", other).fix_hash
    # Each trajectory's first alternative comes before any trajectory's second: the cap is shared fairly.
    fixes = [_fix(f"return items[len(items) // 2 - {k}]") for k in range(2, 8)]
    t0 = Trajectory(id="t0", agent="classic", seed=0, diff=CORRECT, alternatives=fixes[:4])
    t1 = Trajectory(id="t1", agent="classic", seed=1, diff=CORRECT, alternatives=fixes[4:])
    peers = _alternatives([t0, t1], records)
    assert [p.id for p in peers] == ["t0-alt0", "t1-alt0", "t0-alt1", "t1-alt1"][:MAX_PEERS]


CLAMP = '''\
"""Number helpers.

>>> clamp(15, 0, 10)
10
"""


def clamp(x, low, high):
    """Keep x within [low, high].

    >>> clamp(-3, 0, 10)
    0
    >>> clamp(5, 0, 10)
    5
    >>> clamp(4, 0, 10) in range(11)
    True
    >>> sorted_pair = (clamp(1, 2, 3), 9)
    >>> print(clamp(1, 0, 2))
    one
    """
    if x < low:
        return low
    return min(x, high)


def untouched(x):
    """>>> untouched(1)
    1
    """
    return x


"""
More examples, after the code:
    >>> clamp(7, 0, 5)
    5
    >>> clamp(
    ...     1, 0, 5)
    1
"""
'''


def test_documented_examples_of_the_touched_functions_with_literal_results() -> None:
    examples = documented_examples(CLAMP, {"clamp"})
    assert [(e["source"], e["expected"]) for e in examples] == [
        ("clamp(15, 0, 10)", "10"),
        ("clamp(7, 0, 5)", "5"),
        ("clamp(-3, 0, 10)", "0"),
        ("clamp(5, 0, 10)", "5"),
        ("clamp(4, 0, 10) in range(11)", "True"),
    ]
    # Only examples that call a touched function count; a method's qualified name matches by its last part.
    assert documented_examples(CLAMP, {"Helper.untouched"}) == [{"source": "untouched(1)", "expected": "1"}]
    assert documented_examples(CLAMP, {"other"}) == []
    # A nested function is run through the function that defines it.
    assert len(documented_examples(CLAMP, {"clamp.<locals>.inner"})) == 5
    assert documented_examples("def broken(:\n", {"broken"}) == []


def _examples(**rows: dict[str, str]) -> dict[str, dict[str, str]]:
    return {key: {"key": key, "expected": "5", **row} for key, row in rows.items()}


def test_documented_examples_are_evidence_and_a_wrong_result_is_flagged() -> None:
    targets = [Target("m.py", "f")]
    before = TraceRun(examples=_examples(a={"outcome": "timeout"}, b={"outcome": "fail", "value": "4"}))
    # The example that hung now gives the documented value and runs the changed line: evidence.
    good = TraceRun(examples=_examples(a={"outcome": "pass", "hit": "1"}, b={"outcome": "fail", "value": "4"}))
    verdict = judge(before, good, brt_prefix="t_brt", targets=targets)
    assert verdict.verdict == "confident" and verdict.exercised == 1 and verdict.examples_run == 2
    # A wrong value where the changed line ran is flagged; so is breaking one that held before.
    wrong = TraceRun(examples=_examples(a={"outcome": "fail", "value": "6", "hit": "1"}))
    flagged = judge(before, wrong, brt_prefix="t_brt", targets=targets)
    assert flagged.verdict == "unsure" and "documented example" in flagged.reasons[0]
    assert "gives 6, the documentation says 5" in flagged.example_failures[0]
    held = TraceRun(examples=_examples(b={"outcome": "pass"}))
    broke = TraceRun(examples=_examples(b={"outcome": "raise", "exc": "KeyError"}))
    assert "raise KeyError" in judge(held, broke, brt_prefix="t_brt", targets=targets).example_failures[0]
    # Unresolved examples (they need an earlier line of a session) are no evidence either way.
    unresolved = TraceRun(examples=_examples(a={"outcome": "unresolved", "hit": "1"}))
    assert judge(before, unresolved, brt_prefix="t_brt", targets=targets).exercised == 0


def test_harness_runs_documented_examples_in_the_module_namespace(tmp_path: Path) -> None:
    from patch_selectors.probe_harness import Tracer, run_examples

    (tmp_path / "clamping.py").write_text(CLAMP.replace("return min(x, high)", "return max(x, high)"))
    line = next(i for i, t in enumerate(CLAMP.splitlines(), 1) if "return min(x, high)" in t)
    tracer = Tracer([{"file": "clamping.py", "qualname": "clamp"}], "none", f"{tmp_path}/", {"clamping.py": [line]})
    examples = [{"file": "clamping.py", **e} for e in documented_examples(CLAMP, {"clamp"})[2:4]] + [
        {"file": "clamping.py", "source": "clamp(missing, 0, 1)", "expected": "0"}
    ]
    rows = {r["key"].split(">>> ")[1]: r for r in run_examples(examples, f"{tmp_path}/", tracer)}
    assert rows["clamp(-3, 0, 10)"]["outcome"] == "pass" and rows["clamp(-3, 0, 10)"]["hit"] == "0"
    assert rows["clamp(5, 0, 10)"]["outcome"] == "fail" and rows["clamp(5, 0, 10)"]["value"] == "10"
    assert rows["clamp(5, 0, 10)"]["hit"] == "1"
    assert rows["clamp(missing, 0, 1)"]["outcome"] == "unresolved"


def test_near_inputs_move_an_int_argument_across_another() -> None:
    from patch_selectors.probe_harness import _neighbour_values

    moved = _neighbour_values([5, 0, 10])
    # clamp(5, 0, 10) also runs with x just above hi and just below lo, and lo/hi moved around x.
    assert (0, 2, 11) in moved and (0, 1, -1) in moved and (2, 0, 4) in moved and (1, 0, 6) in moved
    assert _neighbour_values([3, "a", True]) == []  # one int only: bools and strings are not numbers here
    assert all(v != [4, 3][i] for i, _j, v in _neighbour_values([4, 3]))  # never the value it already has
    # percent(1, 5): the whole moved just below the part would be zero, out of the domain, so it is not tried.
    assert (1, 0, 0) not in _neighbour_values([1, 5]) and (1, 0, 2) in _neighbour_values([1, 5])


def test_near_inputs_also_take_values_that_occur_in_a_sequence_argument() -> None:
    from patch_selectors.probe_harness import _sibling_values

    # `index_of(xs, 5)` with 5 absent also runs with items that are present: first, middle and last.
    assert _sibling_values([[1, 3, 4, 9], 5]) == [(1, 0, 1), (1, 0, 4), (1, 0, 9)]
    assert _sibling_values(["abc", ["x", "abc"]]) == [(0, 1, "x")]
    # Only same-typed elements; bools and unhashable elements are left alone.
    assert _sibling_values([[[1], [2]], 5]) == [] and _sibling_values([[True], 1]) == []


def test_a_doubtful_fix_that_changes_what_the_code_returned_ranks_below_one_that_keeps_it() -> None:
    original = TraceRun(probes=_probes(k={"outcome": "ok", "value": "0"}, j={"outcome": "raise", "exc": "E"}))
    keeps = TraceRun(probes=_probes(k={"outcome": "ok", "value": "0"}, j={"outcome": "ok", "value": "1"}))
    departs = TraceRun(probes=_probes(k={"outcome": "ok", "value": "-1"}, j={"outcome": "ok", "value": "1"}))
    found = departures(original, {"a": keeps, "b": departs})
    assert found["a"] == [] and len(found["b"]) == 1 and "-1 here, 0 before" in found["b"][0]
    # Where no candidate keeps the original's result (the bug shows there), nobody departs.
    assert departures(original, {"b": departs}) == {"b": []}
    targets = [Target("m.py", "f")]
    doubted = judge(original, departs, brt_prefix="t", targets=targets, others_disagree=["k"], departs=found["b"])
    assert doubted.verdict == "unsure" and len(doubted.reasons) == 2
    # It is a tie-breaker only: a fix with nothing else against it is not made doubtful by it.
    clean_before = TraceRun(events={"t::a": [_event("f", 0, "(1,)", "1")]}, outcomes={"t::a": "passed"})
    clean_after = TraceRun(events={"t::a": [_event("f", 0, "(1,)", "1")]}, outcomes={"t::a": "passed"})
    assert judge(clean_before, clean_after, brt_prefix="t_brt", targets=targets, departs=["k"]).verdict == "confident"


TABLE = """\
class Kind:
    SINGLE = '"'
    MULTI = '\"\"\"'

    @classmethod
    def select(cls, literal=False, multiline=False):
        return {
            (False, False): cls.SINGLE,
            (False, True): cls.MULTI,
        }[(literal, multiline)]


def bounds(x):
    return (
        x - 1,
        x + 1,
    )


def pair(low, high):
    return (
        low,
        high,
    )


TRUTHY = (
    "yes",
    "on",
)
"""


def test_entries_of_a_literal_table_are_not_evidence_by_running_but_computed_elements_are() -> None:
    """Every call of select() runs both entry lines, whichever it looks up; bounds() and pair() use every line.

    A tuple of constants is a table too: a membership test runs every line, whichever word it matches.
    """
    assert table_entry_lines(TABLE) == {8, 9, 28, 29}
    # One line that only assigns a table is the table; a table inside other work on its line is not.
    assert table_entry_lines("x = 1\nlengths = [31, 28, 31, 30]\nnames: dict = {1: 'a', 2: 'b'}\n") == {2, 3}
    assert table_entry_lines("def f(k, y):\n    return {1: 'a'}[k] + y\n") == set()
    assert table_entry_lines("pair = [low, high]\n") == set()  # names are used every time
    assert table_entry_lines("def broken(:\n") == set()

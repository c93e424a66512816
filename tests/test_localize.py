"""Fault localization: traceback parsing, Ochiai, coverage contexts, ranking, and a real coverage run."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents.localize.ranking import (
    FRAME_BOOST,
    NAMED_BOOST,
    Frame,
    Location,
    all_contexts,
    context_test_name,
    coverage_from_json,
    named_function_lines,
    normalize_path,
    ochiai,
    parse_traceback_frames,
    rank_statements,
    split_outcomes,
    statement_starts,
)

INTERPRETER = """\
Traceback (most recent call last):
  File "/workspace/app/main.py", line 12, in <module>
    run()
  File "/workspace/app/core.py", line 40, in run
    return step(x)
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
  [Previous line repeated 2 more times]
ValueError: bad
"""

PYTEST_SHORT = """\
=================================== FAILURES ===================================
__________________________________ test_outer __________________________________
tests/test_deep.py:4: in test_outer
    assert outer(1) == 2
           ^^^^^^^^
pkg/deep.py:6: in outer
    return inner(
pkg/deep.py:2: in inner
    return d["missing"]
E   KeyError: 'missing'
=============================== warnings summary ===============================
pkg/deep.py:9: DeprecationWarning: old
  warnings.warn("old", DeprecationWarning)
=========================== short test summary info ============================
FAILED tests/test_deep.py::test_outer - KeyError: 'missing'
"""

PYTEST_LONG = """\
__________________________________ test_outer __________________________________

    def test_outer():
>       assert outer(1) == 2

tests/test_deep.py:4:<SP>
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

x = 1

    def outer(x):
        y = x + 1
>       return inner(
            {"a": y}
        )

pkg/deep.py:6:<SP>
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

d = {'a': 2}

    def inner(d):
>       return d["missing"]
E       KeyError: 'missing'

pkg/deep.py:2: KeyError
""".replace("<SP>", " ")  # pytest prints "path:LINE: " with a trailing space

PYTEST_NATIVE = """\
Traceback (most recent call last):
  File "/tmp/proj/tests/test_deep.py", line 4, in test_outer
    assert outer(1) == 2
  File "/tmp/proj/pkg/deep.py", line 2, in inner
    return d["missing"]
KeyError: 'missing'
"""

CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 3, in f
    return d[k]
KeyError: 'k'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "b.py", line 9, in g
    f()
  File "a.py", line 5, in f
    raise LookupError
LookupError
"""


def _triples(frames: list[Frame]) -> list[tuple[str, int, str, int]]:
    return [(f.file, f.line, f.function, f.depth) for f in frames]


def test_interpreter_traceback_strips_workspace_and_numbers_depth() -> None:
    assert _triples(parse_traceback_frames(INTERPRETER)) == [
        ("app/main.py", 12, "<module>", 2),
        ("app/core.py", 40, "run", 1),
        ("/usr/lib/python3.11/json/__init__.py", 346, "loads", 0),
    ]


def test_pytest_short_skips_the_warnings_summary() -> None:
    assert _triples(parse_traceback_frames(PYTEST_SHORT)) == [
        ("tests/test_deep.py", 4, "test_outer", 2),
        ("pkg/deep.py", 6, "outer", 1),
        ("pkg/deep.py", 2, "inner", 0),
    ]


def test_pytest_long_takes_function_names_from_the_shown_source() -> None:
    assert _triples(parse_traceback_frames(PYTEST_LONG)) == [
        ("tests/test_deep.py", 4, "test_outer", 2),
        ("pkg/deep.py", 6, "outer", 1),
        ("pkg/deep.py", 2, "inner", 0),
    ]


def test_pytest_native_and_line_formats_with_root() -> None:
    frames = parse_traceback_frames(PYTEST_NATIVE, root="/tmp/proj/")
    assert [(f.file, f.line, f.depth) for f in frames] == [
        ("tests/test_deep.py", 4, 1),
        ("pkg/deep.py", 2, 0),
    ]
    line_format = parse_traceback_frames("/tmp/proj/pkg/deep.py:11: RecursionError: maximum", root="/tmp/proj")
    assert _triples(line_format) == [("pkg/deep.py", 11, "", 0)]


def test_chained_exceptions_are_separate_tracebacks() -> None:
    frames = parse_traceback_frames(CHAINED)
    assert [(f.file, f.line, f.depth) for f in frames] == [("a.py", 3, 0), ("b.py", 9, 1), ("a.py", 5, 0)]


def test_normalize_path() -> None:
    assert normalize_path("/workspace/src/x.py") == "src/x.py"
    assert normalize_path("./src/x.py") == "src/x.py"
    assert normalize_path("/home/u/repo/src/x.py", "/home/u/repo") == "src/x.py"
    assert normalize_path("/usr/lib/x.py", "/home/u/repo") == "/usr/lib/x.py"


def test_ochiai_formula() -> None:
    coverage = {"m.py": {1: {"f1", "p1", "p2"}, 2: {"f1", "f2"}, 3: {"p1"}, 4: {"f2", "p1"}}}
    scores = ochiai(coverage, failing={"f1", "f2"}, passing={"p1", "p2"})
    assert scores[("m.py", 2)] == pytest.approx(1.0)
    assert scores[("m.py", 1)] == pytest.approx(1 / math.sqrt(2 * 3))
    assert scores[("m.py", 3)] == 0.0
    assert scores[("m.py", 4)] == pytest.approx(1 / math.sqrt(2 * 2))
    assert ochiai(coverage, failing=set(), passing={"p1"})[("m.py", 1)] == 0.0


def test_coverage_json_contexts_are_normalized_and_relative() -> None:
    data = {
        "meta": {"format": 3},
        "files": {
            "pkg/m.py": {"contexts": {"1": [""], "2": ["test_m.test_p", "test_m.test_ok"], "3": ["test_m.test_p"]}},
            "/repo/pkg/n.py": {"contexts": {"5": ["tests/test_n.py::test_a[1]|run", "ci|tests.test_n.test_b"]}},
            "/usr/lib/python3.11/os.py": {"contexts": {"1": ["test_m.test_p"]}},
        },
    }
    coverage = coverage_from_json(data, "/repo")
    assert coverage == {
        "pkg/m.py": {2: {"test_m.test_p", "test_m.test_ok"}, 3: {"test_m.test_p"}},
        "pkg/n.py": {5: {"tests/test_n.py::test_a[1]", "tests.test_n.test_b"}},
    }
    assert context_test_name("tests/test_n.py::test_a|setup") == "tests/test_n.py::test_a"
    assert all_contexts(coverage) == {
        "test_m.test_p",
        "test_m.test_ok",
        "tests/test_n.py::test_a[1]",
        "tests.test_n.test_b",
    }


def test_split_outcomes_maps_functions_classes_packages_and_parameters() -> None:
    contexts = {
        "test_m.test_p",
        "test_m.test_ok",
        "tests.test_m.TestK.test_meth",
        "tests/test_n.py::test_a[1]",
        "tests/test_n.py::test_a[2]",
        "other.test_p",
        "test_m.test_unknown",
    }
    failed = ["tests/test_m.py::test_p[5-5]", "tests/test_n.py::test_a[1]"]
    passed = [
        "tests/test_m.py::test_p[1-2]",
        "tests/test_m.py::test_ok",
        "tests/test_m.py::TestK::test_meth",
        "tests/test_n.py::test_a[2]",
    ]
    failing, passing = split_outcomes(contexts, failed, passed)
    # One failing parameter makes the whole function failing; unknown contexts are in neither set.
    assert failing == {"test_m.test_p", "tests/test_n.py::test_a[1]"}
    assert passing == {"test_m.test_ok", "tests.test_m.TestK.test_meth", "tests/test_n.py::test_a[2]"}


def test_statement_starts_folds_continuation_lines() -> None:
    source = "def f(a):\n    x = g(\n        a,\n    )\n    if (a and\n            x):\n        return 1\n"
    starts = statement_starts(source)
    assert starts[3] == 2 and starts[4] == 2 and starts[6] == 5 and starts[7] == 7


def test_rank_combines_sbfl_and_frames_and_excludes_tests() -> None:
    sbfl = {
        ("m.py", 3): 1.0,
        ("m.py", 5): 1.0,
        ("m.py", 7): 0.5,
        ("tests/test_m.py", 2): 1.0,
        ("vendor.py", 1): 1.0,
    }
    frames = [Frame("tests/test_m.py", 2, "t", 2), Frame("m.py", 7, "f", 1), Frame("m.py", 5, "g", 0)]
    ranked = rank_statements(sbfl, frames, {"m.py", "tests/test_m.py"}, {"tests/test_m.py"}, top=10)
    assert [(loc.file, loc.line) for loc in ranked] == [("m.py", 5), ("m.py", 3), ("m.py", 7)]
    assert ranked[0].score == pytest.approx(1.0 + FRAME_BOOST)
    assert ranked[2].score == pytest.approx(0.5 + FRAME_BOOST / 2)
    assert any("deepest" in r for r in ranked[0].reasons)


def test_rank_with_frames_only_and_ties() -> None:
    issue = [Frame("a.py", 9, "g", 1), Frame("a.py", 4, "f", 0)]
    brt = [Frame("b.py", 2, "h", 0)]
    ranked = rank_statements({}, issue + brt, set(), set(), top=5)
    # Both deepest frames tie at FRAME_BOOST: file order breaks the tie; the outer frame comes last.
    assert [(loc.file, loc.line) for loc in ranked] == [("a.py", 4), ("b.py", 2), ("a.py", 9)]


def test_rank_with_sbfl_only_is_deterministic_and_capped() -> None:
    sbfl = {("b.py", 1): 0.7, ("a.py", 9): 0.7, ("a.py", 2): 0.7, ("a.py", 5): 0.0}
    ranked = rank_statements(sbfl, [], {"a.py", "b.py"}, set(), top=2)
    assert [(loc.file, loc.line) for loc in ranked] == [("a.py", 2), ("a.py", 9)]


def test_rank_ties_go_to_files_the_report_names() -> None:
    sbfl = {("pkg/node.py", 3): 0.7, ("pkg/sort_graph.py", 5): 0.7, ("pkg/sort_graph.py", 2): 0.9}
    files = {"pkg/node.py", "pkg/sort_graph.py"}
    for mentioned in (["sort_graph"], ["sort_graph.py"], ["pkg/sort_graph.py"]):
        ranked = rank_statements(sbfl, [], files, set(), top=3, mentioned=mentioned)
        assert [(loc.file, loc.line) for loc in ranked] == [
            ("pkg/sort_graph.py", 2),
            ("pkg/sort_graph.py", 5),
            ("pkg/node.py", 3),
        ]
    # A mention never outranks a higher score.
    ranked = rank_statements(sbfl, [], files, set(), top=1, mentioned=["node"])
    assert ranked[0].line == 2


def test_rank_folds_a_traceback_line_into_its_statement() -> None:
    source = "def f(d):\n    return g(\n        d['k'],\n    )\n"
    sbfl = {("m.py", 2): 0.6}
    frames = [Frame("m.py", 3, "f", 0)]
    ranked = rank_statements(sbfl, frames, {"m.py"}, set(), top=3, sources={"m.py": source})
    assert [(loc.line, loc.score) for loc in ranked] == [(2, pytest.approx(0.6 + FRAME_BOOST))]


def test_rank_drops_nested_def_lines_when_sources_are_known() -> None:
    source = "def outer(xs):\n    def key(x):\n        return -x\n    return sorted(xs, key=key)\n"
    sbfl = {("m.py", 2): 1.0, ("m.py", 3): 1.0, ("m.py", 4): 0.9}
    ranked = rank_statements(sbfl, [], {"m.py"}, set(), top=5, sources={"m.py": source})
    assert [loc.line for loc in ranked] == [3, 4]


_PROGRAM = """\
def discount(price, member):
    if member:
        return price * 0.8
    return price


def shipping(weight):
    if weight > 10:
        return 5 + weight
    return 5
"""

_TESTS = """\
import pytest

from shop import discount, shipping


def test_heavy_parcel_pays_half_its_weight():
    assert shipping(20) == 15


@pytest.mark.parametrize("weight", [1, 10])
def test_light_parcel_pays_flat_rate(weight):
    assert shipping(weight) == 5


def test_members_get_a_discount():
    assert discount(10, True) == 8
"""


def test_real_coverage_run_ranks_the_faulty_line_first(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(_PROGRAM)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(_TESTS)
    (tmp_path / ".coveragerc").write_text("[run]\ndynamic_context = test_function\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "coverage",
            "run",
            "-m",
            "pytest",
            "-q",
            "-rA",
            "--tb=short",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    subprocess.run(
        [sys.executable, "-m", "coverage", "json", "--show-contexts", "-o", "cov.json"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    coverage = coverage_from_json(json.loads((tmp_path / "cov.json").read_text()), str(tmp_path))
    failed = re.findall(r"^FAILED (\S+)", run.stdout, re.M)
    passed = re.findall(r"^PASSED (\S+)", run.stdout, re.M)
    assert failed == ["tests/test_shop.py::test_heavy_parcel_pays_half_its_weight"] and len(passed) == 3
    failing, passing = split_outcomes(all_contexts(coverage), failed, passed)
    # coverage's test_function contexts are "<module>.<function>": the parametrized test is one context.
    assert failing == {"test_shop.test_heavy_parcel_pays_half_its_weight"}
    assert passing == {"test_shop.test_light_parcel_pays_flat_rate", "test_shop.test_members_get_a_discount"}
    frames = parse_traceback_frames(run.stdout, root=str(tmp_path))
    ranked = rank_statements(
        ochiai(coverage, failing, passing),
        frames,
        {"shop.py", "tests/test_shop.py"},
        {"tests/test_shop.py"},
        top=5,
        sources={"shop.py": _PROGRAM},
    )
    assert (ranked[0].file, ranked[0].line) == ("shop.py", 9)
    assert ranked[0].score == pytest.approx(1.0)
    assert all(loc.file == "shop.py" for loc in ranked)


@pytest.mark.parametrize("text", ["", "no traceback here\n", "E   assert 1 == 2\n"])
def test_text_without_frames(text: str) -> None:
    assert parse_traceback_frames(textwrap.dedent(text)) == []


def test_rank_ties_go_to_functions_the_report_names() -> None:
    # One module, every line covered by the same tests (equal Ochiai): the function the user wrote about
    # (`Ledger.balance`, or plain `fee`) is tried before the alphabetically or numerically earlier lines.
    source = (
        "def fee(x):\n    return x * 2\n\n\nclass Ledger:\n    def total(self, xs):\n        return sum(xs)\n\n"
        "    def balance(self, xs):\n        return self.total(xs) - fee(1)\n"
    )
    sbfl = {("m.py", 2): 0.5, ("m.py", 7): 0.5, ("m.py", 10): 0.5}
    ranked = rank_statements(sbfl, [], {"m.py"}, set(), top=3, sources={"m.py": source}, mentioned=["Ledger.balance"])
    assert [loc.line for loc in ranked] == [10, 2, 7]
    ranked = rank_statements(sbfl, [], {"m.py"}, set(), top=3, sources={"m.py": source}, mentioned=["fee"])
    assert [loc.line for loc in ranked] == [2, 7, 10]
    assert named_function_lines(source, {"total"}) == {6, 7}


def test_search_tries_caller_frames_beyond_the_top_locations() -> None:
    from agents.repair.classic.search import ClassicSearch, SearchLimits
    from agents.reproduce.brt import Reproduction

    covered = [Location("m.py", n, 0.9, ("ochiai=0.900",)) for n in range(1, 11)]
    caller = Location("app.py", 40, 0.25, ("traceback frame #2 from the deepest (+0.250)",))
    plain = Location("m.py", 50, 0.1, ("ochiai=0.100",))
    repro = Reproduction(brt=None, before=None, locations=[*covered, caller, plain])  # type: ignore[arg-type]
    search = ClassicSearch(repro, None, None, None, SearchLimits(max_locations=8))  # type: ignore[arg-type]
    order = search._location_order(0)
    assert order[:8] == covered[:8]
    assert caller in order and plain not in order


def test_later_trajectories_draw_their_own_lines_from_a_tie_at_the_cut() -> None:
    from agents.repair.classic.search import ClassicSearch, SearchLimits
    from agents.reproduce.brt import Reproduction

    # A small program: one line only the failing test runs, then twenty lines every test runs (one score).
    top = Location("m.py", 30, 1.0, ("ochiai=1.000",))
    tied = [Location("m.py", n, 0.7, ("ochiai=0.700",)) for n in range(2, 22)]
    below = Location("m.py", 40, 0.1, ("ochiai=0.100",))
    repro = Reproduction(brt=None, before=None, locations=[top, *tied, below])  # type: ignore[arg-type]
    search = ClassicSearch(repro, None, None, None, SearchLimits(max_locations=8))  # type: ignore[arg-type]
    assert search._location_order(0) == [top, *tied[:7]]  # the first trajectory keeps the ranking
    drawn = [set(search._location_order(seed)) for seed in range(1, 5)]
    assert all(top in d and below not in d and len(d) == 8 for d in drawn)
    # Together the later trajectories reach tied lines the cut leaves out, each its own sample.
    assert len(set().union(*drawn) - {top, *tied[:7]}) >= 7 and len({frozenset(d) for d in drawn}) == 4
    assert drawn == [set(search._location_order(seed)) for seed in range(1, 5)]  # the same draw every run


def test_named_function_lines_in_covered_files_are_noted_not_reordered() -> None:
    from agents.localize.ranking import NAMED_NOTE

    # A helper only the failing call reaches outranks the entry point the report names, which many passing
    # tests run; the entry point's lines keep their score and order but are marked for a later try.
    source = "def _part(x):\n    return x[1:]\n\n\ndef tidy(s):\n    s = s.strip()\n    return _part(s)\n"
    sbfl = {("t.py", 2): 0.7, ("t.py", 6): 0.3, ("t.py", 7): 0.3}
    ranked = rank_statements(sbfl, [], {"t.py"}, set(), top=5, mentioned=["tidy"], noted={"t.py": source})
    assert [(loc.line, loc.score) for loc in ranked] == [(2, 0.7), (6, 0.3), (7, 0.3)]
    assert [NAMED_NOTE in loc.reasons for loc in ranked] == [False, True, True]


def test_search_tries_named_function_lines_beyond_the_top_locations() -> None:
    from agents.localize.ranking import NAMED_NOTE
    from agents.repair.classic.search import ClassicSearch, SearchLimits
    from agents.reproduce.brt import Reproduction

    covered = [Location("m.py", n, 0.9, ("ochiai=0.900",)) for n in range(1, 11)]
    entry = Location("m.py", 60, 0.2, ("ochiai=0.200", NAMED_NOTE))
    plain = Location("m.py", 50, 0.1, ("ochiai=0.100",))
    repro = Reproduction(brt=None, before=None, locations=[*covered, entry, plain])  # type: ignore[arg-type]
    search = ClassicSearch(repro, None, None, None, SearchLimits(max_locations=8))  # type: ignore[arg-type]
    order = search._location_order(0)
    assert order[:8] == covered[:8]
    assert entry in order and plain not in order
    none = ClassicSearch(repro, None, None, None, SearchLimits(max_locations=8, max_named_locations=0))  # type: ignore[arg-type]
    assert entry not in none._location_order(0)


def test_rank_can_keep_each_line_of_a_long_statement_apart() -> None:
    source = "def f(d):\n    return g(\n        d['k'],\n    )\n"
    sbfl = {("m.py", 2): 0.6, ("m.py", 3): 0.6}
    kept = rank_statements(sbfl, [], {"m.py"}, set(), top=3, sources={"m.py": source}, fold=False)
    assert [loc.line for loc in kept] == [2, 3]
    folded = rank_statements(sbfl, [], {"m.py"}, set(), top=3, sources={"m.py": source})
    assert [loc.line for loc in folded] == [2]


def test_a_caller_frame_ranks_among_the_top_candidates_with_a_busy_crash_site() -> None:
    from agents.localize.ranking import FRAME_STRIDE

    # The crash site (`_coerce`, reached only by the failing test) has a dozen lines with Ochiai 1.0; the
    # faulty line is its caller in `headers.py`, also run by passing tests, so its own Ochiai is low. The
    # reporter pasted the traceback from an installed copy, so its paths are not the repo's.
    sbfl = {("conf/values.py", n): 1.0 for n in range(20, 32)}
    sbfl |= {("conf/headers.py", 14): 0.4, ("conf/headers.py", 15): 0.4, ("conf/cli.py", 8): 0.2}
    report = [
        Frame("/home/ana/.venv/lib/python3.12/site-packages/conf/cli.py", 8, "main", 2),
        Frame("/home/ana/.venv/lib/python3.12/site-packages/conf/headers.py", 14, "parse_header", 1),
        Frame("/home/ana/.venv/lib/python3.12/site-packages/conf/values.py", 25, "_coerce", 0),
    ]
    files = {"conf/cli.py", "conf/headers.py", "conf/values.py", "tests/test_headers.py"}
    ranked = rank_statements(sbfl, report, files, {"tests/test_headers.py"}, top=8)
    spots = [(loc.file, loc.line) for loc in ranked]
    assert spots[0] == ("conf/values.py", 25)
    # Frame #2 is placed no lower than position 2 * FRAME_STRIDE, frame #3 no lower than 3 * FRAME_STRIDE.
    assert spots.index(("conf/headers.py", 14)) < 2 * FRAME_STRIDE
    assert spots.index(("conf/cli.py", 8)) < 3 * FRAME_STRIDE
    caller = ranked[spots.index(("conf/headers.py", 14))]
    assert any("ranked with SBFL" in r for r in caller.reasons)
    # Scores stay ordered, so a trajectory that re-sorts by (jittered) score keeps the caller near the top.
    assert [loc.score for loc in ranked] == sorted((loc.score for loc in ranked), reverse=True)
    # The untouched line of the same caller (not a frame) is not promoted.
    assert ("conf/headers.py", 15) not in spots


def test_frames_from_the_reporters_machine_map_onto_repo_files() -> None:
    from agents.localize.ranking import repo_file_for

    files = {"shop/cart.py", "cart.py", "json/__init__.py"}
    assert repo_file_for("/srv/app/src/shop/cart.py", files) == "shop/cart.py"
    assert repo_file_for("/home/bob/cart.py", files) == "cart.py"
    assert repo_file_for("shop/cart.py", files) == "shop/cart.py"
    assert repo_file_for("/usr/lib/python3.11/json/__init__.py", files) is None
    assert repo_file_for("/opt/venv/lib/python3.11/site-packages/shop/cart.py", files) == "shop/cart.py"
    assert repo_file_for("/srv/app/other.py", files) is None


def test_a_function_named_only_in_prose_is_ranked() -> None:
    # "`apply_coupon` ignores the expiry date": no traceback, and the failing test's coverage says nothing
    # about it (the report's example went through another entry point).
    source = (
        "def total(items):\n    return sum(items)\n\n\n"
        "def apply_coupon(price, coupon):\n    if coupon.expired:\n        pass\n    return price - coupon.amount\n"
    )
    sbfl = {("shop.py", 2): 0.6}
    ranked = rank_statements(
        sbfl, [], {"shop.py"}, set(), top=5, sources={"shop.py": source}, mentioned=["apply_coupon"], fold=False
    )
    spots = [loc.line for loc in ranked]
    assert spots[0] == 2
    assert {6, 7, 8} <= set(spots) and 5 not in spots
    assert all(any("names" in r for r in loc.reasons) for loc in ranked[1:])
    # Among equally covered lines, the named function's are boosted ahead of the others'.
    covered = {("shop.py", 2): 0.5, ("shop.py", 6): 0.5, ("shop.py", 8): 0.5}
    ranked = rank_statements(covered, [], {"shop.py"}, set(), top=3, sources={"shop.py": source}, mentioned=["total"])
    assert [loc.line for loc in ranked] == [2, 6, 8]
    assert ranked[0].score == pytest.approx(0.5 + NAMED_BOOST)
    # Without the report naming it, an uncovered function is not a candidate.
    assert [loc.line for loc in rank_statements(sbfl, [], {"shop.py"}, set(), top=5, sources={"shop.py": source})] == [
        2
    ]


def test_localization_reads_the_files_of_suspects_frames_and_named_functions() -> None:
    from agents.localize.sbfl import _read_sources

    texts = {
        "pkg/a.py": "def covered():\n    return 1\n",
        "pkg/b.py": "def shown_in_traceback():\n    return 2\n",
        "pkg/c.py": "def parse_row(line):\n    return line.split(',')\n",
        "pkg/d.py": "def unrelated():\n    return 4\n",
    }

    class Files:
        def read_file(self, rel: str) -> str:
            return texts[rel]

    frames = [Frame("/home/u/proj/pkg/b.py", 2, "shown_in_traceback", 0)]
    read = _read_sources(Files(), {"pkg/a.py"}, set(texts), frames, ["parse_row", "print"])  # type: ignore[arg-type]
    assert set(read) == {"pkg/a.py", "pkg/b.py", "pkg/c.py"}

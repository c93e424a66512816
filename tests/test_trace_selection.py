"""The assessment's trace run takes only the tests that entered a touched function at baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patch_selectors.assess_run import trace_selection
from patch_selectors.assessment import Target
from patch_selectors.reviewers import ReviewEnv
from sandboxes.testrun import Baseline

SOURCE = (
    "import functools\n"  # 1
    "\n"
    "\n"
    "@functools.lru_cache\n"  # 4
    "def area(w, h):\n"  # 5
    "    return w * h\n"  # 6
    "\n"
    "\n"
    "class Box:\n"  # 9
    "    def volume(self, d):\n"  # 10
    "        return area(1, 2) * d\n"  # 11
)
TESTS = {
    "tests/test_geo.py::test_area": "passed",
    "tests/test_geo.py::TestBox::test_volume": "passed",
    "tests/test_geo.py::test_unrelated": "passed",
    "tests/test_geo.py::test_broken": "failed",
}
# Contexts as the compact coverage export writes them: the test function's dotted name.
COVERAGE = {
    "geo.py": {
        1: {""},
        4: {""},
        5: {""},
        6: {"tests.test_geo.test_area", "tests.test_geo.TestBox.test_volume", "tests.test_geo.test_broken"},
        11: {"tests.test_geo.TestBox.test_volume"},
    }
}


def _env(coverage: Any) -> ReviewEnv:
    async def no_sandbox(workspace: Path) -> Any:
        raise AssertionError("not used")

    baseline = Baseline(tests=dict(TESTS), coverage=coverage)
    return ReviewEnv(Path("/nonexistent"), Path("/nonexistent"), None, baseline, no_sandbox)  # type: ignore[arg-type]


def test_the_tests_that_ran_a_touched_body_are_chosen_failing_ones_included() -> None:
    chosen = trace_selection(_env(COVERAGE), [Target("geo.py", "area")], {"geo.py": SOURCE})
    assert chosen == [
        "tests/test_geo.py::TestBox::test_volume",
        "tests/test_geo.py::test_area",
        "tests/test_geo.py::test_broken",
    ]
    # The import-time lines (decorator, def) do not drag in every test that imported the module.
    method = trace_selection(_env(COVERAGE), [Target("geo.py", "Box.volume")], {"geo.py": SOURCE})
    assert method == ["tests/test_geo.py::TestBox::test_volume"]


def test_the_whole_suite_runs_when_coverage_cannot_say() -> None:
    sources = {"geo.py": SOURCE}
    assert trace_selection(_env(None), [Target("geo.py", "area")], sources) is None  # no coverage measured
    assert trace_selection(_env(COVERAGE), [Target("geo.py", "perimeter")], sources) is None  # new in the fix
    assert trace_selection(_env(COVERAGE), [Target("other.py", "f")], {"other.py": "def f():\n    pass\n"}) is None
    assert trace_selection(_env(COVERAGE), [], sources) is None


def test_a_function_no_test_entered_selects_no_suite_test() -> None:
    source = SOURCE + "\n\ndef unused():\n    return 0\n"
    assert trace_selection(_env(COVERAGE), [Target("geo.py", "unused")], {"geo.py": source}) == []

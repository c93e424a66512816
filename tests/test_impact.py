"""Test impact selection: which tests a candidate edit runs first, and when it must fall back to the full suite."""

from __future__ import annotations

from agents.localize.impact import changed_lines, fallback_reason, select_tests

SOURCE = """import os

LIMIT = 10


def helper(x, default=LIMIT):
    y = x + 1
    return y * 2


class Shape:
    sides = 4

    def area(self, w):
        return w * w


def other(a):
    return a - 1
"""

CONFTEST = """import pytest


@pytest.fixture
def value():
    return 41
"""

#: file -> line -> test contexts, as coverage_from_json gives them (test_function contexts).
COVERAGE = {
    "pkg/mod.py": {
        7: {"test_mod.test_helper"},
        8: {"test_mod.test_helper"},
        15: {"test_mod.test_area", "test_mod.TestShape.test_area_zero"},
        19: {"test_mod.test_other"},
    }
}
NODE_IDS = [
    "tests/test_mod.py::test_helper",
    "tests/test_mod.py::test_area",
    "tests/test_mod.py::TestShape::test_area_zero",
    "tests/test_mod.py::test_other",
    "tests/test_mod.py::test_unrelated",
]


def edit(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new, 1)


def test_function_body_edit_selects_the_tests_that_ran_the_line() -> None:
    impact = select_tests(COVERAGE, "pkg/mod.py", SOURCE, edit(SOURCE, "return y * 2", "return y * 3"), NODE_IDS)
    assert not impact.full
    assert impact.tests == ("tests/test_mod.py::test_helper",)


def test_method_edit_selects_class_and_function_tests() -> None:
    impact = select_tests(COVERAGE, "pkg/mod.py", SOURCE, edit(SOURCE, "return w * w", "return w * 2"), NODE_IDS)
    assert set(impact.tests) == {"tests/test_mod.py::test_area", "tests/test_mod.py::TestShape::test_area_zero"}


def test_module_level_statement_falls_back_to_the_full_suite() -> None:
    impact = select_tests(COVERAGE, "pkg/mod.py", SOURCE, edit(SOURCE, "LIMIT = 10", "LIMIT = 11"), NODE_IDS)
    assert impact.full and "module-level" in impact.reason


def test_def_header_default_and_class_body_are_module_level() -> None:
    header = edit(SOURCE, "def helper(x, default=LIMIT):", "def helper(x, default=LIMIT + 1):")
    assert select_tests(COVERAGE, "pkg/mod.py", SOURCE, header, NODE_IDS).full
    class_attr = edit(SOURCE, "    sides = 4", "    sides = 5")
    assert select_tests(COVERAGE, "pkg/mod.py", SOURCE, class_attr, NODE_IDS).full


def test_conftest_and_fixture_fall_back_to_the_full_suite() -> None:
    changed = edit(CONFTEST, "return 41", "return 42")
    impact = select_tests(COVERAGE, "conftest.py", CONFTEST, changed, NODE_IDS)
    assert impact.full and "conftest" in impact.reason
    # The same fixture in an ordinary module (a pytest plugin of the project) is still a fixture.
    impact = select_tests(COVERAGE, "pkg/plugin.py", CONFTEST, changed, NODE_IDS)
    assert impact.full and "fixture" in impact.reason


def test_unknown_file_and_test_files_fall_back() -> None:
    assert select_tests({}, "pkg/mod.py", SOURCE, edit(SOURCE, "return a - 1", "return a + 1"), NODE_IDS).full
    assert fallback_reason("tests/test_mod.py", "def test_x():\n    assert 1\n", {2}) is not None


def test_uncovered_body_line_selects_no_test() -> None:
    coverage = {"pkg/mod.py": {7: {"test_mod.test_helper"}}}
    impact = select_tests(coverage, "pkg/mod.py", SOURCE, edit(SOURCE, "return a - 1", "return a + 1"), NODE_IDS)
    assert not impact.full and impact.tests == ()


def test_changed_lines_names_replacements_and_insertion_neighbours() -> None:
    assert changed_lines("a\nb\nc\n", "a\nB\nc\n") == {2}
    assert changed_lines("a\nb\nc\n", "a\nb\nx\nc\n") == {2, 3}
    assert changed_lines("a\nb\n", "a\nb\n") == set()

"""Report parsers on real-format samples (tests/samples/reports): per-test ids and statuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes.results import (
    parse_cargo_test,
    parse_go_test_json,
    parse_jest_json,
    parse_junit_xml,
    parse_report,
    parse_surefire_xml,
    summarize,
)

SAMPLES = Path(__file__).parent / "samples" / "reports"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_pytest_junit_from_a_real_run() -> None:
    tests = parse_junit_xml(sample("pytest-junit.xml"))
    assert tests == {
        "tests/test_sample.py::test_ok": "passed",
        "tests/test_sample.py::test_param[1]": "passed",
        "tests/test_sample.py::test_param[2]": "failed",
        "tests/test_sample.py::TestThing::test_skip": "skipped",
        "tests/test_sample.py::TestThing::test_error": "error",
        "tests/test_sample.py::test_known_bug": "skipped",  # xfail is reported as skipped
    }


def test_go_test_json_subtests_skips_and_build_failures() -> None:
    tests = parse_go_test_json(sample("go-test.json"))
    assert tests == {
        "example.com/calc/TestAdd": "passed",
        "example.com/calc/TestDiv/by_one": "passed",
        "example.com/calc/TestDiv/by_zero": "failed",
        "example.com/calc/TestDiv": "failed",
        "example.com/calc/TestSlow": "skipped",
        "example.com/broken": "error",
    }


def test_go_test_json_ignores_non_json_lines() -> None:
    text = "go: downloading example.com/x v1.0.0\n" + sample("go-test.json") + "\nnot json {\n"
    assert parse_go_test_json(text)["example.com/calc/TestAdd"] == "passed"


def test_cargo_test_qualifies_ids_by_target() -> None:
    tests = parse_cargo_test(sample("cargo-test.txt"))
    assert tests == {
        "calc::tests::adds": "passed",
        "calc::tests::divides": "failed",
        "calc::tests::slow": "skipped",
        "integration::roundtrip": "passed",
        "integration::parse::rejects_empty": "passed",
        "doc:calc::src/lib.rs - add (line 3)": "passed",
    }


def test_jest_json_statuses_and_suites_that_failed_to_load() -> None:
    tests = parse_jest_json(sample("jest.json"))
    assert tests == {
        "src/sum.test.js > sum > adds numbers": "passed",
        "src/sum.test.js > sum > edge cases > handles empty input": "failed",
        "src/sum.test.js > sum > big numbers": "skipped",
        "src/sum.test.js > subtracts": "skipped",
        "src/sum.test.js > multiplies": "passed",
        "src/broken.test.js": "error",
    }


def test_vitest_json_is_read_by_the_same_parser() -> None:
    tests = parse_jest_json("npm warn something\n" + sample("vitest.json"))
    assert summarize(tests) == {"passed": 2, "failed": 1, "error": 0, "skipped": 1}
    assert tests["test/parse.test.ts > parse > rejects junk"] == "failed"


def test_surefire_reports_across_files() -> None:
    tests = parse_surefire_xml([sample("TEST-com.example.CalcTest.xml"), sample("TEST-com.example.ParserTest.xml")])
    assert tests == {
        "com.example.CalcTest#adds": "passed",
        "com.example.CalcTest#divides": "failed",
        "com.example.CalcTest#explodes": "error",
        "com.example.CalcTest#later": "skipped",
        "com.example.CalcTest#flaky": "passed",  # failed once, passed on rerun
        "com.example.ParserTest#parsesEmpty": "passed",
    }


@pytest.mark.parametrize(
    "fmt", ["junit-xml", "surefire-xml", "go-json", "cargo", "jest-json"], ids=lambda f: f"garbage-{f}"
)
def test_every_parser_tolerates_garbage(fmt: str) -> None:
    assert parse_report(fmt, ["<not xml {not json", ""]) == {}


def test_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: junit-xml"):
        parse_report("tap", [""])

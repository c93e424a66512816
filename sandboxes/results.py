"""Test report parsers (no I/O): JUnit XML, go test -json, cargo test, jest/vitest JSON, Maven Surefire XML.

Every parser maps a test id to one of passed, failed, error, skipped.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable

STATUSES = ("passed", "failed", "error", "skipped")


def parse_junit_xml(text: str) -> dict[str, str]:
    """pytest JUnit XML -> {"path/test_x.py::[Cls::]name": status}."""
    tests: dict[str, str] = {}
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return tests
    for case in root.iter("testcase"):
        test_id = _pytest_id(case.get("classname", ""), case.get("name", ""), case.get("file"))
        tests[test_id] = _case_status(case)
    return tests


def junit_collection_errors(text: str) -> dict[str, str]:
    """Test ids of pytest's collection failures (a module that did not import) -> the error text pytest wrote."""
    errors: dict[str, str] = {}
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return errors
    for case in root.iter("testcase"):
        for child in case:
            if child.tag == "error" and "collection failure" in (child.get("message") or ""):
                test_id = _pytest_id(case.get("classname", ""), case.get("name", ""), case.get("file"))
                errors[test_id] = child.text or ""
    return errors


def _case_status(case: ET.Element) -> str:
    status = "passed"
    for child in case:
        if child.tag == "failure":
            status = "failed"
        elif child.tag == "error":
            status = "error"
        elif child.tag == "skipped":
            status = "skipped"
    return status


def _pytest_id(classname: str, name: str, file_attr: str | None) -> str:
    # pytest writes classname "tests.test_x" or "tests.test_x.TestCls"; rebuild "tests/test_x.py::[Cls::]name".
    parts = classname.split(".") if classname else []
    cls: list[str] = []
    while parts and parts[-1][:1].isupper():
        cls.insert(0, parts.pop())
    module = "/".join(parts) + ".py" if parts else (file_attr or "")
    return "::".join([module, *cls, name])


def parse_surefire_xml(reports: Iterable[str]) -> dict[str, str]:
    """Maven Surefire/Failsafe TEST-*.xml documents -> {"pkg.Class#method": status}."""
    tests: dict[str, str] = {}
    for text in reports:
        try:
            root = ET.fromstring(text)
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            cls = case.get("classname") or root.get("name") or ""
            tests[f"{cls}#{case.get('name', '')}"] = _case_status(case)
    return tests


def parse_go_test_json(text: str) -> dict[str, str]:
    """`go test -json` event stream -> {"module/pkg/TestName[/sub]": status}; a build failure is an error."""
    tests: dict[str, str] = {}
    failed_packages: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        action, package, name = event.get("Action"), event.get("Package", ""), event.get("Test")
        if name and action in ("pass", "fail", "skip"):
            tests[f"{package}/{name}"] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
        elif not name and action == "fail":
            failed_packages.add(package)
    for package in failed_packages:
        if not any(t.startswith(package + "/") for t in tests):
            tests[package] = "error"  # the package did not build, or its TestMain failed
    return tests


_CARGO_RESULT = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored(?:, .*)?|bench:.*)$")
_CARGO_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)(?: \((\S+)\))?")
_CARGO_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)")


def parse_cargo_test(text: str) -> dict[str, str]:
    """Plain `cargo test` output -> {"target::path::name": status}; ids are qualified by the test binary."""
    tests: dict[str, str] = {}
    target = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        running = _CARGO_RUNNING.match(line)
        if running:
            target = _cargo_target(running.group(2) or running.group(1))
            continue
        doc = _CARGO_DOCTESTS.match(line)
        if doc:
            target = f"doc:{doc.group(1)}"
            continue
        match = _CARGO_RESULT.match(line)
        if match:
            name, outcome = match.groups()
            status = "passed" if outcome == "ok" or outcome.startswith("bench") else "failed"
            if outcome.startswith("ignored"):
                status = "skipped"
            tests[f"{target}::{name}" if target else name] = status
    return tests


_CARGO_SUMMARY = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def cargo_summary_counts(text: str) -> dict[str, int]:
    """Totals of cargo's `test result:` lines (one per test binary and doc-test run), as a person adds them up.

    Independent of the per-test lines parse_cargo_test reads, so the two can check each other.
    """
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for line in text.splitlines():
        match = _CARGO_SUMMARY.match(line.strip())
        if match:
            for key, number in zip(counts, match.groups(), strict=True):
                counts[key] += int(number)
    return counts


def _cargo_target(path: str) -> str:
    # "target/debug/deps/mycrate-1a2b3c4d5e6f7a8b" -> "mycrate"
    name = path.rsplit("/", 1)[-1]
    return re.sub(r"-[0-9a-f]{8,}$", "", name)


def parse_jest_json(text: str, root: str = "/workspace/") -> dict[str, str]:
    """jest `--json` or vitest `--reporter=json` output -> {"file > ancestors > title": status}.

    Files are made relative to `root` (the workspace as seen inside the sandbox).
    """
    start = text.find("{")
    if start < 0:
        return {}
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError:
        return {}
    tests: dict[str, str] = {}
    suites = data.get("testResults", []) if isinstance(data, dict) else []
    for suite in suites:
        if not isinstance(suite, dict):
            continue
        file = str(suite.get("name") or suite.get("testFilePath") or "").removeprefix(root)
        cases = suite.get("assertionResults") or suite.get("testResults") or []
        for case in cases:
            if not isinstance(case, dict):
                continue
            title = " > ".join([*map(str, case.get("ancestorTitles") or []), str(case.get("title", ""))])
            status = {"passed": "passed", "failed": "failed"}.get(str(case.get("status")), "skipped")
            tests[f"{file} > {title}"] = status
        if not cases and suite.get("status") == "failed":
            tests[file] = "error"  # the file did not load (syntax error, missing module)
    return tests


#: report_format name -> parser over the collected report text(s).
PARSERS: dict[str, Callable[[list[str]], dict[str, str]]] = {
    "junit-xml": lambda texts: {k: v for t in texts for k, v in parse_junit_xml(t).items()},
    "surefire-xml": parse_surefire_xml,
    "go-json": lambda texts: parse_go_test_json("\n".join(texts)),
    "cargo": lambda texts: parse_cargo_test("\n".join(texts)),
    "jest-json": lambda texts: {k: v for t in texts for k, v in parse_jest_json(t).items()},
}


def parse_report(report_format: str, texts: list[str]) -> dict[str, str]:
    """Parse report texts of a known format; ValueError names the formats known."""
    try:
        parser = PARSERS[report_format]
    except KeyError:
        raise ValueError(f"unknown report format {report_format!r}; known: {', '.join(PARSERS)}") from None
    return parser(texts)


def summarize(tests: dict[str, str]) -> dict[str, int]:
    """Counts per status."""
    return {s: sum(1 for v in tests.values() if v == s) for s in STATUSES}

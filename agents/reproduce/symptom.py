"""Does a BRT's failure on the buggy code show the symptom the report describes?"""

from __future__ import annotations

import re

from agents.reading import IssueFacts, quiet_literal
from agents.reproduce.types import BrtCandidate

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TIMEOUT = re.compile(r"\bFailed: Timeout\b|^\+{3,} Timeout \+{3,}|\bTimeout >\s*\d", re.M)
_COLLECT = re.compile(
    r"ERROR collecting|ImportError while importing test module|errors? during collection|"
    r"^E\s+(?:ModuleNotFoundError|ImportError|SyntaxError|IndentationError)\b.*\n(?:.*\n)*?.*ERROR ",
    re.M,
)
_SUMMARY = re.compile(r"^FAILED \S+(?: - (?P<cause>[A-Za-z_][\w.]*)(?::|\s|$)(?P<rest>.*))?$", re.M)
_E_EXC = re.compile(
    r"^E\s+(?P<cause>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Iteration|Fault|Failed))(?::|$)(?P<rest>.*)$",
    re.M,
)
_E_FAILED = re.compile(r"^E\s+(?P<cause>Failed): (?P<rest>.*)$", re.M)
_E_ASSERT = re.compile(r"^E\s+assert\s+(?P<rest>.*)$", re.M)
_OBSERVED = re.compile(r"^E\s+AssertionError: (?:observed|still) (?P<value>.*?)(?:, as in the report)?\s*$", re.M)

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_FAILED_COUNT = re.compile(r"\b\d+ (?:failed|error)", re.I)


def symptom_matches(
    candidate: BrtCandidate, facts: IssueFacts, pytest_output: str, timed_out: bool
) -> tuple[bool, str]:
    """(True, why) when the BRT's failure on the buggy code is the reported one; else (False, why not)."""
    out = _ANSI.sub("", pytest_output)
    if timed_out or _TIMEOUT.search(out):
        if candidate.symptom == "hang":
            return True, "the test timed out, as the report says the call never returns"
        return False, f"the test timed out, but the report describes {_describe(candidate, facts)}"
    if _COLLECT.search(out):
        return False, "pytest could not import or collect the test: " + _first_error(out)
    cause, rest = failure_cause(out)
    if cause is None:
        return False, "the test did not fail on the buggy code"
    short = cause.rsplit(".", 1)[-1]
    if candidate.symptom == "hang":
        return False, f"the test failed with {short} instead of hanging"
    if candidate.symptom == "exception":
        want = (facts.exception_type or "").rsplit(".", 1)[-1]
        if want and (short == want or (short == "Failed" and re.search(rf"\braises {re.escape(want)}\b", rest))):
            return True, f"the test fails with {want}, the exception the report shows"
        if not want and short not in ("AssertionError", "Failed"):
            return True, f"the test fails with {short}"
        return False, f"the test fails with {short}, but the report shows {want or 'an exception'}"
    if short == "Failed" and rest.startswith("DID NOT RAISE"):
        return True, "the call does not raise, as the report says"
    wrong = _wrong_exception(short, facts)
    if wrong is not None:
        return True, wrong
    if short != "AssertionError":
        return False, f"the test fails with {short}, not with a wrong value"
    reported = candidate.reported_actual if candidate.reported_actual is not None else facts.actual
    return _value_matches(out, reported)


def shown_exceptions(facts: IssueFacts) -> set[str]:
    """Short names of the exceptions the report shows the buggy code raising: tracebacks, REPL steps, prose."""
    names = {tb.exc_type for tb in facts.tracebacks}
    names.update(raised[0] for session in facts.repl_sessions for step in session.steps if (raised := step.raised))
    names.add(facts.exception_type or "")
    return {name.rsplit(".", 1)[-1] for name in names if name}


def _wrong_exception(short: str, facts: IssueFacts) -> str | None:
    """Why a failure is the reported one when the report expects one exception and shows another raised
    (`AttributeError` where a `TypeError` is expected): the test fails with the one the report shows."""
    expected = (facts.expected_exception or "").rsplit(".", 1)[-1]
    if not expected or short in (expected, "AssertionError", "Failed") or short not in shown_exceptions(facts):
        return None
    return f"the call raises {short}, as the report shows, where the report expects {expected}"


def failure_cause(output: str) -> tuple[str | None, str]:
    """The exception that failed the test (AssertionError, pytest's Failed, RecursionError...), its text."""
    # pytest's "E   Type: message" lines are complete; the short summary is cut to the terminal width.
    lines = list(_E_EXC.finditer(output)) + list(_E_FAILED.finditer(output))
    if lines:
        last = max(lines, key=lambda m: m.start())
        return last.group("cause"), last.group("rest").strip()
    summary = [m for m in _SUMMARY.finditer(output) if m.group("cause") and not m.group(0).endswith("...")]
    if summary:
        return summary[0].group("cause"), summary[0].group("rest").strip()
    if _E_ASSERT.search(output):
        return "AssertionError", ""
    if "FAILED" in output or _FAILED_COUNT.search(output):
        return "unknown failure", ""
    return None, ""


def _value_matches(out: str, reported: str | None) -> tuple[bool, str]:
    if not reported:
        return True, "the assertion fails (the report states no actual value to compare with)"
    observed = [m.group("value") for m in _OBSERVED.finditer(out)]
    if not observed:
        observed = [m.group("rest").split(" == ")[0] for m in _E_ASSERT.finditer(out) if " == " in m.group("rest")]
    for value in observed:
        if same_value(value, reported):
            return True, f"the assertion fails with {_clip(value)}, the value the report shows"
    if not observed and _norm(reported) in _norm(out):
        return True, "the assertion fails and the output shows the reported value"
    got = _clip(observed[0]) if observed else "an unknown value"
    return False, f"the assertion fails with {got}, but the report shows {_clip(reported)}"


def same_value(observed: str, reported: str) -> bool:
    """Does an observed repr match the value text a report shows (as a literal, a repr or printed text)?"""
    if _norm(observed) == _norm(reported):
        return True
    lines = [line for line in reported.strip().split("\n") if line.strip()]
    if len(lines) > 1 and same_value(observed, lines[-1]):
        # The report pasted several printed lines; the BRT observes the last print.
        return True
    left, right = _literal(observed), _literal(reported)
    if left is not _MISSING and right is not _MISSING and left == right:
        return True
    # A printed value shows str(): the observed repr of a string equals the report's bare text.
    return isinstance(left, str) and _norm(left) == _norm(reported)


_MISSING = object()


def _literal(text: str) -> object:
    try:
        return quiet_literal(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _MISSING


def _norm(text: str) -> str:
    # Object reprs carry memory addresses that differ between the user's run and ours.
    return _ADDRESS.sub(" at 0x?", " ".join(text.split()))


def _clip(text: str, size: int = 120) -> str:
    text = _norm(text)
    return text if len(text) <= size else text[: size - 3] + "..."


def _first_error(out: str) -> str:
    for line in out.splitlines():
        if line.startswith("E ") or "Error" in line:
            return _clip(line.lstrip("E ").strip(), 200)
    return _clip(out[-200:], 200)


def _describe(candidate: BrtCandidate, facts: IssueFacts) -> str:
    if candidate.symptom == "exception":
        return f"a {facts.exception_type or 'exception'}"
    return "a wrong value"

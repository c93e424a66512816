"""Report text into facts: markdown structure, code, REPL sessions, tracebacks, expected vs. actual, crashes."""

from agents.reading.crash import Crash, crash_signature, find_crashes, parse_crash
from agents.reading.facts import IssueFacts, parse_issue
from agents.reading.markdown import ReplStep, console_runs, is_elision, quiet_literal, quiet_parse
from agents.reading.values import is_expression

__all__ = [
    "Crash",
    "IssueFacts",
    "ReplStep",
    "console_runs",
    "crash_signature",
    "find_crashes",
    "is_elision",
    "is_expression",
    "parse_crash",
    "parse_issue",
    "quiet_literal",
    "quiet_parse",
]

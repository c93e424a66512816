"""Fault localization: traceback frames, spectrum-based ranking, and test impact from coverage."""

from agents.localize.impact import coverage_rc, read_coverage, select_tests
from agents.localize.ranking import NAMED_NOTE, Location, parse_traceback_frames
from agents.localize.sbfl import is_test_file, localize_in_sandbox

__all__ = [
    "NAMED_NOTE",
    "Location",
    "coverage_rc",
    "is_test_file",
    "localize_in_sandbox",
    "parse_traceback_frames",
    "read_coverage",
    "select_tests",
]

"""Bug reproduction tests (BRTs) synthesized from a report's facts, and their checks."""

from agents.reproduce.brt import NotReproduced, Reproduction, brt_evidence, reproduce, reproduction_evidence
from agents.reproduce.checks import CHANGED_ONLY, expected_exceptions
from agents.reproduce.console import project_commands
from agents.reproduce.examples import report_examples
from agents.reproduce.synthesis import synthesize_brts
from agents.reproduce.types import BrtCandidate

__all__ = [
    "CHANGED_ONLY",
    "BrtCandidate",
    "NotReproduced",
    "Reproduction",
    "brt_evidence",
    "expected_exceptions",
    "project_commands",
    "report_examples",
    "reproduce",
    "reproduction_evidence",
    "synthesize_brts",
]

"""Bug reproduction tests (BRTs) synthesized from a report's facts, and their checks."""

from agents.reproduce.synthesis import symptom_matches, synthesize_brts
from agents.reproduce.types import BrtCandidate

__all__ = [
    "BrtCandidate",
    "symptom_matches",
    "synthesize_brts",
]

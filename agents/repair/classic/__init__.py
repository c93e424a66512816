"""The classic agent (no model): reproduce, localize, search fix templates, validate."""

from agents.repair.classic.search import (
    CandidateCache,
    ClassicSearch,
    NotReproduced,
    Reproduction,
    SearchLimits,
    reproduce,
    reproduction_evidence,
)

__all__ = [
    "CandidateCache",
    "ClassicSearch",
    "NotReproduced",
    "Reproduction",
    "SearchLimits",
    "reproduce",
    "reproduction_evidence",
]

"""Whether to act on a report: the abstention score, its features and reasons."""

from agents.triage.abstention import (
    DEFAULT_THRESHOLD,
    AbstentionDecision,
    combine_with_model,
    python_symbols,
    score_issue,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "AbstentionDecision",
    "combine_with_model",
    "python_symbols",
    "score_issue",
]

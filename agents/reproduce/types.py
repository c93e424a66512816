"""The bug reproduction test candidate that synthesis produces and the symptom check judges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Symptom = Literal["wrong_value", "exception", "hang"]


@dataclass(frozen=True)
class BrtCandidate:
    """A complete pytest file reproducing a report, where to put it, and what failure it should show."""

    path: str
    source: str
    symptom: Symptom
    expected: str | None
    test_name: str
    description: str
    #: The value the report shows for this candidate's own call, when it differs from the report's
    #: overall actual value (a multi-call session compared call by call).
    reported_actual: str | None = None

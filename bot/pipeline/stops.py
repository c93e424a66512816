"""How a stage stops a job early: it raises one of these, and the driver turns it into the job's verdict.

As in mini-swe-agent's loop, ending is an exception: the stages stay straight-line code, and the status and
reasons of every early end are decided here, in one place.
"""

from __future__ import annotations

from typing import ClassVar

from agents.trajectory import BrtEvidence
from bot.pipeline.state import Verdict
from bot.pipeline.types import JobStatus


class Stop(Exception):
    """A stage ends the job; `reasons` say why, each prefixed with the stop's own words."""

    status: ClassVar[JobStatus] = "error"
    prefix: ClassVar[str] = ""
    error_kind: ClassVar[str] = ""

    def __init__(self, *reasons: str, brt: BrtEvidence | None = None) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = [self.prefix + reason for reason in reasons]
        #: The reproduction the job found before it stopped, reported with the stop.
        self.brt = brt

    def verdict(self) -> Verdict:
        """The job's verdict when this stop ended it."""
        return Verdict(self.status, self.reasons, brt=self.brt, error_kind=self.error_kind)


class Abstained(Stop):
    """Triage scored the report below the threshold: the bot does not act."""

    status = "abstained"


class NotReproduced(Stop):
    """No test reproduces the report, and no agent of the job writes its own."""

    status = "abstained"
    prefix = "could not reproduce: "


class NotFixed(Stop):
    """No trajectory's patch passed review and selection."""

    status = "not_fixed"


class EnvironmentFailed(Stop):
    """The repo's environment could not be built, or its test suite cannot run on the base commit."""

    prefix = "environment: "
    error_kind = "environment"


class ModelFailed(Stop):
    """The model endpoint refused or kept failing."""

    prefix = "model: "

"""Trajectory bookkeeping shared by every agent: steps, outcome, BRT evidence, and the stop exceptions."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

TrajectoryStatus = Literal["fixed", "reproduced", "not_reproduced", "not_fixed", "limits_exceeded", "error"]

#: Called for every step (index, kind, content) so the store can record it as it happens.
StepSink = Callable[[int, str, dict[str, Any]], Awaitable[None]]


class Submitted(Exception):
    """The agent has a result; the loop ends."""


class LimitsExceeded(Exception):
    """A step, time, token or cost budget ran out; the loop ends cleanly."""


class FormatError(Exception):
    """The agent's action could not be understood; shown back to the agent as an observation."""


@dataclass(frozen=True)
class BrtEvidence:
    """A bug reproduction test and what it did before and after the fix."""

    path: str
    source: str
    symptom: str
    fails_before: bool
    before_output: str
    passes_after: bool | None = None
    after_output: str = ""
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        """The shape the CLI's --json output promises."""
        return {
            "path": self.path,
            "fails_before": self.fails_before,
            "passes_after": self.passes_after,
            "before_output": self.before_output,
            "after_output": self.after_output,
            "symptom": self.symptom,
        }


@dataclass
class Trajectory:
    """One agent run: its steps as they happened, and how it ended."""

    id: str
    agent: str
    seed: int
    sink: StepSink | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    status: TrajectoryStatus = "not_fixed"
    diff: str = ""
    brt: BrtEvidence | None = None
    error: str = ""
    last_test_passed: bool | None = None
    db_id: int | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    strategy: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    #: Other validated fixes found after the submitted one (diffs): the correctness assessment compares the
    #: submitted fix with them on inputs near the report's example; they are never published themselves.
    alternatives: list[str] = field(default_factory=list)

    async def step(self, kind: str, **content: Any) -> None:
        """Record one step (action, observation, decision) in order."""
        entry = {"idx": len(self.steps), "kind": kind, **content}
        self.steps.append(entry)
        if self.sink is not None:
            await self.sink(entry["idx"], kind, content)

    def finish(self) -> None:
        """Stamp the end time; called from `finally`, so it must not raise."""
        if self.ended is None:
            self.ended = time.monotonic()

    @property
    def seconds(self) -> float:
        """Wall time of the trajectory so far."""
        return (self.ended or time.monotonic()) - self.started

    def summary(self) -> dict[str, Any]:
        """The per-trajectory entry of the CLI's --json output."""
        return {
            "id": self.id,
            "agent": self.agent,
            "seed": self.seed,
            "status": self.status,
            "steps": len(self.steps),
            "seconds": round(self.seconds, 3),
            "error": self.error or None,
            **({"strategy": self.strategy} if self.strategy else {}),
            **({"usage": self.usage} if self.usage else {}),
        }

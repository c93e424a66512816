"""The pipeline as data: each job kind is a tuple of stages, run in order by bot/pipeline/run.py.

A stage is a module of this package with `async def run(state)`: it reads the job state the stages before it
left, adds its own product, and stops the job by raising one of bot/pipeline/stops.py. The last stage of a
list that delivers something sets the job's verdict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal

from agents.repair.registry import writes_brt
from bot.pipeline import (
    baseline,
    checkout,
    environment,
    generate,
    pick_test,
    reproduce,
    review,
    select,
    triage,
)
from bot.pipeline.state import JobState
from bot.pipeline.types import Mode

Stage = Callable[[JobState], Awaitable[None]]
#: fix: a patch with its BRT. reproduce: the synthesized BRT that fails. reproduce-generated: a reproduce job
#: whose agents write their own BRT (the LLM agent), the synthesized one as the fallback.
JobKind = Literal["fix", "reproduce", "reproduce-generated"]

#: The stages before any repair agent runs, shared by every kind.
_PREPARE: tuple[Stage, ...] = (checkout.run, triage.run, environment.run, baseline.run, reproduce.run)

STAGES: Mapping[JobKind, tuple[Stage, ...]] = {
    "fix": (*_PREPARE, generate.run, review.run, select.run),
    "reproduce": (*_PREPARE, pick_test.run),
    "reproduce-generated": (*_PREPARE, generate.run, pick_test.run),
}


def job_kind(mode: Mode, kinds: Sequence[str]) -> JobKind:
    """The kind of a job: its mode, and for a reproduction whether an agent of `kinds` writes its own BRT."""
    if mode == "fix":
        return "fix"
    return "reproduce-generated" if writes_brt(kinds) else "reproduce"

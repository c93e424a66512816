"""The one typed state a job's stages share: what each stage found so far, and how the job ended.

A stage reads what the stages before it left and adds its own product; `need` says which stage a missing value
belongs to (a stage list out of order is a bug, not a bad report). The driver (bot/pipeline/run.py) turns the
state and the job's `Verdict` into the `JobOutcome` once, at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agents.reading import IssueFacts
from agents.reproduce import Reproduction
from agents.trajectory import BrtEvidence, Trajectory
from agents.triage import AbstentionDecision
from bot.pipeline.types import Chosen, JobContext, JobRequest, JobStatus
from patch_selectors.assessment import Assessment
from patch_selectors.records import PatchRecord
from sandboxes.environment import Baseline, BuiltEnvironment

T = TypeVar("T")


@dataclass
class Verdict:
    """How a job ended: its status and reasons, plus the patch and the test it delivers, when it delivers one."""

    status: JobStatus
    reasons: list[str]
    brt: BrtEvidence | None = None
    patch: str = ""
    fix_files: list[str] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)
    fix_summary: str = ""
    #: For status "error": what failed ("environment" maps to its own CLI exit code).
    error_kind: str = ""


@dataclass
class Reviewed:
    """The review stage's product: every patch record with its reviews, its store row, and the assessments."""

    records: list[PatchRecord]
    #: The trajectory of each record, by record id.
    trajectories: dict[str, Trajectory]
    #: The store's patch row of each record, by record id.
    patch_ids: dict[str, int]
    #: The correctness assessment of each accepted record, by record id.
    assessments: dict[str, Assessment]


@dataclass
class JobState:
    """Everything the stages of one job know, in the order the stages learn it."""

    ctx: JobContext
    request: JobRequest
    facts: IssueFacts
    #: The checkout every stage works on (trajectories and reviews work on copies of it).
    base: Path
    #: The registered repair agent of each trajectory (agents.repair.registry), fixed when the job starts.
    kinds: list[str] = field(default_factory=list)
    decision: AbstentionDecision | None = None
    env: BuiltEnvironment | None = None
    #: How the environment was set up, as the outcome reports it.
    environment: dict[str, Any] = field(default_factory=dict)
    baseline: Baseline | None = None
    repro: Reproduction | None = None
    #: The reproduction's trajectory, whose steps the classic trajectories replay.
    shared: Trajectory | None = None
    #: The repair trajectories; None until the generate stage has run.
    generated: list[Trajectory] | None = None
    reviewed: Reviewed | None = None
    chosen: Chosen | None = None
    #: The trajectory summaries the outcome lists, taken when the stage that ran them ended.
    trajectories: list[dict[str, Any]] = field(default_factory=list)
    #: Set by the last stage of a list when the job delivers something.
    verdict: Verdict | None = None


def need(value: T | None, what: str) -> T:
    """`value`, which an earlier stage of the list must have set."""
    if value is None:
        raise RuntimeError(f"no {what} yet: the stage list runs a stage before the one that produces it")
    return value

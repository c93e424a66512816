"""The job's types at the bottom of the core: request, outcome, per-job context, selection result, exit codes.

Everything above (the pipeline stages, the request builder, the CLI, the forges' jobs) imports these; this module
imports nothing from `bot` but the pure renderers' inputs (bot.render.report), the triage decision
(agents.triage.abstention) and the counters (bot.metrics), which import nothing from `bot` themselves. The
deployment's settings, the store and the model ledger are seen through the small protocols below, so the stages
never need the modules that build them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from agents.chat import ChatModel
from agents.reading import IssueFacts
from agents.trajectory import BrtEvidence, Trajectory
from agents.triage import AbstentionDecision
from bot import metrics
from bot.pipeline.exits import EXIT_ABSTAINED as EXIT_ABSTAINED
from bot.pipeline.exits import EXIT_BAD_ISSUE as EXIT_BAD_ISSUE
from bot.pipeline.exits import EXIT_BAD_REPO as EXIT_BAD_REPO
from bot.pipeline.exits import EXIT_DIRTY as EXIT_DIRTY
from bot.pipeline.exits import EXIT_ENVIRONMENT as EXIT_ENVIRONMENT
from bot.pipeline.exits import EXIT_ERROR as EXIT_ERROR
from bot.pipeline.exits import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from bot.pipeline.exits import EXIT_NOT_FIXED as EXIT_NOT_FIXED
from bot.pipeline.exits import EXIT_OK as EXIT_OK
from bot.pipeline.exits import EXIT_SUGGESTED as EXIT_SUGGESTED
from bot.pipeline.exits import EXIT_USAGE as EXIT_USAGE
from bot.pipeline.exits import STATUS_EXIT as STATUS_EXIT
from bot.render.report import PrContext, ReviewLine, SuggestionContext
from patch_selectors.assessment import Assessment
from patch_selectors.records import PatchRecord
from patch_selectors.selectors import Selection
from sandboxes.base import Limits, SandboxSpec
from sandboxes.environment import BuiltEnvironment
from sandboxes.pathpolicy import DEFAULT_DENIED

log = logging.getLogger(__name__)


class JobSettings(Protocol):
    """The deployment settings the stages read (bot.settings.config.Settings has them all)."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def cache_dir(self) -> Path: ...
    @property
    def sandbox_python(self) -> Path: ...
    @property
    def pip_index_url(self) -> str | None: ...
    @property
    def rootfs(self) -> Path | None: ...
    @property
    def sandbox_disk_quota(self) -> int: ...
    @property
    def max_parallel(self) -> int: ...
    @property
    def publish_unsure(self) -> bool: ...
    @property
    def sandbox_session(self) -> str: ...
    @property
    def test_impact(self) -> bool: ...
    @property
    def baseline_cache(self) -> bool: ...
    @property
    def pytest_server(self) -> bool: ...
    @property
    def candidate_timeout_factor(self) -> float: ...
    @property
    def review_parallel(self) -> int: ...
    @property
    def early_stop(self) -> bool: ...


class TrajectoryStore(Protocol):
    """The store calls the stages make while a job runs (bot.store.Store has them all)."""

    def start_trajectory(self, job_id: int | None, agent: str, strategy: str, seed: int = 0) -> int: ...
    def add_step(self, trajectory_id: int, kind: str, content: Any) -> int: ...
    def finish_trajectory(
        self,
        trajectory_id: int,
        status: str,
        *,
        seconds: float = 0.0,
        tokens: int = 0,
        cost: float = 0.0,
        error: str | None = None,
    ) -> None: ...
    def add_patch(
        self,
        job_id: int | None,
        trajectory_id: int | None,
        diff: str,
        *,
        fix_hash: str,
        has_test: bool,
        fix_lines: int,
        total_lines: int,
    ) -> int: ...
    def add_review(
        self,
        patch_id: int,
        reviewer: str,
        accepted: bool,
        reason: str = "",
        evidence: Mapping[str, Any] | None = None,
    ) -> int: ...
    def add_selection(
        self, job_id: int | None, selector: str, patch_id: int | None, explanation: str, groups: list[Any]
    ) -> int: ...


class UsageView(Protocol):
    """Model usage of a job or one trajectory."""

    def to_json(self) -> dict[str, Any]: ...


class StepBudget(Protocol):
    """The step limit of one LLM trajectory."""

    @property
    def max_steps(self) -> int: ...


class JobLedger(Protocol):
    """The model spend of one job (bot.llm.Ledger)."""

    @property
    def budget(self) -> StepBudget: ...
    @property
    def calls(self) -> list[Any]: ...
    @property
    def stopped(self) -> list[str]: ...
    def usage(self, trajectory: str | None = None) -> UsageView: ...
    def describe(self) -> str: ...


JobStatus = Literal["fixed", "suggested", "reproduced", "abstained", "not_fixed", "error"]
Mode = Literal["fix", "reproduce"]
#: Reports stage changes to a progress display or a progress comment.
ProgressSink = Callable[[str, str], Awaitable[None] | None]
#: Live updates within a stage (candidates tried per second): a terminal shows them, a status comment does not.
TickSink = Callable[[str, str], None]


@dataclass(frozen=True)
class JobRequest:
    """What to do, on which checkout, with which knobs (from the CLI or a forge's policy)."""

    repo: Path
    issue_text: str
    issue_ref: str
    mode: Mode = "fix"
    trajectories: int = 4
    agent: str = "classic"
    sandbox: str = "bwrap"
    selector: str = "ranked"
    abstain_threshold: float = 0.5
    base_commit: str | None = None
    test_timeout: float = 300.0
    denied_paths: tuple[str, ...] = DEFAULT_DENIED
    #: LLM trajectories' cogeneration strategy: freeform, tdd, tld, fix-only or brt-only.
    strategy: str = "freeform"
    #: Add the spec reviewer and the BRT relevance judge (needs a model).
    llm_reviewers: bool = False
    #: Combine the rule-based abstention score with the model's estimate (needs a model).
    llm_abstention: bool = False
    #: Per-repo tightening of the deployment's model budget (policy `agent.max_steps`, `budget.max_cost_usd`).
    max_steps: int | None = None
    max_cost: float | None = None
    #: The policy's `environment.setup` / `environment.test`; they win over what the repo's files suggest.
    setup_commands: tuple[str, ...] = ()
    test_command: str | None = None
    #: The policy's `environment.allow_direct_references`: URL/path/VCS requirements built in the sandbox.
    allow_direct_references: bool = False
    #: Requirements installed in the environment beyond what the repo declares (a benchmark case's `deps`).
    extra_deps: tuple[str, ...] = ()
    #: Wall-clock minutes for the whole job (policy `budget.max_minutes`); None: no limit (the CLI).
    job_minutes: float | None = None
    #: What the request builder changed to fit the deployment's caps, one human sentence each.
    notes: tuple[str, ...] = ()

    def needs_model(self, llm_configured: bool) -> bool:
        """True when some stage of this job calls the model."""
        uses_llm = self.agent in ("llm", "mixed") or (self.agent == "auto" and llm_configured)
        return uses_llm or self.llm_reviewers or self.llm_abstention


@dataclass
class JobOutcome:
    """The result of a job, shaped for the CLI's --json output, the store and the renderers."""

    job_id: int
    status: JobStatus
    reasons: list[str] = field(default_factory=list)
    patch: str = ""
    fix_files: list[str] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)
    brt: BrtEvidence | None = None
    trajectories: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    abstention: AbstentionDecision | None = None
    selector: str = ""
    selection_explanation: str = ""
    reviews: list[dict[str, Any]] = field(default_factory=list)
    fix_summary: str = ""
    facts: IssueFacts | None = None
    baseline: dict[str, int] = field(default_factory=dict)
    chosen: Chosen | None = None
    generated: list[Trajectory] = field(default_factory=list)
    #: For status "error": what failed ("environment" maps to its own CLI exit code).
    error_kind: str = ""
    #: Model usage of the whole job (empty when no model was used) and the PR body's cost line.
    llm_usage: dict[str, Any] = field(default_factory=dict)
    cost: str = ""
    budget_stops: list[str] = field(default_factory=list)
    #: How the environment was set up: interpreter (and why), pytest, settings sources, what was left out.
    environment: dict[str, Any] = field(default_factory=dict)
    #: The request builder's notes (a knob clamped to a deployment cap), shown with the result.
    notes: list[str] = field(default_factory=list)
    #: Wall seconds per stage (environment, baseline, reproduce, search, review; publish added by the publisher).
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: Each stage as it ran: (name, start, end), seconds since the job started.
    stage_spans: list[tuple[str, float, float]] = field(default_factory=list)
    #: Each trajectory's (start, end), seconds since the job started, by trajectory id.
    trajectory_spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The fault localization's ranking (file, line, score, reasons), best first.
    localization: list[dict[str, Any]] = field(default_factory=list)

    @property
    def no_tests(self) -> str:
        """Why the repo has no test that passed before the fix ("" when it has some): the PR and comments say so."""
        return str(self.environment.get("no_tests") or "")

    def pr_context(self, *, issue_ref: str, issue_title: str, rerun: str, closes_issue: bool) -> PrContext:
        """The PR body's inputs from a fixed job; every forge renders its PR from this one place."""
        assert self.brt is not None, "only a fixed job has a PR"
        return PrContext(
            issue_ref=issue_ref,
            issue_title=issue_title,
            brt=self.brt,
            fix_files=self.fix_files,
            test_files=self.test_files,
            selector=self.selector,
            selection_explanation=self.selection_explanation,
            reviews=[ReviewLine(r["reviewer"], r["accepted"], r["reason"]) for r in self.reviews],
            trajectories=self.trajectories,
            seconds=self.seconds,
            fix_summary=self.fix_summary,
            rerun_command=rerun,
            closes_issue=closes_issue,
            agent=", ".join(sorted({str(t.get("agent")) for t in self.trajectories})) or "classic",
            cost=self.cost or "no model used (classic agent): $0.00",
            budget_stops=self.budget_stops,
            notes=self.notes,
            assessment=None
            if self.chosen is None or self.chosen.assessment is None
            else self.chosen.assessment.to_json(),
            no_tests=self.no_tests,
            patch_id="" if self.chosen is None or self.chosen.record is None else self.chosen.record.id,
        )

    def suggestion_context(self, *, issue_ref: str, rerun: str) -> SuggestionContext:
        """The suggestion comment's inputs from a `suggested` job (a candidate fix the bot would not PR)."""
        assert self.brt is not None, "only a job with a BRT has a suggestion"
        return SuggestionContext(
            issue_ref=issue_ref,
            brt=self.brt,
            patch=self.patch,
            reasons=self.reasons,
            rerun_command=rerun,
            assessment=None
            if self.chosen is None or self.chosen.assessment is None
            else self.chosen.assessment.to_json(),
            no_tests=self.no_tests,
        )

    def to_json(self) -> dict[str, Any]:
        """The --json document (branch is added by the publisher)."""
        return {
            "job_id": self.job_id,
            "status": self.status,
            "reasons": self.reasons,
            "patch": self.patch,
            "fix_files": self.fix_files,
            "test_files": self.test_files,
            "brt": None if self.brt is None else self.brt.to_json(),
            "trajectories": self.trajectories,
            "seconds": round(self.seconds, 3),
            "stage_seconds": stage_timing(self.stage_seconds),
            "selector": self.selector,
            "selection": self.selection_explanation,
            "reviews": self.reviews,
            "abstention": None
            if self.abstention is None
            else {
                "act": self.abstention.act,
                "score": self.abstention.score,
                "threshold": self.abstention.threshold,
                "reasons": list(self.abstention.reasons),
                "rule_score": self.abstention.rule_score,
                "llm_score": self.abstention.llm_score,
            },
            "baseline": self.baseline,
            "environment": self.environment,
            "notes": self.notes,
            "assessment": None
            if self.chosen is None or self.chosen.assessment is None
            else self.chosen.assessment.to_json(),
            "assessments": {} if self.chosen is None else {k: v.to_json() for k, v in self.chosen.assessments.items()},
            **({"llm": {**self.llm_usage, "budget_stops": self.budget_stops}} if self.llm_usage else {}),
        }


@dataclass
class Chosen:
    """What the select stage hands to publishing, plus everything the eval harness scores."""

    selector: str
    explanation: str
    trajectory: Trajectory | None = None
    record: PatchRecord | None = None
    reviews: list[dict[str, Any]] = field(default_factory=list)
    fix_files: list[str] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)
    fix_summary: str = ""
    reasons: list[str] = field(default_factory=list)
    records: list[PatchRecord] = field(default_factory=list)
    selections: dict[str, Selection] = field(default_factory=dict)
    #: The correctness assessment of the selected patch; publish only when it is confident.
    assessment: Assessment | None = None
    #: Every accepted patch's assessment, by record id (the same as its trajectory id).
    assessments: dict[str, Assessment] = field(default_factory=dict)

    @property
    def confident(self) -> bool:
        """True when the selected patch may become a PR."""
        return self.assessment is None or self.assessment.confident


@dataclass
class JobContext:
    """Per-job state shared by the stages: settings, store, scratch folder, model and its ledger."""

    settings: JobSettings
    store: TrajectoryStore
    job_id: int
    workdir: Path
    progress: ProgressSink | None = None
    model: ChatModel | None = None
    ledger: JobLedger | None = None
    tick_sink: TickSink | None = None
    #: Wall seconds per stage so far (see STAGE_TIMING_NAMES), filled by stage() and close_stage().
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: Each stage as it ran: (name, start, end) in seconds since the job started (the dashboard's timeline).
    stage_spans: list[tuple[str, float, float]] = field(default_factory=list)
    #: When the job started (monotonic), the origin of stage_spans and of the trajectories' spans.
    started: float = field(default_factory=time.monotonic)
    _stage: str | None = None
    _stage_started: float = 0.0

    async def open_trajectory(self, traj: Trajectory, strategy: str = "freeform") -> None:
        """Create the trajectory's store row and stream its steps into the store as they happen.

        Store calls go through a thread: a write may wait on SQLite's busy timeout, the event loop must not.
        """
        db_id = await asyncio.to_thread(self.store.start_trajectory, self.job_id, traj.agent, strategy, traj.seed)

        async def sink(idx: int, kind: str, content: dict[str, Any]) -> None:
            await asyncio.to_thread(self.store.add_step, db_id, kind, content)

        traj.sink = sink
        traj.db_id = db_id

    async def save_trajectory(self, traj: Trajectory) -> None:
        """Record how the trajectory ended; called from `finally`."""
        metrics.TRAJECTORY_SECONDS.labels(traj.agent, traj.status or "unknown").observe(max(traj.seconds, 0.0))
        if traj.db_id is not None:
            usage = traj.usage
            await asyncio.to_thread(
                self.store.finish_trajectory,
                traj.db_id,
                traj.status,
                seconds=traj.seconds,
                tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
                cost=float(usage.get("cost_usd", 0.0)),
                error=traj.error or None,
            )

    async def stage(self, name: str, detail: str = "") -> None:
        """Announce a stage to whoever watches (terminal progress, progress comment) and start its clock."""
        log.info("job %s: %s %s", self.job_id, name, detail)
        if name != self._stage:
            self.close_stage()
            self._stage, self._stage_started = name, time.monotonic()
        if self.progress is not None:
            maybe = self.progress(name, detail)
            if asyncio.iscoroutine(maybe):
                await maybe

    def tick(self, detail: str) -> None:
        """A live update of the running stage: logged at debug level and shown by a terminal, never posted."""
        log.debug("job %s: %s %s", self.job_id, self._stage, detail)
        if self.tick_sink is not None and self._stage is not None:
            self.tick_sink(self._stage, detail)

    def close_stage(self) -> None:
        """Stop the running stage's clock, adding its seconds under its timing name."""
        if self._stage is not None:
            key, now = STAGE_TIMING_NAMES.get(self._stage, self._stage), time.monotonic()
            self.stage_seconds[key] = self.stage_seconds.get(key, 0.0) + now - self._stage_started
            self.stage_spans.append((key, self._stage_started - self.started, now - self.started))
            self._stage = None


#: Announced stage -> the name its seconds are reported under ("generate" is the search for candidates).
STAGE_TIMING_NAMES = {"generate": "search"}
#: Stages every run's JSON reports seconds for (0.0 when a stage did not run).
TIMED_STAGES = ("environment", "baseline", "reproduce", "search", "review", "assess", "publish")


def stage_timing(seconds: Mapping[str, float]) -> dict[str, float]:
    """Per-stage seconds for the JSON: every TIMED_STAGES key, then any other stage that ran, rounded."""
    out = {name: round(seconds.get(name, 0.0), 3) for name in TIMED_STAGES}
    out.update({k: round(v, 3) for k, v in seconds.items() if k not in out})
    return out


def sandbox_spec(workspace: Path, env: BuiltEnvironment, settings: JobSettings, timeout: float) -> SandboxSpec:
    """The sandbox for a repo workspace: the environment mounted read-only, default limits."""
    return SandboxSpec(
        workspace=workspace,
        mounts=env.mounts,
        limits=Limits(wall_seconds=timeout, disk_bytes=settings.sandbox_disk_quota),
        rootfs=settings.rootfs,
        session=settings.sandbox_session,
        pytest_server=settings.pytest_server,
    )

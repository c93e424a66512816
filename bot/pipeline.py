"""The job pipeline: triage → environment → generate → review → select → publish, as plain async functions."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bot.abstention import AbstentionDecision, combine_with_model, python_symbols, score_issue
from bot.config import Settings
from bot.generate import GenerateRequest, generate_patches, trajectory_kinds
from bot.llm import Ledger, LLMError, client_from_settings, ledger_from_settings
from bot.report import PrContext, ReviewLine, SuggestionContext
from bot.review import Chosen, review_and_select
from bot.setup_model import setup_agent_for
from bot.store import Store
from sandboxes import environment as envlayer
from sandboxes.agents.chat import ChatModel
from sandboxes.agents.classic import NotReproduced, Reproduction, reproduce, reproduction_evidence
from sandboxes.agents.issue_facts import IssueFacts, parse_issue
from sandboxes.agents.trajectory import BrtEvidence, Trajectory
from sandboxes.base import Limits, SandboxSpec, host_cpu_count
from sandboxes.environment import Baseline, BuiltEnvironment, EnvironmentError_, TestRunner
from sandboxes.factory import make_sandbox
from sandboxes.pathpolicy import DEFAULT_DENIED
from sandboxes.workspace import SCRATCH_DIR, clone_workspace, tracked_files

log = logging.getLogger(__name__)

JobStatus = Literal["fixed", "suggested", "reproduced", "abstained", "not_fixed", "error"]
Mode = Literal["fix", "reproduce"]
#: Reports stage changes to a progress display or a progress comment.
ProgressSink = Callable[[str, str], Awaitable[None] | None]


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
            assessment=None
            if self.chosen is None or self.chosen.assessment is None
            else self.chosen.assessment.to_json(),
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
            "assessment": None
            if self.chosen is None or self.chosen.assessment is None
            else self.chosen.assessment.to_json(),
            "assessments": {} if self.chosen is None else {k: v.to_json() for k, v in self.chosen.assessments.items()},
            **({"llm": {**self.llm_usage, "budget_stops": self.budget_stops}} if self.llm_usage else {}),
        }


@dataclass
class JobContext:
    """Per-job state shared by the stages: settings, store, scratch folder, environment."""

    settings: Settings
    store: Store
    job_id: int
    workdir: Path
    progress: ProgressSink | None = None
    model: ChatModel | None = None
    ledger: Ledger | None = None

    def open_trajectory(self, traj: Trajectory, strategy: str = "freeform") -> None:
        """Create the trajectory's store row and stream its steps into the store as they happen."""
        db_id = self.store.start_trajectory(self.job_id, traj.agent, strategy, traj.seed)

        async def sink(idx: int, kind: str, content: dict[str, Any]) -> None:
            self.store.add_step(db_id, kind, content)

        traj.sink = sink
        traj.db_id = db_id

    def save_trajectory(self, traj: Trajectory) -> None:
        """Record how the trajectory ended; called from `finally`."""
        if traj.db_id is not None:
            usage = traj.usage
            self.store.finish_trajectory(
                traj.db_id,
                traj.status,
                seconds=traj.seconds,
                tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
                cost=float(usage.get("cost_usd", 0.0)),
                error=traj.error or None,
            )

    async def stage(self, name: str, detail: str = "") -> None:
        """Announce a stage to whoever watches (terminal progress, progress comment)."""
        log.info("job %s: %s %s", self.job_id, name, detail)
        if self.progress is not None:
            maybe = self.progress(name, detail)
            if asyncio.iscoroutine(maybe):
                await maybe


def sandbox_spec(workspace: Path, env: BuiltEnvironment, settings: Settings, timeout: float) -> SandboxSpec:
    """The sandbox for a repo workspace: the environment mounted read-only, default limits."""
    return SandboxSpec(
        workspace=workspace,
        mounts=env.mounts,
        limits=Limits(wall_seconds=timeout, disk_bytes=settings.sandbox_disk_quota),
        rootfs=settings.rootfs,
    )


def triage(facts: IssueFacts, workspace: Path, threshold: float) -> AbstentionDecision:
    """Decide whether to act, from the report and the repo's files and symbols."""
    files = tracked_files(workspace)
    sources: dict[str, str] = {}
    for rel in files:
        if rel.endswith(".py"):
            try:
                sources[rel] = (workspace / rel).read_text(errors="replace")
            except OSError:
                continue
    return score_issue(facts, files, python_symbols(sources), threshold=threshold)


async def prepare_environment(ctx: JobContext, workspace: Path, request: JobRequest) -> BuiltEnvironment:
    """Detect the repo's test setup and build (or reuse) its environment, through the environment layer.

    With a model configured, the setup agent steps in when neither policy nor repo signals say how to test.
    """
    ledger = ctx.ledger or ledger_from_settings(ctx.settings)
    agent = setup_agent_for(ctx.settings, request.sandbox, model=ctx.model, ledger=ledger)
    try:
        return await envlayer.prepare_environment(
            workspace,
            ctx.settings.cache_dir,
            python=ctx.settings.sandbox_python,
            index_url=ctx.settings.pip_index_url,
            setup=list(request.setup_commands) or None,
            test=request.test_command,
            agent=agent,
            sandbox=request.sandbox,
            rootfs=ctx.settings.rootfs,
            allow_direct_references=request.allow_direct_references,
            extra_deps=request.extra_deps,
        )
    finally:
        if ctx.ledger is None and ledger.calls:
            ctx.ledger = ledger  # the setup agent's model spend shows in the job's cost line


async def run_baseline(ctx: JobContext, workspace: Path, env: BuiltEnvironment, request: JobRequest) -> Baseline:
    """Run the suite once on the base commit and record which tests already fail."""
    async with make_sandbox(request.sandbox, sandbox_spec(workspace, env, ctx.settings, request.test_timeout)) as sb:
        baseline, run = await envlayer.run_baseline(sb, env, timeout=request.test_timeout)
    if run.result.timed_out:
        # Every later stage runs the suite again; a suite that cannot finish makes all their verdicts noise.
        raise EnvironmentError_(
            f"the test suite did not finish within {request.test_timeout:g} s on the base commit (timed out); "
            "raise the timeout or fix the hanging test"
        )
    if env.spec.report_format == "junit-xml":
        # A suite that runs no test says nothing about the bug: the environment is at fault, not the report.
        problem = envlayer.diagnose_baseline(run, env.spec)
        if problem is not None:
            raise EnvironmentError_(problem)
    return baseline


async def run_job(
    request: JobRequest,
    settings: Settings,
    store: Store,
    job_id: int,
    *,
    progress: ProgressSink | None = None,
) -> JobOutcome:
    """Run one fix or reproduce job end to end on a local checkout; never raises for a bad report."""
    started = time.monotonic()
    workdir = settings.data_dir / "work" / f"job-{job_id}-{uuid.uuid4().hex[:6]}"
    ctx = JobContext(settings, store, job_id, workdir, progress)
    facts = parse_issue(request.issue_text)
    outcome = JobOutcome(job_id=job_id, status="error", facts=facts)
    try:
        if request.needs_model(settings.llm_configured):
            ctx.ledger = ledger_from_settings(
                settings, *_spent(store, job_id), max_steps=request.max_steps, max_cost=request.max_cost
            )
            ctx.model = client_from_settings(settings, ctx.ledger)
        await _run_stages(ctx, request, facts, outcome)
    except EnvironmentError_ as exc:
        outcome.status, outcome.reasons = "error", [f"environment: {exc}"]
        outcome.error_kind = "environment"
    except LLMError as exc:
        outcome.status, outcome.reasons = "error", [f"model: {exc}"]
    finally:
        outcome.seconds = time.monotonic() - started
        if ctx.ledger is not None:
            outcome.llm_usage = ctx.ledger.usage().to_json()
            outcome.cost = ctx.ledger.describe()
            llm_trajs = [t for t in outcome.generated if t.agent == "llm"]
            ids = {t.id for t in llm_trajs}
            outcome.budget_stops = [s for s in ctx.ledger.stopped if s.split(":")[0] not in ids] + [
                f"{t.id}: {s.get('reason')}" for t in llm_trajs for s in t.steps if s.get("kind") == "stop"
            ]
        await asyncio.to_thread(shutil.rmtree, workdir, True)
    return outcome


def _spent(store: Store, job_id: int) -> tuple[float, float]:
    """Model spend so far on this job's issue and today (UTC), for the issue and day cost caps."""
    job = store.get_job(job_id)
    today = time.strftime("%Y-%m-%dT00:00:00", time.gmtime())
    spent_issue = store.llm_cost_since("", issue_id=job.issue_id) if job and job.issue_id is not None else 0.0
    return spent_issue, store.llm_cost_since(today)


async def _run_stages(ctx: JobContext, request: JobRequest, facts: IssueFacts, outcome: JobOutcome) -> None:
    base = ctx.workdir / "base"
    await ctx.stage("checkout", str(request.repo))
    await clone_workspace(request.repo, base, request.base_commit)
    (base / SCRATCH_DIR).mkdir(exist_ok=True)

    await ctx.stage("triage")
    decision = triage(facts, base, request.abstain_threshold)
    if request.llm_abstention and ctx.model is not None:
        decision = await combine_with_model(decision, ctx.model, request.issue_text)
    outcome.abstention = decision
    if not decision.act:
        outcome.status, outcome.reasons = "abstained", list(decision.reasons)
        return

    await ctx.stage("environment", "building the test environment")
    env = await prepare_environment(ctx, base, request)
    outcome.environment = envlayer.describe_environment(env)
    baseline = await run_baseline(ctx, base, env, request)
    outcome.baseline = {s: sum(1 for v in baseline.tests.values() if v == s) for s in ("passed", "failed", "error")}
    if baseline.collection_errors:
        # Part of the suite did not import (an undeclared optional dependency): worth a maintainer's look.
        outcome.environment["collection_errors"] = baseline.collection_errors

    await ctx.stage("reproduce", "synthesizing a bug reproduction test")
    runner = TestRunner(env, timeout=request.test_timeout)
    shared = Trajectory(id=f"{ctx.job_id}-repro", agent=request.agent, seed=0)
    ctx.open_trajectory(shared, strategy="reproduce")
    spec = sandbox_spec(base, env, ctx.settings, request.test_timeout)
    repro: Reproduction | None = None
    try:
        async with make_sandbox(request.sandbox, spec) as sb:
            repro = await reproduce(facts, sb, runner, tracked_files(base), shared, localize=request.mode == "fix")
    except NotReproduced as exc:
        # LLM trajectories write their own BRT, so a report the synthesizer cannot turn into a test is still
        # worth their attempt; classic-only jobs (and reproduce jobs) stop here.
        kinds = trajectory_kinds(request.agent, request.trajectories, ctx.model is not None)
        if request.mode == "reproduce" or "llm" not in kinds:
            outcome.status, outcome.reasons = "abstained", [f"could not reproduce: {exc}"]
            outcome.trajectories = [shared.summary()]
            return
        await ctx.stage("reproduce", f"no synthesized test ({exc}); llm trajectories write their own")
    finally:
        shared.finish()
        if shared.status == "not_fixed":
            shared.status = "reproduced" if request.mode == "reproduce" else shared.status
        ctx.save_trajectory(shared)
    if request.mode == "reproduce" and repro is not None:
        outcome.status = "reproduced"
        outcome.brt = reproduction_evidence(repro)
        outcome.test_files = [repro.brt.path]
        outcome.reasons = [f"the test fails on the current code with the reported symptom ({repro.brt.symptom})"]
        outcome.trajectories = [shared.summary()]
        return
    # The BRT file was written into the base workspace; trajectories start from a clean copy.
    if repro is not None:
        (base / repro.brt.path).unlink(missing_ok=True)

    parallel = ctx.settings.max_parallel or host_cpu_count()
    await ctx.stage("generate", f"{request.trajectories} trajectories, {parallel} at a time")
    generated = await generate_patches(
        GenerateRequest(
            ctx=ctx,
            request=request,
            base=base,
            env=env,
            baseline=baseline,
            repro=repro,
            shared_steps=shared.steps,
            parallel=parallel,
            facts=facts,
        )
    )
    outcome.generated = generated
    outcome.trajectories = [t.summary() for t in generated]

    await ctx.stage("review", "validating candidate patches in fresh sandboxes")
    chosen = await review_and_select(ctx, request, base, env, baseline, generated)
    outcome.chosen, outcome.generated = chosen, generated
    outcome.selector = chosen.selector
    outcome.selection_explanation = chosen.explanation
    outcome.reviews = chosen.reviews
    if chosen.trajectory is None or chosen.trajectory.brt is None:
        outcome.status = "not_fixed"
        outcome.reasons = chosen.reasons or ["no trajectory produced a validated fix"]
        outcome.brt = reproduction_evidence(repro) if repro is not None else None
        return
    winner = chosen.trajectory
    publish = chosen.confident or ctx.settings.publish_unsure
    outcome.status = "fixed" if publish else "suggested"
    outcome.patch = winner.diff
    outcome.fix_files = chosen.fix_files
    outcome.test_files = chosen.test_files
    outcome.brt = winner.brt
    outcome.fix_summary = chosen.fix_summary
    outcome.reasons = [chosen.fix_summary] if chosen.fix_summary else []
    if publish and not chosen.confident and chosen.assessment is not None:
        outcome.reasons = ["published although the correctness assessment is unsure (REPROBOT_PUBLISH_UNSURE)"]
    elif not chosen.confident and chosen.assessment is not None:
        # Precision before recall: a fix the assessment doubts is offered as a suggestion, never as a PR.
        outcome.reasons = [
            "not published as a pull request: the correctness assessment is unsure",
            *chosen.assessment.reasons,
            *outcome.reasons,
        ]

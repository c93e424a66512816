"""The job pipeline: triage → environment → generate → review → select → publish, as plain async functions."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
import time
import uuid
from dataclasses import replace
from pathlib import Path

from agents.localize import coverage_rc, read_coverage
from agents.reading import IssueFacts, parse_issue
from agents.repair.classic import NotReproduced, Reproduction, SearchLimits, reproduce, reproduction_evidence
from agents.trajectory import Trajectory
from agents.triage import AbstentionDecision, combine_with_model, python_symbols, score_issue
from bot.llm import Ledger, LLMError, client_from_settings, ledger_from_settings
from bot.pipeline.generate import generate_patches, trajectory_kinds
from bot.pipeline.review import review_and_select
from bot.pipeline.setup_model import setup_agent_for
from bot.pipeline.types import (
    GenerateRequest,
    JobContext,
    JobOutcome,
    JobRequest,
    JobStatus,
    Mode,
    ProgressSink,
    TickSink,
    sandbox_spec,
)
from bot.settings.config import Settings
from bot.store import Store
from sandboxes import environment as envlayer
from sandboxes.base import host_cpu_count
from sandboxes.environment import Baseline, BuiltEnvironment, EnvironmentError_, TestSuite
from sandboxes.factory import make_sandbox
from sandboxes.workspace import SCRATCH_DIR, clone_workspace, tracked_files

log = logging.getLogger(__name__)

#: The job types moved to bot.pipeline.types; these names stay importable from here for existing callers.
__all__ = [
    "JobContext",
    "JobOutcome",
    "JobRequest",
    "JobStatus",
    "Mode",
    "ProgressSink",
    "prepare_environment",
    "run_baseline",
    "run_job",
    "sandbox_spec",
    "triage",
]


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
    settings = ctx.settings
    if not isinstance(settings, Settings):
        # The job types see settings through a protocol; the setup agent needs the deployment's whole Settings.
        raise TypeError("the pipeline runs with bot.settings.config.Settings")
    ledger = ctx.ledger if isinstance(ctx.ledger, Ledger) else ledger_from_settings(settings)
    agent = setup_agent_for(settings, request.sandbox, model=ctx.model, ledger=ledger)
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
    # Test impact selection needs to know which test executed which line: the one baseline run measures it.
    measure = ctx.settings.test_impact and env.spec.report_format == "junit-xml"
    async with make_sandbox(request.sandbox, sandbox_spec(workspace, env, ctx.settings, request.test_timeout)) as sb:
        rc = coverage_rc(sb) if measure else None
        baseline, run = await envlayer.run_baseline(sb, env, timeout=request.test_timeout, coverage_rc=rc)
        if rc is not None and not run.tests and not run.result.timed_out:
            # Nothing ran under coverage (it may be missing from a custom environment): the plain run decides.
            baseline, run = await envlayer.run_baseline(sb, env, timeout=request.test_timeout)
        elif measure and not run.result.timed_out:
            coverage = await read_coverage(sb, env.python)
            baseline = dataclasses.replace(baseline, coverage=coverage)
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
    tick: TickSink | None = None,
) -> JobOutcome:
    """Run one fix or reproduce job end to end on a local checkout; never raises for a bad report."""
    started = time.monotonic()
    workdir = settings.data_dir / "work" / f"job-{job_id}-{uuid.uuid4().hex[:6]}"
    ctx = JobContext(settings, store.runs, job_id, workdir, progress, tick_sink=tick)
    facts = parse_issue(request.issue_text)
    outcome = JobOutcome(job_id=job_id, status="error", facts=facts, notes=list(request.notes))
    try:
        if request.needs_model(settings.llm_configured):
            spent = await asyncio.to_thread(_spent, store, job_id)
            ledger = ledger_from_settings(settings, *spent, max_steps=request.max_steps, max_cost=request.max_cost)
            ctx.ledger, ctx.model = ledger, client_from_settings(settings, ledger)
        await _run_stages(ctx, request, facts, outcome)
    except EnvironmentError_ as exc:
        outcome.status, outcome.reasons = "error", [f"environment: {exc}"]
        outcome.error_kind = "environment"
    except LLMError as exc:
        outcome.status, outcome.reasons = "error", [f"model: {exc}"]
    finally:
        outcome.seconds = time.monotonic() - started
        ctx.close_stage()
        outcome.stage_seconds = dict(ctx.stage_seconds)
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
    """Model spend so far on this job's issue and today (UTC), for the issue and day cost caps (blocking)."""
    job = store.jobs.get_job(job_id)
    today = time.strftime("%Y-%m-%dT00:00:00", time.gmtime())
    spent_issue = store.runs.llm_cost_since("", issue_id=job.issue_id) if job and job.issue_id is not None else 0.0
    return spent_issue, store.runs.llm_cost_since(today)


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
    await ctx.stage("baseline", "running the test suite on the base commit")
    baseline = await run_baseline(ctx, base, env, request)
    outcome.baseline = {s: sum(1 for v in baseline.tests.values() if v == s) for s in ("passed", "failed", "error")}
    if baseline.collection_errors:
        # Part of the suite did not import (an undeclared optional dependency): worth a maintainer's look.
        outcome.environment["collection_errors"] = baseline.collection_errors

    await ctx.stage("reproduce", "synthesizing a bug reproduction test")
    runner = TestSuite(env, timeout=request.test_timeout)
    shared = Trajectory(id=f"{ctx.job_id}-repro", agent=request.agent, seed=0)
    await ctx.open_trajectory(shared, strategy="reproduce")
    spec = sandbox_spec(base, env, ctx.settings, request.test_timeout)
    repro: Reproduction | None = None
    llm = "llm" in trajectory_kinds(request.agent, request.trajectories, ctx.model is not None)
    try:
        async with make_sandbox(request.sandbox, spec) as sb:
            repro = await reproduce(facts, sb, runner, tracked_files(base), shared, localize=request.mode == "fix")
    except NotReproduced as exc:
        # LLM trajectories write their own BRT, so a report the synthesizer cannot turn into a test is still
        # worth their attempt; classic-only jobs stop here.
        if not llm:
            outcome.status, outcome.reasons = "abstained", [f"could not reproduce: {exc}"]
            outcome.trajectories = [shared.summary()]
            return
        await ctx.stage("reproduce", f"no synthesized test ({exc}); llm trajectories write their own")
    finally:
        shared.finish()
        if shared.status == "not_fixed":
            shared.status = "reproduced" if request.mode == "reproduce" else shared.status
        await ctx.save_trajectory(shared)
    if request.mode == "reproduce" and repro is not None and not llm:
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
            limits=SearchLimits(
                test_impact=ctx.settings.test_impact, candidate_timeout_factor=ctx.settings.candidate_timeout_factor
            ),
            early_stop=ctx.settings.early_stop,
        )
    )
    outcome.generated = generated
    outcome.trajectories = [t.summary() for t in generated]
    if request.mode == "reproduce":
        _llm_reproduction(outcome, generated, repro)
        return

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


def _llm_reproduction(outcome: JobOutcome, generated: list[Trajectory], repro: Reproduction | None) -> None:
    """A reproduce job with a model: the first brt-only test that fails on the current code is the reproduction.

    The synthesized test, when there is one, is the fallback; a test that does not fail reproduces nothing.
    """
    for traj in generated:
        if traj.brt is not None and traj.brt.fails_before:
            # Nothing was fixed: the evidence is the failing run alone, as for a synthesized reproduction.
            outcome.status, outcome.brt = "reproduced", replace(traj.brt, passes_after=None, after_output="")
            outcome.test_files = [traj.brt.path]
            outcome.reasons = [f"the model's test `{traj.brt.path}` fails on the current code ({traj.id})"]
            return
    if repro is not None:
        outcome.status, outcome.brt = "reproduced", reproduction_evidence(repro)
        outcome.test_files = [repro.brt.path]
        outcome.reasons = [f"the synthesized test fails on the current code ({repro.brt.symptom}); the model's did not"]
        return
    outcome.status = "abstained"
    outcome.reasons = ["could not reproduce: no test written by the model fails on the current code"]

"""The job driver: run the job kind's stage list (bot/pipeline/stages.py), then assemble the outcome once.

A stage stops the job by raising (bot/pipeline/stops.py); a list that runs to its end leaves the verdict in
the state. Either way the outcome is built in one place, `outcome_of`, from the state and the verdict.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from typing import Any

from agents.reading import parse_issue
from agents.repair.registry import trajectory_kinds
from bot.llm import LLMError, client_from_settings, ledger_from_settings
from bot.pipeline.stages import STAGES, job_kind
from bot.pipeline.state import JobState, Verdict
from bot.pipeline.stops import ModelFailed, Stop
from bot.pipeline.types import JobContext, JobOutcome, JobRequest, ProgressSink, TickSink
from bot.settings.config import Settings
from bot.store import Store

log = logging.getLogger(__name__)


#: Fault-localization entries kept in the job's record (the dashboard's bar chart).
LOCATIONS_RECORDED = 12


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
    ctx = JobContext(settings, store.runs, job_id, workdir, _noting_stages(store, job_id, progress), tick_sink=tick)
    state = JobState(ctx, request, parse_issue(request.issue_text), base=workdir / "base")
    try:
        verdict = await run_stages(state, settings, store)
    finally:
        seconds = time.monotonic() - started
        ctx.close_stage()
        await asyncio.to_thread(shutil.rmtree, workdir, True)
    return outcome_of(state, verdict, seconds)


def _noting_stages(store: Store, job_id: int, progress: ProgressSink | None) -> ProgressSink:
    """`progress`, which also notes each new stage on the job's row (the dashboard shows the running stage)."""

    current: dict[str, Any] = {"stage": "", "since": 0.0}

    async def sink(stage: str, detail: str) -> None:
        now = time.time()
        if stage != current["stage"]:
            current.update(stage=stage, since=now)
        since = float(current["since"])
        await asyncio.to_thread(store.jobs.set_progress, job_id, stage, detail, since=since, now=now)
        if progress is not None:
            maybe = progress(stage, detail)
            if asyncio.iscoroutine(maybe):
                await maybe

    return sink


async def run_stages(state: JobState, settings: Settings, store: Store) -> Verdict:
    """Attach the model when the job uses one, then run the job kind's stages until the end or a stop."""
    request = state.request
    try:
        if request.needs_model(settings.llm_configured):
            spent = await asyncio.to_thread(_spent, store, state.ctx.job_id)
            ledger = ledger_from_settings(settings, *spent, max_steps=request.max_steps, max_cost=request.max_cost)
            state.ctx.ledger, state.ctx.model = ledger, client_from_settings(settings, ledger)
        state.kinds = trajectory_kinds(request.agent, request.trajectories, state.ctx.model is not None)
        for stage in STAGES[job_kind(request.mode, state.kinds)]:
            await stage(state)
    except Stop as stop:
        return stop.verdict()
    except LLMError as exc:
        # The model may be called by several stages (triage, setup, review); its failure ends the job alike.
        return ModelFailed(str(exc)).verdict()
    if state.verdict is None:
        raise RuntimeError(f"the {job_kind(request.mode, state.kinds)} stage list ended without a verdict")
    return state.verdict


def outcome_of(state: JobState, verdict: Verdict, seconds: float) -> JobOutcome:
    """The job's outcome: the verdict, plus what every stage that ran found, its timings and its model spend."""
    ctx, chosen, baseline = state.ctx, state.chosen, state.baseline
    outcome = JobOutcome(
        job_id=ctx.job_id,
        status=verdict.status,
        reasons=verdict.reasons,
        patch=verdict.patch,
        fix_files=verdict.fix_files,
        test_files=verdict.test_files,
        brt=verdict.brt,
        trajectories=state.trajectories,
        seconds=seconds,
        abstention=state.decision,
        selector=chosen.selector if chosen is not None else "",
        selection_explanation=chosen.explanation if chosen is not None else "",
        reviews=chosen.reviews if chosen is not None else [],
        fix_summary=verdict.fix_summary,
        facts=state.facts,
        baseline={}
        if baseline is None
        else {s: sum(1 for v in baseline.tests.values() if v == s) for s in ("passed", "failed", "error")},
        chosen=chosen,
        generated=state.generated if state.generated is not None else [],
        error_kind=verdict.error_kind,
        environment=state.environment,
        notes=list(state.request.notes),
        stage_seconds=dict(ctx.stage_seconds),
        stage_spans=list(ctx.stage_spans),
        trajectory_spans={
            t.id: (t.started - ctx.started, (t.ended or t.started) - ctx.started) for t in (state.generated or [])
        },
        localization=[]
        if state.repro is None
        else [
            {"file": loc.file, "line": loc.line, "score": round(loc.score, 4), "reasons": list(loc.reasons)}
            for loc in state.repro.locations[:LOCATIONS_RECORDED]
        ],
    )
    if ctx.ledger is not None:
        outcome.llm_usage = ctx.ledger.usage().to_json()
        outcome.cost = ctx.ledger.describe()
        llm_trajs = [t for t in outcome.generated if t.agent == "llm"]
        ids = {t.id for t in llm_trajs}
        outcome.budget_stops = [s for s in ctx.ledger.stopped if s.split(":")[0] not in ids] + [
            f"{t.id}: {s.get('reason')}" for t in llm_trajs for s in t.steps if s.get("kind") == "stop"
        ]
    return outcome


def _spent(store: Store, job_id: int) -> tuple[float, float]:
    """Model spend so far on this job's issue and today (UTC), for the issue and day cost caps (blocking)."""
    job = store.jobs.get_job(job_id)
    today = time.strftime("%Y-%m-%dT00:00:00", time.gmtime())
    spent_issue = store.runs.llm_cost_since("", issue_id=job.issue_id) if job and job.issue_id is not None else 0.0
    return spent_issue, store.runs.llm_cost_since(today)

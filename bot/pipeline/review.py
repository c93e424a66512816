"""The review stage: review each distinct patch once in fresh sandboxes, store the verdicts, assess the accepted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agents.reproduce import report_examples
from agents.trajectory import Trajectory
from bot.pipeline.state import JobState, Reviewed, need
from bot.pipeline.types import TrajectoryStore, sandbox_spec
from patch_selectors.assess_run import assess_records
from patch_selectors.records import PatchRecord, make_record
from patch_selectors.reviewers import DEFAULT_REVIEWERS, ReviewEnv, Reviewer, ReviewSubject, llm_reviewers, review_patch
from sandboxes.base import Sandbox, host_cpu_count
from sandboxes.environment import TestSuite
from sandboxes.factory import make_sandbox

log = logging.getLogger(__name__)

#: Alternative fixes run by the assessment per job (each costs one traced suite run).
MAX_PEERS = 3


async def run(state: JobState) -> None:
    """Review every trajectory's patch (identical patches once), store them with their reviews, assess.

    Distinct patches are reviewed at the same time; their sandboxes take turns, `review_parallel` at once.
    """
    ctx, request = state.ctx, state.request
    await ctx.stage("review", "validating candidate patches in fresh sandboxes")
    trajectories = need(state.generated, "trajectories")
    review_env = _review_env(state)
    reviewers: tuple[Reviewer, ...] = DEFAULT_REVIEWERS
    if request.llm_reviewers and ctx.model is not None:
        reviewers += llm_reviewers(ctx.model, request.issue_text)
    made = [
        (traj, make_record(traj.id, traj.diff, trajectory_id=traj.id, agent=traj.agent))
        for traj in trajectories
        if traj.diff
    ]
    # Same diff, same verdict: review each distinct patch once, all of them at the same time.
    subjects: dict[tuple[str, bool | None], ReviewSubject] = {}
    for traj, record in made:
        subjects.setdefault((record.patch_hash, traj.last_test_passed), ReviewSubject(record, traj.last_test_passed))
    reviewed = await asyncio.gather(*(review_patch(s, review_env, reviewers) for s in subjects.values()))
    verdicts: dict[tuple[str, bool | None], list[Any]] = dict(zip(subjects, reviewed, strict=True))
    out = Reviewed(records=[], trajectories={}, patch_ids={}, assessments={})
    for traj, record in made:
        record = record.with_reviews(*verdicts[record.patch_hash, traj.last_test_passed])
        out.records.append(record)
        out.trajectories[record.id] = traj
        out.patch_ids[record.id] = await asyncio.to_thread(_record_patch, ctx.store, ctx.job_id, traj, record)
    if any(r.accepted for r in out.records):
        # Timed apart from the reviews: near inputs, probes and peers cost more than the reviews on real suites.
        await ctx.stage("assess", "checking the accepted patches on near inputs, probes and alternative fixes")
        out.assessments = await assess_records(out.records, review_env, _alternatives(trajectories, out.records))
    state.reviewed = out


def _review_env(state: JobState) -> ReviewEnv:
    """Where and how the reviewers run: fresh sandboxes over copies of the checkout, a bounded number at once."""
    ctx, request = state.ctx, state.request
    env = need(state.env, "environment")
    slots = asyncio.Semaphore(ctx.settings.review_parallel or host_cpu_count())

    @asynccontextmanager
    async def open_sandbox(workspace: Path) -> AsyncIterator[Sandbox]:
        async with (
            slots,
            make_sandbox(request.sandbox, sandbox_spec(workspace, env, ctx.settings, request.test_timeout)) as sandbox,
        ):
            yield sandbox

    return ReviewEnv(
        base=state.base,
        scratch=ctx.workdir / "review",
        runner=TestSuite(env, timeout=request.test_timeout),
        baseline=need(state.baseline, "baseline"),
        open_sandbox=open_sandbox,
        denied_paths=request.denied_paths,
        report_examples=tuple(report_examples(state.facts)),
    )


def _alternatives(trajectories: list[Trajectory], records: list[PatchRecord]) -> list[PatchRecord]:
    """Distinct alternative fixes the trajectories found besides what they submitted.

    Taken in turn from each trajectory (each one's first, then each one's second): trajectories search in
    other orders, so their alternatives are the likeliest to differ, and the cap must not go to one search.
    """
    known = {r.fix_hash for r in records}
    peers: list[PatchRecord] = []
    depth = max((len(traj.alternatives) for traj in trajectories), default=0)
    for index in range(depth):
        for traj in trajectories:
            if index >= len(traj.alternatives):
                continue
            peer = make_record(
                f"{traj.id}-alt{index}", traj.alternatives[index], trajectory_id=traj.id, agent=traj.agent
            )
            if peer.fix_hash not in known and len(peers) < MAX_PEERS:
                known.add(peer.fix_hash)
                peers.append(peer)
    return peers


def _record_patch(runs: TrajectoryStore, job_id: int, traj: Trajectory, record: PatchRecord) -> int:
    """Store a reviewed patch with its reviews (blocking: run it on a thread); returns the patch id."""
    patch_id = runs.add_patch(
        job_id,
        traj.db_id,
        traj.diff,
        fix_hash=record.fix_hash,
        has_test=record.has_test,
        fix_lines=record.fix_lines,
        total_lines=record.total_lines,
    )
    for rv in record.reviews:
        runs.add_review(patch_id, rv.reviewer, rv.accepted, rv.reason, dict(rv.evidence))
    return patch_id

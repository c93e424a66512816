"""Review and select stages: build patch records, review each distinct patch once, apply the selector."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agents.trajectory import Trajectory
from bot.pipeline.types import Chosen, JobContext, JobRequest, TrajectoryStore, sandbox_spec
from patch_selectors.assess_run import assess_records
from patch_selectors.assessment import Assessment
from patch_selectors.records import PatchRecord, make_record
from patch_selectors.reviewers import DEFAULT_REVIEWERS, ReviewEnv, Reviewer, ReviewSubject, llm_reviewers, review_patch
from patch_selectors.selectors import SELECTORS, select
from sandboxes.base import Sandbox, host_cpu_count
from sandboxes.environment import Baseline, BuiltEnvironment, TestSuite
from sandboxes.factory import make_sandbox

log = logging.getLogger(__name__)

#: Chosen moved to bot.pipeline.types; it stays importable from here.
__all__ = ["Chosen", "assessment_pool", "review_and_select"]


def _fix_summary(traj: Trajectory) -> str:
    for step in reversed(traj.steps):
        if step.get("kind") == "submit":
            return str(step.get("summary", ""))
    return ""


async def review_and_select(
    ctx: JobContext,
    request: JobRequest,
    base: Path,
    env: BuiltEnvironment,
    baseline: Baseline,
    trajectories: list[Trajectory],
) -> Chosen:
    """Review every trajectory's patch (identical patches once), store verdicts, select at most one.

    Distinct patches are reviewed at the same time; their sandboxes take turns, `review_parallel` at once.
    """
    slots = asyncio.Semaphore(ctx.settings.review_parallel or host_cpu_count())

    @asynccontextmanager
    async def open_sandbox(workspace: Path) -> AsyncIterator[Sandbox]:
        async with (
            slots,
            make_sandbox(request.sandbox, sandbox_spec(workspace, env, ctx.settings, request.test_timeout)) as sandbox,
        ):
            yield sandbox

    review_env = ReviewEnv(
        base=base,
        scratch=ctx.workdir / "review",
        runner=TestSuite(env, timeout=request.test_timeout),
        baseline=baseline,
        open_sandbox=open_sandbox,
        denied_paths=request.denied_paths,
    )
    reviewers: tuple[Reviewer, ...] = DEFAULT_REVIEWERS
    if request.llm_reviewers and ctx.model is not None:
        reviewers += llm_reviewers(ctx.model, request.issue_text)
    records: list[PatchRecord] = []
    by_record: dict[str, Trajectory] = {}
    patch_ids: dict[str, int] = {}
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
    for traj, record in made:
        record = record.with_reviews(*verdicts[record.patch_hash, traj.last_test_passed])
        records.append(record)
        by_record[record.id] = traj
        patch_ids[record.id] = await asyncio.to_thread(_record_patch, ctx.store, ctx.job_id, traj, record)
    peers = _alternatives(trajectories, records)
    assessments = await assess_records(records, review_env, peers) if any(r.accepted for r in records) else {}
    pool = assessment_pool(records, assessments)
    selections = {name: select(name, pool) for name in SELECTORS}
    chosen_sel = selections[request.selector] if request.selector in selections else select(request.selector, pool)
    await asyncio.to_thread(
        ctx.store.add_selection,
        ctx.job_id,
        chosen_sel.selector,
        patch_ids.get(chosen_sel.selected.id) if chosen_sel.selected else None,
        chosen_sel.explanation,
        [g.__dict__ for g in chosen_sel.groups],
    )
    out = Chosen(
        selector=chosen_sel.selector,
        explanation=chosen_sel.explanation,
        records=records,
        selections=selections,
        assessments=assessments,
    )
    if not records:
        out.reasons = ["no trajectory produced a patch"]
        return out
    if chosen_sel.selected is None:
        rejected = {rv.reason for r in records for rv in r.rejections}
        out.reasons = ["every candidate patch was rejected: " + "; ".join(sorted(rejected))]
        return out
    winner = chosen_sel.selected
    out.record = winner
    out.trajectory = by_record[winner.id]
    out.reviews = [{"reviewer": r.reviewer, "accepted": r.accepted, "reason": r.reason} for r in winner.reviews]
    out.fix_files = [f.path for f in winner.fix_part.files]
    out.test_files = [f.path for f in winner.test_part.files]
    out.fix_summary = _fix_summary(out.trajectory)
    out.assessment = assessments.get(winner.id)
    return out


#: Alternative fixes run by the assessment per job (each costs one traced suite run).
MAX_PEERS = 3


def _alternatives(trajectories: list[Trajectory], records: list[PatchRecord]) -> list[PatchRecord]:
    """Distinct alternative fixes the trajectories found besides what they submitted."""
    known = {r.fix_hash for r in records}
    peers: list[PatchRecord] = []
    for traj in trajectories:
        for index, diff in enumerate(traj.alternatives):
            peer = make_record(f"{traj.id}-alt{index}", diff, trajectory_id=traj.id, agent=traj.agent)
            if peer.fix_hash not in known and len(peers) < MAX_PEERS:
                known.add(peer.fix_hash)
                peers.append(peer)
    return peers


def _rank(assessment: Assessment | None) -> tuple[int, int]:
    """Fewer flags first, then the smaller semantic change (an unknown size sorts last)."""
    if assessment is None:
        return (0, 1 << 30)
    size = assessment.semantic_size if assessment.semantic_size >= 0 else 1 << 30
    return (0 if assessment.confident else len(assessment.reasons), size)


def assessment_pool(records: list[PatchRecord], assessments: dict[str, Assessment]) -> list[PatchRecord]:
    """The records a selector may choose from: the accepted ones that rank best by the assessment.

    Confident patches beat unsure ones (precision before recall); among equals, the smallest semantic change
    wins, so a larger rewrite that happens to pass the same checks is not preferred over a minimal edit.
    Rejected records stay in the pool so the selector's explanation still names them.
    """
    accepted = [r for r in records if r.accepted]
    if not accepted:
        return records
    best = min(_rank(assessments.get(r.id)) for r in accepted)
    return [r for r in records if not r.accepted or _rank(assessments.get(r.id)) == best]


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

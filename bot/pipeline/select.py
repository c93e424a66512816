"""The select stage: apply the selectors to the reviewed patches and turn the chosen one into the job's verdict."""

from __future__ import annotations

import asyncio

from agents.reproduce import reproduction_evidence
from agents.trajectory import Trajectory
from bot.pipeline.state import JobState, Reviewed, Verdict, need
from bot.pipeline.stops import NotFixed
from bot.pipeline.types import Chosen, JobContext
from patch_selectors.assessment import Assessment
from patch_selectors.records import PatchRecord
from patch_selectors.selectors import SELECTORS, select


async def run(state: JobState) -> None:
    """Choose at most one patch; a fix (or a suggestion, when the assessment is unsure), else raise NotFixed."""
    chosen = await choose(state.ctx, state.request.selector, need(state.reviewed, "reviewed patches"))
    state.chosen = chosen
    winner = chosen.trajectory
    if winner is None or winner.brt is None:
        evidence = reproduction_evidence(state.repro) if state.repro is not None else None
        raise NotFixed(*(chosen.reasons or ["no trajectory produced a validated fix"]), brt=evidence)
    state.verdict = _delivered(chosen, winner, state.ctx.settings.publish_unsure)


async def choose(ctx: JobContext, selector: str, reviewed: Reviewed) -> Chosen:
    """Run every selector over the assessment's pool, store the requested one's selection, describe its choice."""
    records, assessments = reviewed.records, reviewed.assessments
    pool = assessment_pool(records, assessments)
    selections = {name: select(name, pool) for name in SELECTORS}
    chosen_sel = selections[selector] if selector in selections else select(selector, pool)
    await asyncio.to_thread(
        ctx.store.add_selection,
        ctx.job_id,
        chosen_sel.selector,
        reviewed.patch_ids.get(chosen_sel.selected.id) if chosen_sel.selected else None,
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
    out.trajectory = reviewed.trajectories[winner.id]
    out.reviews = [{"reviewer": r.reviewer, "accepted": r.accepted, "reason": r.reason} for r in winner.reviews]
    out.fix_files = [f.path for f in winner.fix_part.files]
    out.test_files = [f.path for f in winner.test_part.files]
    out.fix_summary = _fix_summary(out.trajectory)
    out.assessment = assessments.get(winner.id)
    return out


def _delivered(chosen: Chosen, winner: Trajectory, publish_unsure: bool) -> Verdict:
    """The verdict of a job whose selected patch carries its BRT: a fix to publish, or a suggestion."""
    publish = chosen.confident or publish_unsure
    reasons = [chosen.fix_summary] if chosen.fix_summary else []
    if publish and not chosen.confident and chosen.assessment is not None:
        reasons = ["published although the correctness assessment is unsure (REPROBOT_PUBLISH_UNSURE)"]
    elif not chosen.confident and chosen.assessment is not None:
        # Precision before recall: a fix the assessment doubts is offered as a suggestion, never as a PR.
        unsure = "not published as a pull request: the correctness assessment is unsure"
        reasons = [unsure, *chosen.assessment.reasons, *reasons]
    return Verdict(
        "fixed" if publish else "suggested",
        reasons,
        brt=winner.brt,
        patch=winner.diff,
        fix_files=chosen.fix_files,
        test_files=chosen.test_files,
        fix_summary=chosen.fix_summary,
    )


def _fix_summary(traj: Trajectory) -> str:
    """What the trajectory said it did when it submitted."""
    for step in reversed(traj.steps):
        if step.get("kind") == "submit":
            return str(step.get("summary", ""))
    return ""


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

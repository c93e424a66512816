"""The parts of a job's record that explain its patches: each candidate, its reviews, votes and why it lost.

Pure: built from the select stage's records and selections. The whole record is job_record(outcome); every job
(CLI, GitHub, Jira) stores it as `result["record"]`, and the dashboard's job page reads only that record (and
the store's steps). Patches are named by their record id (`1-t1`) everywhere: here, the selection's
explanation, the PR body and the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.trajectory import Trajectory
from bot.pipeline.types import JobOutcome, stage_timing
from patch_selectors.assessment import Assessment
from patch_selectors.records import PatchRecord
from patch_selectors.selectors import Selection

__all__ = ["RECORD_VERSION", "candidate_entries", "job_record", "lost_reason"]

#: Bumped when the record's shape changes incompatibly (the page reads older records as far as it can).
RECORD_VERSION = 2


def _kept_out(record: PatchRecord, winner: PatchRecord, assessments: Mapping[str, Assessment]) -> str:
    """Why an accepted patch never reached the vote: the assessment ranked the winner's kind first."""
    mine, best = assessments.get(record.id), assessments.get(winner.id)
    if mine is None or best is None:
        return f"kept out of the vote by the correctness assessment, which ranks {winner.id} first"
    if mine.verdict != best.verdict:
        return (
            f"kept out of the vote: the correctness assessment is {mine.verdict} about it, "
            f"{best.verdict} about {winner.id}"
        )
    return (
        f"kept out of the vote: its semantic change is larger ({mine.semantic_size} vs {best.semantic_size} "
        f"for {winner.id}), and the smallest change that passes the same checks wins"
    )


def lost_reason(
    record: PatchRecord,
    selection: Selection | None,
    winner: PatchRecord | None,
    assessments: Mapping[str, Assessment] | None = None,
) -> str:
    """Why `record` was not selected, in one sentence ("" for the selected patch itself)."""
    if winner is not None and record.id == winner.id:
        return ""
    if record.rejections:
        return "rejected by review: " + "; ".join(f"{r.reviewer}: {r.reason}" for r in record.rejections)
    if selection is None:
        return "no selection ran"
    if record.id in selection.excluded:
        return f"dropped by the {selection.selector} selector before voting"
    if winner is None:
        return "the selector chose no patch"
    if record.fix_hash == winner.fix_hash:
        return f"the same fix as {winner.id}, which ranks ahead of it inside the group"
    group = next((g for g in selection.groups if record.id in g.member_ids), None)
    won = next((g for g in selection.groups if g.won), None)
    if group is None and record.accepted:
        return _kept_out(record, winner, assessments or {})
    if group is None or won is None:
        return f"the {selection.selector} selector chose {winner.id}"
    if group.size < won.size:
        return f"its fix was found {group.size} time(s), the selected fix {won.size} time(s)"
    if group.lines > won.lines:
        return f"the same number of votes ({group.size}), but more changed lines ({group.lines} vs {won.lines})"
    return f"the same number of votes ({group.size}); {won.representative_id} wins on id order"


def _review(r: Any) -> dict[str, Any]:
    return {"reviewer": r.reviewer, "accepted": r.accepted, "reason": r.reason}


def candidate_entries(
    records: Sequence[PatchRecord],
    selections: Mapping[str, Selection],
    chosen: Selection | None,
    assessments: Mapping[str, Assessment],
) -> list[dict[str, Any]]:
    """Every candidate patch of the job, selected first, then in record order.

    Each entry: its id (the patch's name everywhere), trajectory, diff, size, reviews, assessment, the
    selectors that voted for it (`votes`), whether it is the selected one, its fix group and why it lost.
    """
    winner = chosen.selected if chosen is not None else None
    out = []
    for r in records:
        assessment = assessments.get(r.id)
        out.append(
            {
                "id": r.id,
                "trajectory": r.trajectory_id,
                "agent": r.agent,
                "diff": r.patch.render(),
                "fix_hash": r.fix_hash[:8],
                "has_test": r.has_test,
                "fix_lines": r.fix_lines,
                "total_lines": r.total_lines,
                "files": [f.path for f in r.patch.files],
                "accepted": r.accepted,
                "reviews": [_review(rv) for rv in r.reviews],
                "assessment": None if assessment is None else assessment.to_json(),
                "votes": sorted(n for n, s in selections.items() if s.selected is not None and s.selected.id == r.id),
                "selected": winner is not None and r.id == winner.id,
                "lost": lost_reason(r, chosen, winner, assessments),
            }
        )
    return sorted(out, key=lambda c: not c["selected"])


def job_record(outcome: JobOutcome) -> dict[str, Any]:
    """The one record every job writes (`result["record"]`) and the dashboard's job page reads.

    Triage, environment, baseline, reproduction (the BRT before and after), fault localization, every candidate
    patch with its reviews, votes and why it lost, the assessment, the selection, the stages and trajectories
    with their times; the publisher adds `publication` (bot.jobs.publish.with_publication).
    `trajectories[].db_id` is the store's row (its steps), `id` names its saved conversation
    (`DATA_DIR/trajectories/<id>.json`).
    """
    o, chosen = outcome, outcome.chosen
    selection = None if chosen is None else chosen.selections.get(chosen.selector)
    summaries = {str(t.get("id")): t for t in o.trajectories}
    return {
        "version": RECORD_VERSION,
        "status": o.status,
        "reasons": list(o.reasons),
        "abstention": _triage(o),
        "environment": o.environment,
        "baseline": o.baseline,
        "reproduction": None if o.brt is None else o.brt.to_json(),
        "localization": o.localization,
        "candidates": []
        if chosen is None
        else candidate_entries(chosen.records, chosen.selections, selection, chosen.assessments),
        "selected": None if chosen is None or chosen.record is None else chosen.record.id,
        "votes": {}
        if chosen is None
        else {n: s.selected.id if s.selected else None for n, s in chosen.selections.items()},
        "assessment": None if chosen is None or chosen.assessment is None else chosen.assessment.to_json(),
        "reviews": o.reviews,
        "selector": o.selector,
        "selection_explanation": o.selection_explanation,
        "fix_summary": o.fix_summary,
        "cost": o.cost,
        "llm_usage": o.llm_usage,
        "seconds": round(o.seconds, 3),
        "stage_seconds": stage_timing(o.stage_seconds),
        "stages": [{"name": n, "start": round(a, 3), "end": round(b, 3)} for n, a, b in o.stage_spans],
        "trajectories": [_trajectory(o, t, summaries.get(t.id, {})) for t in o.generated],
        "notes": list(o.notes),
    }


def _triage(o: JobOutcome) -> dict[str, Any] | None:
    a = o.abstention
    if a is None:
        return None
    return {"act": a.act, "score": a.score, "threshold": a.threshold, "reasons": list(a.reasons)} | {
        "rule_score": a.rule_score,
        "llm_score": a.llm_score,
    }


def _trajectory(o: JobOutcome, t: Trajectory, summary: Mapping[str, Any]) -> dict[str, Any]:
    start, end = o.trajectory_spans.get(t.id, (0.0, 0.0))
    return {
        "id": t.id,
        "db_id": t.db_id,
        "agent": t.agent,
        "strategy": t.strategy,
        "status": t.status,
        "steps": len(t.steps),
        "start": round(start, 3),
        "end": round(end, 3),
        "error": summary.get("error") or t.error or None,
    }

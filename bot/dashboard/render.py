"""Pure helpers of the dashboard's pages: highlighted diffs and trajectory steps as a readable timeline."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from bot.render.charts import CandidatePoint, candidates_svg, ranking_svg, timeline_svg
from bot.render.report import clip_output

#: Characters of one step's output shown on the page (the tail, as in the PR body).
STEP_OUTPUT_CHARS = 3000
#: Step fields shown as the step's main text, in this order; the rest are shown as small JSON.
_TEXT_FIELDS = ("thought", "observation", "output", "stdout", "stderr", "message")
#: Step kinds that are one candidate patch tried (the classic agent's search).
CANDIDATE_KINDS = frozenset({"try_candidate", "try_alternative"})


def diff_html(diff: str) -> Markup:
    """The diff as highlighted HTML (pygments escapes the text itself)."""
    return Markup(highlight(diff or "(empty)", DiffLexer(), HtmlFormatter(cssclass="diff")))


def diff_css() -> str:
    """The stylesheet of `diff_html`."""
    return str(HtmlFormatter().get_style_defs(".diff"))


@dataclass(frozen=True)
class StepView:
    """One step of a trajectory as the timeline shows it: its title carries the step's key fact."""

    idx: int
    kind: str
    title: str
    texts: list[tuple[str, str]]
    extra: str
    #: For a candidate tried: whether its BRT passed (None for other steps).
    brt_passed: bool | None = None


def _fact(kind: str, content: dict[str, Any]) -> str:
    """The one line that says what a step did (the candidate's edit and its BRT, a test run's verdict)."""
    if kind in CANDIDATE_KINDS:
        where = f"{content.get('file', '?')}:{content.get('line', '?')}"
        verdict = "BRT passed" if content.get("brt_passed") else "BRT failed"
        late = f", timed out after {content['timed_out_after']} s" if content.get("timed_out_after") else ""
        return f"{where} {content.get('description') or content.get('operator') or ''} → {verdict}{late}"
    if kind == "run_regression_tests":
        return ("regression tests pass" if content.get("ok") else "regression tests fail") + (
            f": {content['reason']}" if content.get("reason") else ""
        )
    if kind == "run_brt_on_buggy_code":
        return f"{content.get('path', 'BRT')}: exit {content.get('exit_code')}, {content.get('reason') or ''}"
    if kind == "fault_localization" and isinstance(content.get("top"), list) and content["top"]:
        top = content["top"][0]
        return f"top: {top.get('file')}:{top.get('line')} ({top.get('score')})" if isinstance(top, dict) else ""
    if kind == "alternative_fix":
        return f"another validated fix at {content.get('file')}:{content.get('line')} ({content.get('operator')})"
    return ""


def step_view(idx: int, kind: str, content: Any, *, full: bool = True) -> StepView:
    """Turn one stored step (any JSON value) into a timeline entry: title with its key fact, cut texts, the rest.

    `full=False` gives the title and the BRT flag only (what the filter needs), cheaply, for steps not shown.
    """
    if not isinstance(content, dict):
        return StepView(idx, kind, kind, [("value", clip_output(str(content), STEP_OUTPUT_CHARS))] if full else [], "")
    fact = _fact(kind, content)
    title = kind + (f" · {content['name']}" if content.get("name") else "") + (f" — {fact}" if fact else "")
    passed = bool(content.get("brt_passed")) if kind in CANDIDATE_KINDS else None
    if not full:
        return StepView(idx, kind, title, [], "", passed)
    texts = [
        (name, clip_output(str(content[name]), STEP_OUTPUT_CHARS))
        for name in _TEXT_FIELDS
        if content.get(name) not in (None, "")
    ]
    rest = {k: v for k, v in content.items() if k not in _TEXT_FIELDS and k != "name"}
    extra = json.dumps(rest, indent=1, ensure_ascii=False, default=str)[:2000] if rest else ""
    return StepView(idx, kind, title, texts, extra, passed)


#: The step filter's choices (query parameter `steps`): what each keeps.
STEP_FILTERS = {
    "all": "every step",
    "key": "all but the candidates whose BRT failed",
    "passed": "candidates whose BRT passed",
    "tests": "test runs only",
}


def filter_steps(steps: list[StepView], mode: str, query: str = "") -> list[StepView]:
    """The steps the page's no-JS filter keeps (`?steps=` one of STEP_FILTERS, `?q=` text in the title)."""
    if mode == "key":
        steps = [s for s in steps if s.brt_passed is not False]
    elif mode == "passed":
        steps = [s for s in steps if s.brt_passed]
    elif mode == "tests":
        steps = [s for s in steps if s.kind.startswith("run_")]
    if query:
        steps = [s for s in steps if query.lower() in s.title.lower()]
    return steps


def candidate_points(steps: list[tuple[float, str, Any]]) -> list[CandidatePoint]:
    """The candidates one trajectory tried, from its (seconds, kind, content) steps in order.

    A candidate validated when its BRT passed and the next step says the regression tests pass (or records it
    as another validated fix).
    """
    points: list[CandidatePoint] = []
    for i, (seconds, kind, content) in enumerate(steps):
        if kind not in CANDIDATE_KINDS or not isinstance(content, dict):
            continue
        validated = False
        if content.get("brt_passed") and i + 1 < len(steps):
            _, next_kind, next_content = steps[i + 1]
            ok = isinstance(next_content, dict) and bool(next_content.get("ok"))
            validated = next_kind == "alternative_fix" or (next_kind == "run_regression_tests" and ok)
        label = str(content.get("description") or "")[:80]
        points.append(CandidatePoint(seconds, len(points) + 1, validated, label))
    return points


def conversation_view(doc: Any, limit: int = 60) -> list[tuple[str, str]]:
    """(role, text) of a saved LLM conversation (`DATA_DIR/trajectories/<id>.json`), each text cut."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    out = []
    for m in (messages or [])[:limit]:
        if not isinstance(m, dict):
            continue
        text = m.get("content") or ""
        if m.get("tool_calls"):
            text = f"{text}\n→ {json.dumps(m['tool_calls'], ensure_ascii=False)[:1000]}".strip()
        out.append((str(m.get("role", "?")), clip_output(str(text), STEP_OUTPUT_CHARS)))
    return out


def _trajectories_of(group: list[Mapping[str, Any]]) -> str:
    return ", ".join(str(c.get("trajectory") or c.get("id")) for c in group)


def distinct_patches(candidates: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The record's candidates grouped by their fix (same normalized fix: one patch), the selected group first.

    Each group is named by its first candidate's id (the selected one's, when it is in the group): the name the
    selection's explanation, the PR body and result.json use.
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in candidates:
        groups.setdefault(str(c.get("fix_hash") or c.get("id")), []).append(c)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda c: not c.get("selected"))
        head = members[0]
        out.append(
            {
                "name": str(head.get("id")),
                "head": head,
                "members": members,
                "trajectories": _trajectories_of(members),
                "selected": any(c.get("selected") for c in members),
                "votes": sorted({v for c in members for v in c.get("votes") or []}),
                "lost": "" if any(c.get("selected") for c in members) else str(head.get("lost") or ""),
            }
        )
    return sorted(out, key=lambda g: not g["selected"])


def _assessed(assessment: Mapping[str, Any] | None) -> str:
    if not assessment:
        return "no correctness assessment ran"
    return f"the correctness assessment is {assessment.get('verdict')}"


def outcome_sentence(job_status: str, result: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """The job's outcome and why, in one sentence, from its record (or its bare result for an old job)."""
    status = str(result.get("status") or record.get("status") or job_status)
    reasons = [str(r) for r in result.get("reasons") or record.get("reasons") or []]
    brt = record.get("reproduction") or {}
    candidates = record.get("candidates") or []
    selected = next((c for c in candidates if c.get("selected")), None)
    if status in ("fixed", "suggested") and selected is not None:
        same = sum(1 for c in candidates if c.get("fix_hash") == selected.get("fix_hash"))
        pub = record.get("publication") or {}
        where = (
            f"pull request #{pub['pr']}" if pub.get("pr") else (f"branch {pub['branch']}" if pub.get("branch") else "")
        )
        verb = "Fixed" if status == "fixed" else "Suggested a fix (not published)"
        return (
            f"{verb}{' in ' + where if where else ''}: patch {selected.get('id')} changes "
            f"{', '.join(selected.get('files') or []) or 'the code'} ({record.get('fix_summary') or 'see the diff'}); "
            f"the BRT {brt.get('path', '')} fails before and "
            f"{'passes' if brt.get('passes_after') else 'does not pass'} after, "
            f"{_assessed(selected.get('assessment'))}, and {same} of {len(candidates)} candidate(s) found this fix."
        )
    if record.get("runner_job") is not None:
        why = f": {'; '.join(reasons)}" if reasons else ""
        return f"{status.replace('_', ' ').capitalize()} on a runner (runner job {record['runner_job']}){why}."
    if status == "reproduced" and brt.get("path"):
        return f"Reproduced: the BRT {brt.get('path')} fails on the current code ({brt.get('symptom')})."
    triage = record.get("abstention") or {}
    if status == "abstained" and triage:
        why = f": {reasons[0]}" if reasons else ""
        score, threshold = float(triage.get("score") or 0), float(triage.get("threshold") or 0)
        return f"Abstained: triage scored {score:.2f} against a threshold of {threshold:.2f}{why}."
    return f"{status.replace('_', ' ').capitalize()}" + (f": {'; '.join(reasons)}." if reasons else ".")


def job_context(
    job_status: str,
    result: Mapping[str, Any],
    record: Mapping[str, Any],
    series: Mapping[str, list[CandidatePoint]],
) -> dict[str, Any]:
    """What the job page shows beyond the raw record: the sentence, the patches (diffs highlighted) and charts."""
    patches = distinct_patches(list(record.get("candidates") or []))
    for p in patches:
        p["html"] = diff_html(str(p["head"].get("diff") or ""))
    selected = next((p for p in patches if p["selected"]), None)
    charts = {
        "timeline": timeline_svg(list(record.get("stages") or []), list(record.get("trajectories") or [])),
        "ranking": ranking_svg(list(record.get("localization") or [])),
        "candidates": candidates_svg(series),
    }
    return {
        "sentence": outcome_sentence(job_status, result, record),
        "patches": patches,
        "selected": selected,
        # Markup: charts.py escapes every label it draws.
        "charts": {k: Markup(v) for k, v in charts.items() if v},
    }


#: The Mojira page's filters (query parameters) and what each matches.
MOJIRA_FILTERS = ("route", "triage", "signature", "grouped", "q")


def mojira_rows(reports: list[Any], chosen: Mapping[str, str]) -> list[dict[str, Any]]:
    """The polled reports as the Mojira page lists them, filtered by `chosen` (see MOJIRA_FILTERS).

    `route`: the route triage gave ("none" for none); `triage`: act or abstain; `signature`: one crash
    signature; `grouped`: "yes" keeps only reports that share their signature with another; `q`: text in the
    key or summary. Each row counts the reports that share its crash signature (its group).
    """
    groups: dict[str, int] = {}
    for r in reports:
        if r.signature:
            groups[r.signature] = groups.get(r.signature, 0) + 1
    rows = []
    for r in reports:
        triage = r.triage if isinstance(r.triage, dict) else {}
        report = r.report if isinstance(r.report, dict) else {}
        row = {
            "key": r.key,
            "summary": r.summary,
            "versions": ", ".join(str(v) for v in report.get("versions") or []),
            "act": bool(triage.get("act")),
            "score": float(triage.get("score") or 0.0),
            "reasons": [str(x) for x in triage.get("reasons") or []][:4],
            "route": r.route or "none",
            "signature": r.signature or "",
            "group": groups.get(r.signature or "", 0),
            "sink": r.sink,
            "sink_ref": r.sink_ref or "",
            "seen": r.first_seen_at[:19],
        }
        if _mojira_keeps(row, chosen):
            rows.append(row)
    return rows


def _mojira_keeps(row: Mapping[str, Any], chosen: Mapping[str, str]) -> bool:
    if chosen.get("route") and row["route"] != chosen["route"]:
        return False
    if chosen.get("triage") and row["act"] != (chosen["triage"] == "act"):
        return False
    if chosen.get("signature") and row["signature"] != chosen["signature"]:
        return False
    if chosen.get("grouped") == "yes" and row["group"] < 2:
        return False
    q = chosen.get("q", "").lower()
    return not q or q in row["key"].lower() or q in row["summary"].lower()

"""Scripted LLM trajectories through the whole pipeline on bench cases: one per cogeneration strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.repair.llm.tools import TOOL_NAMES
from bot.cli.job import rerun_command
from bot.render.report import render_pr_body
from bot.settings.config import Settings
from patch_selectors.records import make_record
from tests.llm_helpers import LlmRun, run_scripted_job

pytestmark = [pytest.mark.shared, pytest.mark.slow]


def _pr_body(run: LlmRun) -> str:
    assert run.outcome.brt is not None
    rerun = rerun_command(None, run.outcome.brt.path)
    return render_pr_body(run.outcome.pr_context(issue_ref="issue s", issue_title="t", rerun=rerun, closes_issue=True))


def _assert_fixed_with_brt(run: LlmRun, fix_file: str) -> str:
    out = run.outcome
    assert out.status == "fixed", out.reasons
    assert fix_file in out.fix_files
    assert out.test_files, "the selected patch must carry a BRT"
    record = make_record("x", out.patch)
    assert record.has_test and record.fix_lines > 0
    verdicts = {r["reviewer"]: r["accepted"] for r in out.reviews}
    assert verdicts.items() >= {"smell": True, "build-test": True, "brt": True}.items()
    assert out.brt is not None and out.brt.fails_before and out.brt.passes_after
    body = _pr_body(run)
    assert "### Cost" in body and "model calls:" in body and "cost: $" in body
    assert "steps" in body and "tokens" in body
    assert out.llm_usage["cost_usd"] > 0
    # The trajectory really ran tools in the sandbox: every request carried the tool schemas.
    sent = run.server.requests[-1]
    assert {t["function"]["name"] for t in sent.get("tools", [])} <= {*TOOL_NAMES, "requirements", "verdict"}
    return body


async def test_freeform_with_llm_abstention_and_reviewers(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(
        tmp_path, settings, "gcd", "freeform_gcd", strategy="freeform", llm_reviewers=True, llm_abstention=True
    )
    body = _assert_fixed_with_brt(run, "gcd.py")
    reviews = {r["reviewer"]: r for r in run.outcome.reviews}
    assert reviews["spec"]["accepted"] and reviews["brt-relevance"]["accepted"]
    assert "RecursionError" in reviews["brt-relevance"]["reason"]
    ab = run.outcome.abstention
    assert ab is not None and ab.llm_score == 0.85 and ab.rule_score is not None
    assert ab.score == pytest.approx(round(0.5 * ab.rule_score + 0.5 * 0.85, 3))
    assert any(r.startswith("model:") for r in ab.reasons)
    assert "| spec | accepted |" in body
    # Observations came from the real sandbox: the failing run shows the RecursionError.
    tool_msgs = [m["content"] for m in run.server.requests[5]["messages"] if m["role"] == "tool"]
    assert "RecursionError" in tool_msgs[-1]
    # Every request restates the remaining step budget.
    for req in run.server.requests[1:8]:
        assert "Steps left:" in json.dumps(req["messages"][-1])
    assert run.server.served == len(run.server.steps)
    saved = json.loads((run.settings.data_dir / "trajectories" / f"{run.outcome.job_id}-t0.json").read_text())
    assert saved["strategy"] == "freeform" and saved["steps"] == 7


async def test_tdd_test_first(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "find_in_sorted", "tdd_find_in_sorted", strategy="tdd")
    _assert_fixed_with_brt(run, "find_in_sorted.py")
    system = run.server.requests[0]["messages"][0]["content"]
    assert "before touching any source file" in system
    steps = run.outcome.generated[0].steps
    edits = [
        json.loads(s["calls"][0]["arguments"])["path"]
        for s in steps
        if s["kind"] == "model" and s["calls"] and s["calls"][0]["name"] == "edit_file"
    ]
    assert edits[0].startswith("tests/")


async def test_tld_fix_first(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "kth", "tld_kth", strategy="tld")
    _assert_fixed_with_brt(run, "kth.py")
    assert "change the source code first" in run.server.requests[0]["messages"][0]["content"]


async def test_fix_only_gets_the_synthesized_brt(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "levenshtein", "fixonly_levenshtein", strategy="fix-only")
    _assert_fixed_with_brt(run, "levenshtein.py")
    kinds = [s["kind"] for s in run.outcome.generated[0].steps]
    assert "attach_synthesized_brt" in kinds and "cleanup_guard" not in kinds


async def test_brt_only_yields_a_reproducing_test_and_no_fix(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "brtonly_gcd", strategy="brt-only")
    out = run.outcome
    traj = out.generated[0]
    record = make_record("x", traj.diff)
    assert record.has_test and record.fix_lines == 0
    assert traj.brt is not None and traj.brt.fails_before and "RecursionError" in traj.brt.before_output
    # A test alone is not a fix: its last run failed (as a BRT should), so review keeps it out of a PR.
    assert out.status == "not_fixed" and out.patch == ""
    assert any("rejected" in r and "last test run" in r for r in out.reasons), out.reasons


async def test_cleanup_guard_fires_once_then_finishes_with_test(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "guard_gcd", strategy="freeform")
    _assert_fixed_with_brt(run, "gcd.py")
    steps = run.outcome.generated[0].steps
    assert [s["kind"] for s in steps].count("cleanup_guard") == 1
    reminder = [m for m in run.server.requests[4]["messages"] if m["role"] == "tool"][-1]["content"]
    assert reminder.startswith("Not finished: your changes contain no test")
    assert "tests/test_gcd_same_args.py" in run.outcome.test_files


async def test_mixed_kinds_in_one_job_are_reviewed_and_selected_alike(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "guard_gcd", agent="mixed", trajectories=2)
    out = run.outcome
    assert sorted(t["agent"] for t in out.trajectories) == ["classic", "llm"]
    patches = run.store.runs.list_patches(out.job_id)
    assert len(patches) == sum(1 for t in out.generated if t.diff) >= 1
    assert out.status == "fixed", out.reasons
    assert out.chosen is not None
    # Both kinds produced a candidate; selection saw them side by side as plain patch records.
    assert {r.agent for r in out.chosen.records} == {"classic", "llm"}
    body = _pr_body(run)
    assert "agent: `classic, llm`" in body


async def test_prose_report_model_tips_triage_and_agent_writes_its_own_brt(tmp_path: Path, settings: Settings) -> None:
    issue = Path(__file__).parent / "samples" / "llm_issues" / "gcd_prose.md"
    run = await run_scripted_job(tmp_path, settings, "gcd", "prose_gcd", issue=issue, llm_abstention=True)
    ab = run.outcome.abstention
    assert ab is not None and ab.rule_score is not None and ab.rule_score < ab.threshold <= ab.score
    stored = run.store.runs.list_trajectories(run.outcome.job_id)
    repro = next(t for t in stored if t.strategy == "reproduce")
    assert any(s.kind == "synthesize_brt" and not s.content["candidates"] for s in run.store.runs.get_steps(repro.id))
    _assert_fixed_with_brt(run, "gcd.py")
    assert run.outcome.test_files == ["tests/test_gcd_equal.py"]

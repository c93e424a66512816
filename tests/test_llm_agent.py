"""The repair loop's failure paths over real HTTP and a real sandbox: budgets, HTTP 400, malformed turns, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.settings.config import Settings
from tests.llm_helpers import LlmRun, run_scripted_job

pytestmark = [pytest.mark.shared, pytest.mark.slow]


def _stored(run: LlmRun) -> tuple[dict[str, object], list[dict[str, object]]]:
    (traj,) = [t for t in run.store.runs.list_trajectories(run.outcome.job_id) if t.strategy != "reproduce"]
    return traj.__dict__, [{"kind": s.kind, **s.content} for s in run.store.runs.get_steps(traj.id)]


@pytest.mark.parametrize(
    ("overrides", "served", "reason"),
    [({"llm_max_steps": 3}, 3, "step budget spent: 3 steps"), ({"llm_max_tokens": 4000}, None, "token budget spent")],
)
async def test_budget_stops_cleanly_and_keeps_partial_trajectory(
    tmp_path: Path, settings: Settings, overrides: dict[str, int], served: int | None, reason: str
) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "budget_gcd", overrides=overrides)
    out = run.outcome
    assert out.status == "not_fixed" and out.patch == ""
    assert served is None or run.server.served == served
    assert 0 < run.server.served < len(run.server.steps)
    traj, steps = _stored(run)
    assert traj["status"] == "not_fixed" and traj["tokens"] > 0 and traj["cost"] > 0
    assert [s["kind"] for s in steps].count("model") == run.server.served
    assert steps[-1]["kind"] == "stop" and reason in str(steps[-1]["reason"])
    saved = json.loads((run.settings.data_dir / "trajectories" / f"{out.job_id}-t0.json").read_text())
    assert saved["steps"] >= run.server.served and len(saved["messages"]) > 2
    assert any(reason in s for s in out.budget_stops)
    assert out.to_json()["llm"]["calls"] == run.server.served


async def test_http_400_is_not_retried_and_recorded(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "error400_gcd")
    assert run.server.served == 2 and len(run.server.requests) == 2
    traj, _ = _stored(run)
    assert traj["status"] == "error"
    assert "HTTP 400" in str(traj["error"]) and "string too long" in str(traj["error"])
    assert run.outcome.status == "not_fixed"
    assert "sk-test-secret" not in str(traj["error"])


async def test_malformed_turns_and_refusals_become_observations(tmp_path: Path, settings: Settings) -> None:
    run = await run_scripted_job(tmp_path, settings, "gcd", "malformed_gcd", strategy="fix-only")
    assert run.outcome.status == "fixed", run.outcome.reasons
    _, steps = _stored(run)
    observations = [str(s.get("observation") or s.get("error")) for s in steps if s["kind"] in ("tool", "format_error")]
    expected = [
        "FormatError: the arguments of 'edit_file' are not valid JSON",
        "FormatError: no tool call",
        "FormatError: unknown tool 'run_shell'",
        "FormatError: refused: '../../../../etc/passwd' is outside the workspace",
        "FormatError: refused: '../outside.py' is outside the workspace",
        "FormatError: refused by policy: .github/workflows/x.yml matches a denied path",
        "FormatError: refused: the edit breaks Python syntax in gcd.py",
        "FormatError: refused: old_text does not occur in gcd.py",
    ]
    for want, got in zip(expected, observations, strict=False):
        assert got.startswith(want), (want, got)
    assert not (tmp_path / "outside.py").exists()
    assert ".github" not in run.outcome.patch
    assert "return gcd(b, a % b)" in run.outcome.patch
    # The model saw each refusal: the next request carries it as a tool message.
    tool_texts = [m["content"] for m in run.server.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("refused by policy" in t for t in tool_texts) or any("FormatError" in t for t in tool_texts)

"""The one request builder: every knob bounded by a deployment cap, one note per clamp, the same for every source."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bot.cli import build_parser
from bot.cli.job import options_from_args
from bot.jobs.request import JobOptions, build_request
from bot.pipeline.types import JobRequest
from bot.render.report import render_notes
from bot.settings.config import Settings, SettingsError
from bot.settings.policy import deep_merge, defaults
from handlers.commands import parse_command

REPO = Path("/tmp/some-repo")
MODEL = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m"}


def _build(
    settings: Settings, policy: dict[str, Any] | None = None, options: JobOptions | None = None, **kw: Any
) -> JobRequest:
    kw.setdefault("mode", "fix")
    return build_request(
        settings,
        policy,
        options or JobOptions(),
        repo=REPO,
        issue_text="# t\n\nbody",
        issue_ref="#1",
        base_commit="abc",
        **kw,
    )


def _policy(**tree: Any) -> dict[str, Any]:
    return deep_merge(defaults(), tree)


def test_trajectories_over_the_cap_are_clamped_with_a_note() -> None:
    settings = Settings(trajectories=4, max_trajectories=8)
    request = _build(settings, _policy(), JobOptions(trajectories=32))
    assert request.trajectories == 8
    assert request.notes == ("trajectories 32 → 8: deployment cap REPROBOT_MAX_TRAJECTORIES",)
    # Within the cap nothing is noted; with no option the policy's value is bounded by the deployment default.
    assert _build(settings, _policy(), JobOptions(trajectories=6)).notes == ()
    assert _build(settings, _policy(agent={"trajectories": 12})).trajectories == 4
    assert _build(Settings(trajectories=3)).trajectories == 3


def test_policy_timeout_is_capped_by_the_deployment_maximum() -> None:
    settings = Settings(test_timeout=300, max_test_timeout=900)
    request = _build(settings, _policy(environment={"timeout": 7200}))
    assert request.test_timeout == 900
    assert request.notes == ("test timeout 7200 s → 900 s: deployment cap REPROBOT_MAX_TEST_TIMEOUT",)
    # The CLI's --timeout is bounded the same way; without either, the deployment's default applies.
    assert _build(settings, None, JobOptions(test_timeout=1000)).test_timeout == 900
    assert _build(settings).test_timeout == 300
    assert _build(settings, _policy(environment={"timeout": 60})).test_timeout == 60


def test_job_minutes_steps_and_cost_are_capped() -> None:
    settings = Settings(**MODEL, max_job_minutes=20, llm_max_steps=10, llm_max_cost=0.25)  # type: ignore[arg-type]
    policy = _policy(agent={"kind": "llm", "max_steps": 50}, budget={"max_minutes": 90, "max_cost_usd": 2.0})
    request = _build(settings, policy)
    assert (request.job_minutes, request.max_steps, request.max_cost) == (20, 10, 0.25)
    assert request.notes == (
        "job minutes 90 → 20: deployment cap REPROBOT_MAX_JOB_MINUTES",
        "LLM steps 50 → 10: deployment cap REPROBOT_LLM_MAX_STEPS",
        "cost 2 USD → 0.25 USD: deployment cap REPROBOT_LLM_MAX_COST",
    )
    # A classic job spends nothing on a model: its model budgets are not worth a note.
    classic = _build(settings, _policy(budget={"max_cost_usd": 2.0, "max_minutes": 15}))
    assert classic.notes == () and classic.agent == "classic" and classic.job_minutes == 15


def test_strategy_and_agent_outside_the_allowed_sets_are_replaced() -> None:
    settings = Settings(**MODEL, strategies=("freeform", "tdd"), agents=("classic", "llm"))  # type: ignore[arg-type]
    request = _build(settings, _policy(agent={"kind": "auto"}), JobOptions(strategy="brt-only"))
    assert (request.agent, request.strategy) == ("classic", "freeform")
    assert request.notes == (
        "agent auto → classic: not allowed by REPROBOT_AGENTS (classic, llm)",
        "strategy brt-only → freeform: not allowed by REPROBOT_STRATEGIES (freeform, tdd)",
    )
    assert (
        _build(dataclasses.replace(settings, strategies=("tdd",)), None, JobOptions(strategy="tld")).strategy == "tdd"
    )


def test_llm_reviewers_and_abstention_from_the_policy_need_a_model() -> None:
    policy = _policy(review={"llm": True}, abstention={"llm": True})
    with_model = _build(Settings(**MODEL), policy)  # type: ignore[arg-type]
    assert with_model.llm_reviewers and with_model.llm_abstention and with_model.notes == ()
    assert with_model.needs_model(llm_configured=True)
    without = _build(Settings(), policy)
    assert not without.llm_reviewers and not without.llm_abstention
    assert without.notes == (
        "LLM reviewers off: the deployment has no model configured (REPROBOT_LLM_MODEL)",
        "LLM abstention off: the deployment has no model configured (REPROBOT_LLM_MODEL)",
    )
    assert not without.needs_model(llm_configured=False)
    # The keys default to off.
    assert not _build(Settings(**MODEL), _policy()).llm_reviewers  # type: ignore[arg-type]


def test_an_llm_agent_without_a_model_falls_back_to_classic_with_a_note() -> None:
    request = _build(Settings(), _policy(agent={"kind": "llm"}))
    assert request.agent == "classic"
    assert request.notes == ("agent llm → classic: the deployment has no model configured (REPROBOT_LLM_MODEL)",)
    assert _build(Settings(), _policy(agent={"kind": "auto"})).notes == ()  # auto means "a model if there is one"


def test_the_deployment_threshold_is_a_floor() -> None:
    settings = Settings(abstain_threshold=0.6)
    assert _build(settings, _policy(abstention={"threshold": 0.8})).abstain_threshold == 0.8
    lowered = _build(settings, _policy(abstention={"threshold": 0.2}))
    assert lowered.abstain_threshold == 0.6
    assert lowered.notes == ("abstention threshold 0.2 → 0.6: deployment floor REPROBOT_ABSTAIN_THRESHOLD",)


def test_reproduce_with_a_model_runs_one_brt_only_llm_trajectory() -> None:
    settings = Settings(**MODEL)  # type: ignore[arg-type]
    request = _build(settings, _policy(agent={"kind": "auto", "strategy": "tdd"}), mode="reproduce")
    assert (request.agent, request.strategy, request.trajectories) == ("llm", "brt-only", 1)
    classic = _build(Settings(), _policy(agent={"kind": "auto"}), mode="reproduce")
    assert classic.agent == "classic"


def test_cli_and_github_give_the_same_request_for_the_same_inputs() -> None:
    settings = Settings(trajectories=4, max_trajectories=8)
    args = build_parser().parse_args(
        ["fix", "--repo", str(REPO), "--issue", "/tmp/i.md", "--trajectories", "32", "--strategy", "tdd"]
    )
    command = parse_command("/fix trajectories=32 strategy=tdd")
    assert command is not None
    from_cli = options_from_args(args)
    from_github = JobOptions.from_command(command.options)
    assert from_cli == from_github == JobOptions(trajectories=32, strategy="tdd")
    for policy in (None, _policy()):
        assert _build(settings, policy, from_cli) == _build(settings, policy, from_github)
    request = _build(settings, None, from_cli)
    assert request.trajectories == 8 and request.strategy == "tdd" and len(request.notes) == 1


def test_notes_render_as_one_section_and_nothing_without_notes() -> None:
    assert render_notes(()) == ""
    text = render_notes(["trajectories 32 → 8: deployment cap REPROBOT_MAX_TRAJECTORIES"])
    assert "### Adjusted to this deployment's limits" in text
    assert "- trajectories 32 → 8: deployment cap REPROBOT_MAX_TRAJECTORIES" in text


def test_caps_are_read_from_the_environment() -> None:
    s = Settings.from_env(
        {
            "REPROBOT_MAX_TRAJECTORIES": "8",
            "REPROBOT_MAX_TEST_TIMEOUT": "600",
            "REPROBOT_MAX_JOB_MINUTES": "45",
            "REPROBOT_AGENTS": "classic, llm",
            "REPROBOT_STRATEGIES": "tdd",
        }
    )
    assert (s.max_trajectories, s.max_test_timeout, s.max_job_minutes) == (8, 600.0, 45.0)
    assert s.agents == ("classic", "llm") and s.strategies == ("tdd",)
    for bad in (
        {"REPROBOT_AGENTS": "classic,robot"},
        {"REPROBOT_STRATEGIES": " , "},
        {"REPROBOT_MAX_TRAJECTORIES": "2", "REPROBOT_TRAJECTORIES": "4"},
        {"REPROBOT_MAX_TEST_TIMEOUT": "60"},
        {"REPROBOT_MAX_JOB_MINUTES": "0"},
    ):
        with pytest.raises(SettingsError):
            Settings.from_env(bad)

"""The one place a JobRequest is built: the deployment's settings, the repo's policy and the command's options.

Every source (the CLI, a GitHub event or command, the eval harness, later forges) describes what the user asked
for as `JobOptions` and calls `build_request`. The deployment's caps in `Settings` bound every user-controlled
knob; a value over its cap is clamped and the request carries one human note per clamp, which the status
comment and the PR body show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.pipeline.types import JobRequest, Mode
from bot.settings.config import Settings
from sandboxes.pathpolicy import DEFAULT_DENIED

#: Agent kinds that call the model for their trajectories.
_MODEL_AGENTS = ("llm", "mixed", "auto")


@dataclass(frozen=True)
class JobOptions:
    """What the command itself asked for (CLI flags, `/fix key=value`); None means "not given"."""

    trajectories: int | None = None
    strategy: str | None = None
    agent: str | None = None
    test_timeout: float | None = None
    sandbox: str | None = None
    selector: str | None = None
    llm_reviewers: bool = False
    llm_abstention: bool = False
    allow_direct_references: bool = False

    @classmethod
    def from_command(cls, options: Mapping[str, Any]) -> JobOptions:
        """The options of a parsed `/fix key=value` command (handlers.commands checked their syntax)."""
        trajectories = options.get("trajectories")
        strategy = options.get("strategy")
        return cls(
            trajectories=int(trajectories) if trajectories else None,
            strategy=str(strategy) if strategy else None,
        )

    def asks_model(self, llm_configured: bool) -> bool:
        """True when the command itself wants a model (the CLI checks the endpoint before any work)."""
        wants_agent = self.agent in ("llm", "mixed") or (self.agent == "auto" and llm_configured)
        return wants_agent or self.llm_reviewers or self.llm_abstention


class _Notes:
    """Collects one sentence per knob the deployment's caps changed."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def cap(self, knob: str, asked: float, cap: float | None, setting: str, unit: str = "") -> float:
        """`asked`, or `cap` (with a note) when the deployment allows less."""
        if cap is None or asked <= cap:
            return asked
        self.lines.append(f"{knob} {asked:g}{unit} → {cap:g}{unit}: deployment cap REPROBOT_{setting}")
        return cap

    def allowed(self, knob: str, asked: str, allowed: tuple[str, ...], fallback: str, setting: str) -> str:
        """`asked` when the deployment allows it, else `fallback` (with a note)."""
        if asked in allowed:
            return asked
        chosen = fallback if fallback in allowed else allowed[0]
        self.lines.append(f"{knob} {asked} → {chosen}: not allowed by REPROBOT_{setting} ({', '.join(allowed)})")
        return chosen

    def needs_model(self, knob: str, asked: bool, llm_configured: bool) -> bool:
        """`asked`, unless the deployment has no model (then off, with a note)."""
        if asked and not llm_configured:
            self.lines.append(f"{knob} off: the deployment has no model configured (REPROBOT_LLM_MODEL)")
            return False
        return asked


def build_request(
    settings: Settings,
    policy: Mapping[str, Any] | None,
    options: JobOptions,
    *,
    repo: Path,
    issue_text: str,
    issue_ref: str,
    mode: Mode,
    base_commit: str | None,
) -> JobRequest:
    """The JobRequest for one job, every knob bounded by the deployment's caps (notes say what was clamped).

    `policy` is the repo's effective policy (bot.settings.policy.load_policy); None when there is none (the CLI),
    in which case the deployment's defaults (REPROBOT_TRAJECTORIES, REPROBOT_TEST_TIMEOUT, ...) fill in what the options
    leave open. With a policy, the command's options win over the policy's keys.
    """
    # The helpers run in this order because each may add a note, and the notes are shown in this order.
    notes = _Notes()
    p = policy or {}
    env_p: Mapping[str, Any] = p.get("environment", {})
    trajectories, timeout = _size(settings, policy, options, notes)
    agent, strategy = _agent(settings, p.get("agent", {}), options, notes)
    llm_reviewers = notes.needs_model(
        "LLM reviewers", options.llm_reviewers or bool(p.get("review", {}).get("llm", False)), settings.llm_configured
    )
    llm_abstention = notes.needs_model(
        "LLM abstention",
        options.llm_abstention or bool(p.get("abstention", {}).get("llm", False)),
        settings.llm_configured,
    )
    threshold = _threshold(settings, policy, notes)
    uses_model = agent in _MODEL_AGENTS or llm_reviewers or llm_abstention
    max_steps, max_cost, job_minutes = _budget(settings, policy, uses_model, notes)
    if mode == "reproduce" and agent in _MODEL_AGENTS:
        # A reproduction is a test, not a fix: one model trajectory that only writes the BRT.
        agent, strategy, trajectories = "llm", "brt-only", 1
    setup = env_p.get("setup")
    return JobRequest(
        repo=repo,
        issue_text=issue_text,
        issue_ref=issue_ref,
        mode=mode,
        trajectories=trajectories,
        agent=agent,
        sandbox=_sandbox(settings, policy, options),
        selector=options.selector or str(p.get("selection", {}).get("selector") or "ranked"),
        abstain_threshold=threshold,
        base_commit=base_commit,
        test_timeout=timeout,
        denied_paths=tuple(p["paths"]["deny"]) if policy else DEFAULT_DENIED,
        strategy=strategy,
        llm_reviewers=llm_reviewers,
        llm_abstention=llm_abstention,
        max_steps=max_steps,
        max_cost=max_cost,
        setup_commands=(str(setup),) if setup else (),
        test_command=env_p.get("test"),
        allow_direct_references=options.allow_direct_references or bool(env_p.get("allow_direct_references")),
        job_minutes=job_minutes,
        notes=tuple(notes.lines),
    )


def _size(
    settings: Settings, policy: Mapping[str, Any] | None, options: JobOptions, notes: _Notes
) -> tuple[int, float]:
    """How many trajectories, and the test timeout: the command, else the policy, else the deployment; capped."""
    default_m = settings.trajectories
    if policy:
        default_m = min(int(policy["agent"]["trajectories"]), default_m)
    trajectories = int(
        notes.cap("trajectories", options.trajectories or default_m, settings.max_trajectories, "MAX_TRAJECTORIES")
    )
    env_p: Mapping[str, Any] = (policy or {}).get("environment", {})
    timeout = options.test_timeout or float(env_p.get("timeout") or settings.test_timeout)
    timeout = notes.cap("test timeout", timeout, settings.max_test_timeout, "MAX_TEST_TIMEOUT", " s")
    return trajectories, timeout


def _agent(settings: Settings, agent_p: Mapping[str, Any], options: JobOptions, notes: _Notes) -> tuple[str, str]:
    """The agent kind and strategy, among those the deployment allows; a model agent needs a model."""
    agent = options.agent or str(agent_p.get("kind") or "classic")
    agent = notes.allowed("agent", agent, settings.agents, "classic", "AGENTS")
    if agent == "auto" and not settings.llm_configured:
        agent = "classic"  # auto means "the model when there is one": no note, it is the documented meaning
    elif agent in _MODEL_AGENTS and not settings.llm_configured:
        notes.lines.append(f"agent {agent} → classic: the deployment has no model configured (REPROBOT_LLM_MODEL)")
        agent = "classic"
    strategy = options.strategy or str(agent_p.get("strategy") or "freeform")
    strategy = notes.allowed("strategy", strategy, settings.strategies, "freeform", "STRATEGIES")
    return agent, strategy


def _threshold(settings: Settings, policy: Mapping[str, Any] | None, notes: _Notes) -> float:
    """The abstention threshold: the policy's, but never below the deployment's floor."""
    threshold = settings.abstain_threshold
    if policy and float(policy["abstention"]["threshold"]) >= threshold:
        threshold = float(policy["abstention"]["threshold"])
    elif policy:
        # The deployment's threshold is a floor: a repo may be more cautious, never less.
        asked = float(policy["abstention"]["threshold"])
        notes.lines.append(
            f"abstention threshold {asked:g} → {threshold:g}: deployment floor REPROBOT_ABSTAIN_THRESHOLD"
        )
    return threshold


def _budget(
    settings: Settings, policy: Mapping[str, Any] | None, uses_model: bool, notes: _Notes
) -> tuple[int | None, float | None, float | None]:
    """The policy's (LLM steps, cost, job minutes), capped by the deployment; all None without a policy."""
    if not policy:
        return None, None, None
    job_minutes = notes.cap(
        "job minutes", float(policy["budget"]["max_minutes"]), settings.max_job_minutes, "MAX_JOB_MINUTES"
    )
    max_steps, max_cost = int(policy["agent"]["max_steps"]), float(policy["budget"]["max_cost_usd"])
    if uses_model:
        # The ledger takes the smaller of the two anyway; the note tells the repo its key did not apply.
        max_steps = int(notes.cap("LLM steps", max_steps, settings.llm_max_steps, "LLM_MAX_STEPS"))
        max_cost = notes.cap("cost", max_cost, settings.llm_max_cost, "LLM_MAX_COST", " USD")
    return max_steps, max_cost, job_minutes


def _sandbox(settings: Settings, policy: Mapping[str, Any] | None, options: JobOptions) -> str:
    """The sandbox backend: the command's, else the policy's (unless the deployment runs none), else the default."""
    if options.sandbox:
        return options.sandbox
    if policy and settings.sandbox != "none":
        return str(policy["environment"]["sandbox"])
    return settings.sandbox

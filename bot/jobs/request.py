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
    notes = _Notes()
    model = settings.llm_configured
    p = policy or {}
    agent_p: Mapping[str, Any] = p.get("agent", {})
    env_p: Mapping[str, Any] = p.get("environment", {})

    default_m = min(int(agent_p["trajectories"]), settings.trajectories) if policy else settings.trajectories
    trajectories = int(
        notes.cap("trajectories", options.trajectories or default_m, settings.max_trajectories, "MAX_TRAJECTORIES")
    )
    timeout = options.test_timeout or float(env_p.get("timeout") or settings.test_timeout)
    timeout = notes.cap("test timeout", timeout, settings.max_test_timeout, "MAX_TEST_TIMEOUT", " s")

    agent = options.agent or str(agent_p.get("kind") or "classic")
    agent = notes.allowed("agent", agent, settings.agents, "classic", "AGENTS")
    if agent == "auto" and not model:
        agent = "classic"  # auto means "the model when there is one": no note, it is the documented meaning
    elif agent in _MODEL_AGENTS and not model:
        notes.lines.append(f"agent {agent} → classic: the deployment has no model configured (REPROBOT_LLM_MODEL)")
        agent = "classic"
    strategy = options.strategy or str(agent_p.get("strategy") or "freeform")
    strategy = notes.allowed("strategy", strategy, settings.strategies, "freeform", "STRATEGIES")

    review_llm = options.llm_reviewers or bool(p.get("review", {}).get("llm", False))
    abstention_llm = options.llm_abstention or bool(p.get("abstention", {}).get("llm", False))
    llm_reviewers = notes.needs_model("LLM reviewers", review_llm, model)
    llm_abstention = notes.needs_model("LLM abstention", abstention_llm, model)
    uses_model = agent in _MODEL_AGENTS or llm_reviewers or llm_abstention

    threshold = settings.abstain_threshold
    if policy and float(p["abstention"]["threshold"]) >= threshold:
        threshold = float(p["abstention"]["threshold"])
    elif policy:
        # The deployment's threshold is a floor: a repo may be more cautious, never less.
        asked = float(p["abstention"]["threshold"])
        notes.lines.append(
            f"abstention threshold {asked:g} → {threshold:g}: deployment floor REPROBOT_ABSTAIN_THRESHOLD"
        )

    max_steps = max_cost = job_minutes = None
    if policy:
        job_minutes = notes.cap(
            "job minutes", float(p["budget"]["max_minutes"]), settings.max_job_minutes, "MAX_JOB_MINUTES"
        )
        max_steps, max_cost = int(agent_p["max_steps"]), float(p["budget"]["max_cost_usd"])
        if uses_model:
            # The ledger takes the smaller of the two anyway; the note tells the repo its key did not apply.
            max_steps = int(notes.cap("LLM steps", max_steps, settings.llm_max_steps, "LLM_MAX_STEPS"))
            max_cost = notes.cap("cost", max_cost, settings.llm_max_cost, "LLM_MAX_COST", " USD")

    if mode == "reproduce" and agent in _MODEL_AGENTS:
        # A reproduction is a test, not a fix: one model trajectory that only writes the BRT.
        agent, strategy, trajectories = "llm", "brt-only", 1

    if options.sandbox:
        sandbox = options.sandbox
    elif policy and settings.sandbox != "none":
        sandbox = str(env_p["sandbox"])
    else:
        sandbox = settings.sandbox
    setup = env_p.get("setup")
    return JobRequest(
        repo=repo,
        issue_text=issue_text,
        issue_ref=issue_ref,
        mode=mode,
        trajectories=trajectories,
        agent=agent,
        sandbox=sandbox,
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

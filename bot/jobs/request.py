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

from agents.repair.registry import may_use_model
from bot.pipeline.types import JobRequest, Mode
from bot.settings.config import Settings
from bot.settings.policy_model import Policy
from sandboxes.pathpolicy import DEFAULT_DENIED


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


def _typed(policy: Policy | Mapping[str, Any] | None) -> Policy | None:
    """The typed policy; a mapping (load_policy's result) is converted, and an empty one is no policy."""
    if policy is None or isinstance(policy, Policy):
        return policy
    return Policy.from_dict(policy) if policy else None


def _agent(notes: _Notes, asked: str, settings: Settings) -> str:
    """The agent kind: one the deployment allows, and classic when a model kind has no model to use."""
    agent = notes.allowed("agent", asked, settings.agents, "classic", "AGENTS")
    if agent == "auto" and not settings.llm_configured:
        return "classic"  # auto means "the model when there is one": no note, it is the documented meaning
    if may_use_model(agent) and not settings.llm_configured:
        notes.lines.append(f"agent {agent} → classic: the deployment has no model configured (REPROBOT_LLM_MODEL)")
        return "classic"
    return agent


def _threshold(notes: _Notes, settings: Settings, policy: Policy | None) -> float:
    """The abstention threshold: the policy's, but never below the deployment's floor (noted when raised)."""
    threshold = settings.abstain_threshold
    if policy is None:
        return threshold
    asked = policy.abstention.threshold
    if asked >= threshold:
        return asked
    # The deployment's threshold is a floor: a repo may be more cautious, never less.
    notes.lines.append(f"abstention threshold {asked:g} → {threshold:g}: deployment floor REPROBOT_ABSTAIN_THRESHOLD")
    return threshold


def _budget(
    notes: _Notes, settings: Settings, policy: Policy | None, uses_model: bool
) -> tuple[float | None, int | None, float | None]:
    """The policy's (job minutes, LLM steps, cost), each bounded by the deployment's cap; all None without one."""
    if policy is None:
        return None, None, None
    job_minutes = notes.cap("job minutes", policy.budget.max_minutes, settings.max_job_minutes, "MAX_JOB_MINUTES")
    max_steps, max_cost = policy.agent.max_steps, policy.budget.max_cost_usd
    if uses_model:
        # The ledger takes the smaller of the two anyway; the note tells the repo its key did not apply.
        max_steps = int(notes.cap("LLM steps", max_steps, settings.llm_max_steps, "LLM_MAX_STEPS"))
        max_cost = notes.cap("cost", max_cost, settings.llm_max_cost, "LLM_MAX_COST", " USD")
    return job_minutes, max_steps, max_cost


def build_request(
    settings: Settings,
    policy: Policy | Mapping[str, Any] | None,
    options: JobOptions,
    *,
    repo: Path,
    issue_text: str,
    issue_ref: str,
    mode: Mode,
    base_commit: str | None,
) -> JobRequest:
    """The JobRequest for one job, every knob bounded by the deployment's caps (notes say what was clamped).

    `policy` is the repo's effective policy (bot.settings.policy.load_policy_model, or load_policy's mapping);
    None when there is none (the CLI), in which case the deployment's defaults (REPROBOT_TRAJECTORIES,
    REPROBOT_TEST_TIMEOUT, ...) fill in what the options leave open. With a policy, the command's options win over
    the policy's keys.
    """
    notes = _Notes()
    model = settings.llm_configured
    pol = _typed(policy)
    env_p = pol.environment if pol else None

    default_m = min(pol.agent.trajectories, settings.trajectories) if pol else settings.trajectories
    trajectories = int(
        notes.cap("trajectories", options.trajectories or default_m, settings.max_trajectories, "MAX_TRAJECTORIES")
    )
    timeout = options.test_timeout or float((env_p.timeout if env_p else None) or settings.test_timeout)
    timeout = notes.cap("test timeout", timeout, settings.max_test_timeout, "MAX_TEST_TIMEOUT", " s")

    agent = _agent(notes, options.agent or (pol.agent.kind if pol else "classic"), settings)
    strategy = options.strategy or (pol.agent.strategy if pol else "freeform")
    strategy = notes.allowed("strategy", strategy, settings.strategies, "freeform", "STRATEGIES")

    llm_reviewers = notes.needs_model("LLM reviewers", options.llm_reviewers or bool(pol and pol.review.llm), model)
    abstention_llm = options.llm_abstention or bool(pol and pol.abstention.llm)
    llm_abstention = notes.needs_model("LLM abstention", abstention_llm, model)
    uses_model = may_use_model(agent) or llm_reviewers or llm_abstention
    threshold = _threshold(notes, settings, pol)
    job_minutes, max_steps, max_cost = _budget(notes, settings, pol, uses_model)

    if mode == "reproduce" and may_use_model(agent):
        # A reproduction is a test, not a fix: one model trajectory that only writes the BRT.
        agent, strategy, trajectories = "llm", "brt-only", 1

    # The deployment's `none` (an explicit opt-in) is not overridden by a policy; an option still wins.
    sandbox = options.sandbox or (env_p.sandbox if env_p and settings.sandbox != "none" else settings.sandbox)
    setup = env_p.setup if env_p else None
    return JobRequest(
        repo=repo,
        issue_text=issue_text,
        issue_ref=issue_ref,
        mode=mode,
        trajectories=trajectories,
        agent=agent,
        sandbox=sandbox,
        selector=options.selector or (pol.selection.selector if pol else "ranked"),
        abstain_threshold=threshold,
        base_commit=base_commit,
        test_timeout=timeout,
        denied_paths=pol.paths.deny if pol else DEFAULT_DENIED,
        strategy=strategy,
        llm_reviewers=llm_reviewers,
        llm_abstention=llm_abstention,
        max_steps=max_steps,
        max_cost=max_cost,
        setup_commands=(str(setup),) if setup else (),
        test_command=env_p.test if env_p else None,
        allow_direct_references=options.allow_direct_references or bool(env_p and env_p.allow_direct_references),
        job_minutes=job_minutes,
        notes=tuple(notes.lines),
    )

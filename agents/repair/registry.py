"""The repair agents by name, and the policies that pick among them for each trajectory of a job.

An agent is registered here under the name a job asks for (`classic`, `llm`); the pipeline's generate stage
looks names up instead of branching on them. `auto` and `mixed` are not agents but policies: they resolve to a
registered agent per trajectory. The table is plain data, built from the agents' classes, so nothing registers
itself at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agents.repair.classic import ClassicAgent
from agents.repair.llm import LlmAgent
from agents.repair.task import RepairTask
from agents.trajectory import Trajectory
from sandboxes.base import Sandbox
from sandboxes.environment import TestSuite


class Agent(Protocol):
    """One job's repair agent: it runs each of the job's trajectories of its kind in a sandboxed workspace."""

    #: The strategy its trajectories record (the classic agent has none but freeform).
    strategy: str

    async def start(self, trajectory: Trajectory) -> None:
        """Record the steps a trajectory inherits before it waits for a sandbox."""

    async def run(self, sandbox: Sandbox, runner: TestSuite, trajectory: Trajectory) -> None:
        """Work until done: raise Submitted with a fix in the workspace, or LimitsExceeded without one."""

    def report(self) -> str:
        """One line for the job's log once every trajectory ended; empty when there is nothing to say."""


@dataclass(frozen=True)
class Registered:
    """A repair agent under its name: how a job makes one, and what it needs from the job."""

    make: Callable[[RepairTask], Agent]
    #: The agent writes its own BRT: a job whose report no synthesized test reproduced still runs it.
    writes_brt: bool = False
    #: The agent calls the model: a job asking for it needs one configured.
    uses_model: bool = False


AGENTS: Mapping[str, Registered] = {
    "classic": Registered(ClassicAgent),
    "llm": Registered(LlmAgent, writes_brt=True, uses_model=True),
}


def _auto(count: int, model: bool) -> list[str]:
    """The model's agent when a model is configured, else the classic one."""
    return ["llm" if model else "classic"] * count


def _mixed(count: int, model: bool) -> list[str]:
    """Alternate, starting with the model's agent."""
    return ["llm" if i % 2 == 0 else "classic" for i in range(count)]


#: Policies that pick a registered agent per trajectory: (trajectory count, a model is configured) -> names.
POLICIES: Mapping[str, Callable[[int, bool], list[str]]] = {"auto": _auto, "mixed": _mixed}


def trajectory_kinds(agent: str, count: int, llm_configured: bool) -> list[str]:
    """The registered agent of each trajectory: `agent` itself, or what its policy picks (auto, mixed)."""
    policy = POLICIES.get(agent)
    if policy is not None:
        return policy(count, llm_configured)
    if agent not in AGENTS:
        names = [*AGENTS, *POLICIES]
        raise ValueError(f"unknown agent kind {agent!r}; expected {', '.join(names[:-1])} or {names[-1]}")
    return [agent] * count


def may_use_model(agent: str) -> bool:
    """True when asking for `agent` may run the model: a registered agent that calls it, or a policy (which may pick
    one)."""
    return agent in POLICIES or (agent in AGENTS and AGENTS[agent].uses_model)


def writes_brt(kinds: Sequence[str]) -> bool:
    """True when some trajectory's agent writes its own BRT (so a job goes on without a synthesized one)."""
    return any(AGENTS[kind].writes_brt for kind in kinds)


def make_agents(kinds: Sequence[str], task: RepairTask) -> dict[str, Agent]:
    """One agent per registered name among `kinds`, made for this job's task (its trajectories share it)."""
    return {kind: AGENTS[kind].make(task) for kind in dict.fromkeys(kinds)}

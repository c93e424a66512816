"""The classic agent as a registered repair agent: every trajectory searches fix templates from the reproduction."""

from __future__ import annotations

from agents.repair.classic.search import CandidateCache, ClassicSearch, SearchLimits
from agents.repair.task import RepairTask
from agents.trajectory import LimitsExceeded, Trajectory
from sandboxes.base import Sandbox
from sandboxes.environment import TestSuite


class ClassicAgent:
    """One job's classic trajectories; they share a memo of candidate verdicts (same edit, same verdict)."""

    strategy = "freeform"

    def __init__(self, task: RepairTask) -> None:
        self.task = task
        self.cache = CandidateCache()
        self.limits = SearchLimits(test_impact=task.test_impact, candidate_timeout_factor=task.candidate_timeout_factor)

    async def start(self, trajectory: Trajectory) -> None:
        """Replay the reproduction's steps: a classic trajectory builds on that BRT and its suspects."""
        for step in self.task.shared_steps:
            await trajectory.step(step["kind"], **{k: v for k, v in step.items() if k not in ("idx", "kind")})

    async def run(self, sandbox: Sandbox, runner: TestSuite, trajectory: Trajectory) -> None:
        """Search until a validated fix (Submitted) or a budget runs out (LimitsExceeded)."""
        task = self.task
        if task.reproduction is None:
            raise LimitsExceeded("the classic agent needs a synthesized BRT and none reproduced the report")
        search = ClassicSearch(task.reproduction, runner, task.baseline, self.cache, self.limits, settled=task.settled)
        await search.run(sandbox, trajectory)

    def report(self) -> str:
        """How often the shared memo answered instead of a sandbox run."""
        return f"candidate cache {self.cache.hits} hits, {self.cache.misses} misses"

"""The LLM agent as a registered repair agent: tools, budgets and the saved conversation of each trajectory."""

from __future__ import annotations

from agents.repair.llm.loop import AgentConfig, RepairAgent
from agents.repair.llm.tools import Toolbox
from agents.repair.task import RepairTask
from agents.trajectory import Trajectory
from sandboxes.base import Sandbox
from sandboxes.environment import TestSuite


class LlmAgent:
    """One job's ReAct trajectories, each with its own toolbox over its sandbox."""

    def __init__(self, task: RepairTask) -> None:
        self.task = task
        self.strategy = task.strategy

    async def start(self, trajectory: Trajectory) -> None:
        """Nothing inherited: the model reads the report and writes its own BRT."""

    async def run(self, sandbox: Sandbox, runner: TestSuite, trajectory: Trajectory) -> None:
        """Run one ReAct repair trajectory; raises Submitted or LimitsExceeded like the classic search."""
        task = self.task
        if task.model is None or task.usage is None:
            raise RuntimeError("an llm trajectory was scheduled but no model is configured")
        tools = Toolbox(
            sandbox=sandbox,
            runner=runner,
            trajectory=trajectory,
            facts=task.facts,
            strategy=task.strategy,
            denied_paths=task.denied_paths,
            fallback_brt=task.reproduction.brt if task.reproduction is not None else None,
            test_timeout=task.test_timeout,
        )
        save_to = None if task.conversations is None else task.conversations / f"{trajectory.id}.json"
        config = AgentConfig(strategy=task.strategy, max_steps=task.max_steps, save_to=save_to)
        agent = RepairAgent(task.model, tools, trajectory, task.issue_text, config)
        try:
            await agent.run()
        finally:
            trajectory.usage = {"steps": agent.steps, **task.usage(trajectory.id)}

    def report(self) -> str:
        """The model's spend is in the job's cost line; nothing more to log."""
        return ""

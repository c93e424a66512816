"""Glue between the generate stage and the LLM repair agent: tools, budgets and the saved conversation."""

from __future__ import annotations

from agents.reading import parse_issue
from agents.repair.llm import AgentConfig, RepairAgent, Toolbox
from agents.trajectory import Trajectory
from bot.pipeline.types import GenerateRequest
from sandboxes.base import Sandbox
from sandboxes.environment import TestSuite


async def run_llm_trajectory(gen: GenerateRequest, traj: Trajectory, sandbox: Sandbox, runner: TestSuite) -> None:
    """Run one ReAct repair trajectory; raises Submitted or LimitsExceeded like the classic search."""
    ctx = gen.ctx
    if ctx.model is None or ctx.ledger is None:
        raise RuntimeError("an llm trajectory was scheduled but no model is configured")
    facts = gen.facts or parse_issue(gen.request.issue_text)
    tools = Toolbox(
        sandbox=sandbox,
        runner=runner,
        trajectory=traj,
        facts=facts,
        strategy=gen.request.strategy,
        denied_paths=gen.request.denied_paths,
        fallback_brt=gen.repro.brt if gen.repro is not None else None,
        test_timeout=gen.request.test_timeout,
    )
    config = AgentConfig(
        strategy=gen.request.strategy,
        max_steps=ctx.ledger.budget.max_steps,
        save_to=ctx.settings.data_dir / "trajectories" / f"{traj.id}.json",
    )
    agent = RepairAgent(ctx.model, tools, traj, gen.request.issue_text, config)
    try:
        await agent.run()
    finally:
        traj.usage = {"steps": agent.steps, **ctx.ledger.usage(traj.id).to_json()}

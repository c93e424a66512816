"""The reproduce stage: synthesize a BRT that fails on the base commit the reported way, and rank suspects."""

from __future__ import annotations

from agents.repair.registry import writes_brt
from agents.reproduce import NotReproduced as NoReproduction
from agents.reproduce import reproduce
from agents.trajectory import Trajectory
from bot.pipeline.state import JobState, need
from bot.pipeline.stops import NotReproduced
from bot.pipeline.types import sandbox_spec
from sandboxes.environment import TestSuite
from sandboxes.factory import make_sandbox
from sandboxes.workspace import tracked_files


async def run(state: JobState) -> None:
    """Find the reproduction every later stage builds on; raise NotReproduced when the job cannot go on without one.

    The search runs as the job's shared trajectory (`<job>-repro`); a fix job also localizes the fault.
    """
    ctx, request = state.ctx, state.request
    await ctx.stage("reproduce", "synthesizing a bug reproduction test")
    env = need(state.env, "environment")
    runner = TestSuite(env, timeout=request.test_timeout)
    shared = Trajectory(id=f"{ctx.job_id}-repro", agent=request.agent, seed=0)
    state.shared = shared
    await ctx.open_trajectory(shared, strategy="reproduce")
    spec = sandbox_spec(state.base, env, ctx.settings, request.test_timeout)
    try:
        async with make_sandbox(request.sandbox, spec) as sb:
            files = tracked_files(state.base)
            state.repro = await reproduce(state.facts, sb, runner, files, shared, localize=request.mode == "fix")
    except NoReproduction as exc:
        # Agents that write their own BRT (the LLM agent) are still worth their attempt on a report the
        # synthesizer cannot turn into a test; a job of classic trajectories only stops here.
        if not writes_brt(state.kinds):
            state.trajectories = [shared.summary()]
            raise NotReproduced(str(exc)) from exc
        await ctx.stage("reproduce", f"no synthesized test ({exc}); llm trajectories write their own")
    finally:
        shared.finish()
        if shared.status == "not_fixed":
            shared.status = "reproduced" if request.mode == "reproduce" else shared.status
        await ctx.save_trajectory(shared)

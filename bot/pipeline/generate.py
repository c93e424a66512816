"""The generate stage: M trajectories in parallel, each in its own sandboxed copy of the workspace.

Each trajectory's agent is looked up by name in the registry (agents/repair/registry.py); the stage knows no
agent's internals, only the `Agent` protocol and how trajectories end (Submitted, LimitsExceeded).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from agents.repair.registry import Agent, make_agents
from agents.repair.task import RepairTask, UsageOf
from agents.trajectory import LimitsExceeded, Submitted, Trajectory
from bot.pipeline.state import JobState, need
from bot.pipeline.types import JobLedger, sandbox_spec
from patch_selectors.majority import MajorityWatch
from sandboxes.base import host_cpu_count
from sandboxes.environment import TestSuite
from sandboxes.factory import make_sandbox
from sandboxes.workspace import copy_workspace

log = logging.getLogger(__name__)

#: Step kinds that are one candidate patch tried (counted for the progress display's rate).
CANDIDATE_STEPS = frozenset({"try_candidate", "try_alternative"})
#: Seconds between two progress updates of the search.
PROGRESS_EVERY = 2.0


def candidates_tried(trajectories: list[Trajectory]) -> int:
    """How many candidate patches the trajectories have tried so far."""
    return sum(1 for t in trajectories for s in t.steps if s.get("kind") in CANDIDATE_STEPS)


@dataclass
class _Generation:
    """One job's trajectories while they run: their agents, the slots they wait for, and the vote."""

    state: JobState
    agents: dict[str, Agent]
    gate: asyncio.Semaphore
    vote: MajorityWatch
    settled: asyncio.Event
    live: list[Trajectory] = field(default_factory=list)


async def run(state: JobState) -> None:
    """Run the job's trajectories; the generated ones (and their summaries) go into the state."""
    ctx, request = state.ctx, state.request
    if state.repro is not None:
        # The BRT file was written into the base workspace; trajectories start from a clean copy.
        (state.base / state.repro.brt.path).unlink(missing_ok=True)
    parallel = ctx.settings.max_parallel or host_cpu_count()
    await ctx.stage("generate", f"{request.trajectories} trajectories, {parallel} at a time")
    generated = await generate_patches(state, parallel)
    state.generated = generated
    state.trajectories = [t.summary() for t in generated]


def repair_task(state: JobState, settled: asyncio.Event) -> RepairTask:
    """What the job's agents are given: the report, the reproduction, the baseline, the budgets and the model."""
    ctx, request = state.ctx, state.request
    return RepairTask(
        facts=state.facts,
        issue_text=request.issue_text,
        reproduction=state.repro,
        shared_steps=state.shared.steps if state.shared is not None else [],
        baseline=need(state.baseline, "baseline"),
        strategy=request.strategy,
        denied_paths=request.denied_paths,
        test_timeout=request.test_timeout,
        test_impact=ctx.settings.test_impact,
        candidate_timeout_factor=ctx.settings.candidate_timeout_factor,
        settled=settled,
        model=ctx.model,
        max_steps=ctx.ledger.budget.max_steps if ctx.ledger is not None else 0,
        usage=_usage_of(ctx.ledger),
        conversations=ctx.settings.data_dir / "trajectories",
    )


def _usage_of(ledger: JobLedger | None) -> UsageOf | None:
    """One trajectory's model usage, read from the job's ledger (None without a model)."""
    if ledger is None:
        return None
    return lambda trajectory: ledger.usage(trajectory).to_json()


async def generate_patches(state: JobState, parallel: int) -> list[Trajectory]:
    """Run the trajectories, at most `parallel` at a time; a kind's trajectories share its agent.

    With early stop (REPROBOT_EARLY_STOP), once the finished trajectories' leading fix cannot be outvoted by the
    rest (patch_selectors.majority), trajectories still waiting do not run and agents still running may stop.
    """
    settled = asyncio.Event()
    gen = _Generation(
        state=state,
        agents=make_agents(state.kinds, repair_task(state, settled)),
        gate=asyncio.Semaphore(max(1, parallel)),
        vote=MajorityWatch(state.request.trajectories),
        settled=settled,
    )
    ticker = asyncio.create_task(_report_rate(gen))
    started = asyncio.get_running_loop().time()
    try:
        trajs = await asyncio.gather(*(_one_trajectory(gen, i, kind) for i, kind in enumerate(state.kinds)))
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    n, elapsed = candidates_tried(gen.live), asyncio.get_running_loop().time() - started
    rate = f"{n} candidates tried in {elapsed:.1f}s ({n / max(elapsed, 1e-9):.1f}/s)"
    log.info("job %s: %s", state.ctx.job_id, rate)
    state.ctx.tick(rate)
    for agent in gen.agents.values():
        if line := agent.report():
            log.info("job %s: %s", state.ctx.job_id, line)
    return list(trajs)


async def _report_rate(gen: _Generation) -> None:
    """Keep the progress display told how many candidates were tried, and how many per second."""
    started = asyncio.get_running_loop().time()
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        elapsed = asyncio.get_running_loop().time() - started
        n = candidates_tried(gen.live)
        gen.state.ctx.tick(f"{n} candidates tried, {n / elapsed:.1f}/s")


async def _one_trajectory(gen: _Generation, index: int, kind: str) -> Trajectory:
    """Run trajectory `index` with the agent registered as `kind`, unless the vote is settled first."""
    ctx, request, agent = gen.state.ctx, gen.state.request, gen.agents[kind]
    traj = Trajectory(id=f"{ctx.job_id}-t{index}", agent=kind, seed=index, strategy=agent.strategy)
    await ctx.open_trajectory(traj, strategy=agent.strategy)
    gen.live.append(traj)
    await agent.start(traj)
    async with gen.gate:
        if gen.settled.is_set():
            # The job's vote is settled: this trajectory could not change the outcome, so it does not run.
            traj.status = "not_fixed"
            await traj.step("stop", reason=gen.vote.describe())
            traj.finish()
            await ctx.save_trajectory(traj)
            return traj
        env = need(gen.state.env, "environment")
        workspace = await copy_workspace(gen.state.base, ctx.workdir / f"t{index}")
        runner = TestSuite(env, timeout=request.test_timeout)
        spec = sandbox_spec(workspace, env, ctx.settings, request.test_timeout)
        try:
            async with make_sandbox(request.sandbox, spec) as sb:
                await agent.run(sb, runner, traj)
        except Submitted as done:
            await traj.step("submit", summary=str(done))
        except LimitsExceeded as stop:
            traj.status = "not_fixed"
            await traj.step("stop", reason=str(stop))
        except (OSError, RuntimeError) as exc:
            # One broken trajectory must not sink the job; the error is kept with the trajectory.
            log.exception("job %s: trajectory %s failed", ctx.job_id, traj.id)
            traj.status, traj.error = "error", f"{type(exc).__name__}: {exc}"
        finally:
            traj.finish()
            await ctx.save_trajectory(traj)
            gen.vote.finish(traj.status == "fixed", traj.diff)
            if ctx.settings.early_stop and gen.vote.settled and not gen.settled.is_set():
                log.info("job %s: %s", ctx.job_id, gen.vote.describe())
                gen.settled.set()
    return traj

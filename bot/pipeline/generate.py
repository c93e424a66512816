"""Generate stage: M trajectories in parallel, each in its own sandboxed copy of the workspace."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agents.repair.classic import CandidateCache, ClassicSearch
from agents.trajectory import LimitsExceeded, Submitted, Trajectory
from bot.pipeline.llm_agent import run_llm_trajectory
from bot.pipeline.types import GenerateRequest, sandbox_spec
from patch_selectors.majority import MajorityWatch
from sandboxes.environment import TestSuite
from sandboxes.factory import make_sandbox
from sandboxes.workspace import copy_workspace

log = logging.getLogger(__name__)

#: GenerateRequest moved to bot.pipeline.types; it stays importable from here.
__all__ = ["GenerateRequest", "generate_patches", "trajectory_kinds"]


def trajectory_kinds(agent: str, count: int, llm_configured: bool) -> list[str]:
    """The agent kind of each trajectory: classic, llm, auto (llm when a model is configured) or mixed."""
    if agent == "mixed":
        return ["llm" if i % 2 == 0 else "classic" for i in range(count)]
    if agent == "auto":
        agent = "llm" if llm_configured else "classic"
    if agent not in ("llm", "classic"):
        raise ValueError(f"unknown agent kind {agent!r}; expected classic, llm, auto or mixed")
    return [agent] * count


#: Step kinds that are one candidate patch tried (counted for the progress display's rate).
CANDIDATE_STEPS = frozenset({"try_candidate", "try_alternative"})
#: Seconds between two progress updates of the search.
PROGRESS_EVERY = 2.0


def candidates_tried(trajectories: list[Trajectory]) -> int:
    """How many candidate patches the trajectories have tried so far."""
    return sum(1 for t in trajectories for s in t.steps if s.get("kind") in CANDIDATE_STEPS)


async def _report_rate(gen: GenerateRequest, live: list[Trajectory]) -> None:
    """Keep the progress display told how many candidates were tried, and how many per second."""
    started = asyncio.get_running_loop().time()
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        elapsed = asyncio.get_running_loop().time() - started
        n = candidates_tried(live)
        gen.ctx.tick(f"{n} candidates tried, {n / elapsed:.1f}/s")


async def _one_trajectory(
    gen: GenerateRequest,
    index: int,
    cache: CandidateCache,
    gate: asyncio.Semaphore,
    live: list[Trajectory],
    vote: MajorityWatch,
    settled: asyncio.Event,
) -> Trajectory:
    ctx = gen.ctx
    kind = trajectory_kinds(gen.request.agent, gen.request.trajectories, ctx.model is not None)[index]
    strategy = gen.request.strategy if kind == "llm" else "freeform"
    traj = Trajectory(id=f"{ctx.job_id}-t{index}", agent=kind, seed=index, strategy=strategy)
    await ctx.open_trajectory(traj, strategy=strategy)
    live.append(traj)
    if kind == "classic":
        for step in gen.shared_steps:
            await traj.step(step["kind"], **{k: v for k, v in step.items() if k not in ("idx", "kind")})
    async with gate:
        if settled.is_set():
            # The job's vote is settled: this trajectory could not change the outcome, so it does not run.
            traj.status = "not_fixed"
            await traj.step("stop", reason=vote.describe())
            traj.finish()
            await ctx.save_trajectory(traj)
            return traj
        workspace = await copy_workspace(gen.base, ctx.workdir / f"t{index}")
        runner = TestSuite(gen.env, timeout=gen.request.test_timeout)
        spec = sandbox_spec(workspace, gen.env, ctx.settings, gen.request.test_timeout)
        try:
            async with make_sandbox(gen.request.sandbox, spec) as sb:
                if kind == "llm":
                    await run_llm_trajectory(gen, traj, sb, runner)
                elif gen.repro is None:
                    raise LimitsExceeded("the classic agent needs a synthesized BRT and none reproduced the report")
                else:
                    search = ClassicSearch(gen.repro, runner, gen.baseline, cache, gen.limits, settled=settled)
                    await search.run(sb, traj)
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
            vote.finish(traj.status == "fixed", traj.diff)
            if gen.early_stop and vote.settled and not settled.is_set():
                log.info("job %s: %s", ctx.job_id, vote.describe())
                settled.set()
    return traj


async def generate_patches(gen: GenerateRequest) -> list[Trajectory]:
    """Run the trajectories, at most `parallel` at a time; they share a memo of candidate verdicts.

    With `early_stop`, once the finished trajectories' leading fix cannot be outvoted by the rest
    (patch_selectors.majority), trajectories still waiting do not run and classic searches still running
    stop at their next candidate.
    """
    cache = CandidateCache()
    gate = asyncio.Semaphore(max(1, gen.parallel))
    vote = MajorityWatch(gen.request.trajectories)
    settled = asyncio.Event()
    live: list[Trajectory] = []
    ticker = asyncio.create_task(_report_rate(gen, live))
    started = asyncio.get_running_loop().time()
    try:
        trajs = await asyncio.gather(
            *(_one_trajectory(gen, i, cache, gate, live, vote, settled) for i in range(gen.request.trajectories))
        )
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    n, elapsed = candidates_tried(live), asyncio.get_running_loop().time() - started
    rate = f"{n} candidates tried in {elapsed:.1f}s ({n / max(elapsed, 1e-9):.1f}/s)"
    log.info("job %s: %s", gen.ctx.job_id, rate)
    gen.ctx.tick(rate)
    log.info("job %s: candidate cache %d hits, %d misses", gen.ctx.job_id, cache.hits, cache.misses)
    return list(trajs)

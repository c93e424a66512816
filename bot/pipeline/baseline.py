"""The baseline stage: run the test suite once on the base commit and record which tests already fail."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path, PurePosixPath

from agents.localize import coverage_rc, read_coverage
from bot.pipeline.state import JobState, need
from bot.pipeline.stops import EnvironmentFailed
from bot.pipeline.types import JobContext, JobRequest, sandbox_spec
from sandboxes import baseline_cache
from sandboxes import environment as envlayer
from sandboxes.environment import Baseline, BuiltEnvironment, EnvironmentError_
from sandboxes.factory import make_sandbox
from sandboxes.workspace import tracked_files


async def run_baseline(ctx: JobContext, workspace: Path, env: BuiltEnvironment, request: JobRequest) -> Baseline:
    """The base commit's baseline: from the cache when this tree ran in this environment before, else run."""
    # Test impact selection needs to know which test executed which line: the one baseline run measures it.
    measure = ctx.settings.test_impact and env.spec.report_format == "junit-xml"
    if not ctx.settings.baseline_cache:
        return await _run_suite(ctx, workspace, env, request, measure)
    key = baseline_cache.baseline_key(
        await baseline_cache.workspace_tree(workspace),
        {
            "env": env.path.name,
            "spec": env.spec.to_json(),
            "measure": measure,
            "sandbox": request.sandbox,
            "rootfs": str(ctx.settings.rootfs or ""),
            "timeout": request.test_timeout,
        },
    )
    # Reading and writing a large suite's coverage takes a while: off the event loop.
    cached = await asyncio.to_thread(baseline_cache.load, ctx.settings.cache_dir, key)
    if cached is not None:
        return cached
    baseline = await _run_suite(ctx, workspace, env, request, measure)
    await asyncio.to_thread(baseline_cache.store, ctx.settings.cache_dir, key, baseline)
    return baseline


async def _run_suite(
    ctx: JobContext, workspace: Path, env: BuiltEnvironment, request: JobRequest, measure: bool
) -> Baseline:
    """Run the suite once on the base commit and record which tests already fail."""
    async with make_sandbox(request.sandbox, sandbox_spec(workspace, env, ctx.settings, request.test_timeout)) as sb:
        rc = coverage_rc(sb) if measure else None
        baseline, run = await envlayer.run_baseline(sb, env, timeout=request.test_timeout, coverage_rc=rc)
        if rc is not None and not run.tests and not run.result.timed_out and not envlayer.collected_nothing(run):
            # Nothing ran under coverage (it may be missing from a custom environment): the plain run decides.
            baseline, run = await envlayer.run_baseline(sb, env, timeout=request.test_timeout)
        elif measure and not run.result.timed_out:
            coverage = await read_coverage(sb, env.python)
            baseline = dataclasses.replace(baseline, coverage=coverage)
    if run.result.timed_out:
        # Every later stage runs the suite again; a suite that cannot finish makes all their verdicts noise.
        raise EnvironmentError_(
            f"the test suite did not finish within {request.test_timeout:g} s on the base commit (timed out); "
            "raise the timeout or fix the hanging test"
        )
    if env.spec.report_format == "junit-xml":
        problem = envlayer.diagnose_baseline(run, env.spec)
        if problem is not None and envlayer.collected_nothing(run):
            hidden = test_files(workspace)
            if not hidden:
                # A small project often has no tests at all: the job goes on, validated on the BRT, the near
                # inputs of the assessment and the report's examples; the PR says the repo has no tests.
                return dataclasses.replace(baseline, tests={}, no_tests=problem)
            # Test files that the settings hide are tests a fix could break unseen: precision first.
            problem += f"; yet the repo has test files ({', '.join(hidden[:3])}) that these settings do not collect"
        if problem is not None:
            # A suite that cannot run says nothing about the bug: the environment is at fault, not the report.
            raise EnvironmentError_(problem)
    return baseline


def test_files(workspace: Path) -> list[str]:
    """Tracked Python files named the way pytest's defaults name tests (test_*.py, *_test.py)."""
    names = (PurePosixPath(rel) for rel in tracked_files(workspace))
    return sorted(
        str(p) for p in names if p.suffix == ".py" and (p.name.startswith("test_") or p.stem.endswith("_test"))
    )


async def run(state: JobState) -> None:
    """Record the baseline; raise EnvironmentFailed when the suite cannot run on the base commit."""
    await state.ctx.stage("baseline", "running the test suite on the base commit")
    try:
        baseline = await run_baseline(state.ctx, state.base, need(state.env, "environment"), state.request)
    except EnvironmentError_ as exc:
        raise EnvironmentFailed(str(exc)) from exc
    state.baseline = baseline
    if baseline.cached:
        # The same tree ran in the same environment before (an earlier job on this commit): not run again.
        state.environment["baseline_cached"] = True
    if baseline.no_tests:
        # Shown with the outcome, and by the PR or comment: nothing but the bot's own checks validated the fix.
        state.environment["no_tests"] = baseline.no_tests
    if baseline.collection_errors:
        # Part of the suite did not import (an undeclared optional dependency): worth a maintainer's look.
        state.environment["collection_errors"] = baseline.collection_errors

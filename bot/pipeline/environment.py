"""The environment stage: detect the repo's test setup and build (or reuse) its environment."""

from __future__ import annotations

from pathlib import Path

from bot.llm import Ledger, ledger_from_settings
from bot.pipeline.setup_model import setup_agent_for
from bot.pipeline.state import JobState
from bot.pipeline.stops import EnvironmentFailed
from bot.pipeline.types import JobContext, JobRequest
from bot.settings.config import Settings
from sandboxes import environment as envlayer
from sandboxes.environment import BuiltEnvironment, EnvironmentError_


async def prepare_environment(ctx: JobContext, workspace: Path, request: JobRequest) -> BuiltEnvironment:
    """Detect the repo's test setup and build (or reuse) its environment, through the environment layer.

    With a model configured, the setup agent steps in when neither policy nor repo signals say how to test.
    """
    settings = ctx.settings
    if not isinstance(settings, Settings):
        # The job types see settings through a protocol; the setup agent needs the deployment's whole Settings.
        raise TypeError("the pipeline runs with bot.settings.config.Settings")
    ledger = ctx.ledger if isinstance(ctx.ledger, Ledger) else ledger_from_settings(settings)
    agent = setup_agent_for(settings, request.sandbox, model=ctx.model, ledger=ledger)
    try:
        return await envlayer.prepare_environment(
            workspace,
            ctx.settings.cache_dir,
            python=ctx.settings.sandbox_python,
            index_url=ctx.settings.pip_index_url,
            setup=list(request.setup_commands) or None,
            test=request.test_command,
            agent=agent,
            sandbox=request.sandbox,
            rootfs=ctx.settings.rootfs,
            allow_direct_references=request.allow_direct_references,
            extra_deps=request.extra_deps,
        )
    finally:
        if ctx.ledger is None and ledger.calls:
            ctx.ledger = ledger  # the setup agent's model spend shows in the job's cost line


async def run(state: JobState) -> None:
    """Build the environment of the checkout; raise EnvironmentFailed when it cannot be built."""
    await state.ctx.stage("environment", "building the test environment")
    try:
        env = await prepare_environment(state.ctx, state.base, state.request)
    except EnvironmentError_ as exc:
        raise EnvironmentFailed(str(exc)) from exc
    state.env = env
    state.environment = envlayer.describe_environment(env)

"""Where the setup agent's commands run: a sandbox with a host-built environment mounted, never the host."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import WORKSPACE_MOUNT, ExecResult, Limits, SandboxSpec, minimal_env
from sandboxes.environment import BuiltEnvironment, build_environment
from sandboxes.envspec import EnvironmentSpec
from sandboxes.factory import make_sandbox
from sandboxes.results import PARSERS
from sandboxes.testrun import ENV_MOUNT, TestRun, TestSuite

#: Report formats a proposed spec may use: the parsers the test runner knows, plus plain exit codes.
REPORT_FORMATS = ("exit-code", *PARSERS)
#: Exit codes of `sh` meaning the command itself was not found or not executable: the tests did not run.
NOT_RUN_CODES = (126, 127)


def spec_problem(run: TestRun) -> str | None:
    """Why a validation run shows the spec does not work (None when its tests ran and reported results)."""
    result = run.result
    if result.timed_out:
        return f"the test command timed out after {result.duration:.0f}s"
    if result.oom_killed:
        return "the test command was killed for using too much memory"
    if result.exit_code in NOT_RUN_CODES:
        return f"the test command could not be started (exit code {result.exit_code}: not found or not executable)"
    if not run.tests or not run.collected:
        return f"the test command ran (exit code {result.exit_code}) but no test results could be read from it"
    return None


@dataclass
class SetupShell:
    """Runs the setup agent's commands and spec checks in a fresh sandbox of the workspace.

    Python requirements the agent asks for are resolved on the host into a cached virtualenv (with network,
    no repo code runs); the sandbox sees it read-only at ENV_MOUNT and has no network. The sandbox starts
    from a minimal environment, so nothing of the bot's (its model key included) reaches a command.
    """

    workspace: Path
    cache_dir: Path
    python: Path
    backend: str = "bwrap"
    index_url: str | None = None
    rootfs: Path | None = None
    command_timeout: float = 300.0
    test_timeout: float = 900.0
    #: Workspace disk quota of its sandboxes (Limits.disk_bytes).
    disk_bytes: int = Limits.disk_bytes

    async def environment(self, spec: EnvironmentSpec) -> BuiltEnvironment:
        """Build (or reuse) the host-side environment of a spec; EnvironmentError_ says why it failed."""
        return await build_environment(
            spec,
            self.cache_dir,
            python=self.python,
            index_url=self.index_url,
            sandbox=self.backend,
            rootfs=self.rootfs,
        )

    def _sandbox_spec(self, env: BuiltEnvironment, timeout: float) -> SandboxSpec:
        return SandboxSpec(
            workspace=self.workspace,
            mounts=(env.mount,),
            limits=Limits(wall_seconds=timeout, max_processes=512, disk_bytes=self.disk_bytes),
            rootfs=self.rootfs,
        )

    def command_env(self) -> dict[str, str]:
        """What a command sees: the minimal sandbox environment with the mounted env first on PATH."""
        return minimal_env(
            {
                "PATH": f"{ENV_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin",
                "VIRTUAL_ENV": ENV_MOUNT,
                "PYTHONPATH": WORKSPACE_MOUNT,
            }
        )

    async def run(self, command: str, deps: tuple[str, ...] = ()) -> ExecResult:
        """Run one shell command in the workspace, inside the sandbox, with `deps` installed."""
        probe = EnvironmentSpec(language="probe", deps=deps, test_command=(), report_format="exit-code")
        env = await self.environment(probe)
        async with make_sandbox(self.backend, self._sandbox_spec(env, self.command_timeout)) as sb:
            return await sb.run(["sh", "-c", command], timeout=self.command_timeout, env=self.command_env())

    async def try_spec(self, spec: EnvironmentSpec) -> TestRun:
        """Build the spec's environment and run its whole suite once, as every later stage will."""
        env = await self.environment(spec)
        async with make_sandbox(self.backend, self._sandbox_spec(env, self.test_timeout)) as sb:
            return await TestSuite(env, timeout=self.test_timeout).run(sb, [])

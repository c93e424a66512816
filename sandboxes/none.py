"""No isolation: commands run directly on the host, with a clean env and limits; explicit opt-in only."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from sandboxes.base import SandboxSpec
from sandboxes.hostsandbox import ProcessSandbox
from sandboxes.process import Launch
from sandboxes.session import SessionPlan, agent_path

log = logging.getLogger(__name__)


class NoneSandbox(ProcessSandbox):
    """Runs commands as the bot's own user in the workspace directory. It contains nothing.

    What it still does: only the explicit environment (minimal_env + spec.env + per-call env) is
    passed, rlimits and (where available) a cgroup apply, the wall timeout kills the process group,
    background processes left in that group are killed when the command returns, output is capped.
    Mounts cannot be honoured: their host paths are used as they are.
    """

    metrics_backend = "none"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        for mount in spec.mounts:
            if str(mount.host) != mount.inside:
                log.warning("none sandbox: mount %s -> %s is not applied", mount.host, mount.inside)
        if spec.rootfs is not None:
            log.warning("none sandbox: rootfs %s is ignored", spec.rootfs)

    def _launch(self, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Launch, list[int]]:
        return Launch(argv=list(argv), env=env, cwd=str(cwd), reap_group=True, direct=True), []

    def _session_plan(self, agent_fd: int) -> SessionPlan | None:
        """A bare exec agent already in the sandbox's cgroup with its rlimits: a command costs one fork.

        It forks from a small process, not from the bot (whose size made each fork slow), and skips the
        per-command cgroup join and rlimit calls; "group" mode kills the command's process group after it.
        """
        agent = [sys.executable, "-I", "-S", str(agent_path()), str(agent_fd), "group", "-1"]
        launch = Launch(argv=agent, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, cwd=str(self.spec.workspace))
        return SessionPlan(launch=launch, fds_to_close=[], agent_fd=agent_fd)

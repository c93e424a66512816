"""What every sandbox backend shares: open on first use, close once, checked commands, workspace files.

A backend (sandboxes/hostsandbox.py for bwrap and none, sandboxes/docker.py) subclasses SandboxBackend and
fills in the hooks: `_open`/`_abort_open`/`_opened` to set up, `_run` and `_serve_pytest` to run a command
that has been checked and whose environment is merged, and `close`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Self

from sandboxes import hostfs
from sandboxes.base import WORKSPACE_MOUNT, ExecResult, SandboxError, SandboxSpec, checked_command, minimal_env
from sandboxes.hostfs import WorkspaceGrant
from sandboxes.metrics import count_execution
from sandboxes.pytest_client import PytestServerClient
from sandboxes.quota import WorkspaceQuota, workspace_quota
from sandboxes.session import SESSION_MODES


def merged_env(spec_env: dict[str, str], env: dict[str, str] | None) -> dict[str, str]:
    """minimal_env() + spec.env + per-call env, validated: nothing else from the bot is passed on."""
    merged = minimal_env({**spec_env, **(env or {})})
    for key, value in merged.items():
        if not key or "=" in key or "\x00" in key or "\x00" in value:
            raise SandboxError(f"invalid environment variable {key!r}")
    return merged


def check_mount_targets(spec: SandboxSpec) -> None:
    """SandboxError for a mount whose inside path is relative, climbs out, or hides / or the workspace."""
    for mount in spec.mounts:
        inside = PurePosixPath(mount.inside)
        if not inside.is_absolute() or ".." in inside.parts or str(inside) in ("/", WORKSPACE_MOUNT):
            raise SandboxError(f"invalid mount target {mount.inside!r}")


def check_mount_sources(spec: SandboxSpec) -> None:
    """SandboxError for a mount whose host path does not exist."""
    for mount in spec.mounts:
        if not mount.host.exists():
            raise SandboxError(f"mount source {mount.host} does not exist")


class WorkspaceLease:
    """The workspace (and read-write mounts) lent to a sandbox's uid while it is open, under its disk quota."""

    def __init__(self) -> None:
        self._grants: list[WorkspaceGrant] = []
        self._quota: WorkspaceQuota | None = None

    async def acquire(self, spec: SandboxSpec, uid: int, gid: int, *, privileged: bool) -> None:
        """As root, hand the folders the sandbox writes to its uid; then mount the quota where it can be."""
        if privileged:
            for path in [spec.workspace, *(m.host for m in spec.mounts if not m.read_only)]:
                grant = WorkspaceGrant(path, uid, gid)
                await asyncio.to_thread(grant.acquire)
                self._grants.append(grant)
        quota = workspace_quota(spec.workspace, spec.limits.disk_bytes, privileged=privileged)
        if quota is not None:
            await asyncio.to_thread(quota.acquire)
            self._quota = quota

    async def release(self) -> None:
        """Give everything back; idempotent."""
        if self._quota is not None:
            # Before the grants are given back: the folded files are then chowned back with the rest.
            quota, self._quota = self._quota, None
            await asyncio.to_thread(quota.release)
        while self._grants:
            await asyncio.to_thread(self._grants.pop().release)


class SandboxBackend:
    """The Sandbox protocol's common part: lifecycle, argument checks, metrics, file access and diff."""

    #: The backend's label on the sandbox metrics (sandboxes/metrics.py).
    metrics_backend = "sandbox"
    #: How the pytest server clears a run's leftovers: "ns" (the session has its own pid namespace: every
    #: other process of the sandbox uid) or "group" (the run's process group, as the none backend's agent).
    pytest_sweep = "group"

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._started = False
        self._closed = False
        self._lock = asyncio.Lock()
        if spec.session not in SESSION_MODES:
            raise SandboxError(f"unknown sandbox session mode {spec.session!r}; known: {', '.join(SESSION_MODES)}")
        self._pytest = PytestServerClient(self.pytest_sweep)

    async def __aenter__(self) -> Self:
        await self._ensure_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _ensure_open(self) -> None:
        """Open the sandbox on first use; SandboxError once it is closed."""
        async with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            if self._started:
                return
            if not self.spec.workspace.is_dir():
                raise SandboxError(f"workspace {self.spec.workspace} is not a directory")
            try:
                await self._open()
            except BaseException:
                # __aexit__ will not run when __aenter__ fails: undo what _open did here.
                await self._abort_open()
                raise
            self._opened()
            self._started = True

    async def _open(self) -> None:
        """Backend set-up before the first command (nothing by default)."""

    async def _abort_open(self) -> None:
        """Undo what a failed _open did (nothing by default)."""

    def _opened(self) -> None:
        """Called once _open has succeeded, still under the lock (nothing by default)."""

    async def close(self) -> None:
        """Release everything the sandbox holds; idempotent."""
        raise NotImplementedError

    async def run(
        self,
        argv: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run argv in the sandbox. cwd is relative to the workspace; env adds to spec.env."""
        wall, host_cwd = checked_command(self.spec, argv, timeout, cwd)
        await self._ensure_open()
        result = await self._run(argv, host_cwd, merged_env(self.spec.env, env), stdin, wall)
        return count_execution(self.metrics_backend, result)

    async def _run(
        self, argv: list[str], host_cwd: Path, env: dict[str, str], stdin: bytes | None, wall: float
    ) -> ExecResult:
        """Run a checked command in the open sandbox, with its whole environment and wall seconds."""
        raise NotImplementedError

    async def run_pytest(
        self,
        python: str,
        args: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult | None:
        """`python -m pytest ARGS` through the warm session's pytest server; None: run it the ordinary way.

        The server (sandboxes/pytest_server.py) is a sandboxed command like any other, started with the
        same environment and working directory as the ordinary run, and kept between runs with the same
        (python, env, cwd). None when the sandbox runs cold, its session is not free, or the server cannot
        serve this run (it did not start, died, or the project shadows a module it preloaded).
        """
        if not self.spec.pytest_server or not self._pytest.usable or not self._may_serve_pytest():
            return None
        wall, host_cwd = checked_command(self.spec, [python, *args], timeout, cwd)
        await self._ensure_open()
        result = await self._serve_pytest(python, args, host_cwd, merged_env(self.spec.env, env), wall)
        return count_execution(self.metrics_backend, result) if result is not None else None

    def _may_serve_pytest(self) -> bool:
        """Whether a pytest server may serve runs now (checked before anything else is done)."""
        return False

    async def _serve_pytest(
        self, python: str, args: list[str], host_cwd: Path, env: dict[str, str], wall: float
    ) -> ExecResult | None:
        """A checked pytest run through the session's server; None when it cannot serve it."""
        return None

    def read_file(self, relpath: str) -> str:
        """Read a workspace file as text."""
        return hostfs.read_text(self.spec.workspace, relpath)

    def write_file(self, relpath: str, content: str) -> None:
        """Write a workspace file, creating parent folders."""
        hostfs.write_text(self.spec.workspace, relpath, content, owner=self._file_owner())

    def _file_owner(self) -> tuple[int, int] | None:
        """Who files written by the bot belong to (the sandbox uid when the workspace is lent to it)."""
        return None

    async def diff(self) -> str:
        """The git diff of the workspace against HEAD, new files included."""
        return await hostfs.git_diff(self.spec.workspace)

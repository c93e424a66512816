"""Base class for backends that run host processes (bwrap, none): run(), files, diff and close()."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from sandboxes import hostfs
from sandboxes.base import ExecResult, SandboxError, SandboxSpec, checked_command, minimal_env
from sandboxes.cgroups import SandboxCgroup
from sandboxes.metrics import count_execution
from sandboxes.process import Launch, Running, make_preexec, run_capped
from sandboxes.pytest_client import PytestServerClient
from sandboxes.session import SESSION_MODES, SessionPlan, WarmSession, socket_pair

log = logging.getLogger(__name__)

#: How long close() waits for killed commands to be reaped.
CLOSE_WAIT_SECONDS = 10.0


def merged_env(spec_env: dict[str, str], env: dict[str, str] | None) -> dict[str, str]:
    """minimal_env() + spec.env + per-call env, validated: nothing else from the bot is passed on."""
    merged = minimal_env({**spec_env, **(env or {})})
    for key, value in merged.items():
        if not key or "=" in key or "\x00" in key or "\x00" in value:
            raise SandboxError(f"invalid environment variable {key!r}")
    return merged


class ProcessSandbox:
    """What host-process backends share: limits, timeouts, capped output, file access, diff, close.

    Subclasses build the host command line in `_launch` and may lend the workspace in `_open`/`_close`.
    The cgroup (pids, memory) belongs to the sandbox: commands running at the same time share it.
    """

    #: The backend's label on the sandbox metrics (sandboxes/metrics.py).
    metrics_backend = "process"
    #: Extra processes the backend itself uses inside the pids cgroup (bwrap and its pid-1 monitor).
    pids_overhead = 0
    #: How the pytest server clears a run's leftovers: "ns" (the session has its own pid namespace: every
    #: other process of the sandbox uid) or "group" (the run's process group, as the none backend's agent).
    pytest_sweep = "group"

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._running: set[Running] = set()
        self._cgroup: SandboxCgroup | None = None
        self._started = False
        self._closed = False
        self._lock = asyncio.Lock()
        if spec.session not in SESSION_MODES:
            raise SandboxError(f"unknown sandbox session mode {spec.session!r}; known: {', '.join(SESSION_MODES)}")
        self._session: WarmSession | None = None
        #: Set when the warm session cannot run here (e.g. no python3 in a root filesystem): cold from then on.
        self._session_off = spec.session != "warm"
        self._session_busy = False
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
        async with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            if not self._started:
                if not self.spec.workspace.is_dir():
                    raise SandboxError(f"workspace {self.spec.workspace} is not a directory")
                try:
                    await self._open()
                except BaseException:
                    # __aexit__ will not run when __aenter__ fails: undo what _open did here.
                    await self._close()
                    raise
                self._cgroup = SandboxCgroup.create(self.spec.limits, extra_pids=self.pids_overhead)
                self._started = True

    async def _open(self) -> None:
        """Backend set-up before the first command (nothing by default)."""

    async def _close(self) -> None:
        """Backend tear-down after the last command; also called after a failed _open."""

    def _launch(self, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Launch, list[int]]:
        """The host command for argv, and file descriptors to close once it has started."""
        raise NotImplementedError

    def _session_plan(self, agent_fd: int) -> SessionPlan | None:
        """The host command starting this backend's exec agent, or None when the backend has no warm mode."""
        return None

    def _session_cwd(self, host_cwd: Path) -> str:
        """The command's working directory as the agent sees it."""
        return str(host_cwd)

    async def _warm(self) -> WarmSession | None:
        """The running session (started on first use), or None when commands must run cold."""
        if self._session_off:
            return None
        if self._session is not None and not self._session.dead:
            return self._session
        if self._session is not None:
            # Killed after a lost command: its remains go, a fresh one starts.
            await self._session.close()
            self._session = None
        host_sock, agent_fd = socket_pair()
        plan = self._session_plan(agent_fd)
        if plan is None:
            host_sock.close()
            os.close(agent_fd)
            self._session_off = True
            return None
        cgroup = self._cgroup
        plan.launch.preexec = make_preexec(
            self.spec.limits,
            cgroup=cgroup,
            nproc=cgroup is None or not cgroup.has_pids,
            address_space=cgroup is None or not cgroup.has_memory,
        )
        try:
            self._session = await WarmSession.start(plan, host_sock)
        except SandboxError as exc:
            log.warning("warm sandbox session unavailable, running commands cold: %s", exc)
            self._session_off = True
            return None
        if self._closed:
            self._session.kill()
        return self._session

    def _track(self, running: Running) -> None:
        self._running.add(running)
        if self._closed:
            # close() ran while this command was being started: it must not outlive the sandbox.
            running.kill()

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
        limits = self.spec.limits
        merged = merged_env(self.spec.env, env)
        if not self._session_busy:
            # One command at a time per session; a concurrent one runs cold, with the same guarantees.
            self._session_busy = True
            try:
                session = await self._warm()
                if session is not None:
                    warm = await session.run(
                        argv,
                        env=merged,
                        cwd=self._session_cwd(host_cwd),
                        stdin=stdin,
                        timeout=wall,
                        output_bytes=limits.output_bytes,
                        cgroup=self._cgroup,
                    )
                    return count_execution(self.metrics_backend, warm)
            finally:
                self._session_busy = False
        launch, fds = self._launch(argv, host_cwd, merged)
        cgroup = self._cgroup
        try:
            # rlimits stand in for whatever the cgroup cannot do here.
            launch.preexec = make_preexec(
                limits,
                cgroup=cgroup,
                nproc=cgroup is None or not cgroup.has_pids,
                address_space=cgroup is None or not cgroup.has_memory,
            )
            result = await run_capped(
                launch,
                stdin=stdin,
                timeout=wall,
                output_bytes=limits.output_bytes,
                cgroup=cgroup,
                oom_before=cgroup.oom_kills() if cgroup is not None else 0,
                on_start=self._track,
                on_end=self._running.discard,
                fds_to_close=fds,
            )
            return count_execution(self.metrics_backend, result)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

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
        (python, env, cwd). None when the sandbox runs cold, the session is busy, or the server cannot
        serve this run (it did not start, died, or the project shadows a module it preloaded).
        """
        if not self.spec.pytest_server or self._session_off or self._session_busy or not self._pytest.usable:
            return None
        wall, host_cwd = checked_command(self.spec, [python, *args], timeout, cwd)
        await self._ensure_open()
        merged = merged_env(self.spec.env, env)
        self._session_busy = True
        try:
            session = await self._warm()
            if session is None:
                return None
            cgroup = self._cgroup
            result = await self._pytest.run(
                session,
                python,
                args,
                env=merged,
                cwd=self._session_cwd(host_cwd),
                timeout=wall,
                output_bytes=self.spec.limits.output_bytes,
                oom_kills=cgroup.oom_kills if cgroup is not None else lambda: 0,
            )
            return count_execution(self.metrics_backend, result) if result is not None else None
        finally:
            self._session_busy = False

    def read_file(self, relpath: str) -> str:
        """Read a workspace file as text."""
        return hostfs.read_text(self.spec.workspace, relpath)

    def write_file(self, relpath: str, content: str) -> None:
        """Write a workspace file, creating parent folders."""
        hostfs.write_text(self.spec.workspace, relpath, content, owner=self._file_owner())

    def _file_owner(self) -> tuple[int, int] | None:
        return None

    async def diff(self) -> str:
        """The git diff of the workspace against HEAD, new files included."""
        return await hostfs.git_diff(self.spec.workspace)

    async def close(self) -> None:
        """Kill whatever still runs and give the workspace back; idempotent."""
        if self._closed:
            return
        self._closed = True
        for running in list(self._running):
            running.kill()
        if self._session is not None:
            if self._session_busy:
                # A command is running in it: killing the session ends it, its run() then returns.
                self._session.kill()
            deadline = time.monotonic() + CLOSE_WAIT_SECONDS
            while self._session_busy and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            await self._session.close()
            self._session = None
        # Let the killed runs finish, so nothing writes to the workspace while it is given back.
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        while self._running and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        async with self._lock:
            if self._cgroup is not None:
                # Also catches what escaped a process group (none backend: setsid daemons).
                await asyncio.to_thread(self._cgroup.destroy)
                self._cgroup = None
            await self._close()

"""Base class for backends that run host processes (bwrap, none): warm session, cold runs, pytest server, close()."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from sandboxes.backend import SandboxBackend, merged_env
from sandboxes.base import ExecResult, SandboxError, SandboxSpec, checked_command
from sandboxes.cgroups import SandboxCgroup
from sandboxes.process import Launch, Running, make_preexec, run_capped
from sandboxes.session import SessionPlan, WarmSession, socket_pair

log = logging.getLogger(__name__)

#: How long close() waits for killed commands to be reaped.
CLOSE_WAIT_SECONDS = 10.0


class ProcessSandbox(SandboxBackend):
    """What host-process backends share: limits, timeouts, capped output, file access, diff, close.

    Subclasses build the host command line in `_launch` and may lend the workspace in `_open`/`_close`.
    The cgroup (pids, memory) belongs to the sandbox: commands running at the same time share it.
    """

    metrics_backend = "process"
    #: Extra processes the backend itself uses inside the pids cgroup (bwrap and its pid-1 monitor).
    pids_overhead = 0

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._running: set[Running] = set()
        self._cgroup: SandboxCgroup | None = None
        self._session: WarmSession | None = None
        #: Set when the warm session cannot run here (e.g. no python3 in a root filesystem): cold from then on.
        self._session_off = spec.session != "warm"
        self._session_busy = False
        #: Tasks that wait for spawned commands (spawn()), kept so they are not collected while waiting.
        self._watchers: set[asyncio.Task[None]] = set()

    async def _abort_open(self) -> None:
        await self._close()

    def _opened(self) -> None:
        self._cgroup = SandboxCgroup.create(self.spec.limits, extra_pids=self.pids_overhead)

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
        plan.launch.preexec = self._preexec()
        try:
            self._session = await WarmSession.start(plan, host_sock)
        except SandboxError as exc:
            log.warning("warm sandbox session unavailable, running commands cold: %s", exc)
            self._session_off = True
            return None
        if self._closed:
            self._session.kill()
        return self._session

    def _preexec(self) -> Callable[[], None]:
        """What a command's host process does before exec: join the cgroup, and rlimits for what it cannot do."""
        cgroup = self._cgroup
        return make_preexec(
            self.spec.limits,
            cgroup=cgroup,
            nproc=cgroup is None or not cgroup.has_pids,
            address_space=cgroup is None or not cgroup.has_memory,
        )

    def _track(self, running: Running) -> None:
        self._running.add(running)
        if self._closed:
            # close() ran while this command was being started: it must not outlive the sandbox.
            running.kill()

    async def _run(
        self, argv: list[str], host_cwd: Path, env: dict[str, str], stdin: bytes | None, wall: float
    ) -> ExecResult:
        if not self._session_busy:
            # One command at a time per session; a concurrent one runs cold, with the same guarantees.
            self._session_busy = True
            try:
                session = await self._warm()
                if session is not None:
                    return await session.run(
                        argv,
                        env=env,
                        cwd=self._session_cwd(host_cwd),
                        stdin=stdin,
                        timeout=wall,
                        output_bytes=self.spec.limits.output_bytes,
                        cgroup=self._cgroup,
                    )
            finally:
                self._session_busy = False
        return await self._run_cold(argv, host_cwd, env, stdin, wall)

    async def _run_cold(
        self, argv: list[str], host_cwd: Path, env: dict[str, str], stdin: bytes | None, wall: float
    ) -> ExecResult:
        """Run a command in a sandbox of its own (the backend's host command line)."""
        launch, fds = self._launch(argv, host_cwd, env)
        cgroup = self._cgroup
        try:
            launch.preexec = self._preexec()
            return await run_capped(
                launch,
                stdin=stdin,
                timeout=wall,
                output_bytes=self.spec.limits.output_bytes,
                cgroup=cgroup,
                oom_before=cgroup.oom_kills() if cgroup is not None else 0,
                on_start=self._track,
                on_end=self._running.discard,
                fds_to_close=fds,
            )
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    async def spawn(
        self, argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None, stderr: int
    ) -> asyncio.subprocess.Process:
        """Start a long-lived command in a sandbox of its own and return it running, not waited for.

        For a program that serves while its owner works (a game server and its supervisor): same confinement,
        cgroup and rlimits as a cold run(), but no wall timeout and no captured output. The caller speaks to it
        through its stdin and stdout pipes; stderr goes to the host file descriptor given. close() kills it
        (its whole sandbox) if it still runs.
        """
        _, host_cwd = checked_command(self.spec, argv, None, cwd)
        await self._ensure_open()
        launch, fds = self._launch(argv, host_cwd, merged_env(self.spec.env, env))
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=launch.env,
                cwd=launch.cwd,
                pass_fds=launch.pass_fds,
                preexec_fn=self._preexec(),
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        running = Running(proc)
        self._track(running)
        watcher = asyncio.create_task(self._forget_on_exit(running))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return proc

    async def _forget_on_exit(self, running: Running) -> None:
        """Drop a spawned command from the running set once it has ended (close() waits for that set)."""
        await running.proc.wait()
        self._running.discard(running)

    def _may_serve_pytest(self) -> bool:
        return not self._session_off and not self._session_busy

    async def _serve_pytest(
        self, python: str, args: list[str], host_cwd: Path, env: dict[str, str], wall: float
    ) -> ExecResult | None:
        self._session_busy = True
        try:
            session = await self._warm()
            if session is None:
                return None
            cgroup = self._cgroup
            return await self._pytest.run(
                session,
                python,
                args,
                env=env,
                cwd=self._session_cwd(host_cwd),
                timeout=wall,
                output_bytes=self.spec.limits.output_bytes,
                oom_kills=cgroup.oom_kills if cgroup is not None else lambda: 0,
            )
        finally:
            self._session_busy = False

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

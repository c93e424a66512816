"""Docker backend (docker SDK): one warm, locked-down container per sandbox; commands run via exec."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, Self

from sandboxes import hostfs
from sandboxes.base import (
    WORKSPACE_MOUNT,
    ExecResult,
    SandboxError,
    SandboxSpec,
    checked_command,
    host_cpu_count,
)
from sandboxes.baseimage import LABEL, image_tag
from sandboxes.bwrap import SANDBOX_GID, SANDBOX_UID
from sandboxes.dockerexec import cgroup_file, pump, raw_socket, read_counter
from sandboxes.hostfs import WorkspaceGrant
from sandboxes.hostsandbox import merged_env
from sandboxes.metrics import count_execution
from sandboxes.process import CappedBuffer, owner_alive, process_started
from sandboxes.pytest_client import PytestServerClient
from sandboxes.quota import WorkspaceQuota, workspace_quota
from sandboxes.session import SESSION_MODES, WarmSession, accept_session, agent_path

log = logging.getLogger(__name__)

#: Timeout of every Docker API call (create, exec, inspect, remove); command runs have their own.
API_TIMEOUT = 60
#: The container's own keep-alive process runs as a different unprivileged uid than commands, so a
#: command's `kill -9 -1` (our stray reaper, or the code under test) cannot stop the container.
KEEPER_UID = SANDBOX_UID + 1
#: Where a warm session's exec agent and its socket are mounted (read-only) in the container.
AGENT_MOUNT = "/.reprobot-agent"
#: Processes the container itself needs besides commands: docker-init and its sleeping child.
PIDS_OVERHEAD = 2
#: How long a killed command may take to end its stream before the socket is closed under it.
DRAIN_SECONDS = 10.0


def docker_problem(image: str | None = None) -> str | None:
    """Why the docker backend cannot run here (engine unreachable, base image missing), or None."""
    try:
        import docker
        import docker.errors
    except ImportError:
        return "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=10)
    except docker.errors.DockerException as exc:
        return f"no Docker engine reachable: {exc}"
    tag = image or image_tag()
    try:
        client.ping()
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return f"base image {tag} not built (run `reprobot sandbox build-base`)"
    except docker.errors.DockerException as exc:
        return f"no Docker engine reachable: {exc}"
    finally:
        client.close()
    return None


def owner_labels() -> dict[str, str]:
    """Labels naming the process a sandbox container belongs to: host, pid and the pid's start time."""
    pid = os.getpid()
    return {
        LABEL: "sandbox",
        f"{LABEL}.host": socket.gethostname(),
        f"{LABEL}.pid": str(pid),
        f"{LABEL}.started": process_started(pid) or "",
    }


def reap_leftovers(client: Any | None = None) -> int:
    """Remove sandbox containers of this host whose owning worker process is gone; returns how many."""
    import docker
    import docker.errors

    own = client is None
    client = client or docker.from_env(timeout=API_TIMEOUT)
    removed = 0
    try:
        for container in client.containers.list(all=True, filters={"label": f"{LABEL}=sandbox"}):
            labels = container.labels or {}
            if labels.get(f"{LABEL}.host") != socket.gethostname():
                continue  # another machine's worker on a shared engine
            owner = labels.get(f"{LABEL}.pid", "")
            if owner.isdigit() and owner_alive(int(owner), labels.get(f"{LABEL}.started") or None):
                continue
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
                removed += 1
                log.info("reaped leftover sandbox container %s (owner pid %s gone)", container.short_id, owner)
    finally:
        if own:
            client.close()
    return removed


_reaped = False


#: Kill every other process of this uid, then poll /proc until init has reaped them all (100 x 20 ms).
_KILL_AND_WAIT = """kill -9 -1
me=$(id -u); i=0
while [ $i -lt 100 ]; do
  left=0
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    [ "$(stat -c %u "$p" 2>/dev/null)" = "$me" ] && { left=1; break; }
  done
  [ $left = 0 ] && exit 0
  sleep 0.02; i=$((i+1))
done
exit 1
"""


class DockerSandbox:
    """Runs commands in a container: no network, read-only root, tmpfs, limits, no capabilities, non-root.

    The container starts at the first command (or on entering the context) and is removed by close().
    The workspace is a bind mount (its .git read-only on top); extra mounts as the spec says.
    """

    def __init__(self, spec: SandboxSpec, *, image: str | None = None, api_timeout: int = API_TIMEOUT) -> None:
        self.spec = spec
        self.image = image or image_tag()
        self.api_timeout = api_timeout
        self.privileged = os.geteuid() == 0
        self.uid, self.gid = (SANDBOX_UID, SANDBOX_GID) if self.privileged else (os.getuid(), os.getgid())
        self._client: Any = None
        self._container: Any = None
        self._grants: list[WorkspaceGrant] = []
        self._quota: WorkspaceQuota | None = None
        self._inflight = 0
        self._started = False
        self._closed = False
        self._lock = asyncio.Lock()
        if spec.session not in SESSION_MODES:
            raise SandboxError(f"unknown sandbox session mode {spec.session!r}; known: {', '.join(SESSION_MODES)}")
        #: Warm mode: an exec agent in the container forks each command (one at a time); see sandboxes/session.py.
        self._session: WarmSession | None = None
        self._session_lock = asyncio.Lock()
        self._agent_dir: Path | None = None
        self._listener: socket.socket | None = None
        self._kill_task: asyncio.Task[None] | None = None
        #: The container has its own pid namespace: a served run's leftovers are swept from all of it.
        self._pytest = PytestServerClient("ns")
        for mount in spec.mounts:
            inside = PurePosixPath(mount.inside)
            if not inside.is_absolute() or ".." in inside.parts or str(inside) in ("/", WORKSPACE_MOUNT):
                raise SandboxError(f"invalid mount target {mount.inside!r}")

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

    # ------------------------------------------------------------------ lifecycle

    async def _ensure_open(self) -> None:
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
                await self._teardown()
                raise
            self._started = True

    async def _open(self) -> None:
        import docker
        import docker.errors

        global _reaped
        for mount in self.spec.mounts:
            if not mount.host.exists():
                raise SandboxError(f"mount source {mount.host} does not exist")
        try:
            self._client = docker.from_env(timeout=self.api_timeout)
            if not _reaped:
                _reaped = True
                await asyncio.to_thread(reap_leftovers, self._client)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"Docker engine unavailable: {exc}") from exc
        if self.privileged:
            for path in [self.spec.workspace, *(m.host for m in self.spec.mounts if not m.read_only)]:
                grant = WorkspaceGrant(path, self.uid, self.gid)
                await asyncio.to_thread(grant.acquire)
                self._grants.append(grant)
        # The bind mount below then takes the quota overlay mounted over the workspace folder.
        quota = workspace_quota(self.spec.workspace, self.spec.limits.disk_bytes, privileged=self.privileged)
        if quota is not None:
            await asyncio.to_thread(quota.acquire)
            self._quota = quota
        if self.spec.session == "warm":
            await asyncio.to_thread(self._prepare_agent)
        try:
            self._container = await asyncio.to_thread(self._create)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not start the sandbox container from {self.image}: {exc}") from exc
        if self._listener is not None:
            try:
                self._session = await self._start_agent()
            except (SandboxError, docker.errors.DockerException) as exc:
                log.warning("warm docker session unavailable, commands use docker exec: %s", exc)
            finally:
                self._listener.close()
                self._listener = None

    def _prepare_agent(self) -> None:
        """A host folder with the agent's script and a listening socket, bind-mounted read-only in."""
        folder = Path(tempfile.mkdtemp(prefix="reprobot-agent-"))
        folder.chmod(0o755)
        shutil.copyfile(agent_path(), folder / "execagent.py")
        (folder / "execagent.py").chmod(0o644)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(str(folder / "agent.sock"))
        # Connecting needs write permission on the socket; it is the only thing there the sandbox uid may use.
        (folder / "agent.sock").chmod(0o666)
        listener.listen(1)
        listener.setblocking(False)
        self._agent_dir, self._listener = folder, listener

    async def _start_agent(self) -> WarmSession:
        """Start the agent as the command uid (one docker exec for the sandbox's life) and take its connection."""
        container = self._container
        assert container is not None and self._listener is not None
        api = self._client.api
        argv = ["python3", "-I", "-S", f"{AGENT_MOUNT}/execagent.py", f"{AGENT_MOUNT}/agent.sock", "ns", "-1"]
        exec_id = (
            await asyncio.to_thread(api.exec_create, container.id, argv, user=f"{self.uid}:{self.gid}", environment={})
        )["Id"]
        await asyncio.to_thread(api.exec_start, exec_id, detach=True)
        loop = asyncio.get_running_loop()

        def on_kill() -> None:
            # The agent did not answer: every process of the command uid goes, the agent with them.
            self._kill_task = loop.create_task(self._kill_commands())

        return await accept_session(self._listener, on_kill)

    def _create(self) -> Any:
        from docker.types import Mount as DockerMount
        from docker.types import Ulimit

        limits = self.spec.limits
        workspace = self.spec.workspace.resolve()
        mounts = [DockerMount(WORKSPACE_MOUNT, str(workspace), type="bind", read_only=False)]
        if os.path.lexists(workspace / ".git"):
            # Host git later reads this repository; code in the sandbox must not plant config or hooks.
            mounts.append(DockerMount(f"{WORKSPACE_MOUNT}/.git", str(workspace / ".git"), type="bind", read_only=True))
        if self._agent_dir is not None:
            mounts.append(DockerMount(AGENT_MOUNT, str(self._agent_dir), type="bind", read_only=True))
        for mount in self.spec.mounts:
            mounts.append(DockerMount(mount.inside, str(mount.host.resolve()), type="bind", read_only=mount.read_only))
        # Half the memory limit: filling /tmp (charged as memory) hits ENOSPC before the OOM killer.
        tmp_size = max(limits.memory_bytes // 2, 16 * 1024 * 1024)
        cpus = limits.cpus or host_cpu_count()
        return self._client.containers.run(
            self.image,
            command=["sleep", "infinity"],
            detach=True,
            init=True,
            user=f"{KEEPER_UID}:{self.gid}",
            working_dir=WORKSPACE_MOUNT,
            hostname="sandbox",
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={tmp_size},mode=1777"},
            shm_size=tmp_size,
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            pids_limit=limits.max_processes + PIDS_OVERHEAD + (1 if self._agent_dir is not None else 0),
            nano_cpus=int(cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ulimits=[
                Ulimit(name="fsize", soft=limits.max_file_bytes, hard=limits.max_file_bytes),
                Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds),
                Ulimit(name="core", soft=0, hard=0),
            ],
            mounts=mounts,
            labels=owner_labels(),
            environment={},
            stdin_open=False,
            tty=False,
        )

    async def close(self) -> None:
        """Remove the container (killing whatever runs) and give the workspace back; idempotent."""
        if self._closed:
            return
        self._closed = True
        async with self._lock:
            await self._teardown()

    async def _teardown(self) -> None:
        import docker.errors

        session: WarmSession | None = None

        if self._session is not None:
            session, self._session = self._session, None
            session.dead = True
        container, self._container = self._container, None
        if container is not None:
            try:
                await asyncio.to_thread(container.remove, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.DockerException as exc:
                log.warning("could not remove sandbox container %s: %s", container.short_id, exc)
        # Killed runs end their streams now; let them finish before the workspace is given back.
        deadline = time.monotonic() + DRAIN_SECONDS
        while self._inflight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self._quota is not None:
            quota, self._quota = self._quota, None
            await asyncio.to_thread(quota.release)
        while self._grants:
            await asyncio.to_thread(self._grants.pop().release)
        if self._client is not None:
            client, self._client = self._client, None
            await asyncio.to_thread(client.close)
        if session is not None:
            await session.close()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._agent_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._agent_dir, True)
            self._agent_dir = None

    # ------------------------------------------------------------------ commands

    def _counter(self, controller: str, name: str, key: str | None = None) -> int | None:
        container = self._container
        return None if container is None else read_counter(cgroup_file(container.id, controller, name), key)

    def _oom_kills(self) -> int:
        return (
            self._counter("memory", "memory.oom_control", "oom_kill")
            or self._counter("memory", "memory.events", "oom_kill")
            or self._counter("", "memory.events", "oom_kill")
            or 0
        )

    async def _kill_commands(self) -> None:
        """Kill every process of the commands (not the container's own keeper), as the command uid.

        Killed processes count against the pids limit until init reaps them, so this waits (up to 2 s) until
        no process of the uid is left: otherwise the next command can fail to fork.
        """
        import docker.errors

        container = self._container
        if container is None:
            return
        with contextlib.suppress(docker.errors.DockerException):
            await asyncio.to_thread(
                container.exec_run, ["/bin/sh", "-c", _KILL_AND_WAIT], user=f"{self.uid}:{self.gid}", environment={}
            )

    async def run(
        self,
        argv: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run argv in the container. cwd is relative to the workspace; env adds to spec.env."""
        import docker.errors

        wall, host_cwd = checked_command(self.spec, argv, timeout, cwd)
        await self._ensure_open()
        rel = host_cwd.relative_to(self.spec.workspace.resolve()).as_posix()
        inside_cwd = WORKSPACE_MOUNT if rel == "." else f"{WORKSPACE_MOUNT}/{rel}"
        session = self._session
        if session is not None and not session.dead:
            warm = await self._run_warm(argv, merged_env(self.spec.env, env), inside_cwd, stdin, wall)
            return count_execution("docker", warm)
        # `env -i`: the container's own variables (HOSTNAME, Docker's PATH) are dropped too.
        env_args = [f"{k}={v}" for k, v in merged_env(self.spec.env, env).items()]
        command = ["/usr/bin/env", "-i", *env_args, *argv]
        container = self._container
        if container is None:
            raise SandboxError("sandbox is closed")
        api = self._client.api
        limit = self.spec.limits.output_bytes
        out, err = CappedBuffer(limit), CappedBuffer(limit)
        oom_before = self._oom_kills()
        self._inflight += 1
        started = time.monotonic()
        timed_out = False
        try:
            try:
                exec_id = (
                    await asyncio.to_thread(
                        api.exec_create,
                        container.id,
                        command,
                        stdin=stdin is not None,
                        user=f"{self.uid}:{self.gid}",
                        workdir=inside_cwd,
                    )
                )["Id"]
                sock = raw_socket(await asyncio.to_thread(api.exec_start, exec_id, socket=True))
            except docker.errors.NotFound as exc:
                raise SandboxError("sandbox container is gone (closed meanwhile)") from exc
            except docker.errors.DockerException as exc:
                raise SandboxError(f"docker exec failed: {exc}") from exc
            reader = asyncio.ensure_future(asyncio.to_thread(pump, sock, stdin, out, err))
            try:
                await asyncio.wait_for(asyncio.shield(reader), wall)
            except TimeoutError:
                timed_out = True
                await self._kill_commands()
                try:
                    await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
                except TimeoutError:
                    sock.close()
                    await reader
            finally:
                sock.close()
            duration = time.monotonic() - started
            try:
                info = await asyncio.to_thread(api.exec_inspect, exec_id)
                code = info.get("ExitCode")
                code = 128 + 9 if code is None or info.get("Running") else int(code)
            except docker.errors.DockerException:
                code = 128 + 9  # the container went away under the command: close() killed it
            if self._inflight == 1 and self._counter("pids", "pids.current") != PIDS_OVERHEAD:
                # Nothing a command started may outlive it (background jobs, daemons).
                await self._kill_commands()
        finally:
            self._inflight -= 1
        stdout, out_cut = out.text()
        stderr, err_cut = err.text()
        oom = code == 128 + 9 and not timed_out and self._oom_kills() > oom_before
        result = ExecResult(
            exit_code=code,
            stdout=stdout,
            stderr=stderr,
            duration=duration,
            timed_out=timed_out,
            oom_killed=oom,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
        )
        return count_execution("docker", result)

    async def run_pytest(
        self,
        python: str,
        args: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult | None:
        """`python -m pytest ARGS` through the container's pytest server (sandboxes/pytest_client.py).

        None when the container has no warm session or the server cannot serve the run: run it as usual.
        Served runs queue behind other warm commands, as those do.
        """
        if not self.spec.pytest_server or self.spec.session != "warm" or not self._pytest.usable:
            return None
        wall, host_cwd = checked_command(self.spec, [python, *args], timeout, cwd)
        await self._ensure_open()
        rel = host_cwd.relative_to(self.spec.workspace.resolve()).as_posix()
        inside_cwd = WORKSPACE_MOUNT if rel == "." else f"{WORKSPACE_MOUNT}/{rel}"
        merged = merged_env(self.spec.env, env)
        async with self._session_lock:
            session = self._session
            if session is None or session.dead:
                return None
            self._inflight += 1
            try:
                result = await self._pytest.run(
                    session,
                    python,
                    args,
                    env=merged,
                    cwd=inside_cwd,
                    timeout=wall,
                    output_bytes=self.spec.limits.output_bytes,
                    oom_kills=self._oom_kills,
                )
            finally:
                self._inflight -= 1
        return count_execution("docker", result) if result is not None else None

    async def _run_warm(
        self, argv: list[str], env: dict[str, str], cwd: str, stdin: bytes | None, wall: float
    ) -> ExecResult:
        """One command through the container's exec agent; commands queue, as the agent clears up after each."""
        async with self._session_lock:
            session = self._session
            if session is None or session.dead:
                raise SandboxError("sandbox is closed")
            oom_before = self._oom_kills()
            self._inflight += 1
            try:
                res = await session.run(
                    argv,
                    env=env,
                    cwd=cwd,
                    stdin=stdin,
                    timeout=wall,
                    output_bytes=self.spec.limits.output_bytes,
                    cgroup=None,
                )
            finally:
                self._inflight -= 1
        if res.exit_code == 128 + 9 and not res.timed_out and self._oom_kills() > oom_before:
            res = dataclasses.replace(res, oom_killed=True)
        return res

    # ------------------------------------------------------------------ files

    def _file_owner(self) -> tuple[int, int] | None:
        return (self.uid, self.gid) if self.privileged else None

    def read_file(self, relpath: str) -> str:
        """Read a workspace file as text."""
        return hostfs.read_text(self.spec.workspace, relpath)

    def write_file(self, relpath: str, content: str) -> None:
        """Write a workspace file, creating parent folders."""
        hostfs.write_text(self.spec.workspace, relpath, content, owner=self._file_owner())

    async def diff(self) -> str:
        """The git diff of the workspace against HEAD, new files included."""
        return await hostfs.git_diff(self.spec.workspace)

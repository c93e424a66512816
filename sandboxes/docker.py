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
from pathlib import Path
from typing import Any

from sandboxes.backend import SandboxBackend, WorkspaceLease, check_mount_sources, check_mount_targets
from sandboxes.base import WORKSPACE_MOUNT, ExecResult, SandboxError, SandboxSpec, host_cpu_count
from sandboxes.baseimage import LABEL, image_tag
from sandboxes.bwrap import SANDBOX_GID, SANDBOX_UID
from sandboxes.dockerexec import cgroup_file, pump, raw_socket, read_counter
from sandboxes.process import OutputCapture, owner_alive, process_started
from sandboxes.session import WarmSession, accept_session, agent_path

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


#: Kill every other process of this uid, then poll /proc until init has reaped them all (up to 500 x 20 ms: on a
#: loaded machine init reaps late, and an unreaped zombie still counts against the next command's pids limit).
_KILL_AND_WAIT = """kill -9 -1
me=$(id -u); i=0
while [ $i -lt 500 ]; do
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


class DockerSandbox(SandboxBackend):
    """Runs commands in a container: no network, read-only root, tmpfs, limits, no capabilities, non-root.

    The container starts at the first command (or on entering the context) and is removed by close().
    The workspace is a bind mount (its .git read-only on top); extra mounts as the spec says.
    """

    metrics_backend = "docker"
    #: The container has its own pid namespace: a served run's leftovers are swept from all of it.
    pytest_sweep = "ns"

    def __init__(self, spec: SandboxSpec, *, image: str | None = None, api_timeout: int = API_TIMEOUT) -> None:
        super().__init__(spec)
        self.image = image or image_tag()
        self.api_timeout = api_timeout
        self.privileged = os.geteuid() == 0
        self.uid, self.gid = (SANDBOX_UID, SANDBOX_GID) if self.privileged else (os.getuid(), os.getgid())
        self._client: Any = None
        self._container: Any = None
        self._lease = WorkspaceLease()
        self._inflight = 0
        #: Warm mode: an exec agent in the container forks each command (one at a time); see sandboxes/session.py.
        self._session: WarmSession | None = None
        self._session_lock = asyncio.Lock()
        self._agent_dir: Path | None = None
        self._listener: socket.socket | None = None
        self._kill_task: asyncio.Task[None] | None = None
        check_mount_targets(spec)

    # ------------------------------------------------------------------ lifecycle

    async def _open(self) -> None:
        import docker
        import docker.errors

        global _reaped
        check_mount_sources(self.spec)
        try:
            self._client = docker.from_env(timeout=self.api_timeout)
            if not _reaped:
                _reaped = True
                await asyncio.to_thread(reap_leftovers, self._client)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"Docker engine unavailable: {exc}") from exc
        # The bind mount below then takes the quota overlay mounted over the workspace folder.
        await self._lease.acquire(self.spec, self.uid, self.gid, privileged=self.privileged)
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

    async def _abort_open(self) -> None:
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
        await self._lease.release()
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

    def _inside_cwd(self, host_cwd: Path) -> str:
        """A workspace folder as commands in the container see it."""
        rel = host_cwd.relative_to(self.spec.workspace.resolve()).as_posix()
        return WORKSPACE_MOUNT if rel == "." else f"{WORKSPACE_MOUNT}/{rel}"

    async def _run(
        self, argv: list[str], host_cwd: Path, env: dict[str, str], stdin: bytes | None, wall: float
    ) -> ExecResult:
        inside_cwd = self._inside_cwd(host_cwd)
        session = self._session
        if session is not None and not session.dead:
            return await self._run_warm(argv, env, inside_cwd, stdin, wall)
        return await self._run_exec(argv, env, inside_cwd, stdin, wall)

    async def _run_exec(
        self, argv: list[str], env: dict[str, str], cwd: str, stdin: bytes | None, wall: float
    ) -> ExecResult:
        """One command through `docker exec` (no warm session): it streams over the exec's socket."""
        # `env -i`: the container's own variables (HOSTNAME, Docker's PATH) are dropped too.
        command = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        container = self._container
        if container is None:
            raise SandboxError("sandbox is closed")
        api = self._client.api
        capture = OutputCapture(self.spec.limits.output_bytes)
        oom_before = self._oom_kills()
        self._inflight += 1
        started = time.monotonic()
        try:
            exec_id, sock = await self._exec_start(api, container, command, cwd, stdin)
            timed_out = await self._stream(sock, stdin, capture, wall)
            duration = time.monotonic() - started
            code = await _exec_code(api, exec_id)
            if self._inflight == 1 and self._counter("pids", "pids.current") != PIDS_OVERHEAD:
                # Nothing a command started may outlive it (background jobs, daemons).
                await self._kill_commands()
        finally:
            self._inflight -= 1
        oom = code == 128 + 9 and not timed_out and self._oom_kills() > oom_before
        return capture.result(code, duration=duration, timed_out=timed_out, oom_killed=oom)

    async def _exec_start(
        self, api: Any, container: Any, command: list[str], cwd: str, stdin: bytes | None
    ) -> tuple[str, socket.socket]:
        """Create and start the exec as the command uid: its id and the socket its streams go through."""
        import docker.errors

        try:
            exec_id = (
                await asyncio.to_thread(
                    api.exec_create,
                    container.id,
                    command,
                    stdin=stdin is not None,
                    user=f"{self.uid}:{self.gid}",
                    workdir=cwd,
                )
            )["Id"]
            return exec_id, raw_socket(await asyncio.to_thread(api.exec_start, exec_id, socket=True))
        except docker.errors.NotFound as exc:
            raise SandboxError("sandbox container is gone (closed meanwhile)") from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker exec failed: {exc}") from exc

    async def _stream(self, sock: socket.socket, stdin: bytes | None, capture: OutputCapture, wall: float) -> bool:
        """Feed stdin and read the output until the command ends; past `wall` kill it. Whether it timed out."""
        reader = asyncio.ensure_future(asyncio.to_thread(pump, sock, stdin, capture.stdout, capture.stderr))
        try:
            await asyncio.wait_for(asyncio.shield(reader), wall)
        except TimeoutError:
            await self._kill_commands()
            try:
                await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
            except TimeoutError:
                sock.close()
                await reader
            return True
        finally:
            sock.close()
        return False

    def _may_serve_pytest(self) -> bool:
        return self.spec.session == "warm"

    async def _serve_pytest(
        self, python: str, args: list[str], host_cwd: Path, env: dict[str, str], wall: float
    ) -> ExecResult | None:
        """Served runs queue behind other warm commands, as those do."""
        inside_cwd = self._inside_cwd(host_cwd)
        async with self._session_lock:
            session = self._session
            if session is None or session.dead:
                return None
            self._inflight += 1
            try:
                return await self._pytest.run(
                    session,
                    python,
                    args,
                    env=env,
                    cwd=inside_cwd,
                    timeout=wall,
                    output_bytes=self.spec.limits.output_bytes,
                    oom_kills=self._oom_kills,
                )
            finally:
                self._inflight -= 1

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


async def _exec_code(api: Any, exec_id: str) -> int:
    """An exec's exit code; SIGKILL's when it is still running or the container went away under it."""
    import docker.errors

    try:
        info = await asyncio.to_thread(api.exec_inspect, exec_id)
        code = info.get("ExitCode")
        return 128 + 9 if code is None or info.get("Running") else int(code)
    except docker.errors.DockerException:
        return 128 + 9  # the container went away under the command: close() killed it

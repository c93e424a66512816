"""Host side of a warm sandbox session: one long-lived sandbox with an exec agent, one command at a time.

The session is started once (bwrap namespace set-up, cgroup move, rlimits, seccomp) and then runs each
command by sending its argv, environment and cwd, plus the command's own pipes as SCM_RIGHTS, to the
agent (sandboxes/execagent.py). Output is read here through the same capped buffers as the cold path;
the wall timeout is enforced here: on expiry the agent is told to kill the command's tree, and if it
does not answer within KILL_WAIT_SECONDS the whole session is killed (it cannot outlive that).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import ExecResult, SandboxError
from sandboxes.cgroups import SandboxCgroup
from sandboxes.process import CappedBuffer, Launch, OutputCapture, _pipe, _PipeReader, exit_code

log = logging.getLogger(__name__)

#: Session modes: "warm" keeps one sandbox per trajectory, "cold" starts a sandbox per command.
SESSION_MODES = ("warm", "cold")
#: How long the agent may take to report after being told to kill a timed-out command.
KILL_WAIT_SECONDS = 10.0
#: How long a fresh session may take to say it is ready.
START_SECONDS = 30.0
#: Exit code reported when the session itself ended during a command (killed, or its agent died).
SESSION_LOST = 137


def agent_path() -> Path:
    """The exec agent's script (sandboxes/execagent.py)."""
    return Path(__file__).with_name("execagent.py")


@functools.lru_cache(maxsize=1)
def agent_source() -> str:
    """The exec agent's code, handed to a python3 inside the sandbox."""
    return agent_path().read_text()


@dataclass(frozen=True)
class SessionPlan:
    """How a backend starts its session: the host command (with AGENT_FD in argv) and the agent's mode."""

    launch: Launch
    fds_to_close: list[int]
    agent_fd: int


class WarmSession:
    """A started session: run() commands one at a time, kill() it from anywhere, close() it."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process | None,
        sock: socket.socket,
        on_kill: Callable[[], None] | None = None,
    ) -> None:
        #: The local session process (bwrap or the bare agent); None when the agent lives in a container.
        self.proc = proc
        self.sock = sock
        self.dead = False
        #: How to end a session with no local process (the container's own kill).
        self.on_kill = on_kill
        #: A long-lived command holding the session (see open()); closed before any other command runs.
        self.resident: ResidentCommand | None = None

    @classmethod
    async def start(cls, plan: SessionPlan, host_sock: socket.socket) -> WarmSession:
        """Spawn the session process and wait for its agent's ready message; SandboxError on failure."""
        launch = plan.launch
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=launch.env,
                cwd=launch.cwd,
                pass_fds=(plan.agent_fd, *launch.pass_fds),
                preexec_fn=launch.preexec,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            host_sock.close()
            raise SandboxError(f"cannot start a warm session: {exc}") from exc
        finally:
            for fd in (plan.agent_fd, *plan.fds_to_close):
                with contextlib.suppress(OSError):
                    os.close(fd)
        session = cls(proc, host_sock)
        loop = asyncio.get_running_loop()
        try:
            reply = await asyncio.wait_for(loop.sock_recv(host_sock, 4096), START_SECONDS)
        except (TimeoutError, OSError):
            reply = b""
        if not reply.startswith(b'{"ready"'):
            session.kill()
            err = b""
            if proc.stderr is not None:
                with contextlib.suppress(TimeoutError, OSError):
                    err = await asyncio.wait_for(proc.stderr.read(4096), 5)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5)
            session.close_socket()
            raise SandboxError(f"warm session did not start: {err.decode(errors='replace').strip()}")
        # Its stderr is no longer needed; a session that writes there must never block on it.
        if proc.stderr is not None:
            asyncio.get_running_loop().create_task(_drain(proc.stderr))
        return session

    def kill(self) -> None:
        """SIGKILL the session's process group: bwrap (and with it its pid namespace), or the bare agent."""
        self.dead = True
        if self.proc is None:
            self.close_socket()
            if self.on_kill is not None:
                self.on_kill()
        elif self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def close_socket(self) -> None:
        """Close the host's end; the agent then kills what runs and exits."""
        with contextlib.suppress(OSError):
            self.sock.close()

    async def close(self, cgroup: SandboxCgroup | None = None) -> None:
        """End the session: the agent exits on end of input; anything left is killed."""
        self.dead = True
        if self.resident is not None:
            self.resident.release()
        self.close_socket()
        if self.proc is None:
            return
        try:
            await asyncio.wait_for(self.proc.wait(), 2)
        except TimeoutError:
            self.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), KILL_WAIT_SECONDS)

    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        stdin: bytes | None,
        timeout: float,
        output_bytes: int,
        cgroup: SandboxCgroup | None,
    ) -> ExecResult:
        """Run one command through the agent; same result shape and guarantees as process.run_capped."""
        await self._take()
        start = time.monotonic()
        oom_before = cgroup.oom_kills() if cgroup is not None else 0
        out_r, out_w = _pipe()
        err_r, err_w = _pipe()
        give = [out_w, err_w]
        in_r = in_w = -1
        if stdin is not None:
            in_r, in_w = _pipe()
            give.append(in_r)
        self._send(argv, env, cwd, give=give, keep=[out_r, err_r, in_w])
        capture = OutputCapture(output_bytes)
        status, timed_out = await self._follow(argv[0], capture, out_r, err_r, in_w, stdin, timeout)
        note = ""
        if status is None:
            code = SESSION_LOST
            note = "\n[reprobot: the sandbox session ended during this command]\n"
        else:
            code = exit_code(os.waitstatus_to_exitcode(status))
        return capture.result(
            code,
            duration=time.monotonic() - start,
            timed_out=timed_out,
            oom_killed=cgroup is not None and cgroup.oom_kills() > oom_before,
            stderr_note=note,
        )

    async def _take(self) -> None:
        """Free the session for a new command; SandboxError when it is closed."""
        if self.resident is not None:
            # One command at a time: a resident one (a pytest server) gives the session back first.
            await self.resident.close()
        if self.dead:
            raise SandboxError("warm session is closed")

    def _send(self, argv: list[str], env: dict[str, str], cwd: str, *, give: list[int], keep: list[int]) -> None:
        """Hand a command to the agent with the pipe ends it gets (`give`, closed here once sent).

        When the agent is gone, the host's ends (`keep`; -1 for none) are closed too, the session is killed
        and SandboxError raised.
        """
        request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
        try:
            self.sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", give))])
        except OSError as exc:
            for fd in keep:
                if fd >= 0:
                    os.close(fd)
            self.kill()
            raise SandboxError(f"warm session is gone: {exc}") from exc
        finally:
            for fd in give:
                os.close(fd)

    async def _follow(
        self,
        name: str,
        capture: OutputCapture,
        out_r: int,
        err_r: int,
        in_w: int,
        stdin: bytes | None,
        timeout: float,
    ) -> tuple[int | None, bool]:
        """Read the sent command's output and feed its stdin until the agent reports its wait status.

        Returns (status, timed out); status None when the session was lost (it is then killed).
        """
        feeder: asyncio.Task[None] | None = None
        try:
            await capture.attach(os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0))
            if stdin is not None:
                feeder = asyncio.create_task(_feed(in_w, stdin))
                in_w = -1
            reply, timed_out = await _reply_or_kill(self.sock, timeout)
            status = _status(reply)
            if status is None:
                # The agent died or did not answer the kill: end the session, nothing of it survives.
                log.warning("warm sandbox session lost during %s; killing it", name)
                self.kill()
            await capture.drain(name)
        except BaseException:
            # Cancelled (or failed) mid-command: never leave the command behind.
            self.kill()
            raise
        finally:
            capture.close()
            if in_w >= 0:
                os.close(in_w)
            if feeder is not None:
                feeder.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feeder
        return status, timed_out

    async def open(
        self, argv: list[str], *, env: dict[str, str], cwd: str, ready_timeout: float = START_SECONDS
    ) -> ResidentCommand:
        """Start a long-lived command that answers JSON lines on its stdin with JSON lines on its stdout.

        It holds the session until closed (any run() closes it first). Its first line must be
        `{"ready": ...}`; SandboxError (with what it said on stderr) when it is not.
        """
        await self._take()
        loop = asyncio.get_running_loop()
        in_r, in_w = _pipe()
        out_r, out_w = _pipe()
        err_r, err_w = _pipe()
        # The agent's order: stdout, stderr, then stdin.
        self._send(argv, env, cwd, give=[out_w, err_w, in_r], keep=[in_w, out_r, err_r])
        resident = ResidentCommand(self, argv[0])
        self.resident = resident
        try:
            await resident.attach(loop, in_w, out_r, err_r)
            first = await resident.read_line(ready_timeout)
        except TimeoutError:
            await resident.close(kill=True)
            raise SandboxError(f"{argv[0]} did not say it was ready within {ready_timeout:.0f}s") from None
        except BaseException:
            # Cancelled while starting: the session goes, nothing of the command survives.
            self.kill()
            resident.release()
            raise
        if first is None or "ready" not in first:
            detail = first.get("error") if first is not None else None
            await resident.close()
            raise SandboxError(f"{argv[0]} did not start: {detail or resident.stderr_text().strip()[-500:]}")
        return resident


class ResidentCommand:
    """A long-lived command in a warm session (sandboxes/pytest_server.py), spoken to in JSON lines.

    While it runs, the agent waits for it as for any command: "kill" on the socket kills its tree, its end
    is reported as a wait status, which close() collects so the next command's status is its own.
    """

    #: A reply line may hold the whole capped output, JSON-escaped.
    LINE_LIMIT = 64 * 1024 * 1024

    def __init__(self, session: WarmSession, name: str) -> None:
        self.session = session
        self.name = name
        self.closed = False
        #: What the owner started it for (the pytest server's python, env and cwd).
        self.tag: object = None
        self._stdin: asyncio.WriteTransport | None = None
        self._stdout: asyncio.StreamReader | None = None
        self._transports: list[asyncio.BaseTransport] = []
        self._stderr = CappedBuffer(64 * 1024)
        self._stderr_done: asyncio.Future[None] | None = None

    async def attach(self, loop: asyncio.AbstractEventLoop, in_w: int, out_r: int, err_r: int) -> None:
        """Take over the host's ends of the command's pipes."""
        pending = {in_w: "wb", out_r: "rb", err_r: "rb"}
        try:
            self._stdout = asyncio.StreamReader(limit=self.LINE_LIMIT)
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(self._stdout),  # type: ignore[arg-type]
                os.fdopen(out_r, "rb", buffering=0),
            )
            del pending[out_r]
            self._transports.append(transport)
            self._stderr_done = loop.create_future()
            transport, _ = await loop.connect_read_pipe(
                lambda: _PipeReader(self._stderr, self._stderr_done),  # type: ignore[arg-type]
                os.fdopen(err_r, "rb", buffering=0),
            )
            del pending[err_r]
            self._transports.append(transport)
            writer, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(in_w, "wb", buffering=0))
            del pending[in_w]
            self._stdin = writer
            self._transports.append(writer)
        finally:
            for fd in pending:
                os.close(fd)

    def stderr_text(self) -> str:
        """What the command wrote on stderr (capped), for diagnostics."""
        return self._stderr.text()[0]

    async def read_line(self, timeout: float) -> dict[str, object] | None:
        """The next JSON line; None when the command ended or wrote something else. TimeoutError as is."""
        assert self._stdout is not None
        try:
            line = await asyncio.wait_for(self._stdout.readline(), timeout)
        except (ValueError, asyncio.LimitOverrunError, OSError):
            return None
        if not line:
            return None
        try:
            data = json.loads(line)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    async def request(self, obj: dict[str, object], timeout: float) -> dict[str, object] | None:
        """Send one request and wait for its reply; None when the command is gone (then closed).

        On timeout the agent kills the command's tree and TimeoutError is raised (the command is closed).
        """
        if self.closed or self._stdin is None:
            return None
        try:
            self._stdin.write(json.dumps(obj).encode() + b"\n")
            reply = await self.read_line(timeout)
        except TimeoutError:
            await self.close(kill=True)
            raise
        except BaseException:
            # Cancelled mid-request: nothing of it may outlive the caller.
            self.session.kill()
            self.release()
            raise
        if reply is None:
            await self.close()
        return reply

    def release(self) -> None:
        """Forget the command (its pipes closed); the session is free again."""
        self.closed = True
        for transport in self._transports:
            transport.close()
        self._transports.clear()
        if self.session.resident is self:
            self.session.resident = None

    async def close(self, *, kill: bool = False, wait: float = 5.0) -> None:
        """End the command (end of its input, or the agent's kill) and collect its status from the agent."""
        if self.closed:
            return
        self.closed = True
        session = self.session
        if self._stdin is not None:
            self._stdin.close()
        reply = b""
        try:
            if not session.dead:
                try:
                    if kill:
                        session.sock.send(b"kill")
                except OSError:
                    pass  # the agent is gone: no status will come
                else:
                    reply, _ = await _reply_or_kill(session.sock, wait)
                if _status(reply) is None:
                    log.warning("warm sandbox session lost while ending %s; killing it", self.name)
                    session.kill()
        except BaseException:
            # Cancelled before its status came: that status must not be taken for the next command's.
            session.kill()
            raise
        finally:
            self.release()


async def _reply_or_kill(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """The agent's reply for the running command, and whether the timeout struck.

    Past the timeout the agent is told to kill the command's tree and given KILL_WAIT_SECONDS to report;
    b"" when the agent is gone or does not answer.
    """
    loop = asyncio.get_running_loop()
    try:
        return await asyncio.wait_for(loop.sock_recv(sock, 4096), timeout), False
    except TimeoutError:
        with contextlib.suppress(OSError):
            sock.send(b"kill")
        try:
            return await asyncio.wait_for(loop.sock_recv(sock, 4096), KILL_WAIT_SECONDS), True
        except (TimeoutError, OSError):
            return b"", True
    except OSError:
        return b"", False


def _status(reply: bytes) -> int | None:
    if not reply:
        return None
    try:
        data = json.loads(reply)
    except ValueError:
        return None
    status = data.get("status") if isinstance(data, dict) else None
    return status if isinstance(status, int) else None


async def _drain(stream: asyncio.StreamReader) -> None:
    with contextlib.suppress(OSError):
        while await stream.read(65536):
            pass


async def _feed(fd: int, data: bytes) -> None:
    """Write stdin alongside reading output, so a full pipe cannot deadlock the command."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(fd, "wb", buffering=0))
    try:
        transport.write(data)
        # End of input once flushed; a command that stops reading closes the pipe on its side.
        transport.write_eof()
        while not transport.is_closing() or transport.get_write_buffer_size():
            await asyncio.sleep(0.005)
    finally:
        transport.close()


def socket_pair() -> tuple[socket.socket, int]:
    """(host end, agent fd): a SOCK_SEQPACKET pair; the agent's fd is inheritable, the host's is not."""
    host, agent = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    host.setblocking(False)
    fd = agent.detach()
    os.set_inheritable(fd, True)
    return host, fd


async def accept_session(
    listener: socket.socket, on_kill: Callable[[], None], timeout: float = START_SECONDS
) -> WarmSession:
    """The session of an agent that connects to `listener` (a container's); SandboxError if none says ready."""
    loop = asyncio.get_running_loop()
    try:
        sock, _ = await asyncio.wait_for(loop.sock_accept(listener), timeout)
        sock.setblocking(False)
        reply = await asyncio.wait_for(loop.sock_recv(sock, 4096), timeout)
    except (TimeoutError, OSError) as exc:
        raise SandboxError(f"exec agent did not connect: {exc!r}") from exc
    session = WarmSession(None, sock, on_kill)
    if not reply.startswith(b'{"ready"'):
        session.kill()
        raise SandboxError("exec agent did not start")
    return session

"""Shared process runner for sandbox backends: rlimits, cgroups, wall timeout, streaming capped output."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import resource
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from sandboxes.base import TRUNCATION_MARKER, ExecResult, Limits, SandboxError
from sandboxes.cgroups import SandboxCgroup

log = logging.getLogger(__name__)

#: After the command ends (or is killed), how long stragglers may keep the pipes open.
PIPE_GRACE_SECONDS = 2.0
#: A SIGKILLed command not reaped by then is reported as a sandbox failure.
KILL_WAIT_SECONDS = 30.0
#: Bigger pipes mean fewer wake-ups when a command floods its output.
_PIPE_SIZE = 1024 * 1024


class CappedBuffer:
    """Keeps the first and last bytes of a stream within a cap and counts what it drops."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit, 0) // 2
        self.tail_limit = max(limit, 0) - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Account for one chunk; memory stays bounded by the cap whatever the stream size."""
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_limit == 0:
            return
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail_len > self.tail_limit:
            excess = self.tail_len - self.tail_limit
            first = self.tail[0]
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_len -= len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_len -= excess

    def text(self) -> tuple[str, bool]:
        """The kept text, with base.TRUNCATION_MARKER where bytes were dropped, and whether any were."""
        tail = b"".join(self.tail)
        dropped = self.total - len(self.head) - len(tail)
        if dropped <= 0:
            return (bytes(self.head) + tail).decode("utf-8", errors="replace"), False
        return (
            self.head.decode("utf-8", errors="replace")
            + TRUNCATION_MARKER.format(dropped=dropped)
            + tail.decode("utf-8", errors="replace"),
            True,
        )


class _PipeReader(asyncio.Protocol):
    """Feeds a pipe into a CappedBuffer as data arrives, so nothing piles up in memory."""

    def __init__(self, buf: CappedBuffer, done: asyncio.Future[None]) -> None:
        self.buf = buf
        self.done = done

    def data_received(self, data: bytes) -> None:
        self.buf.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


class OutputCapture:
    """A command's stdout and stderr, each kept in a CappedBuffer; pipes are read as data arrives."""

    def __init__(self, output_bytes: int) -> None:
        self.stdout = CappedBuffer(output_bytes)
        self.stderr = CappedBuffer(output_bytes)
        self._readers: list[tuple[asyncio.BaseTransport, asyncio.Future[None]]] = []

    async def attach(self, stdout: BinaryIO, stderr: BinaryIO) -> None:
        """Start reading the command's output pipes; a pipe not yet being read when this fails is closed."""
        pending = [(stdout, self.stdout), (stderr, self.stderr)]
        try:
            while pending:
                await self._read(*pending[0])
                pending.pop(0)
        except BaseException:
            for pipe, _ in pending:
                pipe.close()
            raise

    async def _read(self, pipe: BinaryIO, buf: CappedBuffer) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        transport, _ = await loop.connect_read_pipe(lambda: _PipeReader(buf, done), pipe)
        self._readers.append((transport, done))

    async def drain(self, name: str) -> None:
        """Wait for both pipes to reach their end, for a while: stragglers may keep them open after exit."""
        try:
            await asyncio.wait_for(asyncio.gather(*(done for _, done in self._readers)), PIPE_GRACE_SECONDS)
        except TimeoutError:
            log.warning("output pipes of %s still open after exit; closing them", name)

    def close(self) -> None:
        """Stop reading (closing the pipes); what was read stays in the buffers."""
        for transport, _ in self._readers:
            transport.close()

    def result(
        self, code: int, *, duration: float, timed_out: bool, oom_killed: bool, stderr_note: str = ""
    ) -> ExecResult:
        """The command's ExecResult with the captured output; stderr_note is appended to its stderr."""
        stdout, out_cut = self.stdout.text()
        stderr, err_cut = self.stderr.text()
        return ExecResult(
            exit_code=code,
            stdout=stdout,
            stderr=stderr + stderr_note,
            duration=duration,
            timed_out=timed_out,
            oom_killed=oom_killed,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
        )


def _set_limit(kind: int, value: int) -> None:
    """Lower a resource limit (soft and hard) without trying to raise a hard limit we do not have."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def make_preexec(
    limits: Limits, *, cgroup: SandboxCgroup | None, nproc: bool, address_space: bool
) -> Callable[[], None]:
    """Build the function run in the child before exec: join the cgroup, then apply rlimits."""
    procs_files = cgroup.procs_files if cgroup else []

    def preexec() -> None:
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        _set_limit(resource.RLIMIT_CORE, 0)
        # The hard CPU limit one second later turns SIGXCPU (catchable) into SIGKILL.
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or hard > limits.cpu_seconds:
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        _set_limit(resource.RLIMIT_FSIZE, limits.max_file_bytes)
        if address_space:
            _set_limit(resource.RLIMIT_AS, limits.memory_bytes)
        if nproc:
            _set_limit(resource.RLIMIT_NPROC, limits.max_processes)

    return preexec


def process_started(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, /proc/PID/stat field 22), or None when it is gone.

    With the pid it names one process for good: a pid reused after a worker died has another start time.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def owner_alive(pid: int, started: str | None) -> bool:
    """Whether the process that recorded (pid, start time) still runs; a missing start time checks the pid only."""
    now = process_started(pid)
    if now is None:
        return False
    return started is None or now == started


@dataclass
class Launch:
    """A host command ready to spawn: argv, its (already minimal) environment, and how to set it up."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    #: Kill the command's process group after it exits (when no pid namespace does it for us).
    reap_group: bool = False
    #: argv[0] is the caller's program itself: failing to exec it is the command's failure (127/126).
    direct: bool = False


@dataclass(eq=False)
class Running:
    """A spawned command, so its owner can kill it from elsewhere (close())."""

    proc: asyncio.subprocess.Process

    def kill(self) -> None:
        """SIGKILL the command's process group (for bwrap: bwrap, and with it its pid namespace)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                # start_new_session made the command its group leader; the group id is its pid.
                os.killpg(self.proc.pid, signal.SIGKILL)


def _pipe() -> tuple[int, int]:
    r, w = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    return r, w


def exit_code(returncode: int) -> int:
    """Shell convention: death by signal N is reported as 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


async def run_capped(
    launch: Launch,
    *,
    stdin: bytes | None,
    timeout: float,
    output_bytes: int,
    cgroup: SandboxCgroup | None = None,
    oom_before: int = 0,
    on_start: Callable[[Running], None] | None = None,
    on_end: Callable[[Running], None] | None = None,
    fds_to_close: list[int] | None = None,
) -> ExecResult:
    """Run a host command with a wall timeout that kills its whole group, streaming capped output."""
    capture = OutputCapture(output_bytes)
    start = time.monotonic()
    proc = await _start(launch, stdin, capture, fds_to_close, start)
    if isinstance(proc, ExecResult):
        return proc
    running = Running(proc)
    if on_start:
        on_start(running)
    feeder = asyncio.create_task(_feed_stdin(proc, stdin)) if stdin is not None else None
    try:
        timed_out = await _wait_or_kill(launch, running, timeout)
        await capture.drain(launch.argv[0])
    finally:
        capture.close()
        if feeder is not None:
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await feeder
        if proc.returncode is None:
            # Cancelled while running: never leave the command behind.
            running.kill()
        if on_end:
            on_end(running)
    assert proc.returncode is not None
    return capture.result(
        exit_code(proc.returncode),
        duration=time.monotonic() - start,
        timed_out=timed_out,
        oom_killed=cgroup is not None and cgroup.oom_kills() > oom_before,
    )


async def _start(
    launch: Launch,
    stdin: bytes | None,
    capture: OutputCapture,
    fds_to_close: list[int] | None,
    start: float,
) -> asyncio.subprocess.Process | ExecResult:
    """Spawn the command with its output streaming into `capture`; the result when a direct program cannot run.

    Should anything fail (or be cancelled) on the way, no pipe stays open and no command stays running.
    """
    out_r, out_w = _pipe()
    err_r, err_w = _pipe()
    stdout, stderr = os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0)
    try:
        proc = await _spawn(launch, stdin, out_w, err_w, fds_to_close, start)
    except BaseException:
        stdout.close()
        stderr.close()
        raise
    if isinstance(proc, ExecResult):
        stdout.close()
        stderr.close()
        return proc
    try:
        await capture.attach(stdout, stderr)
    except BaseException:
        capture.close()
        Running(proc).kill()
        raise
    return proc


async def _spawn(
    launch: Launch,
    stdin: bytes | None,
    out_w: int,
    err_w: int,
    fds_to_close: list[int] | None,
    start: float,
) -> asyncio.subprocess.Process | ExecResult:
    """Start the command writing to out_w and err_w, then close the host's copies of what it inherited.

    A direct program that cannot be executed gives the shell's result (127 or 126); any other failure
    to start is a SandboxError.
    """
    try:
        return await asyncio.create_subprocess_exec(
            *launch.argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            env=launch.env,
            cwd=launch.cwd,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        if not launch.direct:
            raise SandboxError(f"cannot start {launch.argv[0]}: {exc}") from exc
        # Like a shell: 127 when the program is missing, 126 when it cannot be executed.
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return ExecResult(code, "", f"{launch.argv[0]}: {exc.strerror}\n", time.monotonic() - start)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"cannot start {launch.argv[0]}: {exc}") from exc
    finally:
        os.close(out_w)
        os.close(err_w)
        # The child has its copies now; ours would only keep memfds alive.
        for fd in fds_to_close or ():
            with contextlib.suppress(OSError):
                os.close(fd)
        if fds_to_close:
            fds_to_close.clear()


async def _wait_or_kill(launch: Launch, running: Running, timeout: float) -> bool:
    """Wait for the command; past its wall timeout kill its group. Whether the timeout struck."""
    proc = running.proc
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        timed_out = True
        running.kill()
        try:
            await asyncio.wait_for(proc.wait(), KILL_WAIT_SECONDS)
        except TimeoutError:
            raise SandboxError(f"{launch.argv[0]} (pid {proc.pid}) survived SIGKILL") from None
    if launch.reap_group:
        # Background children may outlive the command; they share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return timed_out


async def _feed_stdin(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write stdin concurrently with reading output, so a full pipe cannot deadlock the command."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        # The command exited or closed stdin without reading everything; that is its business.
        pass
    finally:
        proc.stdin.close()

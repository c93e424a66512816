"""Sandbox protocol: run untrusted commands confined to one workspace, with limits and capped output."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

#: Inside every backend the workspace is mounted here, read-write.
WORKSPACE_MOUNT = "/workspace"

#: Marker appended where stdout or stderr was cut.
TRUNCATION_MARKER = "\n[... output truncated by reprobot: {dropped} bytes dropped ...]\n"


class SandboxError(Exception):
    """The sandbox itself failed (not the command inside it)."""


class PathOutsideWorkspace(SandboxError):
    """A file operation named a path that escapes the workspace."""


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every command run in a sandbox."""

    wall_seconds: float = 120.0
    cpu_seconds: int = 300
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 256
    max_file_bytes: int = 256 * 1024**2
    output_bytes: int = 1024 * 1024
    #: Bytes commands may write into the workspace, all files together (0: no quota). See sandboxes/quota.py.
    disk_bytes: int = 2 * 1024**3
    #: CPU cores a command may use at once (backends that can cap it); 0 means all of the host's.
    cpus: float = 0.0


@dataclass(frozen=True)
class Mount:
    """An extra host path made visible inside the sandbox (read-only unless stated)."""

    host: Path
    inside: str
    read_only: bool = True


@dataclass(frozen=True)
class ExecResult:
    """What one command did inside the sandbox."""

    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    oom_killed: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its limits."""
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed

    @property
    def output(self) -> str:
        """stdout and stderr together, for logs and evidence."""
        if self.stderr and self.stdout:
            return self.stdout + ("" if self.stdout.endswith("\n") else "\n") + self.stderr
        return self.stdout or self.stderr


@dataclass(frozen=True)
class SandboxSpec:
    """How to build a sandbox: the workspace, extra read-only mounts, the environment, limits."""

    workspace: Path
    mounts: tuple[Mount, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    rootfs: Path | None = None
    #: "warm": one sandbox lives for the whole spec's lifetime and forks each command (sandboxes/session.py);
    #: "cold": a new sandbox per command. Same guarantees either way.
    session: str = "warm"
    #: Warm sessions only: pytest runs may go through a resident server that has imported pytest once and
    #: forks a worker per run (sandboxes/pytest_server.py); off, every run starts a fresh interpreter.
    pytest_server: bool = True


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run untrusted code against one workspace."""

    spec: SandboxSpec

    async def run(
        self,
        argv: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run argv inside the sandbox. cwd is relative to the workspace; env adds to spec.env."""
        ...

    def read_file(self, relpath: str) -> str:
        """Read a workspace file as text."""
        ...

    def write_file(self, relpath: str, content: str) -> None:
        """Write a workspace file, creating parent folders."""
        ...

    async def diff(self) -> str:
        """The git diff of the workspace against its base commit, new files included."""
        ...

    async def close(self) -> None:
        """Release everything the sandbox holds; idempotent."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class PytestServing(Protocol):
    """An optional capability of a sandbox: `python -m pytest ARGS` through a preloaded pytest server."""

    async def run_pytest(
        self,
        python: str,
        args: list[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult | None:
        """The result `run([python, "-m", "pytest", *args], ...)` would give, or None: run it that way instead."""
        ...


def checked_command(spec: SandboxSpec, argv: list[str], timeout: float | None, cwd: str | None) -> tuple[float, Path]:
    """Check a command before a backend runs it: (its wall seconds, its host working folder).

    SandboxError for an empty argv or one with a non-string or NUL byte, a timeout that is not positive,
    or a cwd that is not a folder inside the workspace (None, "" and "." mean the workspace itself).
    """
    if not argv or not all(isinstance(a, str) and "\x00" not in a for a in argv):
        raise SandboxError(f"invalid argv {argv!r}")
    wall = spec.limits.wall_seconds if timeout is None else timeout
    if wall <= 0:
        raise SandboxError(f"invalid timeout {wall}")
    workspace = spec.workspace.resolve()
    host_cwd = resolve_in_workspace(spec.workspace, cwd) if cwd not in (None, "", ".") else workspace
    if not host_cwd.is_dir():
        raise SandboxError(f"cwd {cwd!r} is not a directory in the workspace")
    return wall, host_cwd


def resolve_in_workspace(workspace: Path, relpath: str) -> Path:
    """Map a workspace-relative path to a host path, refusing anything that escapes the workspace."""
    if not relpath or "\x00" in relpath:
        raise PathOutsideWorkspace(f"invalid path {relpath!r}")
    pure = PurePosixPath(relpath)
    if pure.is_absolute():
        # Accept paths given as seen from inside the sandbox.
        try:
            pure = pure.relative_to(WORKSPACE_MOUNT)
        except ValueError:
            raise PathOutsideWorkspace(f"{relpath!r} is outside the workspace") from None
    root = workspace.resolve()
    target = (root / pure).resolve()
    if target != root and root not in target.parents:
        raise PathOutsideWorkspace(f"{relpath!r} is outside the workspace")
    return target


def cap_output(data: bytes, limit: int) -> tuple[str, bool]:
    """Decode output and cut it to `limit` bytes (head and tail kept) with a visible marker."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace"), False
    head = data[: limit // 2]
    tail = data[-(limit // 2) :]
    dropped = len(data) - len(head) - len(tail)
    text = (
        head.decode("utf-8", errors="replace")
        + TRUNCATION_MARKER.format(dropped=dropped)
        + tail.decode("utf-8", errors="replace")
    )
    return text, True


def minimal_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The explicit environment every sandboxed command starts from; nothing of the bot's leaks in."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
        "TERM": "dumb",
    }
    if extra:
        env.update(extra)
    return env


def host_cpu_count() -> int:
    """Cores available to this process, used to bound parallel trajectories."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1

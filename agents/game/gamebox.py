"""The game sandbox, host side: the Minetest server and client of a session run in one sandbox, like repo code.

The repository's Lua runs inside minetestserver, so the server is repo code: it gets a bwrap sandbox (the
default backend, also on runner machines) with its own network namespace that holds only loopback, an
unprivileged uid, a read-only root of host /usr, the cgroup and rlimits of every sandbox, and the session's
folder as its workspace. The client joins it there (it renders what the server sends). The X display comes in
as its one socket, the probe's command channel as a Unix socket the supervisor (agents/game/boxinit.py)
forwards from 127.0.0.1 inside: no other address is reachable. The backend `none` runs the same supervisor
on the host and is used only when asked for by name, as for all repo code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from importlib import resources
from pathlib import Path
from typing import Any

from agents.game.driver import GameDriverError
from sandboxes.base import WORKSPACE_MOUNT, Limits, Mount, SandboxError, SandboxSpec
from sandboxes.factory import make_sandbox
from sandboxes.hostsandbox import ProcessSandbox

log = logging.getLogger(__name__)

#: Where the channel's folder is seen inside a bwrap sandbox.
CHANNEL_MOUNT = "/run/reprobot-channel"
#: What a game session may use: two game programs with software rendering, for minutes, writing a world.
GAME_LIMITS = Limits(
    wall_seconds=24 * 3600.0,
    cpu_seconds=4 * 3600,
    memory_bytes=4 * 1024**3,
    max_processes=512,
    max_file_bytes=1024**3,
    disk_bytes=2 * 1024**3,
)
#: Sandbox backends a game can run under: bwrap, or none when asked for by name (docker has no game in it).
KINDS = ("bwrap", "none")
_PYTHON = "/usr/bin/python3"


class BoxedProgram:
    """A program in the game sandbox as the driver sees it: `returncode` (None while it runs) and `wait()`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.returncode: int | None = None
        self._ended = asyncio.Event()

    def ended(self, code: int) -> None:
        """Record how the program ended (the first report counts)."""
        if self.returncode is None:
            self.returncode = code
            self._ended.set()

    async def wait(self) -> int:
        """Its exit code, once it has ended."""
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode


class GameBox:
    """One session's sandbox: open() it, start() programs in it, close() it (which stops them all)."""

    def __init__(self, workspace: Path, channel_dir: Path, *, kind: str = "bwrap", display: str | None = None) -> None:
        if kind not in KINDS:
            raise GameDriverError(f"a game runs in the sandbox backend bwrap (or none, by name), not {kind!r}")
        self.workspace, self.channel_dir, self.kind, self.display = workspace, channel_dir, kind, display
        self.sandbox: ProcessSandbox | None = None
        self.supervisor: asyncio.subprocess.Process | None = None
        self.programs: dict[str, BoxedProgram] = {}
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[bool] | None = None

    @property
    def confined(self) -> bool:
        """Whether paths inside differ from the host's (bwrap mounts the workspace at /workspace)."""
        return self.kind == "bwrap"

    def inside(self, path: Path) -> str:
        """A host path of the workspace or the channel folder as the sandbox's programs see it."""
        if not self.confined:
            return str(path)
        for root, mount in ((self.workspace, WORKSPACE_MOUNT), (self.channel_dir, CHANNEL_MOUNT)):
            if path == root or root in path.parents:
                return str(Path(mount) / path.relative_to(root))
        raise ValueError(f"{path} is not visible in the game sandbox")

    def _spec(self) -> SandboxSpec:
        mounts: list[Mount] = []
        if self.confined:
            mounts.append(Mount(self.channel_dir, CHANNEL_MOUNT))
            if self.display:
                # Only the display's socket: the client draws on the X server that xdotool drives.
                if not self.display.startswith(":"):
                    raise GameDriverError(f"the game sandbox reaches a local X display (:N) only, not {self.display}")
                x_socket = f"/tmp/.X11-unix/X{self.display[1:].split('.')[0]}"
                mounts.append(Mount(Path(x_socket), x_socket))
        return SandboxSpec(workspace=self.workspace, mounts=tuple(mounts), limits=GAME_LIMITS, session="cold")

    async def open(self, channel_socket: Path, channel_port: int, stderr_file: Path) -> None:
        """Start the sandbox and its supervisor; returns once the probe's channel listens inside."""
        try:
            sandbox = make_sandbox(self.kind, self._spec())
        except SandboxError as exc:
            raise GameDriverError(f"the game sandbox cannot run here: {exc}") from exc
        if not isinstance(sandbox, ProcessSandbox):  # pragma: no cover - KINDS holds host backends only
            raise GameDriverError(f"the game sandbox needs a host-process backend, not {self.kind}")
        self.sandbox = sandbox
        source = resources.files("agents.game").joinpath("boxinit.py").read_text()
        config = json.dumps({"socket": self.inside(channel_socket), "port": channel_port})
        with stderr_file.open("ab") as err:
            try:
                self.supervisor = await sandbox.spawn([_PYTHON, "-I", "-S", "-c", source, config], stderr=err.fileno())
            except SandboxError as exc:
                raise GameDriverError(f"the game sandbox did not start: {exc}") from exc
        self._ready = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(self.supervisor))
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._ready), 30)
        except TimeoutError:
            ready = False
        if not ready:
            tail = stderr_file.read_text(errors="replace")[-800:]
            raise GameDriverError(f"the game sandbox's supervisor did not start: {tail.strip()}")

    async def _read(self, supervisor: asyncio.subprocess.Process) -> None:
        """Follow the supervisor's reports; when it is gone, every program counts as ended."""
        assert supervisor.stdout is not None
        try:
            # What comes out of the sandbox is read as untrusted: a bad line is skipped, an endless one ends it.
            while line := await supervisor.stdout.readline():
                with contextlib.suppress(ValueError, TypeError):
                    self._report(json.loads(line))
        except (ValueError, OSError) as exc:
            log.warning("game sandbox: its reports stopped: %s", exc)
        finally:
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(False)
            for program in self.programs.values():
                program.ended(-9)

    def _report(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if message.get("ready") and self._ready is not None and not self._ready.done():
            self._ready.set_result(True)
        elif "exit" in message and str(message["exit"]) in self.programs:
            self.programs[str(message["exit"])].ended(int(message.get("code") or 0))
        elif "error" in message:
            log.warning("game sandbox: %s", message["error"])

    async def start(self, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> BoxedProgram:
        """Start (or restart) the program NAME in the sandbox."""
        if self.supervisor is None or self.supervisor.stdin is None or self.supervisor.returncode is not None:
            raise GameDriverError("the game sandbox is not running")
        program = BoxedProgram(name)
        self.programs[name] = program
        order = {"start": name, "argv": argv, "env": env, "cwd": self.inside(cwd)}
        self.supervisor.stdin.write(json.dumps(order).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await self.supervisor.stdin.drain()
        return program

    async def close(self) -> None:
        """Stop every program (the supervisor's end of input), then close the sandbox; idempotent."""
        supervisor, self.supervisor = self.supervisor, None
        if supervisor is not None and supervisor.stdin is not None:
            supervisor.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(supervisor.wait(), 25)
        if self._reader is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._reader, 5)
            self._reader = None
        if self.sandbox is not None:
            sandbox, self.sandbox = self.sandbox, None
            await sandbox.close()  # kills what is left and gives the workspace back
        for program in self.programs.values():
            program.ended(-9)

"""The Minetest (Luanti) driver: a real `minetestserver` and `minetest` client under Xvfb, driven with xdotool.

Per session: a fresh world (flat, creative, no damage) gets the repository's mods and our probe mod in
`worldmods/`; the server listens on 127.0.0.1 only; the client joins under Xvfb with software GL; keys and mouse
go through xdotool (XTEST); the probe mod reports structured state and the knowledge base through the command
channel, an HTTP server of ours on 127.0.0.1 that the mod polls (it is the only mod in `secure.http_mods`; mod
security stays on). Crashes: the server's exit and the Lua errors in its debug.txt.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import os
import random
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from agents.game.driver import GameCrash, GameDriverError, GameState
from agents.game.gamebox import BoxedProgram, GameBox
from agents.game.install import Installed, check_world, install_probe, install_repo, probe_name
from agents.game.luacrash import parse_lua_crashes

log = logging.getLogger(__name__)

PLAYER = "player"
SCREEN = (640, 480)
#: Keys the macros may name, in xdotool's spelling.
KEY_NAMES = {"enter": "Return", "escape": "Escape", "esc": "Escape", "space": "space", "shift": "shift", "tab": "Tab"}
#: Minetest's translation and colour escapes in chat text.
_ESCAPES = re.compile(r"\x1b\([^)]*\)|\x1b[A-Za-z]")
_SEARCH_DIRS = ("/usr/games", "/usr/bin", "/usr/local/bin")
_GAMES_DIR = Path("/usr/share/games/minetest/games")


def find_tool(name: str) -> str | None:
    """A binary on PATH or where Debian puts games (/usr/games is not on every PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _SEARCH_DIRS:
        if os.access(Path(folder) / name, os.X_OK):
            return str(Path(folder) / name)
    return None


def missing_tools() -> list[str]:
    """The programs a real Minetest session needs that this machine lacks."""
    return [t for t in ("minetestserver", "minetest", "Xvfb", "xdotool") if find_tool(t) is None]


def _free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Channel:
    """The command channel: the probe mod polls GET /poll for ops and posts each result to POST /result."""

    def __init__(self) -> None:
        self.pending: list[dict[str, Any]] = []
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.ids = itertools.count(1)
        self.runner: web.AppRunner | None = None
        self.url = ""
        self.polled = asyncio.Event()

    async def start(self, path: Path) -> None:
        """Listen on a Unix socket: the game sandbox's supervisor forwards the probe's connections to it."""
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_get("/poll", self._poll)
        app.router.add_post("/result", self._result)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.UnixSite(self.runner, str(path)).start()
        path.chmod(0o666)  # the sandbox's uid connects to it (the folder is bound into the sandbox read-only)

    async def _poll(self, request: web.Request) -> web.Response:
        ops, self.pending = self.pending, []
        self.polled.set()
        return web.json_response(ops)

    async def _result(self, request: web.Request) -> web.Response:
        try:
            data = json.loads(await request.text())
        except json.JSONDecodeError:
            return web.Response(status=400, text="not JSON")
        future = self.waiting.pop(int(data.get("id") or 0), None)
        if future is not None and not future.done():
            future.set_result(data.get("result"))
        return web.Response(text="ok")

    async def call(self, op: dict[str, Any], timeout: float = 10.0) -> Any:
        ident = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[ident] = future
        self.pending.append({**op, "id": ident})
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self.waiting.pop(ident, None)

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


class MinetestDriver:
    """A real Minetest session per `start()`; `display` reuses a running X server (tests share one Xvfb)."""

    name = "minetest"

    def __init__(
        self,
        repo: Path | None = None,
        *,
        work_dir: Path | None = None,
        display: str | None = None,
        game: str = "minetest",
        join_timeout: float = 60.0,
        sandbox: str = "bwrap",
    ) -> None:
        self.repo, self.game, self.join_timeout = repo, game, join_timeout
        self.display = display
        self.sandbox = sandbox
        self._own_work = work_dir is None
        self.work = work_dir or Path(tempfile.mkdtemp(prefix="reprobot-minetest-"))
        #: The game sandbox's workspace: the world, the game programs' home, configs and logs.
        self.workspace = self.work / "box"
        self.box = GameBox(self.workspace, self.work / "channel", kind=sandbox)
        self.server: BoxedProgram | None = None
        self.client: BoxedProgram | None = None
        self.xvfb: asyncio.subprocess.Process | None = None
        self.channel = _Channel()
        self.window = ""
        self.mods: list[str] = []
        #: The probe mod's name in the current session (random, see agents/game/install.py).
        self.probe = ""
        self._game_id: str | None = None
        self._port = 0
        self.debug_txt = self.workspace / "debug.txt"
        self._knowledge: dict[str, Any] | None = None

    # --- session -----------------------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        """The game programs' environment, as seen in the sandbox: nothing of the runner's (no token, no secret)."""
        env = {
            "PATH": "/usr/games:/usr/bin:/bin",
            "HOME": self.box.inside(self.workspace / "home"),
            "LANG": "C.UTF-8",
            "LIBGL_ALWAYS_SOFTWARE": "1",
        }
        if self.display:
            env["DISPLAY"] = self.display
        if self._game_id:
            env["MINETEST_GAME_PATH"] = self.box.inside(self.workspace / "games")
        return env

    def _write_world(self, channel_url: str, port: int) -> tuple[Path, Path]:
        """A fresh world with the repository and the probe, and the server's config; checked once written."""
        shutil.rmtree(self.workspace, ignore_errors=True)  # a fresh world per session
        world, games = self.workspace / "world", self.workspace / "games"
        world.mkdir(parents=True)
        (self.workspace / "home").mkdir()
        installed = install_repo(self.repo, world, games) if self.repo is not None else Installed([])
        self.mods, self._game_id = installed.mods, installed.game
        self.probe = probe_name()
        install_probe(world, self.probe)
        (world / "world.mt").write_text(
            f"gameid = {self._game_id or self.game}\nbackend = sqlite3\nplayer_backend = sqlite3\n"
            "auth_backend = sqlite3\ncreative_mode = true\nenable_damage = false\n"
        )
        (world / "map_meta.txt").write_text("mg_name = flat\nseed = 1\n[end_of_params]\n")
        conf = self.workspace / "server.conf"
        conf.write_text(_server_conf(port, self.probe, channel_url))
        (self.workspace / "client.conf").write_text(CLIENT_CONF)
        check_world(world, conf, self.probe, games if self._game_id else None)
        return world, conf

    async def start(self) -> None:
        """Fresh world, sandbox, server, X display, client; returns once the player is in and the probe answers."""
        missing = missing_tools()
        if missing:
            raise GameDriverError(f"Minetest is not installed here (missing {', '.join(missing)})")
        self.channel = _Channel()  # a fresh channel per session: nothing pending from the last one
        self.server = self.client = None
        try:
            await self._start_processes()
        except BaseException:
            await self.stop()  # nothing the failed start began is left running
            raise

    async def _start_processes(self) -> None:
        if not self.display:
            await self._start_xvfb()
        channel_dir = self.work / "channel"
        shutil.rmtree(channel_dir, ignore_errors=True)
        channel_dir.mkdir(parents=True)
        channel_dir.chmod(0o755)
        await self.channel.start(channel_dir / "channel.sock")
        # Ports of 127.0.0.1 as the sandbox sees it (its own loopback under bwrap).
        port, channel_port = _free_port(socket.SOCK_DGRAM), _free_port()
        self._game_id = None
        self.box = GameBox(self.workspace, channel_dir, kind=self.sandbox, display=self.display)
        world, conf = self._write_world(f"http://127.0.0.1:{channel_port}", port)
        await self.box.open(channel_dir / "channel.sock", channel_port, self.work / "sandbox.txt")
        inside = self.box.inside
        argv = [str(find_tool("minetestserver")), "--world", inside(world), "--config", inside(conf)]
        argv += ["--logfile", inside(self.debug_txt)]
        self.server = await self.box.start("server", argv, self._env(), self.workspace)
        self._port = port
        await self._start_client()
        await self._wait_joined()

    async def _start_client(self) -> None:
        inside = self.box.inside
        argv = [str(find_tool("minetest")), "--config", inside(self.workspace / "client.conf")]
        argv += ["--address", "127.0.0.1", "--port", str(self._port), "--name", PLAYER, "--password", "", "--go"]
        argv += ["--logfile", inside(self.workspace / "client.txt")]
        self.client = await self.box.start("client", argv, self._env(), self.workspace)

    async def _start_xvfb(self) -> None:
        """Our own Xvfb on a free display number, tried a few times (another X server may take the number)."""
        for _ in range(4):
            number = random.randrange(200, 2000)
            if Path(f"/tmp/.X{number}-lock").exists():
                continue
            self.xvfb = await asyncio.create_subprocess_exec(
                str(find_tool("Xvfb")),
                *(f":{number}", "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
            self.display = f":{number}"
            for _ in range(50):  # until the display answers, or the server gives up (the number was taken)
                if self.xvfb.returncode is not None:
                    break
                if (await self._xdo("getdisplaygeometry")).strip():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.xvfb.wait(), 0.2)
            with contextlib.suppress(ProcessLookupError):
                self.xvfb.kill()
            await self.xvfb.wait()
        self.xvfb, self.display = None, None
        raise GameDriverError("Xvfb did not start (no free display answered)")

    async def _wait_joined(self) -> None:
        deadline = time.monotonic() + self.join_timeout
        restarts = 2
        while time.monotonic() < deadline:
            if self.client is not None and self.client.returncode is not None and restarts:
                restarts -= 1  # a client that lost the race for the display gets another go
                log.info("the Minetest client exited with %s before joining; starting it again", self.client.returncode)
                await self._start_client()
            if self.server is not None and self.server.returncode is not None:
                tail = "\n".join(self._log_lines()[-5:])
                raise GameDriverError(f"minetestserver exited with {self.server.returncode} at start: {tail}")
            if self.channel.polled.is_set():
                with contextlib.suppress(TimeoutError):
                    state = await self.channel.call({"op": "state"}, timeout=3)
                    if isinstance(state, dict) and state.get("joined"):
                        self.window = await self._find_window()
                        if self.window:
                            await self._xdo("windowfocus", "--sync", self.window)
                            await self._xdo(
                                "mousemove", "--window", self.window, str(SCREEN[0] // 2), str(SCREEN[1] // 2)
                            )
                            await asyncio.sleep(2.0)  # the first frames of the world
                            return
            await asyncio.sleep(0.5)
        raise GameDriverError(f"the Minetest client did not join within {self.join_timeout:.0f}s")

    async def _find_window(self) -> str:
        out = await self._xdo("search", "--name", "Minetest")
        return out.split()[0] if out.split() else ""

    async def _xdo(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            str(find_tool("xdotool")),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={"DISPLAY": str(self.display), "PATH": "/usr/bin:/bin"},
        )
        out, _ = await proc.communicate()
        return out.decode(errors="replace")

    async def stop(self) -> None:
        """Stop client and server (with their sandbox) and our Xvfb, close the channel, drop the world."""
        await self.box.close()
        proc = self.xvfb
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                await proc.wait()
        await self.channel.close()
        if self.xvfb is not None:
            self.xvfb, self.display = None, None
        if self._own_work:
            shutil.rmtree(self.work, ignore_errors=True)

    # --- macros --------------------------------------------------------------------------------------------------

    async def act(self, action: dict[str, Any]) -> None:
        """One macro through the real client (keyboard and mouse by XTEST); `look` goes through the probe."""
        kind = action["action"]
        if kind == "wait":
            await asyncio.sleep(float(action["seconds"]))
        elif kind == "look":
            await self._call({"op": "look", "yaw": float(action["yaw"]), "pitch": float(action["pitch"])})
        elif kind == "press":
            key = KEY_NAMES.get(str(action["key"]).lower(), str(action["key"]))
            seconds = float(action.get("seconds") or 0)
            if seconds:
                await self._xdo("keydown", key)
                await asyncio.sleep(seconds)
                await self._xdo("keyup", key)
            else:
                await self._xdo("key", key)
        elif kind == "write":
            await self._xdo("type", "--delay", "30", str(action["text"]))
        elif kind == "command":
            await self._xdo("key", "t")
            await asyncio.sleep(0.6)
            await self._xdo("type", "--delay", "30", str(action["text"]))
            await self._xdo("key", "Return")
        elif kind == "click":
            # Held for a few frames: the software-rendered client reads input once a frame.
            button = "1" if action["button"] == "left" else "3"
            await self._xdo("mousedown", button)
            await asyncio.sleep(0.3)
            await self._xdo("mouseup", button)
        await asyncio.sleep(float(action.get("settle", 0.8)))

    async def _call(self, op: dict[str, Any]) -> Any:
        if self.server is None or self.server.returncode is not None:
            return None
        try:
            return await self.channel.call(op)
        except TimeoutError:
            return None

    # --- observation ---------------------------------------------------------------------------------------------

    async def state(self) -> GameState:
        """The probe's state (empty once the server is gone) with the log tail."""
        data = await self._call({"op": "state"})
        state = GameState(log_tail=self._log_lines()[-10:])
        if isinstance(data, dict) and data.get("joined"):
            pos = data.get("pos") or {}
            state.position = (float(pos.get("x", 0)), float(pos.get("y", 0)), float(pos.get("z", 0)))
            state.yaw, state.pitch = float(data.get("yaw") or 0), float(data.get("pitch") or 0)
            state.wielded = str(data.get("wielded") or "")
            inv = data.get("inventory")
            state.inventory = {int(s["slot"]): str(s["item"]) for s in inv} if isinstance(inv, list) else {}
            pointed, nearby = data.get("pointed"), data.get("nearby")
            state.pointed = pointed if isinstance(pointed, dict) else {}
            state.eye_height = float(data.get("eye_height") or 1.5)
            for obj in nearby if isinstance(nearby, list) else []:
                p = obj.get("pos") or {}
                state.nearby.append(
                    {"name": str(obj.get("name")), "pos": (p.get("x", 0), p.get("y", 0), p.get("z", 0))}
                )
        if isinstance(data, dict) and isinstance(data.get("chat"), list):
            state.chat = [_ESCAPES.sub("", str(c)) for c in data["chat"]]
        return state

    async def screenshot(self, path: Path) -> bool:
        """Grab the X screen (the client's window fills it); False once the client is gone."""
        if self.client is None or self.client.returncode is not None or not self.display:
            return False
        from PIL import ImageGrab  # Pillow's X grab; loaded only where screenshots are taken

        try:
            image = await asyncio.to_thread(ImageGrab.grab, xdisplay=self.display)
        except OSError as exc:
            log.warning("screenshot failed: %s", exc)
            return False
        await asyncio.to_thread(image.crop((0, 0, *SCREEN)).save, path)
        return True

    def _log_lines(self) -> list[str]:
        try:
            return self.debug_txt.read_text(errors="replace").splitlines()
        except OSError:
            return []

    async def crashes(self) -> list[GameCrash]:
        """Lua errors in debug.txt (with their signatures) and the server's exit."""
        await asyncio.sleep(0)
        text = "\n".join(self._log_lines())
        found = [
            GameCrash("log_error", c.message, c.signature(), text=_error_block(text, c.message))
            for c in parse_lua_crashes(text)
        ]
        if self.server is not None and self.server.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.server.wait(), 0.05)
        if self.server is not None and self.server.returncode not in (None, 0):
            if found:
                first = found[0]
                found[0] = GameCrash("server_exit", first.message, first.signature, first.text)
            else:
                errors = [line for line in text.splitlines() if "ERROR[" in line]
                found.append(
                    GameCrash(
                        "server_exit",
                        f"minetestserver exited with {self.server.returncode}",
                        text="\n".join(errors[-20:]),
                    )
                )
        return found

    async def knowledge(self) -> dict[str, Any]:
        """The probe's dump of registered nodes, items, tools and commands (cached for the session)."""
        if self._knowledge is None:
            data = await self._call({"op": "dump"})
            self._knowledge = data if isinstance(data, dict) else {}
        return self._knowledge

    async def version(self) -> str:
        """The game version string (the knowledge base's cache key)."""
        return str((await self.knowledge()).get("version") or "unknown")


def _error_block(text: str, message: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if message[:60] in line:
            return "\n".join(lines[i : i + 15])
    return ""


def look_at(
    position: tuple[float, float, float], target: tuple[float, float, float], eye_height: float = 1.47
) -> tuple[float, float]:
    """Yaw and pitch (Minetest's conventions) that point the eye at `target`."""
    eye = (position[0], position[1] + eye_height, position[2])
    dx, dy, dz = (target[i] - eye[i] for i in range(3))
    yaw = math.atan2(-dx, dz)
    pitch = -math.atan2(dy, math.hypot(dx, dz))
    return yaw % (2 * math.pi), pitch


def _server_conf(port: int, probe: str, channel_url: str) -> str:
    """minetestserver's config: 127.0.0.1 only, a flat creative world, mod security on, HTTP for the probe alone."""
    lines = [
        f"name = {PLAYER}",
        "bind_address = 127.0.0.1",
        f"port = {port}",
        "server_announce = false",
        "creative_mode = true",
        "enable_damage = false",
        "mg_name = flat",
        "static_spawnpoint = 0,9,0",
        "default_privs = interact, shout, give, teleport, settime, fly, fast, debug",
        # Mod security on (the default, stated so): the repo's Lua cannot reach files, processes or the
        # network; only our probe, under its random name, gets the HTTP API, and no mod is trusted.
        "secure.enable_security = true",
        "secure.trusted_mods =",
        f"secure.http_mods = {probe}",
        f"{probe}.url = {channel_url}",
        "enable_rollback_recording = false",
        "active_block_range = 1",
        "max_block_generate_distance = 3",
    ]
    return "\n".join(lines) + "\n"


#: The client's config: small, software-rendered, quiet.
CLIENT_CONF = (
    f"screen_w = {SCREEN[0]}\nscreen_h = {SCREEN[1]}\nenable_sound = false\nenable_shaders = false\n"
    "viewing_range = 30\nenable_clouds = false\nsmooth_lighting = false\nenable_minimap = false\n"
    "menu_clouds = false\nshow_debug = false\npause_on_lost_focus = false\nfps_max = 15\n"
    "fps_max_unfocused = 15\nenable_3d_clouds = false\n"
)

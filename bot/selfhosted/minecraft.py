"""The Minecraft driver, for maintainers' own machines: the client window by xdotool, commands over RCON, and
crashes read from `crash-reports/` and `logs/latest.log` with the crash parser (agents.reading.crash).

Minecraft cannot run on the bot's machines, so this driver is tested on recorded crash reports and logs only
(../shared/fixtures/minecraft-crash). It implements agents.game.driver.GameDriver.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import struct
from importlib import resources
from pathlib import Path
from typing import Any

from agents.game import GameCrash, GameDriverError, GameState
from agents.reading import crash_signature, find_crashes, parse_crash
from bot.settings.config import Settings

#: RCON packet types (the Source RCON protocol Minecraft servers speak).
_RCON_LOGIN, _RCON_COMMAND = 3, 2


def rcon_packet(request_id: int, kind: int, body: str) -> bytes:
    """One RCON request: little-endian length, id, type, then the body and two NULs."""
    payload = struct.pack("<ii", request_id, kind) + body.encode("utf-8") + b"\x00\x00"
    return struct.pack("<i", len(payload)) + payload


def rcon_parse(data: bytes) -> tuple[int, int, str] | None:
    """(id, type, body) of one whole RCON packet at the start of `data`, or None when more bytes are needed."""
    if len(data) < 4:
        return None
    (length,) = struct.unpack("<i", data[:4])
    if len(data) < 4 + length:
        return None
    request_id, kind = struct.unpack("<ii", data[4:12])
    return request_id, kind, data[12 : 4 + length - 2].decode("utf-8", errors="replace")


def report_signature(text: str) -> dict[str, Any] | None:
    """The signature of the first Minecraft crash report or JVM log pasted in a report (the oracle's target)."""
    crashes = find_crashes(text)
    return crash_signature(crashes[0]).to_json() if crashes else None


class MinecraftDriver:
    """Drives a running Minecraft client; `game_dir` is the folder holding crash-reports/ and logs/."""

    name = "minecraft"

    def __init__(self, game_dir: Path | None, *, rcon: str | None = None, rcon_password: str | None = None) -> None:
        self.game_dir, self.rcon, self._rcon_password = game_dir, rcon, rcon_password
        self.window = ""
        self._seen_reports: set[str] = set()
        self._log_offset = 0
        self._ids = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> MinecraftDriver:
        """The driver configured by REPROBOT_MINECRAFT_* settings."""
        return cls(settings.minecraft_dir, rcon=settings.minecraft_rcon, rcon_password=settings.minecraft_rcon_password)

    def check(self) -> None:
        """Raise GameDriverError (one line) when there is no game folder to drive here."""
        self._require_game()

    def _require_game(self) -> Path:
        if self.game_dir is None or not self.game_dir.is_dir():
            raise GameDriverError(
                "no Minecraft on this machine: set REPROBOT_MINECRAFT_DIR to the game folder "
                "(crash-reports/, logs/latest.log) and start the game"
            )
        return self.game_dir

    async def start(self) -> None:
        """Attach to the open game window; crashes and log lines from before now do not count."""
        game = self._require_game()
        self.mark()
        if shutil.which("xdotool") is None:
            raise GameDriverError("the Minecraft driver needs xdotool to reach the game window")
        out = await self._xdo("search", "--name", "^Minecraft")
        if not out.split():
            raise GameDriverError(f"no Minecraft window is open (the game folder is {game})")
        self.window = out.split()[0]

    def mark(self) -> None:
        """Remember the crash reports and the log length now: only what comes after is the run's."""
        game = self._require_game()
        self._seen_reports = {p.name for p in (game / "crash-reports").glob("*.txt")}
        latest = game / "logs" / "latest.log"
        self._log_offset = latest.stat().st_size if latest.exists() else 0

    async def stop(self) -> None:
        """Nothing to stop: the maintainer's game keeps running."""

    async def _xdo(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            "xdotool", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        out, _ = await proc.communicate()
        return out.decode(errors="replace")

    async def act(self, action: dict[str, Any]) -> None:
        """One macro on the game window; `command` goes over RCON when a server is configured."""
        kind = action["action"]
        if kind == "wait":
            await asyncio.sleep(float(action["seconds"]))
        elif kind == "command" and self.rcon:
            await self.rcon_command(str(action["text"]).lstrip("/"))
        elif kind == "command":
            await self._xdo("windowfocus", self.window)
            await self._xdo("key", "t")
            await asyncio.sleep(0.3)
            await self._xdo("type", "--delay", "20", str(action["text"]))
            await self._xdo("key", "Return")
        elif kind == "press":
            await self._xdo("key", str(action["key"]))
        elif kind == "write":
            await self._xdo("type", "--delay", "20", str(action["text"]))
        elif kind == "click":
            await self._xdo("click", "1" if action["button"] == "left" else "3")
        elif kind == "look":
            # Minecraft has no look API: turn by mouse motion (about 8 pixels a degree at default sensitivity).
            await self._xdo("mousemove_relative", "--", str(int(float(action["yaw"]) * 460)), "0")

    async def rcon_command(self, command: str) -> str:
        """Run one server command over RCON and return its reply."""
        if not self.rcon:
            raise GameDriverError("no RCON configured (REPROBOT_MINECRAFT_RCON)")
        host, _, port = self.rcon.rpartition(":")
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)
        except (OSError, TimeoutError) as exc:
            raise GameDriverError(f"RCON at {self.rcon} is not reachable: {exc}") from None
        reply = ""
        try:
            for kind, body in ((_RCON_LOGIN, self._rcon_password or ""), (_RCON_COMMAND, command)):
                self._ids += 1
                writer.write(rcon_packet(self._ids, kind, body))
                await writer.drain()
                data = b""
                while (packet := rcon_parse(data)) is None:
                    chunk = await asyncio.wait_for(reader.read(4096), 10)
                    if not chunk:
                        raise GameDriverError("RCON closed the connection")
                    data += chunk
                if packet[0] == -1:
                    raise GameDriverError("RCON refused the password")
                reply = packet[2]
            return reply
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _new_log(self) -> str:
        latest = self._require_game() / "logs" / "latest.log"
        try:
            with latest.open("rb") as fh:
                fh.seek(self._log_offset)
                return fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    async def state(self) -> GameState:
        """Chat and log tail from latest.log (Minecraft exposes no position or inventory to us)."""
        lines = (await asyncio.to_thread(self._new_log)).splitlines()
        return GameState(chat=[ln for ln in lines if "[CHAT]" in ln][-20:], log_tail=lines[-20:])

    async def screenshot(self, path: Path) -> bool:
        """A grab of the screen the game is on."""
        from PIL import ImageGrab

        try:
            image = await asyncio.to_thread(ImageGrab.grab)
        except OSError:
            return False
        await asyncio.to_thread(image.save, path)
        return True

    async def crashes(self) -> list[GameCrash]:
        """New crash reports in crash-reports/, then crashes printed into latest.log, with their signatures."""
        return await asyncio.to_thread(self._crashes)

    def _crashes(self) -> list[GameCrash]:
        game = self._require_game()
        found: list[GameCrash] = []
        for report in sorted((game / "crash-reports").glob("*.txt")):
            if report.name in self._seen_reports:
                continue
            text = report.read_text(errors="replace")
            crash = parse_crash(text)
            if crash is not None:
                found.append(GameCrash("crash_report", crash.exception_type, crash_signature(crash).to_json(), text))
        for crash in find_crashes(self._new_log()):
            found.append(GameCrash("log_error", crash.exception_type, crash_signature(crash).to_json()))
        return found

    async def knowledge(self) -> dict[str, Any]:
        """Minecraft's commands and common items, shipped as data (the game cannot dump them for us)."""
        data = resources.files("bot.selfhosted") / "data" / "minecraft_knowledge.json"
        return dict(json.loads(data.read_text()))

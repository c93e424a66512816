"""The GameDriver protocol: start a session from a world template, macro actions, observation, crash signals."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

#: The macro actions an action model may emit, with the argument each needs.
MACROS: dict[str, tuple[str, ...]] = {
    "press": ("key",),
    "write": ("text",),
    "command": ("text",),
    "click": ("button",),
    "look": ("yaw", "pitch"),
    "wait": ("seconds",),
}


class GameDriverError(Exception):
    """The game cannot be started or driven (missing binary, no display, the client never joined)."""


def validate_macro(action: object) -> dict[str, Any]:
    """The action if it is a well-formed macro; ValueError says what is wrong (the action model filters on it)."""
    if not isinstance(action, dict):
        raise ValueError(f"a macro action is an object, not {type(action).__name__}")
    kind = action.get("action")
    if kind not in MACROS:
        raise ValueError(f"unknown macro {kind!r} (one of {', '.join(MACROS)})")
    missing = [arg for arg in MACROS[str(kind)] if action.get(arg) in (None, "")]
    if missing:
        raise ValueError(f"macro {kind} needs {', '.join(missing)}")
    if kind == "click" and action.get("button") not in ("left", "right"):
        raise ValueError("click's button is left or right")
    if kind in ("wait", "press"):
        seconds = action.get("seconds") or 0
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float, str)):
            raise ValueError(f"{kind} seconds must be a number")
        try:
            seconds = float(seconds)
        except ValueError:
            raise ValueError(f"{kind} seconds must be a number") from None
        if not 0 <= seconds <= 30:
            raise ValueError(f"{kind} lasts 0-30 seconds")
    return dict(action)


@dataclass(frozen=True)
class GameCrash:
    """A crash signal: the process exited, a crash report was written, or an error appeared in the log."""

    kind: str  # "server_exit" | "crash_report" | "log_error"
    message: str
    #: {"exception_type": ..., "frames": [...]}: compared with the report's crash by the oracle.
    signature: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        """The crash as JSON (text trimmed)."""
        return {"kind": self.kind, "message": self.message, "signature": self.signature, "text": self.text[-4000:]}


@dataclass
class GameState:
    """Structured state the game exposes next to the screenshot."""

    position: tuple[float, float, float] | None = None
    yaw: float = 0.0
    pitch: float = 0.0
    wielded: str = ""
    #: Hotbar/main slot (1-based) -> item string.
    inventory: dict[int, str] = field(default_factory=dict)
    pointed: dict[str, Any] = field(default_factory=dict)
    chat: list[str] = field(default_factory=list)
    #: Entities near the player: {"name": ..., "pos": (x, y, z)}.
    nearby: list[dict[str, Any]] = field(default_factory=list)
    eye_height: float = 1.5
    log_tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The state as JSON (what an action model sees)."""
        return {
            "position": list(self.position) if self.position else None,
            "yaw": round(self.yaw, 3),
            "pitch": round(self.pitch, 3),
            "wielded": self.wielded,
            "inventory": {str(k): v for k, v in self.inventory.items()},
            "pointed": self.pointed,
            "chat": self.chat[-10:],
            "nearby": self.nearby,
            "log_tail": self.log_tail[-10:],
        }


class GameDriver(Protocol):
    """What the game reproduction agent needs from a game: a session, macros, observation and crash signals."""

    name: str

    async def start(self) -> None:
        """Start a session in a fresh world made from the template, with the player joined."""

    async def stop(self) -> None:
        """Stop the client and server and release everything the session started."""

    async def act(self, action: dict[str, Any]) -> None:
        """Perform one validated macro action (see MACROS)."""

    async def state(self) -> GameState:
        """The structured state now (empty when the game is gone)."""
        ...

    async def screenshot(self, path: Path) -> bool:
        """Write a PNG of the game window to `path`; False when there is no window any more."""
        ...

    async def crashes(self) -> list[GameCrash]:
        """The crash signals seen since the session started."""
        ...

    async def knowledge(self) -> dict[str, Any]:
        """The game's registered nodes, items, tools and chat commands, with its version."""
        ...

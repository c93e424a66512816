"""The Driver protocol every UI driver implements (web, Android), and the values it trades in."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

#: Actions a step or a JSON action may name. `click` covers tap, `long_click` long tap, `resize` rotation,
#: `key` a key press (Enter, Escape) with the key as input; `navigate` goes to a page of the app (its target the
#: page's name, "" for the app's first page; in an action log its input is the path on the app's origin).
ACTIONS = ("click", "long_click", "input", "key", "scroll", "back", "resize", "restart", "navigate")


class DriverError(Exception):
    """The driver cannot do what it was asked (no device, the browser is gone, an element vanished)."""


@dataclass(frozen=True)
class Element:
    """One interactive element of the current screen, as the agent sees it."""

    role: str
    text: str = ""
    label: str = ""
    id: str = ""
    #: x, y, width, height in screen pixels.
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: How the driver finds it again: a CSS path on the web, a node locator on Android.
    locator: str = ""
    #: The input's current value; it is not part of the state's identity (typing is not a new screen).
    editable: bool = False
    #: A link's absolute address (web): exploration and navigation follow only the app's own.
    href: str = ""
    #: The part of the page it sits in: its column's header, its group's heading or label ("Price", "Shipping").
    context: str = ""
    #: It opens something that holds more controls (a menu button, a disclosure, a native dropdown).
    popup: bool = False
    #: The page shows it only while the pointer is over it or its row (web): the pointer goes there first.
    hover: bool = False

    def describe(self) -> str:
        """A short human description: role and the first name it has."""
        name = self.text or self.label or self.id or self.locator
        return f"{self.role} {name!r}"

    def to_json(self) -> dict[str, object]:
        """The element as JSON (bounds as a list)."""
        data = asdict(self)
        data["bounds"] = list(self.bounds)
        return data


@dataclass(frozen=True)
class Signal:
    """Something the app reported that may be the bug: an error, a failed request, a crash."""

    kind: str  # page_error | console_error | http_5xx | crash | anr
    message: str
    detail: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The signal as JSON."""
        return {"kind": self.kind, "message": self.message, **({"detail": self.detail} if self.detail else {})}


def state_hash(elements: list[Element]) -> str:
    """The identity of a screen: a hash of its normalized element list.

    Positions and typed values are left out on purpose: a layout shift or a half-filled form is the same screen.
    """
    norm = sorted(json.dumps([e.role, " ".join(e.text.lower().split())[:80], e.label.lower(), e.id]) for e in elements)
    return hashlib.sha256("\n".join(norm).encode()).hexdigest()[:16]


class Driver(Protocol):
    """What the reproduction agent needs from a UI: observe, act, screenshot, signals."""

    name: str

    async def start(self) -> None:
        """Open the app on its first screen."""

    async def restart(self) -> None:
        """Start the app again from a clean state (new session, no cookies or storage)."""

    async def observe(self) -> list[Element]:
        """The interactive elements of the current screen, in document/reading order."""
        ...

    async def visible_text(self) -> str:
        """All text the user can see on the current screen."""
        ...

    async def act(self, action: dict[str, object], element: Element | None) -> None:
        """Perform one action (see ACTIONS); `element` is its resolved target, None for targetless actions."""

    async def screenshot(self, path: Path) -> None:
        """Write a PNG of the current screen to `path`."""

    def drain_signals(self) -> list[Signal]:
        """The signals collected since the last call (errors, failed requests, crashes)."""
        ...

    async def app_version(self) -> str:
        """An identifier of the app build under test (the UTG cache key)."""
        ...

    def blocked_requests(self) -> list[str]:
        """The addresses the driver kept the app from reaching (other hosts than the app's), in order."""
        ...

    async def close(self) -> None:
        """Release the browser or device session."""

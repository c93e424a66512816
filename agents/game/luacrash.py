"""Minetest's Lua crash reports (debug.txt, or pasted into a report): a pure parser and their signatures.

A server-side mod error stops the server with lines like::

    ERROR[Main]: ServerError: AsyncErr: Lua: Runtime error from mod 'mymod' in callback item_OnPlace(): \
/path/mods/mymod/init.lua:12: attempt to index a nil value (local 'meta')
    ERROR[Main]: stack traceback:
    ERROR[Main]:     [C]: in function 'error'
    ERROR[Main]:     /path/mods/mymod/init.lua:12: in function 'helper'

The signature is the shape `agents.reading.crash` gives JVM crashes (an exception type plus the top own frames, no line
numbers), so a crash seen in a run can be compared with the one the player pasted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_PREFIX = re.compile(r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: )?(?:ERROR|WARNING|ACTION)\[\w+\]: ?")
_RUNTIME = re.compile(
    r"Runtime error from mod '(?P<mod>[^']*)' in callback (?P<callback>[\w.]+)\(\):\s*(?P<message>.*)$"
)
_OTHER = re.compile(r"(?:Failed to load and run script from \S+|LuaError|Lua error)[:\s]*(?P<message>.*)$")
_LOCATION = re.compile(r"^(?P<file>\S+?\.lua):(?P<line>\d+): ?(?P<rest>.*)$")
_FRAME = re.compile(r"^\s*(?P<file>\S+?\.lua|\[C\]):(?:(?P<line>\d+):)? in (?P<what>.+)$")
_FUNC = re.compile(r"function '(?P<name>[^']+)'|function <[^>]*>|(?P<chunk>main chunk)|(?P<upvalue>upvalue '[^']+')")
_BUILTIN = ("builtin:", "[C]")
#: How many own frames make a signature.
FRAMES = 2


@dataclass(frozen=True)
class LuaCrash:
    """One Lua error: the mod and callback it broke in, the message, the traceback's frames."""

    message: str
    mod: str = ""
    callback: str = ""
    location: str = ""
    frames: tuple[str, ...] = field(default_factory=tuple)

    def signature(self) -> dict[str, Any]:
        """Exception type (the message without paths and line numbers) and the top own frames."""
        own = [f for f in self.frames if not f.startswith(_BUILTIN)]
        frames = [self.location] if self.location else []
        frames += [f for f in own if f != self.location]
        return {"exception_type": f"LuaError: {_normalize(self.message)}", "frames": frames[:FRAMES]}


def _short_file(path: str) -> str:
    """`mods/mymod/init.lua` of a full path: the mod folder and file name stay, the machine's prefix goes."""
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def _normalize(message: str) -> str:
    message = _LOCATION.sub(lambda m: m["rest"], message.strip())
    message = re.sub(r"\b0x[0-9a-f]+\b", "0x?", message)
    return " ".join(message.split())


def _frame(line: str) -> str | None:
    m = _FRAME.match(line)
    if not m:
        return None
    file = m["file"]
    if file == "[C]" or "builtin/" in file:
        return "builtin:" if file != "[C]" else "[C]"
    f = _FUNC.search(m["what"])
    name = (f["name"] or ("main" if f["chunk"] else "?")) if f else "?"
    return f"{_short_file(file)}:{name}"


def parse_lua_crashes(text: str) -> list[LuaCrash]:
    """Every Lua runtime error in a log or a pasted report, with the traceback that follows it."""
    lines = [_PREFIX.sub("", raw.rstrip()) for raw in text.replace("\r\n", "\n").split("\n")]
    crashes: list[LuaCrash] = []
    i = 0
    while i < len(lines):
        m = (_RUNTIME.search(lines[i]) or _OTHER.search(lines[i])) if ".lua:" in lines[i] else None
        if m is None:
            i += 1
            continue
        message = m["message"]
        loc = _LOCATION.match(message.strip())
        location = f"{_short_file(loc['file'])}" if loc else ""
        frames: list[str] = []
        i += 1
        if i < len(lines) and lines[i].strip() == "stack traceback:":
            i += 1
            while i < len(lines) and (frame := _frame(lines[i])) is not None:
                frames.append(frame)
                i += 1
        if location:
            # The error's own frame: the first traceback frame in the erring file, else the file alone.
            location = next((f for f in frames if f.startswith(location + ":")), location)
        groups = m.groupdict()
        crashes.append(
            LuaCrash(message.strip(), groups.get("mod") or "", groups.get("callback") or "", location, tuple(frames))
        )
    return crashes


def same_signature(seen: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """The seen crash matches the wanted one: the same type, and the wanted frames lead the seen ones."""
    if seen.get("exception_type") != wanted.get("exception_type"):
        return False
    want = list(wanted.get("frames") or [])
    have = list(seen.get("frames") or [])
    return have[: len(want)] == want

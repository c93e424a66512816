"""Minecraft crash reports and JVM fatal-error logs (hs_err): a pure parser, crash signatures, and finding them.

No I/O here: callers hand in text. Two formats are understood:

- the game's own crash report (``---- Minecraft Crash Report ----``): a Java exception with its ``at`` frames,
  then ``-- Section --`` blocks of ``Key: value`` details (``System Details`` has the version, the side in
  ``Type``, and ``Is Modded``);
- HotSpot's fatal-error log (``# A fatal error has been detected by the Java Runtime Environment:``): the
  signal/exception line, ``# Problematic frame:``, the ``Native frames:`` and ``Java frames:`` blocks of
  one-letter-typed frames, and ``java_command:`` with the launcher's ``--version``.

The field names of `to_json` are those of mc-crash-lib's JSON (the ground truth in the fixtures).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CrashSignature",
    "JvmCrash",
    "JvmFrame",
    "MinecraftCrash",
    "crash_signature",
    "find_crashes",
    "group_by_signature",
    "parse_crash",
]

MINECRAFT_HEADER = "---- Minecraft Crash Report ----"
JVM_HEADER = "# A fatal error has been detected by the Java Runtime Environment:"
_WALKTHROUGH = "A detailed walkthrough of the error"
_SECTION = re.compile(r"^-- (?P<name>.+?) --$")
#: A thrown exception's first line: a qualified class name, optionally ": message".
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?::.*)?$")
_AT_FRAME = re.compile(r"^at\s+(?P<frame>\S.*)$")
_THROWABLE_SUFFIXES = ("Exception", "Error", "Throwable")
#: Side of a crash report: `Type: Client (map_client.txt)` or `Type: Dedicated Server (map_server.txt)`.
_CLIENT_MAPPING = "map_client.txt"
#: `Is Modded:` values that do NOT mean modded (anything else, e.g. "Definitely; ...", does).
_NOT_MODDED = ("probably not", "unknown")
#: Launch arguments or classes that only modded game launches carry (HotSpot logs say nothing else about it).
_MODDED_LAUNCH_MARKERS = (
    "optifine.OptiFineTweaker",
    "net.fabricmc.loader.",
    "--version fabric-loader-",
    "cpw.mods.",
    "net.minecraftforge.",
    "--fml.",
    "--launchTarget forge",
    "--launchTarget fml",
    "org.quiltmc.loader.",
)
_JAVA_FRAMES_MARKER = re.compile(r"^Java frames: \(")
_NATIVE_FRAMES_MARKER = re.compile(r"^Native frames: \(")
_C_FRAME = re.compile(r"^\[(?P<lib>.+)\+(?P<off>[^\]]+)\](?:  (?P<fn>.+)\+(?P<foff>.+))?$")
_VERSION_ARG = re.compile(r"\s--version\s+(\S+)")


@dataclass(frozen=True)
class MinecraftCrash:
    """A game crash report: the exception (first line + `at` frames), version, side, and whether it was modded."""

    exception: str
    minecraft_version: str | None
    is_client: bool
    modded: bool
    was_level_opened_modded: bool | None = None
    description: str | None = None

    @property
    def exception_type(self) -> str:
        """The exception's class name (before any `: message`)."""
        return self.exception.split("\n", 1)[0].split(":", 1)[0].strip()

    @property
    def frames(self) -> list[str]:
        """The exception's frames, innermost first, without `at `."""
        return [m.group("frame") for line in self.exception.split("\n")[1:] if (m := _AT_FRAME.match(line))]

    def to_json(self) -> dict[str, Any]:
        """mc-crash-lib's field names."""
        return {
            "kind": "minecraft",
            "modded": self.modded,
            "wasLevelOpenedModded": self.was_level_opened_modded,
            "exception": self.exception,
            "minecraftVersion": self.minecraft_version,
            "isClient": self.is_client,
            "deobf": None,
            "deobfException": None,
        }


@dataclass(frozen=True)
class JvmFrame:
    """One frame of a HotSpot log: its type letter (J j V v C ...) and location; C frames are split further."""

    kind: str
    location: str
    library_name: str | None = None
    library_offset: str | None = None
    function_name: str | None = None
    function_offset: str | None = None

    def to_json(self) -> dict[str, Any]:
        """mc-crash-lib's field names; only native (C) frames carry the library and function parts."""
        if self.kind == "?":
            return {"value": self.location}
        data: dict[str, Any] = {"location": self.location}
        if self.kind == "C":
            data |= {
                "libraryName": self.library_name,
                "libraryOffset": self.library_offset,
                "functionName": self.function_name,
                "functionOffset": self.function_offset,
            }
        return data


@dataclass(frozen=True)
class JvmCrash:
    """A HotSpot fatal-error log: the error line, the problematic frame, native and Java frames, version, mods."""

    exception: str | None
    problematic_frame: JvmFrame | None
    native_frames: list[JvmFrame] | None
    java_frames: list[JvmFrame] | None
    minecraft_version: str | None
    is_modded: bool

    @property
    def exception_type(self) -> str:
        """The error's name, e.g. EXCEPTION_ACCESS_VIOLATION or SIGSEGV (first word of the error line)."""
        return (self.exception or "unknown").split(" ", 1)[0]

    def to_json(self) -> dict[str, Any]:
        """mc-crash-lib's field names."""

        def frames(items: list[JvmFrame] | None) -> list[dict[str, Any]] | None:
            return None if items is None else [f.to_json() for f in items]

        return {
            "kind": "jvm",
            "exception": self.exception,
            "problematicFrame": self.problematic_frame.to_json() if self.problematic_frame else None,
            "nativeFrames": frames(self.native_frames),
            "javaFrames": frames(self.java_frames),
            "minecraftVersion": self.minecraft_version,
            "isModded": self.is_modded,
        }


Crash = MinecraftCrash | JvmCrash


def parse_crash(text: str) -> Crash | None:
    """Parse a crash report or HotSpot log; None when the text is neither (or has no exception to speak of)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if any(MINECRAFT_HEADER in line for line in lines):
        return _parse_minecraft(_strip_line_prefixes(lines, MINECRAFT_HEADER))
    if any(JVM_HEADER in line for line in lines):
        return _parse_jvm(_strip_line_prefixes(lines, JVM_HEADER))
    return None


# --- the game's crash report -------------------------------------------------------------------------------


def _sections(lines: Sequence[str]) -> dict[str, list[str]]:
    """Lines by section: "" is what precedes the first section; the report's head is "Minecraft Crash Report"."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    name = ""
    for raw in lines:
        line = raw.strip()
        if line.startswith("--") and line.endswith("--") and len(line) > 4 and line.strip("-").strip():
            sections.setdefault(name, []).extend(current)
            current = []
            name = line.strip("-").strip()
        else:
            current.append(line)
    sections.setdefault(name, []).extend(current)
    return sections


def _details(lines: Iterable[str]) -> dict[str, str]:
    """`Key: value` lines of a section (first occurrence wins; continuation lines are ignored)."""
    details: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(("at ", "\t")):
            details.setdefault(key.strip(), value.strip())
    return details


def _exception(lines: Sequence[str]) -> str | None:
    """The thrown exception: its first line (a class name, maybe `: message`) and what follows up to a blank line.

    The first such block with `at` frames wins; without one, the first line naming a Throwable by its usual
    name (an exception thrown before any frame was recorded, e.g. an OutOfMemoryError).
    """
    blocks: list[list[str]] = []
    for i, line in enumerate(lines):
        if not _EXCEPTION_LINE.match(line):
            continue
        block: list[str] = []
        for nxt in lines[i:]:
            if not nxt.strip():
                break
            block.append(nxt.strip())
        if any(_AT_FRAME.match(b) for b in block[1:]):
            return "\n".join(block)
        blocks.append(block)
    for block in blocks:
        name = block[0].split(":", 1)[0]
        if name.endswith(_THROWABLE_SUFFIXES) or name.startswith(("java.", "javax.", "org.lwjgl.")):
            return "\n".join(block)
    return None


def _parse_minecraft(lines: Sequence[str]) -> MinecraftCrash | None:
    sections = _sections(lines)
    head = sections.get("Minecraft Crash Report")
    if head is None:
        return None
    # The exception sits in the head, before the walkthrough; a report cut after the head still has it.
    cut = next((i for i, line in enumerate(head) if line.startswith(_WALKTHROUGH)), len(head))
    exception = _exception(head[:cut]) or _exception(head)
    if exception is None:
        return None
    system = _details(sections.get("System Details", []))
    level = _details(sections.get("Affected level", []))
    version = system.get("Minecraft Version ID") or system.get("Minecraft Version") or None
    side = system.get("Type", f"Client ({_CLIENT_MAPPING})")
    modded_text = system.get("Is Modded")
    game_modded = modded_text is not None and not any(word in modded_text.lower() for word in _NOT_MODDED)
    # Whether the level was ever opened modded is its own fact: the game itself may be vanilla now.
    level_modded = {"true": True, "false": False}.get((level.get("Level was modded") or "").lower())
    description = _details(head[:cut]).get("Description")
    return MinecraftCrash(
        exception=exception,
        minecraft_version=version,
        is_client=_CLIENT_MAPPING in side,
        modded=game_modded,
        was_level_opened_modded=level_modded,
        description=description,
    )


# --- HotSpot's fatal-error log -----------------------------------------------------------------------------


def _strip_line_prefixes(lines: Sequence[str], header: str) -> list[str]:
    """Drop the prefix a console or launcher put before every line (`Client> `, `[12:00:01] [main/INFO]: `).

    The prefix is what precedes the header on its line; its digits may differ from line to line (timestamps).
    """
    header_line = next(line for line in lines if header in line)
    prefix = header_line[: header_line.index(header)]
    if not prefix.strip():
        return list(lines)
    pattern = re.compile(re.sub(r"\d+", r"\\d+", re.escape(prefix.rstrip())) + r"[ \t]?")
    return [pattern.sub("", line, count=1) if pattern.match(line) else line for line in lines]


def _parse_frame(line: str) -> JvmFrame:
    if len(line) >= 2 and line[1] == " ":
        kind, location = line[0], line[2:].strip()
        if kind == "C":
            m = _C_FRAME.match(location)
            if m:
                return JvmFrame("C", location, m["lib"], m["off"], m["fn"], m["foff"])
            return JvmFrame("C", location)
        if kind in "JjVv":
            return JvmFrame(kind, location)
    return JvmFrame("?", line)  # another type letter (A: AOT code, ...) or none: kept whole


def _frame_block(lines: Sequence[str], marker: re.Pattern[str]) -> list[JvmFrame] | None:
    start = next((i for i, line in enumerate(lines) if marker.match(line)), None)
    if start is None:
        return None
    frames: list[JvmFrame] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        frames.append(_parse_frame(line))
    return frames


def _parse_jvm(raw: Sequence[str]) -> JvmCrash:
    lines = [line.strip() for line in raw]
    header = lines.index(JVM_HEADER)
    exception = None
    # The error line follows the first lone "#" after the header: "#  SIGSEGV (0xb) at pc=...".
    for i in range(header + 1, len(lines) - 1):
        if lines[i] == "#":
            nxt = raw[i + 1].rstrip()
            exception = nxt[3:] if nxt.startswith("#  ") else None
            break
    problematic = None
    if "# Problematic frame:" in lines:
        at = lines.index("# Problematic frame:") + 1
        if at < len(lines) and lines[at].startswith("# "):
            problematic = _parse_frame(lines[at][2:])
    command = next((line.removeprefix("java_command: ") for line in lines if line.startswith("java_command: ")), "")
    version = m.group(1) if (m := _VERSION_ARG.search(command + " ")) else None
    modded = any(marker in line for line in lines for marker in _MODDED_LAUNCH_MARKERS)
    return JvmCrash(
        exception=exception,
        problematic_frame=problematic,
        native_frames=_frame_block(lines, _NATIVE_FRAMES_MARKER),
        java_frames=_frame_block(lines, _JAVA_FRAMES_MARKER),
        minecraft_version=version,
        is_modded=modded,
    )


# --- signatures --------------------------------------------------------------------------------------------

#: Frames of the JDK and of common libraries: where a crash surfaces, not what caused it.
LIBRARY_PREFIXES = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "kotlin.",
    "scala.",
    "org.lwjgl.",
    "com.mojang.blaze3d.platform.GLX",
    "com.google.",
    "io.netty.",
    "it.unimi.",
    "org.apache.",
    "com.mojang.datafixers.",
    "com.mojang.serialization.",
    "com.mojang.brigadier.",
    "~StubRoutines",
)
#: How many non-library frames make a signature.
SIGNATURE_FRAMES = 3
_FRAME_METHOD = re.compile(r"^(?P<method>[^(\s]+)")


@dataclass(frozen=True)
class CrashSignature:
    """Exception type plus the top non-library frames (methods only, no line numbers): what groups crashes."""

    exception_type: str
    frames: tuple[str, ...]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        text = "\n".join((self.exception_type, *self.frames))
        object.__setattr__(self, "key", hashlib.sha256(text.encode()).hexdigest()[:16])

    def to_json(self) -> dict[str, Any]:
        """The signature as JSON: its key, the exception type and the frames."""
        return {"key": self.key, "exception_type": self.exception_type, "frames": list(self.frames)}


#: Java 9+ prefixes a frame with its class loader and module: `app//`, `java.base@17/`.
_MODULE_PREFIX = re.compile(r"^[\w.$@-]*/+")
#: A deobfuscated frame names the return type before the method: `a.b.C.ReturnType name(args)(File.java:1)`.
_DEOBF_FRAME = re.compile(r"^(?P<owner>(?:[a-z_]\w*\.)*[A-Z][\w$]*)\.[\w$.\[\]]+ (?P<name>[\w$<>]+)\(")


def _method(frame: str) -> str:
    """A frame without its line number, source file or bytecode offset: `a.b.C.m` of `a.b.C.m(File.java:12)`."""
    frame = _MODULE_PREFIX.sub("", frame.strip())
    if deobf := _DEOBF_FRAME.match(frame):
        return f"{deobf['owner']}.{deobf['name']}"
    m = _FRAME_METHOD.match(frame)
    return m.group("method") if m else frame


#: The method of a HotSpot Java frame, after the compile id and tier of a compiled frame (`J 1234 c2 a.B.m(I)V ...`).
_JVM_METHOD = re.compile(r"([\w$./<>]+)\(")


def _jvm_method(location: str) -> str:
    m = _JVM_METHOD.search(location)
    return _method(m.group(1)) if m else location.strip()


def crash_signature(crash: Crash, *, depth: int = SIGNATURE_FRAMES) -> CrashSignature:
    """The crash's signature; library frames are skipped, unless the stack has nothing else (then it is kept)."""
    if isinstance(crash, MinecraftCrash):
        lines = crash.exception.split("\n")
        # A chained exception ("Caused by: X") is usually the real one: sign the innermost cause and its frames.
        cause_at = max((i for i, line in enumerate(lines) if line.startswith("Caused by: ")), default=None)
        if cause_at is None:
            exception_type, tail = crash.exception_type, lines[1:]
        else:
            exception_type, tail = lines[cause_at][11:].split(":", 1)[0].strip(), lines[cause_at + 1 :]
        frames = [_method(m.group("frame")) for line in tail if (m := _AT_FRAME.match(line))]
    else:
        frames = [_jvm_method(f.location) for f in (crash.java_frames or []) if f.kind != "?"]
        if crash.problematic_frame is not None:
            pf = crash.problematic_frame
            native = pf.library_name or pf.location
            frames = [native, *frames] if pf.kind == "C" else [_method(pf.location), *frames]
        exception_type = crash.exception_type
    own = [f for f in frames if not f.startswith(LIBRARY_PREFIXES)]
    chosen = (own or frames)[:depth]
    return CrashSignature(exception_type, tuple(chosen))


def group_by_signature(crashes: Mapping[str, Crash]) -> dict[str, list[str]]:
    """Ids of the crashes (id -> crash) by signature key; a key with two or more ids flags likely duplicates."""
    groups: dict[str, list[str]] = {}
    for ident, crash in crashes.items():
        groups.setdefault(crash_signature(crash).key, []).append(ident)
    return groups


# --- finding crashes in issue text -------------------------------------------------------------------------

_FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
_JIRA_BLOCK = re.compile(r"\{(code|noformat)(?::[^}]*)?\}(.*?)\{\1\}", re.S)


def find_crashes(text: str) -> list[Crash]:
    """Every crash report or HotSpot log pasted into text (markdown fences, Jira {code} blocks, or bare)."""
    text = text.replace("\r\n", "\n")
    chunks = [m.group(2) for m in _FENCE.finditer(text)] + [m.group(2) for m in _JIRA_BLOCK.finditer(text)]
    rest = _JIRA_BLOCK.sub("", _FENCE.sub("", text))
    chunks.append(rest)
    found: list[Crash] = []
    for chunk in chunks:
        for piece in _split_reports(chunk):
            crash = parse_crash(piece)
            if crash is not None:
                found.append(crash)
    return found


def _split_reports(chunk: str) -> list[str]:
    """Split text that holds several reports at their headers (one piece per report)."""
    starts = sorted(
        {m.start() for m in re.finditer(re.escape(MINECRAFT_HEADER), chunk)}
        | {_line_start(chunk, m.start()) for m in re.finditer(re.escape(JVM_HEADER), chunk)}
    )
    if not starts:
        return []
    return [chunk[a:b] for a, b in zip(starts, [*starts[1:], len(chunk)], strict=True)]


def _line_start(text: str, index: int) -> int:
    # A HotSpot header is preceded by a "#" line that belongs to the same report.
    start = text.rfind("\n", 0, index) + 1
    prev = text.rfind("\n", 0, max(0, start - 1)) + 1
    return prev if text[prev:start].strip().endswith("#") else start

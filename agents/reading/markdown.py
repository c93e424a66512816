"""Markdown structure of a bug report (cleaned first by sandboxes.text): fences, inline code, REPL, tracebacks."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, overload

BlockKind = Literal["python", "repl", "console", "traceback", "output"]

_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*?)\s*$")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_REPL_PROMPT = re.compile(r"^(?P<indent>\s*)(?:>>>|In \[\d*\]:)(?: |$)(?P<code>.*)$")
_REPL_CONT = re.compile(r"^\s*(?:\.\.\.|\.{3,}:)(?: |$)(?P<code>.*)$")
_IPY_OUT = re.compile(r"^Out\[\d*\]: ?")
_TB_START = re.compile(r"^(?P<indent>\s*)(?:\^C)?Traceback \(most recent call last\):\s*$")
_TB_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$')
_TB_REPEAT = re.compile(r"^\s*\[Previous line repeated (?P<n>\d+) more times?\]\s*$")
_TB_MARKERS = re.compile(r"^\s*[\^~\s]+$")
_TB_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
_CONSOLE_PROMPT = re.compile(r"^\s*(?:\$|%|PS [^>]*>|[A-Za-z]:\\[^>]*>|\(\w[\w.-]*\)\s*\$)\s+\S")
_PY_LANGS = frozenset({"python", "py", "python3", "py3", "ipython", "python2"})
_REPL_LANGS = frozenset({"pycon", "pyrepl", "python-repl"})
_TB_LANGS = frozenset({"pytb", "py3tb", "traceback"})
_OUTPUT_LANGS = frozenset({"text", "txt", "output", "plain", "plaintext", "log", "none"})
_CONSOLE_LANGS = frozenset({"console", "shell", "sh", "bash", "zsh", "shell-session", "terminal", "cmd"})


@dataclass(frozen=True)
class CodeBlock:
    """One fenced (or indented) code block: its language tag, text and what it looks like."""

    language: str
    code: str
    kind: BlockKind


@dataclass(frozen=True)
class ReplStep:
    """One `>>>` statement (continuation lines joined) and the text the interpreter printed after it."""

    source: str
    output: str


@dataclass(frozen=True)
class ReplSession:
    """Consecutive REPL steps from one block or paragraph."""

    steps: tuple[ReplStep, ...]


@dataclass(frozen=True)
class TracebackFrame:
    """One `File "...", line N, in f` entry, with its source line and how often Python said it repeated."""

    file: str
    line: int
    function: str
    source: str
    repeated: int = 0


@dataclass(frozen=True)
class ParsedTraceback:
    """A pasted Python traceback: frames, final exception type and message, and its raw text."""

    frames: tuple[TracebackFrame, ...]
    exc_type: str
    exc_message: str
    text: str

    @property
    def repeated(self) -> int:
        """Total "[Previous line repeated N more times]" count (deep recursion shows up here)."""
        return sum(f.repeated for f in self.frames)


@overload
def quiet_parse(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def quiet_parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...
def quiet_parse(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.Module | ast.Expression:
    """ast.parse without SyntaxWarnings: report text is full of "1st"-style tokens Python warns about."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # invalid escapes, before Python 3.12
        return ast.parse(source, mode=mode)  # type: ignore[return-value]


def quiet_literal(text: str) -> object:
    """ast.literal_eval without SyntaxWarnings; raises like it on non-literals."""
    return ast.literal_eval(quiet_parse(text.strip(), "eval"))


def strip_blockquote(line: str) -> str:
    """A quoted line ("> text") without its quote marker; REPL prompts (">>>") are left alone."""
    while re.match(r"^\s*>(?!>>)", line) and not line.lstrip().startswith(">>>"):
        line = re.sub(r"^\s*> ?", "", line, count=1)
    return line


def split_fences(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Split markdown into prose lines (each fence replaced by a placeholder line) and (language, code) pairs.

    An unterminated fence runs to the end of the text, as GitHub renders it.
    """
    lines = [strip_blockquote(line) for line in text.split("\n")]
    prose: list[str] = []
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        info = m.group("info").split()
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = lines[i].strip()
            if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                i += 1
                break
            line = lines[i]
            body.append(line[indent:] if line[:indent].isspace() else line.lstrip(" ") if indent else line)
            i += 1
        prose.append(f"\x00B{len(blocks)}\x00")
        blocks.append((info[0].lower() if info else "", "\n".join(body)))
    return _indented_blocks(prose, blocks)


def _indented_blocks(prose: list[str], blocks: list[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """Turn 4-space indented paragraphs (old-style markdown code) into blocks too."""
    out: list[str] = []
    i = 0
    while i < len(prose):
        line = prose[i]
        starts = line.startswith(("    ", "\t")) and line.strip() and (not out or not out[-1].strip())
        if not starts or re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line):
            out.append(line)
            i += 1
            continue
        body: list[str] = []
        while i < len(prose) and (prose[i].startswith(("    ", "\t")) or not prose[i].strip()):
            body.append(prose[i][4:] if prose[i].startswith("    ") else prose[i].lstrip("\t"))
            i += 1
        while body and not body[-1].strip():
            body.pop()
        out.append(f"\x00B{len(blocks)}\x00")
        blocks.append(("", "\n".join(body)))
    return out, blocks


def inline_spans(prose: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each inline code span; a span never crosses a blank line."""
    spans: list[tuple[int, int, str]] = []
    for m in _INLINE_CODE.finditer(prose):
        content = m.group(2)
        if "\n\n" in content or "\x00" in content:
            continue
        if content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        spans.append((m.start(), m.end(), content.replace("\n", " ")))
    return spans


def is_literal_text(text: str) -> bool:
    """True when text is only a Python literal (printed output, not a program)."""
    try:
        quiet_literal(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def parses_as_python(code: str) -> bool:
    """True when code is syntactically valid Python."""
    try:
        quiet_parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def classify_block(language: str, code: str) -> BlockKind:
    """What a code block holds: a program, a REPL session, a shell run, a traceback or plain output."""
    lines = [line for line in code.split("\n") if line.strip()]
    if language in _REPL_LANGS or any(_REPL_PROMPT.match(line) for line in lines):
        return "repl"
    if lines and _CONSOLE_PROMPT.match(lines[0]) and not parses_as_python(code):
        return "console"
    if language in _CONSOLE_LANGS and lines and not parses_as_python(code):
        return "console"
    if language in _TB_LANGS or any(_TB_START.match(line) for line in lines):
        return "traceback"
    if language in _OUTPUT_LANGS or not lines or is_literal_text(code):
        return "output"
    if parses_as_python(code):
        return "python"
    if language in _PY_LANGS and parses_as_python(_dedent(code)):
        return "python"
    return "output"


def _dedent(code: str) -> str:
    lines = code.split("\n")
    widths = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return "\n".join(line[cut:] for line in lines)


def parse_repl(text: str, *, fenced: bool = True) -> list[ReplSession]:
    """REPL sessions in text: `>>>`/`...` (and IPython `In [n]:`) statements with the output after each.

    In a fenced block everything up to the next prompt is output; in running prose a blank line ends it.
    """
    sessions: list[ReplSession] = []
    steps: list[ReplStep] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _REPL_PROMPT.match(lines[i])
        if not m:
            if steps and not fenced and lines[i].strip():
                sessions.append(ReplSession(tuple(steps)))
                steps = []
            i += 1
            continue
        indent = len(m.group("indent"))
        source = [m.group("code")]
        i += 1
        while i < len(lines) and (cont := _REPL_CONT.match(lines[i])):
            source.append(cont.group("code"))
            i += 1
        output: list[str] = []
        while i < len(lines) and not _REPL_PROMPT.match(lines[i]):
            if not fenced and not lines[i].strip():
                break
            line = lines[i][indent:] if lines[i][:indent].isspace() else lines[i]
            output.append(_IPY_OUT.sub("", line))
            i += 1
        while source and not source[-1].strip():
            source.pop()
        while output and not output[-1].strip():
            output.pop()
        if any(s.strip() for s in source):
            steps.append(ReplStep("\n".join(source), "\n".join(output)))
    if steps:
        sessions.append(ReplSession(tuple(steps)))
    return sessions


def parse_tracebacks(text: str) -> list[ParsedTraceback]:
    """Every `Traceback (most recent call last):` in text, in order (a chained exception gives several)."""
    lines = text.split("\n")
    found: list[ParsedTraceback] = []
    i = 0
    while i < len(lines):
        m = _TB_START.match(lines[i])
        if not m:
            i += 1
            continue
        parsed, i = _parse_one_traceback(lines, i, len(m.group("indent")))
        if parsed is not None:
            found.append(parsed)
    return found


def _parse_one_traceback(lines: Sequence[str], start: int, indent: int) -> tuple[ParsedTraceback | None, int]:
    frames: list[TracebackFrame] = []
    i = start + 1
    exc_type, exc_msg = "", ""
    while i < len(lines):
        raw = lines[i]
        line = raw[indent:] if raw[:indent].isspace() else raw.lstrip()
        frame = _TB_FRAME.match(line)
        if frame:
            source = ""
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if _is_source_line(nxt, line):
                source = nxt.strip()
                i += 1
            func = frame.group("func") or ""
            frames.append(TracebackFrame(frame.group("file"), int(frame.group("line")), func, source))
            i += 1
            continue
        rep = _TB_REPEAT.match(line)
        if rep and frames:
            last = frames[-1]
            frames[-1] = TracebackFrame(last.file, last.line, last.function, last.source, int(rep.group("n")))
            i += 1
            continue
        if not line.strip() or line.strip() in ("...", "…") or _TB_MARKERS.match(line) or line.startswith(" "):
            i += 1
            continue
        exc = _TB_EXC.match(line.strip())
        if exc and not _TB_START.match(line):
            exc_type, exc_msg = exc.group("type"), (exc.group("msg") or "").strip()
            i += 1
        break
    if not exc_type and not frames:
        return None, i
    text = "\n".join(lines[start:i])
    return ParsedTraceback(tuple(frames), exc_type, exc_msg, text), i


def _is_source_line(nxt: str, frame_line: str) -> bool:
    """The line after a frame is its source when indented deeper and not another frame or a ^~~ marker."""
    if not nxt.strip() or _TB_FRAME.match(nxt) or _TB_REPEAT.match(nxt) or _TB_MARKERS.match(nxt):
        return False
    return len(nxt) - len(nxt.lstrip()) > len(frame_line) - len(frame_line.lstrip())


def console_output(code: str) -> tuple[list[str], str]:
    """Commands (prompt lines) of a shell block and the output they printed, tracebacks removed."""
    commands: list[str] = []
    out: list[str] = []
    in_tb = False
    for line in code.split("\n"):
        if _CONSOLE_PROMPT.match(line):
            commands.append(re.sub(r"^\s*(?:\$|%|PS [^>]*>|[A-Za-z]:\\[^>]*>|\(\w[\w.-]*\)\s*\$)\s+", "", line))
            in_tb = False
            continue
        if _TB_START.match(line):
            in_tb = True
            continue
        if in_tb:
            # The traceback ends at its exception line, the first line that is not indented.
            if line and not line.startswith((" ", "\t")) and not _TB_REPEAT.match(line):
                in_tb = False
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return commands, "\n".join(out)


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """Items in order of first appearance, without repeats or empties."""
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    return tuple(seen)

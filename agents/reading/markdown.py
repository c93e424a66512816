"""Markdown structure of a bug report (cleaned first by sandboxes.text): fences, inline code, REPL, tracebacks."""

from __future__ import annotations

import ast
import builtins
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
#: A line where the user cut part of a traceback: "...", "…", "[...]", "(...)", "<snip>", "... 12 frames ...".
_ELISION = re.compile(r"^\s*(?:[\[(<]\s*)?(?:\.{3,}|…|snip(?:ped)?\b)", re.I)
#: Lines Python prints between the tracebacks of a chained exception.
_TB_CHAIN = re.compile(
    r"^\s*(?:During handling of the above exception, another exception occurred|"
    r"The above exception was the direct cause of the following exception):\s*$"
)
#: The last part of a name that reads as an exception class ("ValueError", "pkg.errors.ParseFailure" does not).
_EXC_NAME = re.compile(r"^[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Iteration)$")
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

    @property
    def raised(self) -> tuple[str, str] | None:
        """(type, message) of the exception the step raised, also from a traceback cut to `...`.

        A traceback followed by the step's echoed value did not stop the step: the code printed (logged)
        it and returned that value, as in `>>> load(x)` + a logged traceback + `[]`.
        """
        if self.logged is not None:
            return None
        return raised_exception(self.output)

    @property
    def logged(self) -> tuple[str, str] | None:
        """(type, message) of a traceback the step printed before echoing its value, else None."""
        exc = raised_exception(self.output)
        if exc is None or not _echo_after_traceback(self.source, self.output):
            return None
        return exc

    @property
    def printed(self) -> str:
        """What the step printed or echoed, tracebacks (whole or cut down) left out."""
        return without_tracebacks(self.output, headerless=True)


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


def echoed_values(code: str) -> bool:
    """True when code is a column of shown values (one repr per line), not a program that does something.

    A program made only of bare literals has no effect, so such a block is what a script printed: `'<ul>'`
    over `''`, or `OrderedDict([('a', 1)])` over `None`. A constructor-like call (`Name(literals)`) passes for
    a repr only beside another line: a lone `Point(1, 2)` may be the call the report is about.
    """
    try:
        stmts = quiet_parse(code).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if len(stmts) < 2 or not all(isinstance(s, ast.Expr) and _shown_value(s.value) for s in stmts):
        return False
    return any(not any(isinstance(n, ast.Call) for n in ast.walk(s)) for s in stmts)


def _shown_value(node: ast.expr) -> bool:
    """A literal, a name, a container of them, or a repr-like `Name(...)` call of them."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _shown_value(node.operand)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_shown_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _shown_value(k) for k in node.keys) and all(map(_shown_value, node.values))
    if isinstance(node, ast.Call):
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        return (
            callee[:1].isupper()
            and all(_shown_value(a) for a in node.args)
            and all(_shown_value(k.value) for k in node.keywords)
        )
    return False


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
    if language in _OUTPUT_LANGS or not lines or is_literal_text(code) or echoed_values(code):
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
        ipython = _IPY_TB_START.match(lines[i]) if not m else None
        if m:
            parsed, i = _parse_one_traceback(lines, i, len(m.group("indent")))
        elif ipython:
            parsed, i = _parse_ipython_traceback(lines, i, ipython.group("type"))
        else:
            i += 1
            continue
        if parsed is not None:
            found.append(parsed)
    return found


#: IPython and Jupyter print the type first: "ValueError      Traceback (most recent call last)".
_IPY_TB_START = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)\s*$")
_IPY_FRAME = re.compile(
    r"^(?:File\s+(?P<file>.+?):(?P<line>\d+)(?:,\s+in\s+(?P<func>[\w.<>]+)(?:\(.*\))?)?|Cell\s+In\s*\[\d*\],\s+line\s+"
    r"(?P<cell>\d+)|(?P<old>\S+)\s+in\s+(?P<oldfunc>[\w<>]+)\(.*\))\s*$"
)
_IPY_ARROW = re.compile(r"^-*>\s*\d+\s?(?P<source>.*)$")


def _parse_ipython_traceback(lines: Sequence[str], start: int, exc_type: str) -> tuple[ParsedTraceback | None, int]:
    """An IPython traceback: its frames ("File path:N, in f", "Cell In[2], line 1" and the "---->" source
    line under each) up to the exception line, which repeats the type the header named."""
    frames: list[TracebackFrame] = []
    i = start + 1
    while i < len(lines):
        line = lines[i].rstrip()
        frame = _IPY_FRAME.match(line)
        arrow = _IPY_ARROW.match(line.strip())
        if frame:
            file = frame.group("file") or frame.group("old") or "<ipython-input>"
            func = frame.group("func") or frame.group("oldfunc") or "<module>"
            frames.append(TracebackFrame(file, int(frame.group("line") or frame.group("cell") or 0), func, ""))
        elif arrow and frames and not frames[-1].source:
            last = frames[-1]
            frames[-1] = TracebackFrame(last.file, last.line, last.function, arrow.group("source").strip())
        elif re.match(rf"^{re.escape(exc_type)}(?::|$)", line):
            exc = _TB_EXC.match(line)
            message = (exc.group("msg") or "").strip() if exc else ""
            return ParsedTraceback(tuple(frames), exc_type, message, "\n".join(lines[start : i + 1])), i + 1
        i += 1
    return ParsedTraceback(tuple(frames), exc_type, "", "\n".join(lines[start:i])), i


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
        if not line.strip() or _ELISION.match(line) or _TB_MARKERS.match(line) or line.startswith(" "):
            # Blank lines, the user's "..." cuts, ^^^ markers and indented source lines sit between frames.
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
    runs = console_runs(code)
    out: list[str] = []
    for _, lines in runs:
        out += lines
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return [command for command, _ in runs if command is not None], "\n".join(out)


def console_runs(code: str) -> list[tuple[str | None, list[str]]]:
    """Each command of a shell block with the lines it printed, tracebacks removed (None: text before any).

    Output is split at each prompt first, so a traceback cut short cannot swallow the next command's output.
    """
    runs: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in code.split("\n"):
        if _CONSOLE_PROMPT.match(line):
            runs.append((_PROMPT_PREFIX.sub("", line), []))
        else:
            runs[-1][1].append(line)
    return [(command, _drop_tracebacks(lines)) for command, lines in runs if command is not None or lines]


_PROMPT_PREFIX = re.compile(r"^\s*(?:\$|%|PS [^>]*>|[A-Za-z]:\\[^>]*>|\(\w[\w.-]*\)\s*\$)\s+")


_CUT_LINE = re.compile(r"^\s*(?:\.{3,}|…|\[\s*(?:\.{3,}|…)\s*\]|\(\s*(?:\.{3,}|…)\s*\)|<\s*snip\w*\s*>)\s*$", re.I)


def is_elision(line: str) -> bool:
    """True for a line that is only the user's cut ("...", "…", "[...]", "<snip>") in pasted output."""
    return bool(_CUT_LINE.match(line))


def is_exception_name(name: str) -> bool:
    """True for a (dotted) class name that reads as an exception: a builtin one, or `...Error`-like."""
    last = name.rsplit(".", 1)[-1]
    return last in _BUILTIN_EXCEPTIONS or bool(_EXC_NAME.match(last) and len(last) > 5)


_BUILTIN_EXCEPTIONS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)


def raised_exception(output: str) -> tuple[str, str] | None:
    """(type, message) of the exception that printed output shows, or None when it shows none.

    A full traceback names it on its last line. Users also cut tracebacks down: the header and frames
    replaced by "..." (or dropped), leaving only the exception line. That line still names the exception
    when nothing but traceback debris (cuts, frames, indented source, ^^^ markers) comes before it and it
    carries a message or follows such debris; a bare name right after a statement is printed text.
    """
    final = [tb for tb in parse_tracebacks(output) if tb.exc_type]
    if final:
        return final[-1].exc_type, final[-1].exc_message
    debris = False
    for line in output.split("\n"):
        if not line.strip():
            continue
        if _is_debris(line):
            debris = True
            continue
        m = _TB_EXC.match(line.rstrip())
        if m and is_exception_name(m.group("type")) and (debris or m.group("msg") is not None):
            return m.group("type"), (m.group("msg") or "").strip()
        return None
    return None


def _echo_after_traceback(source: str, output: str) -> bool:
    """Does a value echo (a repr) follow the last traceback in an expression step's output?"""
    try:
        tree = quiet_parse(source.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return False  # only an expression echoes its value
    lines = output.split("\n")
    starts = [i for i, line in enumerate(lines) if _TB_START.match(line)]
    if not starts:
        return False
    after = [line for line in lines[_traceback_end(lines, starts[-1] + 1) :] if line.strip()]
    if not after or after[-1][:1].isspace():
        return False
    last = after[-1].strip()
    return is_literal_text(last) or (last.startswith("<") and last.endswith(">"))


def _is_debris(line: str) -> bool:
    """A line that belongs to a (cut) traceback rather than to printed output."""
    return bool(
        _ELISION.match(line)
        or _TB_FRAME.match(line)
        or _TB_REPEAT.match(line)
        or _TB_CHAIN.match(line)
        or (line[:1].isspace() and line.strip())
    )


def without_tracebacks(text: str, *, headerless: bool = False) -> str:
    """Printed text with every traceback taken out, keeping what was printed before and after it.

    A traceback runs from its header to its exception line (the first line that is not indented, not a
    frame and not a "..." cut); the lines between the tracebacks of a chained exception go too. With
    `headerless`, a traceback cut down to "..." lines or frames and its exception line (as users paste
    them in a REPL session) is taken out as well.
    """
    out = _drop_tracebacks(text.split("\n"), headerless=headerless)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)


def _drop_tracebacks(lines: Sequence[str], *, headerless: bool = False) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TB_START.match(line):
            i = _traceback_end(lines, i + 1)
            continue
        ipython = _IPY_TB_START.match(line)
        if ipython:
            while out and re.fullmatch(r"-{10,}", out[-1].strip()):
                out.pop()  # IPython's rule above the header
            i = _parse_ipython_traceback(lines, i, ipython.group("type"))[1]
            continue
        if _TB_CHAIN.match(line):
            i += 1
            continue
        if headerless and (_ELISION.match(line) or _TB_FRAME.match(line)):
            end = _traceback_end(lines, i)
            exc = _TB_EXC.match(lines[end - 1].rstrip()) if end > i else None
            if exc and is_exception_name(exc.group("type")):
                i = end
                continue
        exc = _TB_EXC.match(line.rstrip())
        first = not any(o.strip() for o in out)
        if headerless and first and exc and exc.group("msg") is not None and is_exception_name(exc.group("type")):
            # Everything but the exception line was cut (see raised_exception).
            i += 1
            continue
        out.append(line)
        i += 1
    return out


def _traceback_end(lines: Sequence[str], i: int) -> int:
    """Index after the exception line of a traceback whose frames start at i."""
    while i < len(lines):
        line = lines[i]
        if not line.strip() or _is_debris(line) or _TB_MARKERS.match(line):
            i += 1
            continue
        return i + 1  # the exception line
    return i


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """Items in order of first appearance, without repeats or empties."""
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    return tuple(seen)

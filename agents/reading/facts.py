"""Facts a bug report states: code, REPL sessions, tracebacks, expected vs. actual, symptom and kind."""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from agents.reading.calls import assembled_call, callee_of
from agents.reading.markdown import (
    CodeBlock,
    ParsedTraceback,
    ReplSession,
    ReplStep,
    TracebackFrame,
    classify_block,
    console_output,
    inline_spans,
    parse_repl,
    parse_tracebacks,
    quiet_parse,
    split_fences,
    unique,
)
from agents.reading.named import named_files
from agents.reading.patterns import BLOCK, SPAN
from agents.reading.phrases import (
    Claims,
    IssueKind,
    find_claims,
    is_expression,
    issue_kind,
)
from sandboxes.text import clean_text

__all__ = [
    "CodeBlock",
    "IssueFacts",
    "IssueKind",
    "ParsedTraceback",
    "ReplSession",
    "ReplStep",
    "TracebackFrame",
    "parse_issue",
]

_PLACEHOLDER = re.compile(r"\x00B(\d+)\x00")
_FILE = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?[\w./\\~-]*[\w-]\.py\b(?![\w.]*\()")
_RUN_SCRIPT = re.compile(r"\bpython[\d.]*(?:\s+-[\w-]+)*\s+([\w./\\~-]+\.py)\b")
_SAVED_AS = re.compile(
    r"\b(?:saved|save|put|wrote|written|named|called|created)\b[^.\n\x02]{0,30}?\b(?:as|to|in|into)\s+\x02(\d+)\x03"
    r"|\bscript\s*\(?\s*\x02(\d+)\x03",
    re.I,
)
_BUILTIN_NAMES = frozenset(dir(builtins))
_VALUE_WORDS = frozenset({"inf", "nan", "null", "none", "true", "false", "undefined"})
_PLAIN_CALL = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\((?:[^()\n]|\([^()\n]*\))+\)")
_CALLED_IN_PROSE = re.compile(r"\b([A-Za-z_]\w*)\(\)")


@dataclass(frozen=True)
class IssueFacts:
    """Everything parse_issue could read from a report; absent facts are empty or None."""

    title: str
    body: str
    code_blocks: tuple[CodeBlock, ...] = ()
    repl_sessions: tuple[ReplSession, ...] = ()
    tracebacks: tuple[ParsedTraceback, ...] = ()
    inline_code: tuple[str, ...] = ()
    title_code: tuple[str, ...] = ()
    expected: str | None = None
    expected_values: tuple[str, ...] = ()
    expected_pairs: tuple[tuple[str, str], ...] = ()
    expected_callees: tuple[str, ...] = ()
    expected_verb: str = ""
    expected_exception: str | None = None
    actual: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    hang: bool = False
    kind: IssueKind = "bug"
    subject: str | None = None
    setup_code: str | None = None
    printed_output: str | None = None
    mentioned_files: tuple[str, ...] = ()
    script_files: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    plain_calls: tuple[str, ...] = ()
    #: (file name, text) of files the report gives by name: a block under its name, `cat` output.
    named_files: tuple[tuple[str, str], ...] = ()

    @property
    def traceback_text(self) -> str:
        """The raw text of every pasted traceback, for frame-based fault localization."""
        return "\n".join(tb.text for tb in self.tracebacks)

    @property
    def python_blocks(self) -> tuple[str, ...]:
        """Code blocks that are Python programs (not output, REPL or shell)."""
        return tuple(b.code for b in self.code_blocks if b.kind == "python")

    @property
    def has_reproduction(self) -> bool:
        """A program, REPL session, traceback or inline call a test could be built from."""
        return bool(self.python_blocks or self.repl_sessions or self.tracebacks or self.subject or self.setup_code)


def parse_issue(text: str) -> IssueFacts:
    """Parse a markdown bug report ("# title" line, then the body) into IssueFacts."""
    text = clean_text(text)
    title, body = _split_title(text)
    prose_lines, raw_blocks = split_fences(body)
    blocks = tuple(CodeBlock(lang, code, classify_block(lang, code)) for lang, code in raw_blocks)
    prose_raw = "\n".join(prose_lines)

    sessions: list[ReplSession] = []
    tracebacks: list[ParsedTraceback] = []
    for segment in _PLACEHOLDER.split(prose_raw):
        # split() with a group alternates prose and block numbers, keeping document order.
        if segment.isdigit():
            block = blocks[int(segment)]
            sessions += parse_repl(block.code) if block.kind == "repl" else []
            tracebacks += parse_tracebacks(block.code)
        else:
            sessions += parse_repl(segment, fenced=False)
            tracebacks += parse_tracebacks(segment)

    spans = [content for _, _, content in inline_spans(prose_raw)]
    prose = _tokenize(prose_raw)
    title_spans = [content for _, _, content in inline_spans(title)]
    block_values = [console_output(b.code)[1] if b.kind == "console" else b.code for b in blocks]
    claims = _merge(find_claims(prose, spans, block_values), find_claims(_tokenize(title), title_spans, []))

    printed = _printed_output(blocks)
    exc_type, exc_msg, hang = _exception(claims, tracebacks, sessions, blocks)
    actual = claims.actual
    if actual is None and printed:
        actual = printed
    if actual is None:
        actual = _repl_actual(sessions)

    subject = claims.subject
    if subject is None or callee_of(subject) is not None:
        # "`f` raises E when passed `x`": observing the bare callee would never call it.
        subject = assembled_call(prose, spans) or assembled_call(_tokenize(title), title_spans) or subject
    strong_bug = bool(tracebacks or exc_type or hang or (claims.expected and (actual or exc_type)))
    return IssueFacts(
        title=title,
        body=body,
        code_blocks=blocks,
        repl_sessions=tuple(sessions),
        tracebacks=tuple(tracebacks),
        inline_code=tuple(spans),
        title_code=tuple(title_spans),
        expected=claims.expected,
        expected_values=claims.expected_values,
        expected_pairs=claims.expected_pairs,
        expected_callees=claims.expected_callees,
        expected_verb=claims.expected_verb,
        expected_exception=claims.expected_exception,
        actual=actual,
        exception_type=exc_type,
        exception_message=exc_msg,
        hang=hang,
        kind=issue_kind(title, prose, strong_bug=strong_bug),
        subject=subject,
        setup_code=_setup_code(spans),
        printed_output=printed,
        mentioned_files=unique(m.group(0).replace("\\", "/") for m in _FILE.finditer(f"{title}\n{body}")),
        script_files=_script_files(prose, spans, blocks, tracebacks),
        identifiers=_identifiers(
            title, prose, spans + title_spans, blocks, sessions, tracebacks, {claims.expected, claims.actual}
        ),
        plain_calls=_plain_calls(f"{title}\n{prose}"),
        named_files=named_files(prose_lines, blocks),
    )


def _exception(
    claims: Claims, tracebacks: list[ParsedTraceback], sessions: list[ReplSession], blocks: tuple[CodeBlock, ...]
) -> tuple[str | None, str | None, bool]:
    """(exception type, message, hang): a pasted traceback's final exception wins over the prose's."""
    exc_type, exc_msg, hang = claims.exception_type, claims.exception_message, claims.hang
    final = next((tb for tb in reversed(tracebacks) if tb.exc_type), None)
    raised = next((r for s in reversed(sessions) for step in reversed(s.steps) if (r := step.raised)), None)
    if final is not None:
        exc_type, exc_msg = final.exc_type, final.exc_message
    elif raised is not None:
        # A session whose traceback the user cut down to "..." and the exception line still shows it.
        exc_type, exc_msg = raised
    elif exc_type is None:
        exc_type, exc_msg = _console_exception(blocks)
    if exc_type and exc_type.rsplit(".", 1)[-1] == "KeyboardInterrupt":
        # The user pressed Ctrl-C: the call hung, the interrupt is not the bug.
        exc_type, exc_msg, hang = None, None, True
    return exc_type, exc_msg, hang


def _split_title(text: str) -> tuple[str, str]:
    """The first "# " heading outside code fences is the title; everything else is the body."""
    lines = text.split("\n")
    in_fence = False
    for i, line in enumerate(lines):
        if re.match(r"^\s{0,3}(?:`{3,}|~{3,})", line):
            in_fence = not in_fence
        elif not in_fence and re.match(r"^#\s", line):
            return line[2:].strip().strip("#").strip(), "\n".join(lines[:i] + lines[i + 1 :]).strip("\n")
    return "", text.strip("\n")


def _tokenize(prose_raw: str) -> str:
    """Prose with each inline span replaced by a numbered marker and each block marker kept."""
    out: list[str] = []
    last = 0
    for n, (start, end, _content) in enumerate(inline_spans(prose_raw)):
        out.append(prose_raw[last:start])
        out.append(SPAN.format(n))
        last = end
    out.append(prose_raw[last:])
    return _PLACEHOLDER.sub(lambda m: BLOCK.format(m.group(1)), "".join(out))


def _merge(body: Claims, title: Claims) -> Claims:
    """Body claims win; the title fills gaps (reports often say "f() raises E for `f(x)`" only there)."""
    return Claims(
        expected=body.expected if body.expected is not None else title.expected,
        expected_values=body.expected_values or title.expected_values,
        expected_pairs=body.expected_pairs or title.expected_pairs,
        expected_callees=body.expected_callees or title.expected_callees,
        expected_verb=body.expected_verb or title.expected_verb,
        expected_exception=body.expected_exception or title.expected_exception,
        actual=body.actual if body.actual is not None else title.actual,
        exception_type=body.exception_type or title.exception_type,
        exception_message=body.exception_message
        if body.exception_type
        else (title.exception_message if title.exception_type else None),
        subject=body.subject or title.subject,
        hang=body.hang or title.hang,
    )


def _printed_output(blocks: tuple[CodeBlock, ...]) -> str | None:
    """What a pasted script run printed (shell block after the program), tracebacks removed."""
    for block in blocks:
        if block.kind == "console":
            commands, output = console_output(block.code)
            if commands and output.strip():
                return output
    return None


_CONSOLE_EXC = re.compile(
    r"(?:^|:\s)(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Fault))"
    r"(?::\s*(?P<msg>.*?))?\s*$"
)


def _console_exception(blocks: tuple[CodeBlock, ...]) -> tuple[str | None, str | None]:
    """An exception a command printed without a traceback ("tool: error: KeyError: 'x'"), first one wins.

    Command-line tools often catch the exception and print its type and message on one line; that line
    names the reported symptom as surely as a traceback would.
    """
    for block in blocks:
        if block.kind != "console":
            continue
        for line in console_output(block.code)[1].split("\n"):
            m = _CONSOLE_EXC.search(line.strip())
            if m:
                return m.group("type"), (m.group("msg") or "").strip()
    return None, None


def _repl_actual(sessions: list[ReplSession]) -> str | None:
    """The last REPL output that is a value, not a traceback (whole or cut down to "...")."""
    for session in reversed(sessions):
        for step in reversed(session.steps):
            if step.printed.strip() and step.raised is None:
                return step.printed
    return None


def _setup_code(spans: list[str]) -> str | None:
    """Inline spans that are statements (assignments, imports, several `;`-joined), joined in order."""
    parts: list[str] = []
    for code in spans:
        try:
            tree = quiet_parse(code.strip())
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        stmts = tree.body
        if len(stmts) > 1 or (stmts and not isinstance(stmts[0], ast.Expr)):
            parts.append(code.strip())
    return "\n".join(parts) if parts else None


def _script_files(
    prose: str, spans: list[str], blocks: tuple[CodeBlock, ...], tracebacks: list[ParsedTraceback]
) -> tuple[str, ...]:
    """Files the user wrote and ran themselves (repro scripts), which the repo is not expected to have."""
    found: list[str] = []
    for block in blocks:
        for command in console_output(block.code)[0] if block.kind == "console" else []:
            found += _RUN_SCRIPT.findall(command)
    found += _RUN_SCRIPT.findall(prose)
    for m in _SAVED_AS.finditer(prose):
        span = spans[int(m.group(1) or m.group(2))]
        if span.strip().endswith(".py"):
            found.append(span.strip())
    found += [f.file for tb in tracebacks for f in tb.frames if f.function == "<module>"]
    return unique(f.replace("\\", "/") for f in found if not f.startswith("<"))


def _plain_calls(prose: str) -> tuple[str, ...]:
    """Unquoted calls with arguments in running text ("running mod.mul(3, 4) I expected 12")."""
    text = re.sub(r"\x02\d+\x03|\x00B\d+\x00", " ", prose)
    calls = [m.group(0) for m in _PLAIN_CALL.finditer(text)]
    return unique(c for c in calls if is_expression(c))


def _identifiers(
    title: str,
    prose: str,
    spans: list[str],
    blocks: tuple[CodeBlock, ...],
    sessions: list[ReplSession],
    tracebacks: list[ParsedTraceback],
    values: set[str | None],
) -> tuple[str, ...]:
    """Names of functions and classes the report calls or imports, in order of first mention."""
    names: list[str] = []
    sources = [b.code for b in blocks if b.kind == "python"]
    sources += [step.source for s in sessions for step in s.steps]
    sources += [f.source for tb in tracebacks for f in tb.frames if f.source]
    sources += [code for code in spans if is_expression(code) or _statement(code)]
    for source in sources:
        names += _called_names(source)
    for tb in tracebacks:
        names += [f.function for f in tb.frames if f.function.isidentifier()]
    assigned = {n for source in sources for n in _assigned_names(source)}
    for code in spans:
        word = code.strip()
        # A bare `name` span is a mention unless it is a value (`inf`) or the user's own variable.
        if word.isidentifier() and word not in assigned | values and word.lower() not in _VALUE_WORDS:
            names.append(word)
    names += _CALLED_IN_PROSE.findall(title) + _CALLED_IN_PROSE.findall(prose)
    return unique(n for n in names if n not in _BUILTIN_NAMES)


def _statement(code: str) -> bool:
    try:
        quiet_parse(code.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _assigned_names(source: str) -> set[str]:
    try:
        tree = quiet_parse(source.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _called_names(source: str) -> list[str]:
    try:
        tree = quiet_parse(source.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    names: list[str] = []
    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call | ast.ImportFrom)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in nodes:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
        elif isinstance(node, ast.ImportFrom):
            names += [a.name for a in node.names if a.name != "*"]
    return names

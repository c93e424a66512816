"""A call assembled from prose that names the callee and its argument apart ("`parse` fails for `'1 KB'`").

Users who do not paste code often name the function and the input in separate spans: "`sizes.parse`
raises ValueError when passed `'10 KB'`", "passing `None` to `render()` crashes", "`slug` with the argument
`'Ä b'`". A test that observes the bare callee (`sizes.parse`) never calls it and passes on the buggy code;
the call itself, `sizes.parse('10 KB')`, is what the user ran. Works on tokenized prose (spans are
`\\x02n\\x03` markers).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from agents.reading import patterns as pat
from agents.reading.markdown import is_exception_name, is_literal_text, quiet_parse
from agents.reading.values import repr_like

#: "... with/for/on/given/passed `arg`": the argument follows the callee in the same sentence.
_ARG_AFTER = re.compile(
    r"\b(?:with|for|on|given|passed|passing|fed|receives?|takes?|called\s+with|(?:the\s+)?(?:argument|"
    r"input|parameter))[ \t]+(?:(?:the|an?|as)[ \t]+)?(?:(?:value|string|argument|input|number|list)[ \t]+)?"
    r"\x02(?P<arg>\d+)\x03",
    re.I,
)
#: "pass/give/feed `arg` to `f`": the argument comes first.
_ARG_TO = re.compile(
    r"\b(?:pass(?:ing|ed)?|giv(?:e|ing)|gave|feed(?:ing)?|fed|send(?:ing)?|sent)[ \t]+(?:it[ \t]+)?"
    r"\x02(?P<arg>\d+)\x03[ \t]+(?:to|into)[ \t]+(?:the[ \t]+)?(?:(?:function|method|call)[ \t]+)?"
    r"\x02(?P<callee>\d+)\x03",
    re.I,
)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")


def assembled_call(prose: str, spans: Sequence[str]) -> str | None:
    """`callee(arg)` when prose names a callee and its argument in separate spans, else None."""
    for m in _ARG_TO.finditer(prose):
        call = _call(spans[int(m.group("callee"))], spans[int(m.group("arg"))])
        if call is not None:
            return call
    for m in _ARG_AFTER.finditer(prose):
        start = max((e.end() for e in _SENTENCE_END.finditer(prose, 0, m.start())), default=0)
        callees = [t for t in pat.TOKEN.finditer(prose, start, m.start()) if t.group("span") is not None]
        for tok in reversed(callees):
            call = _call(spans[int(tok.group("span"))], spans[int(m.group("arg"))])
            if call is not None:
                return call
    return None


def callee_of(code: str) -> str | None:
    """The callee a span names: `mod.f`, `f`, `f()` or `f(...)` (users write `()` to mark a function)."""
    try:
        tree = quiet_parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    elided = isinstance(tree, ast.Call) and all(isinstance(a, ast.Constant) and a.value is Ellipsis for a in tree.args)
    if isinstance(tree, ast.Call) and elided and not tree.keywords:
        tree = tree.func  # `f()` and `f(...)` name the function, not a call without arguments
    if not isinstance(tree, ast.Name | ast.Attribute):
        return None
    text = ast.unparse(tree)
    if is_exception_name(text) or not all(part.isidentifier() for part in text.split(".")):
        return None
    return text


def _call(callee_span: str, arg: str) -> str | None:
    """callee(arg) when the span is a callee and arg is a value (a literal or a repr-like constructor)."""
    callee = callee_of(callee_span)
    if callee is None or not (is_literal_text(arg) or repr_like(arg)):
        return None
    call = f"{callee}({arg.strip()})"
    try:
        quiet_parse(call, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return call

"""What a value looks like in report prose: literals, reprs, expressions, and where a value's text ends."""

from __future__ import annotations

import ast
import re

from agents.reading import patterns as pat
from agents.reading.markdown import quiet_parse


def value_like(text: str) -> bool:
    """True when unquoted prose text reads as a Python value (number, literal, container, inf/nan)."""
    text = text.strip()
    if not text or len(text) > 400 or text.lower() in pat.STOP_VALUES:
        return False
    try:
        tree = quiet_parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in ("inf", "nan", "True", "False", "None", "float"):
            return False
        float_call = isinstance(node, ast.Call) and ast.unparse(node.func) == "float"
        if isinstance(node, ast.Call | ast.Attribute | ast.Lambda | ast.NamedExpr) and not float_call:
            return False
    return True


def plain_value(prose: str, pos: int) -> str:
    """Prose text from pos up to the end of the clause, keeping brackets and quotes balanced."""
    depth, quote, i = 0, "", pos
    while i < len(prose):
        ch = prose[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch in "\x00\x02\n" or (depth == 0 and clause_end(prose, i)):
            break
        i += 1
    return prose[pos:i].strip().rstrip(".,;:!")


def clause_end(prose: str, i: int) -> bool:
    """Does the clause end at prose[i] (punctuation, or a conjunction that starts another clause)?"""
    rest = prose[i : i + 12]
    if prose[i] in ";!?" or (prose[i] in ".,:" and (i + 1 == len(prose) or prose[i + 1] in " \n")):
        return True
    if re.match(r"\s+\(", rest):
        return True  # a parenthetical aside after the value: "`a == b` is False (they differ)"
    conjunction = r"but|instead|rather|and|while|whereas|which|so|because|though|although|here|since|as|when|unless"
    return bool(re.match(rf"\s+(?:{conjunction})\b", rest))


def skip_filler(prose: str, pos: int) -> int:
    """Position after words that sit between a phrase and its value ("is", "the output", ":")."""
    m = pat.FILLER.match(prose, pos)
    return m.end() if m else pos


def is_expression(code: str) -> bool:
    """True for a span that is an observable expression (a call, name, attribute or subscript), not a file."""
    if re.search(r"\.py\b", code):
        return False
    try:
        tree = quiet_parse(code.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return isinstance(tree.body, ast.Call | ast.Name | ast.Attribute | ast.Subscript | ast.BinOp | ast.Compare)


def repr_like(code: str) -> bool:
    """True for text that reads as a printed value: a literal, an object repr (`<Arrow [...]>`), or a class
    built from literals the way reprs show it (`Interval(1, 5)`, `datetime.date(2020, 1, 2)`)."""
    code = code.strip()
    if value_like(code) or (code.startswith("<") and code.endswith(">") and len(code) > 2):
        return True
    try:
        tree = quiet_parse(code, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if not isinstance(tree, ast.Call) or not ast.unparse(tree.func).rsplit(".", 1)[-1][:1].isupper():
        return False
    args = [*tree.args, *(k.value for k in tree.keywords)]
    return all(value_like(ast.unparse(a)) or repr_like(ast.unparse(a)) for a in args)

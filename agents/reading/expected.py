"""Expected values an "Expected" label states beyond its first words: a bulleted list under it, and in the rest
of its paragraph pairs of a call and its value, a value "from" a call, or a result verb and its value.

Users often write the expected result after the session as a sentence ("Expected: the weekday is matched
regardless of case, so both calls return `<Day 1>`"), as pairs ("i.e. `q[1:3]` is `Q([2, 3])`, `q[-1:]` is
`Q([4])`"), or as a list of values, one item per call. Everything here works on tokenized prose: inline
spans are `\\x02n\\x03` markers (see patterns.SPAN), fenced blocks `\\x00Bn\\x00`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.reading import patterns as pat
from agents.reading.calls import callee_of
from agents.reading.values import is_expression, plain_value, repr_like, skip_filler, value_like

#: A bulleted or numbered list item on its own line.
_BULLET = re.compile(r"[ \t]*(?:[-*+•]|\d{1,2}[.)])[ \t]+(?P<item>[^\n]*)")
#: "`value` from `f`": the value a call gives, the call named by its callee or written out.
_FROM_CALL = re.compile(
    r"\x02(?P<value>\d+)\x03[ \t]+(?P<prep>from|for|of|on)[ \t]+(?:the[ \t]+)?(?:(?:call|input)[ \t]+)?"
    r"\x02(?P<code>\d+)\x03",
    re.I,
)
#: Between a call and its value in a pair: a result verb ("returns", "should be", "==", "→"), or a colon.
_PAIR_VERB = re.compile(r"(?:" + pat.SUBJECT_VERB_AFTER.pattern + r")|[ \t]*:(?=[ \t])", re.I)
#: A verb that says what the calls give, followed by the value.
_RESULT_VERB = re.compile(
    r"\b(?:returns?|returning|gives?|giving|prints?|printing|outputs?|yields?|produces?|evaluates?\s+to|"
    r"equals?|be|is|are|becomes?)\b",
    re.I,
)
#: Words that make a clause about what happens today or a working contrast, not what should happen.
_CONTRAST = re.compile(
    r"\b(?:today|currently|now|actually|instead|but|however|whereas|while|not|never|no\s+longer|like|unlike|"
    r"already|still|works?|same\s+(?:way|as)|just\s+as)\b|n't\b",
    re.I,
)
_CLAUSE_START = re.compile(r"[.;,:!?\n\x03]")
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n|\x00B")


@dataclass(frozen=True)
class Stated:
    """Values stated as expected: plain values in order, (call, value) pairs, and the callees the sentence
    is about (which pick the call of a pair that names only its input)."""

    values: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    callees: tuple[str, ...] = ()


def stated_after_label(prose: str, pos: int, spans: Sequence[str]) -> Stated:
    """What the label ending at pos states as expected: its bulleted list, else its paragraph's claims."""
    items = bullet_items(prose, pos)
    if items:
        return _from_items(prose, items, spans)
    end = paragraph_end(prose, pos)
    pairs = pairs_in(prose, pos, end, spans) + _from_call(prose, pos, end, spans)
    if pairs:
        return Stated(pairs=tuple(pairs), callees=subject_callees(prose, pos, end, spans))
    value = _verb_value(prose, pos, end, spans)
    return Stated(values=(value,)) if value is not None else Stated()


def paragraph_end(prose: str, pos: int) -> int:
    """Where the paragraph that contains pos ends (a blank line or a fenced block)."""
    m = _PARAGRAPH_END.search(prose, pos)
    return m.start() if m else len(prose)


def bullet_items(prose: str, pos: int) -> list[tuple[int, int]]:
    """(start, end) of each item of the list right under a label that ends its line (or leads into it)."""
    nl = prose.find("\n", pos)
    if nl < 0:
        return []
    rest = prose[pos:nl].strip(" \t*_")
    if rest and not rest.endswith(":"):
        return []  # the label's own line states something: the list below is not its value
    i = nl + 1
    blank = re.match(r"[ \t]*\n", prose[i:])
    i += blank.end() if blank else 0
    items: list[tuple[int, int]] = []
    while (m := _BULLET.match(prose, i)) is not None:
        items.append((m.start("item"), m.end("item")))
        i = m.end() + 1
    return items


def _from_items(prose: str, items: Sequence[tuple[int, int]], spans: Sequence[str]) -> Stated:
    """Each item is a pair ("`f(1)` → `2`") or a value ("`2`", "2.5"); items that are neither are skipped."""
    values: list[str] = []
    pairs: list[tuple[str, str]] = []
    for start, end in items:
        found = pairs_in(prose, start, end, spans, contrast=False)
        if found:
            pairs.append(found[0])
            continue
        tok = pat.TOKEN.match(prose, start)
        if tok is not None and tok.group("span") is not None:
            code = spans[int(tok.group("span"))]
            if repr_like(code):
                values.append(code.strip())
            continue
        plain = plain_value(prose, start)
        if value_like(plain):
            values.append(plain)
    return Stated(tuple(values), tuple(pairs))


def pairs_in(prose: str, start: int, end: int, spans: Sequence[str], *, contrast: bool = True) -> list[tuple[str, str]]:
    """(call, value) for each "`call` <verb> `value`" between start and end.

    With `contrast`, a pair in a clause that describes today's behaviour or a working example ("like `g(1)`
    gives `2` today") is not an expectation and is skipped.
    """
    return [(code, value) for _, _, code, value in _pair_matches(prose, start, end, spans, contrast=contrast)]


def _pair_matches(
    prose: str, start: int, end: int, spans: Sequence[str], *, contrast: bool = True
) -> list[tuple[int, int, str, str]]:
    """(start, end, call, value) of each pair, as pairs_in reads them."""
    out: list[tuple[int, int, str, str]] = []
    for m in pat.TOKEN.finditer(prose, start, end):
        if m.group("span") is None:
            continue
        code = spans[int(m.group("span"))]
        if not is_expression(code) or repr_like(code):
            continue
        verb = _PAIR_VERB.match(prose, m.end(), end)
        if verb is None or (contrast and _contrasted(prose, start, m.start())):
            continue
        value = _value_after(prose, verb.end(), end, spans)
        if value is not None:
            out.append((m.start(), value[1], code.strip(), value[0]))
    return out


def claimed_ranges(prose: str, spans: Sequence[str]) -> list[tuple[int, int]]:
    """Stretches of prose that state an expected value after a label (list items, pairs, "return `V`").

    Their verbs ("`f(1)` is `2`", "→ `2`") say what should happen; they are not reports of what did.
    """
    out: list[tuple[int, int]] = []
    for m in pat.EXPECTED_LABEL.finditer(prose):
        items = bullet_items(prose, m.end())
        if items:
            out += items
            continue
        end = paragraph_end(prose, m.end())
        out += [(a, b) for a, b, _, _ in _pair_matches(prose, m.end(), end, spans)]
        verb = _verb_value_match(prose, m.end(), end, spans)
        out += [(verb[0], verb[1])] if verb else []
    return out


def _value_after(prose: str, pos: int, end: int, spans: Sequence[str]) -> tuple[str, int] | None:
    """(value, where it ends) right after pos: a span that reads as a value, or plain value text."""
    while pos < end and prose[pos] in " \t":
        pos += 1
    tok = pat.TOKEN.match(prose, pos)
    if tok is not None and tok.group("span") is not None:
        code = spans[int(tok.group("span"))]
        return (code.strip(), tok.end()) if repr_like(code) else None
    plain = plain_value(prose[:end], pos)
    return (plain, pos + len(plain)) if value_like(plain) else None


def _from_call(prose: str, start: int, end: int, spans: Sequence[str]) -> list[tuple[str, str]]:
    """(callee, call or input, value) for each "`value` from `f`" or "`value` for `input`".

    "from" names the call (or its callee); "for"/"of"/"on" may instead name the input the call takes
    ("`'z'` for `x.y.z`"): the reproduction pairs it with the session's call that takes that input.
    """
    out: list[tuple[str, str]] = []
    for m in _FROM_CALL.finditer(prose, start, end):
        value, code = spans[int(m.group("value"))], spans[int(m.group("code"))]
        named_call = is_expression(code) and not repr_like(code)
        if not repr_like(value) or _contrasted(prose, start, m.start()):
            continue
        if named_call or m.group("prep").lower() != "from":
            out.append((code.strip(), value.strip()))
    return out


def subject_callees(prose: str, start: int, end: int, spans: Sequence[str]) -> tuple[str, ...]:
    """Callees of the calls the expected sentence is about ("Expected: `name()` should be ..."), in order."""
    out: list[str] = []
    for m in pat.TOKEN.finditer(prose, start, end):
        code = spans[int(m.group("span"))] if m.group("span") is not None else ""
        if "(" in code and (callee := callee_of(code)) is not None and callee not in out:
            out.append(callee.rsplit(".", 1)[-1])
    return tuple(out)


def _verb_value(prose: str, start: int, end: int, spans: Sequence[str]) -> str | None:
    """The first value after a result verb ("so both calls return `V`"), outside contrasting clauses."""
    found = _verb_value_match(prose, start, end, spans)
    return found[2] if found else None


def _verb_value_match(prose: str, start: int, end: int, spans: Sequence[str]) -> tuple[int, int, str] | None:
    """(verb start, value end, value) of the first verb and value _verb_value reads."""
    for m in _RESULT_VERB.finditer(prose, start, end):
        if pat.SPAN_AT_END.search(prose[max(start, m.start() - 40) : m.start()]) or _contrasted(
            prose, start, m.start()
        ):
            continue  # a pair's verb (handled by pairs_in), or today's behaviour
        tok = pat.TOKEN.match(prose, skip_filler(prose, m.end()))
        if tok is not None and tok.group("span") is not None and repr_like(spans[int(tok.group("span"))]):
            return m.start(), tok.end(), spans[int(tok.group("span"))].strip()
    return None


def _contrasted(prose: str, start: int, pos: int) -> bool:
    """Does the clause that ends at pos (and began after start) describe today's behaviour or a contrast?"""
    before = prose[max(start, pos - 60) : pos]
    cuts = [m.end() for m in _CLAUSE_START.finditer(before)]
    clause = before[cuts[-1] :] if cuts else before
    return bool(_CONTRAST.search(clause))

"""How users phrase expected and actual results, exceptions, hangs and requests in bug-report prose."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agents.reading import patterns as pat
from agents.reading.expected import Stated, claimed_ranges, stated_after_label
from agents.reading.markdown import quiet_parse
from agents.reading.values import is_expression, plain_value, repr_like, skip_filler, value_like

__all__ = ["Claims", "IssueKind", "exception_in", "find_claims", "is_expression", "issue_kind", "value_like"]

IssueKind = Literal["bug", "feature", "question"]

#: Words right before an "output is" phrase that make it the expected output, not the actual one.
_NOT_ACTUAL_BEFORE = re.compile(
    r"\b(?:expect\w*|correct|right|desired|proper|intended|instead\s+of|rather\s+than)\s*\Z", re.I
)
#: A clause that shows a working case for contrast ("the same way it is `b` for `a.b`"), not the bug.
_WORKING = re.compile(r"\b(?:(?:the\s+)?same\s+(?:way|as)|just\s+as|as\s+(?:with|for|it\s+(?:does|did)))\b", re.I)
#: After "expect": an object and its infinitive, up to where the value starts ("the file to load as").
_EXPECT_OBJECT_TO = re.compile(
    r"\s+(?:(?:the|this|that|my|our|its|each|every)\s+)?[\w.]+(?:\s+[\w.]+){0,2}?\s+to\s+(?P<verb>[a-z]+)"
    r"(?:\s+(?:as|like|into|to|with))?",
    re.I,
)
#: A quoted value, then "which is what I expected": the trigger word ends the match.
_VALUE_WHICH_IS_EXPECTED = re.compile(
    r"\x02(?P<n>\d+)\x03[ \t]*,?[ \t]*(?:which|that)\s+is\s+(?:what|how)\s+(?:i|we)\s*(?:'d|would|had)?\s*"
    r"(?:have\s+)?expect\w*\Z",
    re.I,
)
_LIST_ITEM = re.compile(r"(?:[-*+•]|\d{1,2}[.)])[ \t]")
_VERB_STEMS = ("print", "return", "output", "raise", "throw", "show", "display", "give", "yield", "produce")


@dataclass(frozen=True)
class Claims:
    """What the report says happened and what should have happened."""

    expected: str | None = None
    expected_verb: str = ""
    expected_exception: str | None = None
    actual: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    subject: str | None = None
    hang: bool = False
    expected_values: tuple[str, ...] = ()
    #: (call, value) pairs stated as expected, each about its own call (or the call that takes that input).
    expected_pairs: tuple[tuple[str, str], ...] = ()
    #: Callees the expected sentence is about ("Expected: `name()` should be ...").
    expected_callees: tuple[str, ...] = ()


def exception_in(text: str) -> tuple[str, str] | None:
    """(type, message) when text is an exception ("ValueError: bad" or "pkg.FooError"), else None."""
    m = pat.EXC_TEXT.match(text)
    if not m or "\n" in m.group("type"):
        return None
    last = m.group("last")
    named = last in pat.BUILTIN_EXCS or re.search(r"(?:Error|Exception|Interrupt|Exit|Warning|Fault)$", last)
    if named and last[0].isupper():
        return m.group("type"), (m.group("msg") or "").strip()
    return None


def _value_at(prose: str, pos: int, spans: Sequence[str], blocks: Sequence[str]) -> tuple[str, str] | None:
    """(value text, where it came from) for the value that follows a phrase ending at pos."""
    pos = skip_filler(prose, pos)
    if _LIST_ITEM.match(prose, pos) and prose[:pos].rstrip(" \t").endswith("\n"):
        return None  # a list under the phrase: its items are the values (see expected.bullet_items)
    tok = pat.TOKEN.match(prose, pos)
    if tok and tok.group("span") is not None:
        found = spans[int(tok.group("span"))], "inline"
        return None if _subject_call(prose, pos, found) else found
    if tok and tok.group("block") is not None:
        return blocks[int(tok.group("block"))], "block"
    plain = plain_value(prose, pos)
    if value_like(plain):
        return plain, "plain"
    # "returns 6 on the main branch": the value is the part before a trailing prepositional phrase.
    cut = pat.TRAILER.search(plain)
    if cut and value_like(plain[: cut.start()]):
        return plain[: cut.start()].strip(), "plain"
    return None


def _label_value(
    prose: str, pos: int, spans: Sequence[str], blocks: Sequence[str]
) -> tuple[str, str, str | None] | None:
    """(value, where it came from, subject) after a line-start label ("Expected: ...").

    Tried in order: "`call` returns `value`" (the span is the subject, the value follows the verb); a quoted
    or fenced value; a sentence that leads into the next code block ("... and the output is" + block); the
    rest of the line as free text.
    """
    stated = _subject_then_value(prose, pos, spans, blocks)
    if stated is not None:
        return stated
    value = _value_at(prose, pos, spans, blocks)
    if value is not None:
        return (*value, None)
    lead_in = _block_after_lead_in(prose, pos, blocks)
    if lead_in is not None:
        return lead_in, "block", None
    end = prose.find("\n", pos)
    rest = prose[pos : len(prose) if end < 0 else end].strip().strip("*_").strip()
    if not rest or pat.TOKEN.search(rest) or pat.NOT_A_VALUE.search(rest) or len(rest.split()) > 12:
        return None
    return rest, "label", None


def _subject_call(prose: str, pos: int, value: tuple[str, str]) -> bool:
    """Is the quoted "value" after a label a call that the sentence goes on to talk about?

    "Expected: `name()` (and `other()`) should be the last part": the call is the sentence's subject; a
    value is never an expression that calls the code, unless it is a repr (`Point(1, 2)`).
    """
    code, origin = value
    if origin != "inline" or repr_like(code) or not _is_call_like(code):
        return False
    tok = pat.TOKEN.match(prose, skip_filler(prose, pos))
    end = prose.find("\n", pos)
    rest = prose[tok.end() if tok else pos : len(prose) if end < 0 else end]
    return bool(re.search(r"\w", pat.TOKEN.sub(" ", rest)))


def _subject_then_value(
    prose: str, pos: int, spans: Sequence[str], blocks: Sequence[str]
) -> tuple[str, str, str | None] | None:
    """ "Expected: `f(x)` returns `3`": a label whose first span is a call, then a verb, then the value.

    The general pattern is a label followed by a whole sentence about one call; taking the call itself as
    the expected value would assert that the result equals its own source text.
    """
    start = skip_filler(prose, pos)
    tok = pat.TOKEN.match(prose, start)
    if tok is None or tok.group("span") is None:
        return None
    code = spans[int(tok.group("span"))]
    if not is_expression(code) or value_like(code):
        return None
    verb = pat.SUBJECT_VERB_AFTER.match(prose, tok.end())
    if verb is None:
        return None
    value = _value_at(prose, verb.end(), spans, blocks)
    if value is None:
        value = (v, "block") if (v := _block_after_lead_in(prose, verb.end(), blocks)) is not None else None
    if value is None:
        return None
    return value[0], value[1], code.strip()


def _block_after_lead_in(prose: str, pos: int, blocks: Sequence[str]) -> str | None:
    """The code block that a label's sentence leads into ("Expected: both run, so the output is" + block).

    Users often finish the "Expected" sentence with a colon or "is"/"would be" and paste the value as the
    next fenced block. Only the first block after the sentence counts, and only when the sentence ends
    with such a lead-in (a sentence ending in a full stop is a statement, not an introduction).
    """
    tok = pat.BLOCK_TOKEN.search(prose, pos)
    if tok is None:
        return None
    between = prose[pos : tok.start()]
    if "\n\n\n" in between or pat.BLOCK_TOKEN.search(between) or len(between.split()) > 60:
        return None
    words = pat.TOKEN.sub(" ", between).strip().strip("*_").strip()
    if not words or pat.LEAD_IN_END.search(words):
        return blocks[int(tok.group("block"))]
    return None


def _subject_before(prose: str, start: int, spans: Sequence[str]) -> str | None:
    m = pat.SPAN_AT_END.search(prose[max(0, start - 120) : start])
    if m is None:
        return None
    code = spans[int(m.group("n"))]
    return code if is_expression(code) else None


def _hoped(prose: str, start: int) -> bool:
    """The phrase at start is what should happen ("should return", "to raise"), not what did."""
    return bool(pat.NEGATED_OR_HOPED.search(prose[max(0, start - 40) : start]))


def find_claims(prose: str, spans: Sequence[str], blocks: Sequence[str]) -> Claims:
    """Expected and actual values, exceptions, the observed expression and hangs from tokenized prose."""
    expected = _find_expected(prose, spans, blocks)
    exp_value, exp_verb, exp_subject = expected if expected else (None, "", None)
    stated = _stated_expected(prose, spans)
    observing = [(code, value) for code, value in stated.pairs if _is_call_like(code)]
    if exp_value is None and observing:
        # "Expected: ... i.e. `q[1:3]` is `Q([2])`": the first pair about a call is the expectation, and
        # that call its subject (a pair that names only a callee is checked on its own, see expected_pairs).
        exp_subject, exp_value = observing[0]
    elif exp_value is None and len(stated.values) == 1:
        exp_value = stated.values[0]
    actual = _find_actual(prose, spans, blocks, exp_subject)
    exc, exc_subject, expected_exc = _find_exception(prose, spans)
    bare_exception = exp_value is not None and exception_in(exp_value) and not value_like(exp_value)
    if exp_value is not None and (exp_verb in ("raise", "throw") or bare_exception):
        named = exception_in(exp_value)
        expected_exc = expected_exc or (named[0] if named else None)
        exp_value = None
    act_value, act_subject = actual if actual else (None, None)
    if act_value is not None and exception_in(act_value) and not value_like(act_value):
        exc = exc or exception_in(act_value)
        act_value = None
    if exp_subject and act_subject and _norm_code(act_subject) != _norm_code(exp_subject):
        # "Expected: `f(3)` returns `7`, as `f(2)` gives `4`": the actual value is about another call.
        act_value, act_subject = None, None
    if exc and exc_subject and act_subject and _norm_code(act_subject) != _norm_code(exc_subject):
        # "`f(2)` raises TypeError ... `f(None)` returns `None`": the call that raises is the reported one;
        # a value stated of another call is a working contrast, not the symptom.
        act_value, act_subject = None, None
    listed = _listed_expected(prose, spans) or (stated.values if len(stated.values) > 1 else ())
    return Claims(
        expected_values=listed,
        expected_pairs=stated.pairs,
        expected_callees=stated.callees,
        expected=exp_value,
        expected_verb=exp_verb,
        expected_exception=expected_exc,
        actual=act_value,
        exception_type=exc[0] if exc else None,
        exception_message=exc[1] if exc else None,
        subject=act_subject or exc_subject or exp_subject,
        hang=bool(pat.HANG.search(pat.TOKEN.sub(" ", prose))),
    )


def _stated_expected(prose: str, spans: Sequence[str]) -> Stated:
    """Values and (call, value) pairs the first "Expected" label with any states in its list or paragraph."""
    for m in pat.EXPECTED_LABEL.finditer(prose):
        stated = stated_after_label(prose, m.end(), spans)
        if stated.values or stated.pairs:
            return stated
    return Stated()


def _is_call_like(code: str) -> bool:
    """A call or a subscript: an expression that observes a value, not a bare callee."""
    try:
        tree = quiet_parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return isinstance(tree, ast.Call | ast.Subscript)


def _clause(before: str) -> str:
    """The last clause of text (after its last comma, semicolon, full stop or line break)."""
    return re.split(r"[.;,:!?\n]", before)[-1]


def _norm_code(code: str) -> str:
    """Code compared by its syntax tree (spacing between tokens ignored, spacing inside strings kept)."""
    try:
        return ast.unparse(quiet_parse(code.strip(), mode="eval"))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return " ".join(code.split())


def _find_expected(prose: str, spans: Sequence[str], blocks: Sequence[str]) -> tuple[str, str, str | None] | None:
    found: list[tuple[int, int, str, str, str | None]] = []
    for m in pat.EXPECTED_LABEL.finditer(prose):
        labelled = _label_value(prose, m.end(), spans, blocks)
        if labelled is not None:
            # A line-start "Expected:" with a quoted or fenced value is the user's own statement of it: it
            # outranks any phrase elsewhere ("`x` is `False`" in the description of the bug).
            found.append((-1 if labelled[1] in ("inline", "block") else 1, m.start(), labelled[0], "", labelled[2]))
    for trigger in pat.EXPECTED_TRIGGERS:
        for m in trigger.finditer(prose):
            pos, verb, subject = m.end(), (m.groupdict().get("verb") or "").lower(), None
            if re.match(r"\s*(?:not|n't)\b", prose[pos:]):
                continue
            sub = pat.SUBJECT_TO_VERB.match(prose, skip_filler(prose, pos))
            if sub:
                pos, verb = sub.end(), sub.group("verb").lower()
                subject = spans[int(sub.group("n"))] if sub.group("n") else None
            subject = subject or _subject_before(prose, m.start(), spans)
            value = _value_at(prose, pos, spans, blocks)
            if value is None and (around := _EXPECT_OBJECT_TO.match(prose, pos)) is not None:
                # "I'd expect the file to load as `V`": the value follows the object's infinitive.
                pos, verb = around.end(), around.group("verb").lower()
                value = _value_at(prose, pos, spans, blocks)
                value = value if value is not None and value[1] != "plain" else None
            if value is None and (before := _VALUE_WHICH_IS_EXPECTED.search(prose, 0, m.end())) is not None:
                # "it gives `V`, which is what I expected for ...": the value comes before the phrase.
                value = spans[int(before.group("n"))], "inline"
            if value is None:
                continue
            verb = _verb_stem(verb)
            # Quoted or fenced values are what users paste; plain prose values are a weaker guess.
            rank = 0 if value[1] != "plain" else 1
            found.append((rank, m.start(), value[0], verb, subject if subject and is_expression(subject) else None))
    if not found:
        return None
    best = min(found, key=lambda f: (f[0], f[1]))
    return best[2], best[3], best[4]


def _listed_expected(prose: str, spans: Sequence[str]) -> tuple[str, ...]:
    """Several quoted values listed after one "Expected:" label ("Expected: `1` and `2`"), in order.

    Users who show several calls often answer them with one list of expected values; they pair with the
    calls in order (see brt_code.aligned_repl), so each call is compared with its own expected value.
    """
    for m in pat.EXPECTED_LABEL.finditer(prose):
        pos = skip_filler(prose, m.end())
        values: list[str] = []
        while (tok := pat.TOKEN.match(prose, pos)) is not None and tok.group("span") is not None:
            values.append(spans[int(tok.group("span"))])
            sep = pat.LIST_SEPARATOR.match(prose, tok.end())
            if sep is None:
                break
            pos = sep.end()
        if len(values) > 1:
            return tuple(values)
    return ()


def _expected_label_lines(prose: str, spans: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of "Expected: `call` returns" up to its verb: that verb is not what happened."""
    out: list[tuple[int, int]] = []
    for m in pat.EXPECTED_LABEL.finditer(prose):
        tok = pat.TOKEN.match(prose, skip_filler(prose, m.end()))
        if tok is None or tok.group("span") is None or not is_expression(spans[int(tok.group("span"))]):
            continue
        verb = pat.SUBJECT_VERB_AFTER.match(prose, tok.end())
        if verb is not None:
            out.append((m.start(), verb.end()))
    return out


def _verb_stem(verb: str) -> str:
    for stem in _VERB_STEMS:
        if verb.startswith(stem):
            return stem
    if verb.startswith(("gave", "giving")):
        return "give"
    return verb.split()[0] if verb else ""


def _find_actual(
    prose: str, spans: Sequence[str], blocks: Sequence[str], about: str | None = None
) -> tuple[str, str | None] | None:
    """The reported value, preferring one stated of the call `about` (the expected claim's subject)."""
    found: list[tuple[int, int, str, str | None]] = []
    expected_lines = _expected_label_lines(prose, spans) + claimed_ranges(prose, spans)
    for m in pat.ACTUAL_LABEL.finditer(prose):
        labelled = _label_value(prose, m.end(), spans, blocks)
        if labelled is not None:
            found.append((-1 if labelled[1] in ("inline", "block") else 1, m.start(), labelled[0], labelled[2]))
    for trigger in pat.ACTUAL_TRIGGERS:
        for m in trigger.finditer(prose):
            before = prose[max(0, m.start() - 60) : m.start()]
            if _hoped(prose, m.start()) or _NOT_ACTUAL_BEFORE.search(before) or _WORKING.search(_clause(before)):
                continue
            if any(a <= m.start() < b for a, b in expected_lines):
                # "Expected: `f(x)` returns `3`": a verb inside the expected statement is not what happened.
                continue
            value = _value_at(prose, m.end(), spans, blocks)
            if value is None:
                continue
            subject = _subject_before(prose, m.start(), spans)
            found.append((0 if value[1] != "plain" else 1, m.start(), value[0], subject))
    if not found:
        return None
    key = _norm_code(about) if about else None
    best = min(found, key=lambda f: (key is not None and (f[3] is None or _norm_code(f[3]) != key), f[0], f[1]))
    return best[2], best[3]


def _find_exception(prose: str, spans: Sequence[str]) -> tuple[tuple[str, str] | None, str | None, str | None]:
    """(actual exception, its subject, expected exception) named in prose."""
    actual: tuple[str, str] | None = None
    subject: str | None = None
    expected: str | None = None
    expected_subject: str | None = None
    for m in pat.EXC_TRIGGER.finditer(prose):
        tok = pat.TOKEN.match(prose, m.end())
        if tok and tok.group("span") is not None:
            named = exception_in(spans[int(tok.group("span"))])
        else:
            named = _exception_word(prose, m.end())
        if named is None:
            continue
        verb = m.group(0).split()[0].lower()
        hoped = _hoped(prose, m.start()) or verb in ("raise", "throw", "raising", "throwing")
        if hoped and not re.search(r"\b(?:keep|keeps|still)\s*$", prose[max(0, m.start() - 20) : m.start()]):
            if expected is None:
                expected, expected_subject = named[0], _subject_before(prose, m.start(), spans)
            continue
        if actual is None:
            actual, subject = named, _subject_before(prose, m.start(), spans)
    if actual is None:
        # A bare exception name in the text ("RecursionError in f") still names the symptom.
        plain = pat.TOKEN.sub(lambda t: " " + spans[int(t.group("span"))] + " " if t.group("span") else " ", prose)
        for word in pat.EXC_WORD.finditer(plain):
            if not _hoped(plain, word.start()) and word.group(0) != expected:
                actual = (word.group(0), "")
                break
    return actual, subject or expected_subject, expected


def _exception_word(prose: str, pos: int) -> tuple[str, str] | None:
    """An unquoted exception name at pos, with the message after a colon if there is one."""
    word = pat.EXC_WORD.match(prose, pos)
    if word is None or exception_in(word.group(0)) is None:
        return None
    message = ""
    if prose[word.end() : word.end() + 1] == ":":
        message = prose[word.end() + 1 : _message_end(prose, word.end())].strip()
    return word.group(0), message


def _message_end(prose: str, start: int) -> int:
    end = prose.find("\n", start)
    end = len(prose) if end < 0 else end
    stop = re.search(r"\s+(?:instead|but|when|while|whereas|because)\b|\x02|\x00|\.\s|;", prose[start:end])
    return start + stop.start() if stop else end


def issue_kind(title: str, prose: str, *, strong_bug: bool) -> IssueKind:
    """Bug report, feature request or question, from wording; concrete failure evidence means a bug."""
    text = f"{title}\n{pat.TOKEN.sub(' ', prose)}"
    if strong_bug:
        return "bug"
    feature = bool(pat.FEATURE.search(text))
    question = bool(pat.QUESTION.search(text)) or title.rstrip().endswith("?")
    bug = bool(pat.BUG.search(text))
    if feature and not (bug and pat.BUG.search(title)):
        return "feature"
    if question and not bug:
        return "question"
    return "bug"

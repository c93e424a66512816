"""Steps-to-reproduce (S2R) extraction: a bug report becomes ordered (action, target, input) steps.

The offline extractor is rule-based: it finds the report's steps (a list, or sentences and clauses of prose),
maps each clause's verb to an action and pulls out the target and the typed input. A verb the rules do not know
is looked up among the annotated example steps shipped in data/s2r_examples.json (BM25 retrieval), so a phrasing
seen in an example ("flip the switch") gets that example's action. With a model, the LLM extractor is given the
most similar annotated reports as few-shot examples; its output is validated, and a bad answer is fed back once
before the rules take over.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from rank_bm25 import BM25Okapi

from agents.app.driver import ACTIONS
from agents.app.forms import join_labels, labelled_values, pressed_in_outcome, purpose_steps
from agents.app.phrasing import REPEAT_BOUND, bare_page, beside, navigation, repetition, scope, whereabouts
from agents.app.textmatch import WIDGET_WORDS, core_words, similarity, words

#: A model call: chat messages in, the reply text out, plain or awaitable (the runner passes the bot's client in).
Complete = Callable[[list[dict[str, str]]], "str | Awaitable[str]"]


@dataclass(frozen=True)
class Step:
    """One step to reproduce."""

    action: str
    target: str = ""
    input: str = ""
    #: Worded as navigation ("open the shop", "go to Settings"): when nothing on the first screen has that
    #: name, the reporter meant opening the app, which every run starts with.
    opens: bool = False
    #: How many times the report says to do it (phrasing.repetition): N, or REPEAT_BOUND for "a few times".
    repeat: int = 1
    #: The control or part of the page the target is in ("size dropdown", "date column"): opened first.
    within: str = ""
    #: What the target sits beside ("deactivate" next to "Carol"): tells look-alikes in a list apart by their row.
    near: str = ""

    def to_json(self) -> dict[str, object]:
        """The step as the JSON the result and the action log carry (repeat and scope only when the report says)."""
        data: dict[str, object] = {"action": self.action, "target": self.target, "input": self.input}
        if self.repeat != 1:
            data["repeat"] = self.repeat
        if self.within:
            data["within"] = self.within
        if self.near:
            data["near"] = self.near
        return data

    @classmethod
    def from_json(cls, data: object) -> Step:
        """A step from JSON; ValueError says what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"a step must be an object, not {type(data).__name__}")
        action = data.get("action")
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
        target, value = data.get("target") or "", data.get("input") or ""
        if not isinstance(target, str) or not isinstance(value, str):
            raise ValueError("target and input must be strings")
        # An input may leave its field unnamed ("log in (dana / tulip)"): the value goes into the next field.
        if (action in ("click", "long_click") or (action == "input" and not value)) and not target:
            raise ValueError(f"a {action} step needs a target")
        repeat, within, near = data.get("repeat", 1), data.get("within") or "", data.get("near") or ""
        if not isinstance(repeat, int) or not 1 <= repeat <= REPEAT_BOUND:
            raise ValueError(f"repeat must be a whole number from 1 to {REPEAT_BOUND}")
        if not isinstance(within, str) or not isinstance(near, str):
            raise ValueError("within and near must be strings")
        return cls(str(action), target.strip(), value, repeat=repeat, within=within.strip(), near=near.strip())


@dataclass(frozen=True)
class Report:
    """A report split into what the extractor reads: the steps part, and the expected and actual parts."""

    steps_text: str
    expected: str
    actual: str


_HEADING = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*)?\s*(?P<name>[A-Za-z][A-Za-z /-]{1,40}?)\s*(?:\*\*)?\s*:?\s*(?:\*\*)?\s*$"
)
_INLINE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?P<name>expected|actual|steps|str|repro)[a-z ]{0,20}?(?:\*\*)?"
    r"\s*:\s*(?:\*\*)?\s*(?P<rest>\S.*)$",
    re.I,
)


def _section_of(name: str) -> str | None:
    name = name.lower().strip()
    if re.match(r"^(steps|to reproduce|how to reproduce|repro|reproduction|str\b|s2r)", name):
        return "steps"
    if re.match(r"^expected", name):
        return "expected"
    if re.match(r"^(actual|what happens|observed|result)", name):
        return "actual"
    return None


def split_report(text: str) -> Report:
    """Find the steps, expected and actual parts (headings, `Expected:` lines); the rest is prose."""
    parts: dict[str, list[str]] = {"steps": [], "expected": [], "actual": [], "prose": []}
    current = "prose"
    for line in text.splitlines():
        inline = _INLINE.match(line)
        if inline:
            current = _section_of(inline.group("name")) or current
            parts[current].append(inline.group("rest"))
            continue
        heading = _HEADING.match(line)
        if heading and (section := _section_of(heading.group("name"))) and len(line.split()) <= 6:
            current = section
            continue
        if re.match(r"^\s*#", line):  # any other heading (the title, "Environment") ends the section
            current = "prose"
            continue
        parts[current].append(line)
    steps = "\n".join(parts["steps"]).strip() or "\n".join(parts["prose"]).strip()
    expected, actual = "\n".join(parts["expected"]).strip(), "\n".join(parts["actual"]).strip()
    if not expected and not actual:
        # Prose: "... shows X instead of Y" / "expected X but got Y".
        m = re.search(
            r"(?:shows?|says|displays?|get|got|see)\s+(?P<a>.+?)\s+instead of\s+"
            r"(?P<e>[\"“`'][^\"”`'\n]+[\"”`']|[^.\n]+)",
            text,
            re.I,
        )
        m = m or re.search(
            r"expected\s+(?P<e>.+?),?\s+but\s+(?:it\s+)?(?:got|shows?|says|displays?)\s+(?P<a>[^.\n]+)", text, re.I
        )
        if m:
            expected, actual = m.group("e"), m.group("a")
        else:
            expected, actual = _prose_outcome(text)
    return Report(steps_text=steps, expected=expected, actual=actual)


_SAYS = re.compile(
    # "The page refuses with "X"", "saving fails with "X"": what the app answers with is what it shows.
    r"\b(?:says|shows|displays|reads|prints|I get|I see|I got|it's|is|(?:refuse|fail|error|reject|respond|answer|"
    r"complain|stop)(?:s|ed)?(?:\s+it)?\s+with)\s+(?P<a>[\"“`'][^\n]{1,120}?[\"”`'])",
    re.I,
)
_EXPECTS = re.compile(
    r"\b(?:I\s+)?(?:expected|expect|would expect|should (?:see|show|say|display|be|list))\s+(?P<e>[^.\n]+)", re.I
)


def _prose_outcome(text: str) -> tuple[str, str]:
    """(expected, actual) of prose: "it says "X"" and "I expected "Y" to be listed", each in its own sentence."""
    expected = actual = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        e = _EXPECTS.search(sentence)
        if e and not expected:
            expected = e.group("e")
            continue
        a = _SAYS.search(sentence)
        if a and not actual:
            actual = a.group("a")
    return expected, actual


# --- clause splitting -----------------------------------------------------------------------------------------

_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•]|step\s*\d+\s*[:.)-]?)\s+", re.I)
_THEN = re.compile(
    r"\s*(?:[,;]\s*|\s)(?:and\s+)?(?:then|after that|afterwards|next(?!\s+to\b)|finally)\b[,\s]*"
    r"|;\s*|[.!?]\s+|\s*(?:->|=>|→|—|--)\s*|\s+>\s+",
    re.I,
)
#: A quoted name: "x", “x”, `x`, ‘x’ or 'x' (an apostrophe inside a word, as in o'brien, is no quote).
_QUOTE = re.compile(r"\"([^\"]{1,60})\"|“([^”]{1,60})”|`([^`]{1,60})`|‘([^’]{1,60})’|(?<!\w)'([^']{1,60})'(?!\w)")


def _qtext(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g is not None)


def _units(steps_text: str) -> list[str]:
    raw = steps_text.splitlines()
    lines = [ln for ln in raw if ln.strip()]
    if any(_ITEM.match(ln) for ln in lines):
        items: list[str] = []
        after_blank = False
        for ln in raw:
            if not ln.strip():
                after_blank = True
            elif _ITEM.match(ln):
                items.append(_ITEM.sub("", ln))
                after_blank = False
            elif items and not after_blank:
                items[-1] += " " + ln.strip()  # a wrapped item; after a blank line the text is no item's
        return items
    return [" ".join(lines)]


def _protect_quotes(text: str) -> tuple[str, list[str]]:
    """Replace quoted strings with placeholders so punctuation inside them does not split clauses."""
    saved: list[str] = []

    def keep(m: re.Match[str]) -> str:
        saved.append(_qtext(m))
        return f"\x00{len(saved) - 1}\x00"

    return _QUOTE.sub(keep, text), saved


def _restore(text: str, saved: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: f"`{saved[int(m.group(1))]}`", text)


def clauses(steps_text: str) -> list[str]:
    """The report's step clauses in order: list items, then sentences and "then"/"and <verb>" clauses."""
    out: list[str] = []
    for unit in _units(steps_text):
        protected, saved = _protect_quotes(unit)
        for piece in _THEN.split(join_labels(protected)):
            for sub in _and_verb_split(piece):
                sub = _restore(sub, saved).strip(" ,.")
                if sub:
                    out.append(sub)
    return out


@cache
def _and_verb_pattern() -> re.Pattern[str]:
    heads = {v.split()[0] for v in _VERBS}
    for phrase, _ in _phrases():
        head = phrase.split()[0].lower()
        heads |= {head, past_tense(head)}
    alternatives = "|".join(sorted((re.escape(h) for h in heads), key=len, reverse=True))
    return re.compile(r",?\s+and\s+(?=(?:" + alternatives + r")\b)|,\s+(?=(?:" + alternatives + r")\b)", re.I)


def _and_verb_split(text: str) -> list[str]:
    """ "click X and type Y" or "click X, save" is two steps; "salt and pepper" is not (no verb after it)."""
    return _and_verb_pattern().split(text)


# --- verbs ----------------------------------------------------------------------------------------------------

#: Verb phrase -> action; longest match wins, so "go back" beats "go to" and "long press" beats "press".
_VERBS: dict[str, str] = {
    **dict.fromkeys(
        [
            *("click", "tap", "press", "hit", "push", "select", "choose", "pick", "check", "uncheck", "toggle"),
            *("open", "expand", "collapse", "submit"),
            *("go to", "navigate to", "switch to"),
        ],
        "click",
    ),
    **dict.fromkeys(["type", "enter", "input", "fill", "fill in", "write", "put", "set", "change"], "input"),
    **dict.fromkeys(["scroll", "scroll down", "scroll up", "swipe"], "scroll"),
    **dict.fromkeys(["go back", "navigate back", "press back", "hit back", "back"], "back"),
    **dict.fromkeys(
        ["long press", "long-press", "long tap", "long-tap", "long click", "press and hold", "hold"], "long_click"
    ),
    **dict.fromkeys(["rotate", "resize", "shrink", "make the window"], "resize"),
    **dict.fromkeys(["restart", "reload", "refresh", "relaunch", "reopen", "close and reopen"], "restart"),
}
#: Verbs that are also the name of the button that does them: "save" is a click on Save, "delete the note" on
#: Delete. (Not "search": "search for X" types X.)
_BUTTON_VERBS = (
    "save",
    "submit",
    "confirm",
    "cancel",
    "delete",
    "remove",
    "add",
    "send",
    "apply",
    "update",
    "upload",
    "download",
    "export",
    "import",
    "share",
    "sign in",
    "log in",
    "login",
    "log out",
    "logout",
    "sign out",
    "sign up",
    "register",
    "continue",
    "retry",
    "undo",
    "edit",
    "print",
    "checkout",
    "check out",
)
_VERBS.update({v: "click" for v in _BUTTON_VERBS if v not in _VERBS})
_IRREGULAR = {"go": "went", "choose": "chose", "write": "wrote", "hit": "hit", "put": "put", "set": "set"}


def past_tense(verb: str) -> str:
    """The simple past of a (regular or common irregular) verb: reports tell what the user did."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", verb):  # tap -> tapped, flip -> flipped
        return verb + verb[-1] + "ed"
    return verb + "ed"


def gerund(verb: str) -> str:
    """The -ing form: "clicking X gives an error" names the step too."""
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", verb):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _with_past(table: dict[str, str]) -> dict[str, str]:
    out = dict(table)
    for phrase, action in table.items():
        head, _, tail = phrase.partition(" ")
        for form in (past_tense(head), gerund(head)):
            out.setdefault(" ".join([form, tail]).strip(), action)
    return out


_VERBS = _with_past(_VERBS)
_LEAD = re.compile(
    r"^(?:(?:i|you|we|user|the user|just|now|please|first|firstly|also|once more|again|simply)\s+)+", re.I
)
#: Opening the app or its page is where every run starts, not a step.
_START = re.compile(
    r"^(?:open|go to|navigate to|visit|launch|start|load|browse to)\s+(?:the\s+)?(?:app|application|site|website|"
    r"page|web ?page|home ?page|url|main page|start page|http\S*|localhost\S*)\b",
    re.I,
)
_TRAILING = re.compile(
    r"\s+(?:on|in|at|from|of|inside|within|under|near)\s+(?:the\s+)?(?:top|bottom|left|right|header|footer|"
    r"sidebar|toolbar|page|screen|menu|nav\w*|corner|form|dialog|list|main \w+|home \w+|\w+ (?:page|screen|bar|"
    r"menu|section))\b.*$"
    # Where the element is, as the clause's last words: "dark mode in settings", "Save under Account".
    r"|\s+(?:in|on|under|inside|within)\s+(?:the\s+)?\w+(?:\s+(?:page|screen|tab|menu|section|dialog|panel))?$",
    re.I,
)


@cache
def _verb_pattern() -> re.Pattern[str]:
    alternatives = "|".join(re.escape(v) for v in sorted(_VERBS, key=len, reverse=True))
    # A verb starts the clause, or follows a comma or a word that opens an action ("so I typed", "when clicking").
    return re.compile(
        r"(?:^|[,:!?]\s*|\b(?:i|you|we|they|then|so|and|when|after|if|by|while|just)\s+)(?P<verb>"
        + alternatives
        + r")(?=\s|$)",
        re.I,
    )


def _match_verb(clause: str) -> tuple[str, str] | None:
    """The (verb phrase, rest) of the first known verb in a clause."""
    m = _verb_pattern().search(clause)
    if m is None:
        return None
    return m.group("verb").lower(), clause[m.end() :].strip()


def _clean_target(text: str) -> str:
    """The element's name from a noun phrase: no article, widget word, trailing place or purpose."""
    text = _TRAILING.sub("", text.strip(" .,:"))
    text = re.split(r"\s+(?:to|so that|so|in order to|which|that|and see|and notice)\s+", text, maxsplit=1)[0]
    ws = text.split()
    while ws and ws[0].lower() in ("the", "a", "an", "on", "my", "your", "its", "this", "that", "some"):
        ws = ws[1:]
    while len(ws) > 1 and ws[-1].lower().strip(".,") in WIDGET_WORDS:
        ws = ws[:-1]
    return " ".join(ws).strip(" .,\"'")


def _quoted(text: str) -> list[str]:
    return [q for q in (_qtext(m).strip() for m in _QUOTE.finditer(text)) if q]


def _input_parts(rest: str) -> tuple[str, str]:
    """(target, value) of an input clause: `"5" in the quantity field`, `quantity to 5`, `the name with Bob`."""
    quoted = _quoted(rest)
    m = re.match(r"^(?P<value>.+?)\s+(?:in|into|as|for|in the|inside)\s+(?P<target>.+)$", rest, re.I)
    if m and (not quoted or quoted[0] in m.group("value")):
        value = _quoted(m.group("value"))
        return _clean_target(m.group("target")), value[0] if value else m.group("value").strip(" \"'")
    m = re.match(r"^(?P<target>.+?)\s+(?:to|with|as|=)\s+(?P<value>.+)$", rest, re.I)
    if m:
        value = _quoted(m.group("value"))
        return _clean_target(m.group("target")), value[0] if value else m.group("value").strip(" .\"'")
    if quoted:
        return _clean_target(_QUOTE.sub("", rest)), quoted[0]
    return _clean_target(rest), ""


#: Where the step's own words end: what follows is what happened ("..., and it says X", "... although ...").
_TAIL = re.compile(
    r"\s*,\s*|\s+(?:i|we|it|and|but|although|though|because|which|so|while|without|with no|leaving|gives?|shows?|says|"
    r"throws?|returns?|crashes|fails|causes?|results? in|leads? to)\s+",
    re.I,
)


def _step_from(action: str, rest: str, verb: str = "") -> Step | None:
    if action in ("back", "restart"):
        return Step(action)
    if action == "scroll":
        direction = "up" if re.search(r"\bup\b", rest, re.I) else "down"
        return Step("scroll", "", direction)
    if action == "resize":
        size = re.search(r"(\d{3,4})\s*[x×]\s*(\d{3,4})", rest)
        landscape = re.search(r"landscape|rotat", f"{verb} {rest}", re.I)
        return Step(
            "resize", "", f"{size.group(1)}x{size.group(2)}" if size else ("landscape" if landscape else "narrow")
        )
    if action == "input":
        target, value = _input_parts(rest)
        return Step("input", target, value) if target else None
    rest = _TAIL.split(rest, maxsplit=1)[0]
    rest, near = beside(rest)
    head, within = scope(rest)
    quoted = _quoted(head)
    target = quoted[0] if quoted else _clean_target(head)
    return Step(action, target, within=within, near=near) if target else None


# --- the example base and retrieval ------------------------------------------------------------------------------


@cache
def examples() -> tuple[dict[str, Any], ...]:
    """The annotated example reports shipped with the package."""
    text = resources.files("agents.app").joinpath("data/s2r_examples.json").read_text()
    return tuple(json.loads(text))


class _Index:
    """BM25 over a list of texts."""

    def __init__(self, texts: list[str]) -> None:
        self.bm25 = BM25Okapi([words(t) or ["_"] for t in texts])

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(index, score) of the `k` best texts with a positive score."""
        scores = self.bm25.get_scores(words(query) or ["_"])
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [(i, float(scores[i])) for i in ranked if scores[i] > 0]


@cache
def _report_index() -> _Index:
    return _Index([e["report"] for e in examples()])


@cache
def _phrases() -> tuple[tuple[str, str], ...]:
    return tuple((s["phrase"], s["action"]) for e in examples() for s in e["steps"] if s.get("phrase"))


@cache
def _phrase_index() -> _Index:
    return _Index([p for p, _ in _phrases()])


def retrieve(report: str, k: int = 3) -> list[dict[str, Any]]:
    """The `k` annotated examples most similar to `report` (BM25 over their text)."""
    return [examples()[i] for i, _ in _report_index().top(report, k)]


def _action_by_example(clause: str) -> tuple[str, str] | None:
    """(action, rest) for a clause whose first word an annotated example step also starts with."""
    first = clause.split()[0].lower() if clause.split() else ""
    for i, _score in _phrase_index().top(clause, 5):
        phrase, action = _phrases()[i]
        head = phrase.split()[0].lower()
        if first in (head, past_tense(head)):
            return action, clause[len(first) :].strip()
    return None


def _base_verb(phrase: str) -> str:
    """The base form of a verb phrase from the table ("saved" -> "save", "logging in" -> "log in")."""
    head, _, tail = phrase.partition(" ")
    for verb in _BUTTON_VERBS:
        vh, _, vt = verb.partition(" ")
        if vt == tail and head in (vh, past_tense(vh), gerund(vh)):
            return verb
    return phrase


_NAV_HEADS = frozenset(f for v in ("open", "go", "navigate", "visit") for f in (v, past_tense(v), gerund(v)))


#: After a verb-looking word, these make it the sentence's subject: "login is broken", "export fails".
_SUBJECT = re.compile(
    r"^(?:is|are|was|were|does|doesn't|did|didn't|has|had|fails?|failed|breaks?|broke|crashes|hangs|"
    r"throws|returns|gives|shows|not|never|no longer|button (?:is|does)|page (?:is|does)|\d+s)\b",
    re.I,
)
#: Form fields a report gives as `field: value` ("user: o'brien pass: hunter2", "email = a@b.c").
_FIELDS = (
    "username|user name|user|login|e-mail|email|password|passwd|pass|pw|pin|name|first name|last name|phone|"
    "zip|postcode|code|amount|quantity|qty|query|search|coupon|promo code"
)
_FIELD_VALUE = re.compile(rf"(?<![\w-])(?P<field>{_FIELDS})\s*[:=]\s*(?P<value>`[^`]+`|\"[^\"]+\"|[^\s,;]+)", re.I)


def _field_values(clause: str) -> list[Step]:
    """`field: value` pairs of a clause as input steps, in order."""
    steps = []
    for m in _FIELD_VALUE.finditer(clause):
        value = m.group("value").strip('`"')
        steps.append(Step("input", m.group("field").lower(), value))
    return steps


def extract_rules(report_text: str) -> list[Step]:
    """The offline extractor: rules, with the example base for verbs the rules do not know."""
    report = split_report(report_text)
    steps: list[Step] = []
    for clause in clauses(report.steps_text):
        clause = _moves(_LEAD.sub("", clause).strip(), steps)
        clause, times = repetition(clause)
        clause = _LEAD.sub("", clause).strip()
        if not clause:
            continue
        step = _clause_step(clause)
        if isinstance(step, list):
            steps += step
        elif step is not None:
            steps.append(replace(step, repeat=times) if times != 1 else step)
    steps = _reuse_values(steps)
    for name in pressed_in_outcome(f"{report.expected}\n{report.actual}"):
        if not any(s.action == "click" and similarity(s.target, name) >= 0.8 for s in steps):
            steps.append(Step("click", name))  # "Expected: my list after pressing Next": Next was pressed last
    return steps


def _reuse_values(steps: list[Step]) -> list[Step]:
    """A field named again without a value ("entered the current PIN") gets the value typed into it before."""
    out: list[Step] = []
    for step in steps:
        if step.action == "input" and step.target and not step.input:
            wanted = set(core_words(step.target))
            earlier = [s for s in out if s.action == "input" and s.input and s.target]
            same = [s for s in earlier if set(core_words(s.target)) <= wanted]
            if same:
                step = replace(step, input=same[-1].input)
        out.append(step)
    return out


def _moves(clause: str, steps: list[Step]) -> str:
    """Append the navigation steps a clause begins with (where the user is, "go to X"); returns the rest."""
    moved = navigation(clause) or whereabouts(clause)
    while moved is not None and clause:  # "go to X and visit Y": every move of the clause, in order
        steps.append(Step("navigate", moved[0], opens=True))
        clause = _LEAD.sub("", moved[1]).strip()
        moved = navigation(clause) or whereabouts(clause)
    if _START.match(clause):
        steps.append(Step("navigate", "", opens=True))
        return ""
    page = bare_page(clause) if _match_verb(clause) is None else None
    if page is not None:
        steps.append(Step("navigate", page, opens=True))
        return ""
    return clause


def _clause_step(clause: str) -> Step | list[Step] | None:
    """The step of one clause (or its `field: value` inputs), None when it names none."""
    purpose = purpose_steps(clause)
    if purpose is not None:
        return [Step(action, target, value) for action, target, value in purpose]
    labelled = [Step(a, t, v) for a, t, v in labelled_values(clause)]
    pairs = max(_field_values(clause), labelled, key=len)  # the reading that finds more of the clause's values
    if pairs:
        return pairs
    found = _match_verb(clause)
    if found and _SUBJECT.match(found[1]):
        found = None  # "checkout is broken": the word is what the sentence is about, not an order
    action, rest = (_VERBS[found[0]], found[1]) if found else (None, "")
    if action is None:
        by_example = _action_by_example(clause)
        if by_example is None:
            return None
        action, rest = by_example
    if found and found[0] in ("go to", "navigate to", "switch to", "open") and re.match(r"^back\b", rest, re.I):
        action = "back"
    step = _step_from(action, rest, found[0] if found else "")
    if found and _base_verb(found[0]) in _BUTTON_VERBS and (step is None or not _quoted(rest)):
        # The verb names the button; what follows (when short) may name it further: "add to cart".
        words_after = _clean_target(_TAIL.split(rest, maxsplit=1)[0]).split()
        tail = " ".join(words_after) if len(words_after) <= 2 else ""
        step = Step("click", f"{_base_verb(found[0])} {tail}".strip())
    if step is not None and found and found[0].split()[0] in _NAV_HEADS:
        step = replace(step, opens=True)
    return step


# --- the model extractor -----------------------------------------------------------------------------------------

_SYSTEM = (
    "You turn a bug report about an app into the ordered steps a tester performs to reproduce it. "
    "Answer with a JSON array only. Each item is an object with keys action, target, input. "
    f"action is one of: {', '.join(ACTIONS)}. target is the visible text or label of the element acted on "
    "(empty for back, scroll, resize, restart; for navigate the page's name, empty for the app's first page). "
    "Add repeat (a number) when the report says to do it several times, and within when it names the menu, "
    "dropdown or part of the page the target is in. input is the text typed for input steps, a direction for scroll, "
    "and empty otherwise. Leave out opening the app: every run starts on its first screen."
)


def _few_shot(report_text: str, k: int) -> list[dict[str, str]]:
    messages: list[dict[str, str]] = []
    for ex in retrieve(report_text, k):
        steps = [
            {"action": s["action"], "target": s.get("target", ""), "input": s.get("input", "")} for s in ex["steps"]
        ]
        messages += [{"role": "user", "content": ex["report"]}, {"role": "assistant", "content": json.dumps(steps)}]
    return messages


def parse_steps(reply: str) -> list[Step]:
    """Steps from a model's reply (a JSON array, possibly fenced); ValueError says what is invalid."""
    text = reply.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fence:
        text = fence.group(1)
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        raise ValueError("the answer has no JSON array")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the array is not valid JSON: {exc}") from None
    steps = []
    for i, item in enumerate(data, 1):
        try:
            steps.append(Step.from_json(item))
        except ValueError as exc:
            raise ValueError(f"step {i}: {exc}") from None
    if not steps:
        raise ValueError("the array is empty")
    return steps


async def extract_llm(report_text: str, complete: Complete, *, k: int = 3, attempts: int = 2) -> list[Step]:
    """The model extractor: retrieved examples as few-shot context; invalid output is fed back once."""
    messages = [
        {"role": "system", "content": _SYSTEM},
        *_few_shot(report_text, k),
        {"role": "user", "content": report_text},
    ]
    for _ in range(attempts):
        answer = complete(messages)
        reply = await answer if inspect.isawaitable(answer) else answer
        try:
            return parse_steps(reply)
        except ValueError as exc:
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": f"That answer is invalid ({exc}). Answer with the JSON array only."},
            ]
    raise ValueError("the model gave no valid steps")


async def extract_steps(report_text: str, complete: Complete | None = None) -> tuple[list[Step], str]:
    """(steps, extractor): the model's steps when a model is given and answers validly, else the rules'."""
    if complete is not None:
        try:
            return await extract_llm(report_text, complete), "llm"
        except ValueError:
            pass
    return extract_rules(report_text), "rules"


def step_matches(got: Step, truth: Step) -> bool:
    """Whether an extracted step is the ground-truth one: same action, similar target, same input."""
    if got.action != truth.action:
        return False
    if truth.target and similarity(got.target, truth.target) < 0.5:
        return False
    return not truth.input or got.input.strip().lower() == truth.input.strip().lower()

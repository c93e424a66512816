"""The oracle: when does a run count as reproducing the report.

It fires on an uncaught page error, a console error, an HTTP 5xx, an Android crash or ANR, or when the text the
report calls "actual" is on screen where the "expected" text was promised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.app.driver import Signal
from agents.app.s2r import Report

_QUOTED = re.compile(r"[\"“”'‘’`]([^\"“”'‘’`]{1,120})[\"“”'‘’`]")
#: Words that describe the outcome rather than quote it ("it shows", "is displayed").
_FILLER = re.compile(
    r"\b(?:it|the|page|screen|app|shows?|showing|displays?|displayed|says|reads|is|are|was|were|still|instead|"
    r"appears?|text|label|message|value|becomes?|got|get|i|see|we)\b",
    re.I,
)
SIGNAL_KINDS = ("page_error", "console_error", "http_5xx", "crash", "anr")


@dataclass(frozen=True)
class OracleSpec:
    """The report's promised (expected) and observed (actual) text snippets."""

    expected: tuple[str, ...] = ()
    actual: tuple[str, ...] = ()
    signals: tuple[str, ...] = SIGNAL_KINDS

    def to_json(self) -> dict[str, object]:
        """The spec as JSON (it travels in the action log so a replay judges the same way)."""
        return {"expected": list(self.expected), "actual": list(self.actual), "signals": list(self.signals)}

    @classmethod
    def from_json(cls, data: object) -> OracleSpec:
        """A spec from its JSON; missing keys take the defaults."""
        if not isinstance(data, dict):
            return cls()
        return cls(
            tuple(str(x) for x in data.get("expected") or ()),
            tuple(str(x) for x in data.get("actual") or ()),
            tuple(str(x) for x in data.get("signals") or SIGNAL_KINDS),
        )


def _snippets(text: str) -> tuple[str, ...]:
    """The quoted strings of a part; a short unquoted part counts as a whole once filler words are gone."""
    quoted = [q.strip() for q in _QUOTED.findall(text) if q.strip()]
    if quoted:
        return tuple(quoted)
    rest = " ".join(_FILLER.sub(" ", text).split()).strip(" .,:;!")
    return (rest,) if rest and len(rest.split()) <= 4 else ()


def oracle_spec(report: Report) -> OracleSpec:
    """The text oracle's snippets from the report's expected and actual parts."""
    return OracleSpec(expected=_snippets(report.expected), actual=_snippets(report.actual))


def _shown(snippet: str, text: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(snippet.lower()) + r"(?![\w])", text.lower()) is not None


@dataclass
class Verdict:
    """What fired, with its evidence."""

    kind: str
    message: str
    step: int
    evidence: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The oracle field of the result."""
        return {"fired": self.kind, "message": self.message, "step": self.step, "evidence": self.evidence}


def judge_signals(signals: list[Signal], spec: OracleSpec, step: int) -> Verdict | None:
    """The first error signal the spec counts, if any (none raised after the confinement blocked a script)."""
    for signal in signals:
        if signal.detail.get("after_blocked_script"):
            continue  # a script of another host was kept out: its absence, not the app, may have raised it
        if signal.kind in spec.signals:
            return Verdict(signal.kind, signal.message, step, {"signal": signal.to_json()})
    return None


def judge_text(
    text: str,
    initial_text: str,
    spec: OracleSpec,
    step: int,
    typed: frozenset[str] = frozenset(),
    before: str = "",
) -> Verdict | None:
    """The report's actual text is shown and its expected text is not.

    With no expected text, the actual text must be new since the first screen, so a word the app always shows
    (a heading, a label) does not count as the bug. Likewise an expected text counts as shown only outside the
    actual text ("Everyone" inside "Everyone but Carol") and only when it is new since the first screen and
    since the screen `before` the action: a column header or an older row that says it all along is not the
    expected result showing. Text the agent typed itself (`typed`, lower case) is no evidence of what the app
    does.
    """
    for snippet in spec.actual:
        if snippet.lower() in typed or not _shown(snippet, text):
            continue
        rest = _without(text, snippet)
        seen = f"{initial_text}\n{before}"
        if spec.expected and any(_shown(e, rest) and not _shown(e, seen) for e in spec.expected):
            continue
        if not spec.expected and _shown(snippet, initial_text):
            continue
        excerpt = _excerpt(text, snippet)
        return Verdict(
            "wrong_text",
            f"shows {snippet!r} where the report expected {', '.join(map(repr, spec.expected)) or 'something else'}",
            step,
            {"actual": snippet, "expected": list(spec.expected), "excerpt": excerpt},
        )
    return None


def _without(text: str, snippet: str) -> str:
    """The text with every occurrence of snippet cut out (case-insensitive)."""
    return re.sub(re.escape(snippet), " ", text, flags=re.I)


def _excerpt(text: str, snippet: str, width: int = 80) -> str:
    i = text.lower().find(snippet.lower())
    return " ".join(text[max(0, i - width) : i + len(snippet) + width].split())

"""Text similarity for matching a step's target to an element, and a step to a ground-truth step."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

_WORD = re.compile(r"[a-z0-9]+")
#: Words that name the kind of widget, not which one: "the Save button" and "Save" are the same target.
WIDGET_WORDS = frozenset(
    [
        *("button", "btn", "link", "tab", "icon", "menu", "item", "field", "box", "input", "checkbox", "check"),
        *("radio", "option", "dropdown", "list", "entry", "textbox", "text", "area", "page", "screen", "dialog"),
        *("popup", "toggle", "switch"),
    ]
)
_STOP = frozenset(["the", "a", "an", "on", "in", "into", "at", "of", "to", "for", "my", "your", "this", "that", "its"])


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _WORD.findall(text.lower())


def core_words(text: str) -> list[str]:
    """The words that identify a target: no articles, prepositions or widget-kind words.

    A name made of widget words only ("Menu", "Search box") keeps them: then they are the name.
    """
    content = [w for w in words(text) if w not in _STOP]
    return [w for w in content if w not in WIDGET_WORDS] or content


def similarity(a: str, b: str) -> float:
    """How alike two names are, 0..1: word overlap, with a character ratio for near-misses ("Log in" / "Login")."""
    wa, wb = core_words(a), core_words(b)
    if not wa or not wb:
        return 0.0
    sa, sb = set(wa), set(wb)
    # A word and its abbreviation are the same word: "pass" / "password", "user" / "username".
    sa = {next((b for b in sb if min(len(w), len(b)) >= 4 and (b.startswith(w) or w.startswith(b))), w) for w in sa}
    overlap = len(sa & sb) / len(sa | sb)
    contained = 0.9 if sa <= sb or sb <= sa else 0.0
    chars = SequenceMatcher(None, "".join(wa), "".join(wb)).ratio()
    return max(
        overlap, contained * min(1.0, len(sa & sb) / max(1, min(len(sa), len(sb)))), chars if chars > 0.85 else 0
    )


#: Words that name a part of a page rather than which one: "the price column" is the part called price.
PART_WORDS = frozenset(
    ["column", "row", "section", "panel", "card", "table", "group", "entry", "header", "toolbar", "sidebar", "area"]
)


def coverage(phrase: str, text: str) -> float:
    """The share of the phrase's naming words found in `text`, 0..1 ("price column" in "Price | Filter": 1.0).

    It scores where an element sits against the part a step names: the part's words, not its kind, must be there.
    """
    wanted = [w for w in core_words(phrase) if w not in PART_WORDS]
    have = set(words(text))
    if not wanted or not have:
        return 0.0
    found = sum(1 for w in wanted if w in have or any(len(w) >= 4 and h.startswith(w) for h in have))
    return found / len(wanted)

"""Reading rules for forms named by their purpose, and for values a report gives beside a field's label.

Each rule names a general pattern of how people write steps, with a made-up example; none is written for one
report:

- A form named by what it does ("log in to the shop "acme" with the PIN "1234"", "signed in as dana (password
  tulip)", "while logged in to my account (dana / tulip)", "register with the email a@b.c") means filling the
  form's fields with the values the report gives and submitting it. A quoted value is typed, not clicked; the
  words before it name its field ("the PIN"); a value with no field name fills the form's next field.
- A state phrase ("while logged in ...", "after signing in as ...") implies the same steps.
- A label and a value side by side ("Title? "Milk", Amount: "2"") type the value into the labelled field.
- A press named only in the expected or actual part ("Expected: the dashboard after pressing Continue") is the
  last step: the report says it was done.
- A field named again without a value ("entered the current PIN") takes the value an earlier step typed into
  a field of that name.

The functions return (action, target, input) triples; `agents.app.s2r` turns them into steps.
"""

from __future__ import annotations

import re

#: The purpose verbs and the name of the control that submits such a form.
_PURPOSES = (
    (r"log(?:s|ged|ging)?\s*in(?:to)?|login", "log in"),
    (r"sign(?:s|ed|ing)?\s+in(?:to)?", "sign in"),
    (r"sign(?:s|ed|ing)?\s+up", "sign up"),
    (r"regist(?:er|ers|ered|ering)", "register"),
    (r"creat(?:e|es|ed|ing)", "create"),
)
_PURPOSE = re.compile(
    r"^(?:(?:while|when|after|once|as|since|being|i|i'm|i\s+am|i\s+was|we|we're|i've|i\s+have|having|been|"
    r"first|just|am|was|still|now)\s+)*(?P<verb>" + "|".join(f"(?:{p})" for p, _ in _PURPOSES) + r")\b(?P<rest>.*)$",
    re.I,
)
#: Where the form's part of a clause ends: what follows is about something else ("..., which has 3 bills").
_END = re.compile(r",\s*(?:which|who|that|where|since|because|but|although|so)\b|\s+(?:and\s+)?then\s+", re.I)
_QUOTED = re.compile(r"`([^`]{1,60})`|\"([^\"]{1,60})\"|“([^”]{1,60})”")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: Words between values that name no field: "with the", "and a", "to our".
_FILLER = frozenset(
    ["to", "into", "in", "with", "and", "the", "a", "an", "my", "our", "your", "their", "its", "as", "using", "of"]
)
#: A field that takes who the user is; "log in as X" types X there.
_IDENTITY = "username"


def _name_of(words: str) -> str:
    """The field a run of words names: its last words after the fillers ("to the project" -> "project")."""
    kept: list[str] = []
    for w in reversed(re.findall(r"[\w?-]+", words)):
        if w.lower() in _FILLER:
            if kept:
                break
            continue
        kept.insert(0, w)
        if len(kept) == 3:
            break
    return " ".join(kept)


def _paren_values(inner: str) -> list[tuple[str, str]]:
    """(field, value) pairs in parentheses: "(password tulip)", "(PIN "1234")" or "(dana / tulip)".

    Values without a field name ("my account (dana / tulip)") fill the form's fields in order: the noun before
    them names what is logged in to, not a field."""
    quoted = _QUOTED.search(inner)
    if quoted:
        return [(_name_of(inner[: quoted.start()]), next(g for g in quoted.groups() if g))]
    named = re.fullmatch(r"\s*(?P<n>[a-z][\w ]{0,20}?)\s*[:=]?\s+(?P<v>\S+)\s*", inner, re.I)
    if named and "/" not in inner:
        return [(named.group("n"), named.group("v"))]
    parts = [p.strip(" `\"'") for p in re.split(r"\s*[/,]\s*|\s+and\s+", inner) if p.strip()]
    return [("", p) for p in parts if p and " " not in p]


def _values(rest: str) -> list[tuple[str, str]]:
    """The (field, value) pairs of a purpose clause's object, in order; "" is a field the value does not name."""
    pairs: list[tuple[str, str]] = []
    pos = 0
    token = re.compile(r"`[^`]{1,60}`|\"[^\"]{1,60}\"|“[^”]{1,60}”|\([^()]{1,80}\)|" + _EMAIL.pattern)
    as_user = re.match(r"^\s+as\s+(?P<v>[\w.@+-]+)", rest, re.I)
    if as_user:
        pairs.append((_IDENTITY, as_user.group("v")))
        pos = as_user.end()
    for m in token.finditer(rest, pos):
        before = rest[pos : m.start()]
        noun = _name_of(before) if before.strip(" ,") else ""
        text = m.group(0)
        if text.startswith("("):
            pairs += _paren_values(text[1:-1])
        else:
            pairs.append((noun, text.strip('`"“”')))
        pos = m.end()
    return pairs


def purpose_steps(clause: str) -> list[tuple[str, str, str]] | None:
    """The steps of a clause that names a form by its purpose and gives its values, else None.

    "log in to the shop `acme` with the PIN `1234`" -> input shop acme, input PIN 1234, click log in;
    "while signed in as dana (password tulip)" -> input username dana, input password tulip, click sign in.
    """
    m = _PURPOSE.match(clause.strip())
    if m is None:
        return None
    rest = _END.split(m.group("rest"), maxsplit=1)[0]
    pairs = _values(rest)
    if not pairs:
        return None
    verb = m.group("verb").lower()
    button = next(name for pattern, name in _PURPOSES if re.fullmatch(pattern, verb, re.I))
    return [("input", field, value) for field, value in pairs] + [("click", button, "")]


#: "Title? `Milk`", "Amount: `2`": a short label, a question mark or colon, a quoted value.
_LABELLED = re.compile(
    r"(?:^|,\s*|;\s*)(?P<label>[A-Za-z][\w'-]*(?:\s+[\w'-]+){0,3}?)\s*(?P<mark>\?:?|:)\s*`(?P<value>[^`]{1,60})`"
)


_OUTCOME = re.compile(
    r"\b(?:says?|shows?|reads?|displays?|prints?|gives?|returns?|message|error|warning|output|console|log|"
    r"expected|actual|result|see|saw|get|got)$",
    re.I,
)


def labelled_values(clause: str) -> list[tuple[str, str, str]]:
    """Input steps of a clause made of `Label? "value"` or `Label: "value"` pairs (quotes as backticks)."""
    out = []
    for m in _LABELLED.finditer(clause):
        if _OUTCOME.search(m.group("label")):
            continue  # "it says: "Oops"" quotes what the app shows, not what is typed
        label = m.group("label") + ("?" if m.group("mark").startswith("?") else "")
        out.append(("input", label, m.group("value")))
    return out


def join_labels(text: str) -> str:
    """ "Title? "Milk", Amount? "2"": a question mark that ends a label, not a sentence, before a quoted value.

    The clause splitter ends sentences at "? "; a label's mark is kept as "?:" so the pair stays one clause.
    """
    return re.sub(r"(\b[A-Za-z][\w'-]*)\?\s+(?=\x00\d+\x00)", r"\1?: ", text)


#: Names of the control that sends a form: when none is on the page right after a field was filled, the form's
#: own submit control is meant ("log in" on a form whose button says "Next").
SUBMIT_WORDS = frozenset(
    [
        "log",
        "login",
        "sign",
        "signin",
        "register",
        "create",
        "submit",
        "send",
        "save",
        "continue",
        "next",
        "ok",
        "search",
        "go",
        "enter",
        "confirm",
        "apply",
    ]
)


def submits(target: str) -> bool:
    """Whether a click's target names sending a form: "log in", "Sign up", "submit the form"."""
    first = re.findall(r"[a-z]+", target.lower())[:1]
    return bool(first) and first[0] in SUBMIT_WORDS


_PRESSED = re.compile(
    r"\b(?i:after|when|on|upon|by|once)\s+(?i:pressing|clicking|tapping|hitting|choosing|selecting|submitting)\s+"
    r"(?i:the\s+)?(?P<x>`[^`]{1,40}`|\"[^\"]{1,40}\"|“[^”]{1,40}”|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
)


def pressed_in_outcome(outcome: str) -> list[str]:
    """The controls the expected or actual part says were pressed: "the list after pressing Next" -> ["Next"]."""
    return [m.group("x").strip('`"“”') for m in _PRESSED.finditer(outcome)]

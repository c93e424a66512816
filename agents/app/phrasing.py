"""Reading rules for how a report moves through an app: navigation, where the user is, repetition, scope.

Each rule names a general pattern of how people write steps, with a made-up example; none is written for one
report:

- Navigation ("open the home page", "go to the invoices", "back to the list", "navigate to settings") is a move
  to a page of the app, not a click on a link that happens to share a word ("Acme home on GitHub").
- Where the user is ("I'm on the orders page of my shop", "On the profile screen, ...") is the page the run
  starts from.
- Repetition ("a few times", "3 times in a row", "twice", "keep clicking") repeats the step; a vague count
  repeats it until the oracle fires, within REPEAT_BOUND.
- Scope ("choose Large from the size dropdown", "the sort menu of the date column") names the control or the
  part of the page the target sits in, so the control is opened first and look-alikes elsewhere lose.

The functions return plain values; `agents.app.s2r` turns them into steps.
"""

from __future__ import annotations

import re

#: The most times a vaguely repeated step ("a few times", "keep clicking") is played before giving up.
REPEAT_BOUND = 10
_NUMBER_WORDS = {
    **{"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10},
    **{"twice": 2, "thrice": 3},
}
_REPEAT = re.compile(
    r",?\s*\b(?:(?P<n>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s*(?:x\b|times\b)|x\s?(?P<nx>\d{1,2})\b"
    r"|(?P<word>twice|thrice)\b"
    r"|(?P<vague>(?:a\s+few|a\s+couple\s+(?:of\s+)?|several|multiple|many|a\s+bunch\s+of|a\s+number\s+of|a\s+lot\s+of"
    r"|more\s+than\s+(?:once|one\s+time)|some)\s*times\b|again\s+and\s+again\b|over\s+and\s+over(?:\s+again)?\b"
    r"|repeatedly\b|in\s+quick\s+succession\b))"
    r"(?:\s+in\s+a\s+row\b|\s+quickly\b|\s+in\s+succession\b)?",
    re.I,
)
#: "keep clicking X", "kept pressing Save": the verb after it is repeated until something happens.
_KEEP = re.compile(r"^(?:keep|keeps|kept|keeping)\s+(?:on\s+)?(?=\w+ing\b)", re.I)


def repetition(clause: str) -> tuple[str, int]:
    """(the clause without its repetition words, how many times to play it: 1, N, or REPEAT_BOUND when vague).

    "Click Like 3 times" -> ("Click Like", 3); "hit Refresh a few times in a row" -> ("hit Refresh", 10);
    "I keep tapping Next" -> ("tapping Next", 10).
    """
    count = 1
    keep = _KEEP.match(clause)
    if keep:
        clause, count = clause[keep.end() :], REPEAT_BOUND
    m = _REPEAT.search(clause)
    if m:
        if m.group("n") or m.group("nx"):
            n = (m.group("n") or m.group("nx")).lower()
            count = int(n) if n.isdigit() else _NUMBER_WORDS[n]
        elif m.group("word"):
            count = _NUMBER_WORDS[m.group("word").lower()]
        else:
            count = REPEAT_BOUND
        clause = (clause[: m.start()] + " " + clause[m.end() :]).strip()
    return " ".join(clause.split()), max(1, min(count, REPEAT_BOUND))


#: Words naming the page as such; "the orders page" is the page called orders.
_PAGE_WORDS = r"(?:page|screen|view|website|web\s?site|site|web\s?page|homepage|tab|section|dashboard|listing|overview)"
#: A page name made of these means the app's first page: "the home page", "the Acme start page".
ROOT_WORDS = frozenset(
    [
        *("home", "homepage", "main", "start", "front", "landing", "index", "root", "app", "application", "site"),
        *("website", "webpage", "webapp"),
    ]
)
_URL = re.compile(r"(?:https?://[^/\s]+)?(?P<path>/[^\s`'\"]*)")
_NAV = re.compile(
    r"^(?:(?:go|goes|went|going|get|got|come|came|navigate|navigated|navigating|head|headed|heading|return|"
    r"returned|returning|switch(?:ed)?\s+back|jump(?:ed)?)\s+(?:over\s+|back\s+|straight\s+)?to|back\s+to|visit|visited|"
    r"visiting|browse\s+to|browsed\s+to|load|loaded|loading|open|opened|opening)\s+(?P<x>.+)$",
    re.I,
)
#: An address in a navigation phrase: a URL, or a path of the app ("/team/archive", not "and/or").
_ADDRESS = re.compile(r"https?://[^\s`'\"<>]+[\w/]|(?<![\w/.])/(?:[\w%~.-]+/?)+(?:\?[\w=&%.-]*)?")
_OPEN_VERBS = re.compile(r"^(?:open|opened|opening|load|loaded|loading)\b", re.I)
_WHERE = re.compile(
    r"^(?:(?:i'?m|i\s+am|am|i\s+was|was|we'?re|we\s+are|are|while|when|whilst|being|currently|still|now|user\s+is|"
    r"the\s+user\s+is|you\s+are|if\s+you\s+are|starting|start|i\s+start)\s+)*"
    r"(?:on|in|at|inside|from)\s+(?P<x>(?:the|my|our|your|a|an)\s+(?:[\w'-]+\s+){0,4}?" + _PAGE_WORDS + r")\b"
    r"(?P<rest>.*)$",
    re.I,
)
_BARE_PAGE = re.compile(r"^(?:the\s+)?(?P<x>(?:[\w'-]+\s+){1,3}?(?:page|screen|view))$", re.I)
#: Where a navigation's page name ends and the next step of the same clause begins.
_NEXT = re.compile(r",\s*|\s+(?:and|then|and then)\s+", re.I)
_ARTICLES = frozenset(["the", "a", "an", "my", "our", "your", "their", "its", "this", "that"])


def page_name(text: str) -> str:
    """The name of the page a phrase names: "" for the app's root, a "/path" for a path, else its words.

    "the Acme Shop home page" -> ""; "the orders page of my shop" -> "orders"; "back to /cart" -> "/cart";
    "the list" -> "list".
    """
    url = _URL.search(text)
    if url and (url.group(0).startswith("http") or text.strip(" `'\"").startswith("/")):
        path = url.group("path").rstrip(".,)")
        return "" if path in ("", "/") else path
    if re.search(r"https?://", text):
        return ""
    words = [w for w in re.findall(r"[\w'-]+", text.lower()) if w not in _ARTICLES]
    page = next((i for i, w in enumerate(words) if re.fullmatch(_PAGE_WORDS, w)), None)
    if page is not None:
        # The name is what comes before the page word ("orders page of my shop"), or the word itself ("dashboard").
        words = words[:page] or words[page : page + 1]
    words = [w for w in words if w not in ("of", "for", "in", "on")]
    if not words or any(w in ROOT_WORDS for w in words):
        return ""
    return " ".join(words)


def navigation(clause: str) -> tuple[str, str] | None:
    """(page name, the rest of the clause) when the clause moves to a page, else None.

    Navigation verbs ("go to", "navigate to", "visit", "back to", "return to") always move; "open" and "load"
    move only when a page is named ("open the billing page", not "open the filter menu").
    """
    m = _NAV.match(clause)
    if m is None:
        return None
    x = m.group("x").strip(" .,")
    if re.match(r"^back\b", x, re.I):
        return None  # "go back": the history's back, not a page
    # Up to the next move ("... and visit /b" is a move of its own); a comma may stand between ("an old link,
    # for example /team/archive").
    address = _ADDRESS.search(re.split(r"\s+(?:and|then|and then)\s+", x, maxsplit=1, flags=re.I)[0])
    if address:
        # "open an old bookmark to /team/archive": the address the phrase gives is the page, wherever it stands.
        after = _NEXT.split(x[address.end() :], maxsplit=1)
        return page_name(address.group(0)), after[1].strip() if len(after) > 1 else ""
    names_page = re.search(r"\b" + _PAGE_WORDS + r"\b|https?://|^/|^(?:the\s+)?(?:home|main|start)\b", x, re.I)
    if _OPEN_VERBS.match(clause) and not names_page:
        return None
    head, *rest = _NEXT.split(x, maxsplit=1)
    return page_name(head), rest[0].strip() if rest else ""


def whereabouts(clause: str) -> tuple[str, str] | None:
    """(page name, the rest) when a clause says which page the user is on, else None.

    "I'm on the orders page of my shop" -> ("orders", ""); "On the profile screen, click Edit" ->
    ("profile", "click Edit").
    """
    m = _WHERE.match(clause)
    if m:
        rest = m.group("rest").strip(" ,")
        # "... page of my shop" / "... page in the admin": the rest of the noun phrase, up to the next comma.
        if re.match(r"^(?:of|for|in|on|at|from|within)\b", rest, re.I):
            rest = _NEXT.split(rest, maxsplit=1)[1] if _NEXT.search(rest) else ""
        return page_name(m.group("x")), re.sub(r"^(?:and|then|and then)\s+", "", rest.strip(" ,"), flags=re.I)
    return None


def bare_page(clause: str) -> str | None:
    """The page a verbless clause names, as in arrow-separated steps: "Billing page -> Download" -> "billing".

    The caller checks there is no verb ("Reload the page" is a step, not a page)."""
    bare = _BARE_PAGE.match(clause.strip(" .,"))
    return page_name(bare.group("x")) if bare else None


_CONTROL_WORDS = (
    r"(?:menu|submenu|sub-menu|dropdown|drop-down|drop\s+down|select|selector|picker|listbox|list\s+box|combo\s?box|"
    r"popup|pop-up|popover|context\s+menu|options|choices)"
)
_IN_CONTROL = re.compile(
    r"^(?P<x>.+?)\s+(?:from|in|on|under|inside|within|of)\s+(?:the\s+|a\s+|an\s+|its\s+|this\s+)?"
    r"(?P<y>(?:[^,]+?\s+)?" + _CONTROL_WORDS + r"\b[^,]*)$",
    re.I,
)
_IN_PART = re.compile(
    r"^(?P<x>.+?)\s+(?:of|for|in|on|inside|within)\s+(?:the\s+|a\s+|an\s+)?"
    r"(?P<y>[^,]+?\s+(?:column|row|section|panel|card|table|group|entry|header|toolbar|sidebar|box))\b[^,]*$",
    re.I,
)


_BESIDE = re.compile(
    r"^(?P<x>.+?)\s+(?:(?:right\s+)?next\s+to|beside|alongside|in\s+the\s+(?:row|line)\s+(?:of|for)|"
    r"on\s+the\s+(?:row|line)\s+(?:of|for))\s+(?:the\s+)?(?P<y>[^,]+?)[\s.]*$",
    re.I,
)


def beside(rest: str) -> tuple[str, str]:
    """(the target phrase, what it sits next to) of a click's object; "" when the step names no neighbour.

    In lists every row has the same controls, and users tell them apart by the row: ""deactivate" next to
    Carol" -> ("\"deactivate\"", "Carol"); "the trash icon in the row of invoice 12" -> ("the trash icon",
    "invoice 12"). Quotes around the neighbour are dropped.
    """
    m = _BESIDE.match(rest)
    if m is None:
        return rest, ""
    return m.group("x"), m.group("y").strip().strip("\"'`“”")


def scope(rest: str) -> tuple[str, str]:
    """(the target phrase, the control or part it is in) of a click's object; the scope is "" when none is named.

    "Large from the size dropdown" -> ("Large", "size dropdown"); "the sort menu of the date column" ->
    ("the sort menu", "date column"); "Save" -> ("Save", "").
    """
    m = _IN_CONTROL.match(rest) or _IN_PART.match(rest)
    if m is None:
        return rest, ""
    y = " ".join(w for w in m.group("y").split() if w.lower() not in _ARTICLES)
    return m.group("x"), y


def control_of(within: str) -> tuple[str, str]:
    """(the control to open, the part it is in) of a scope: "filter menu of the price column" -> ("filter
    menu", "price column"); "size dropdown" -> ("size dropdown", "")."""
    m = _IN_PART.match(within)
    return (m.group("x"), m.group("y")) if m else (within, "")

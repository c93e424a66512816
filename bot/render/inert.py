"""Untrusted text made inert in GitHub markdown: what one tracker's users wrote, shown on another tracker's pages.

Everything the bot mirrors or quotes (a Mojira report on GitHub or Jira, an issue's title in a pull request) goes
through here, and renders as the text it was and nothing more:

- mentions (`@user`, `@org/team`) and issue references (`#12`, `org/repo#12`, `GH-12`) become code spans: GitHub
  neither notifies nor cross-references inside code. A backslash would not do: GitHub finds mentions in the
  rendered text, after the escapes are gone; a zero-width joiner is an invisible character, removed below;
- URLs become code spans, unless they point at one of the `hosts` the caller names (the tracker's own): those
  become autolinks;
- every other character markdown reads as markup (`\\`, `` ` ``, `<`, `>`, `[`, `]`, `&`, `|`, `~`, `$`, `#`) is
  backslash-escaped, which CommonMark honours for every ASCII punctuation character: no raw HTML, link, image,
  entity, table, math, heading or fence survives;
- bidi controls and invisible characters go through `clean_text`, and the bot's own markers are stripped;
- one-line fields stay one line; table cells escape `|`, inside code spans too (GFM reads `\\|` there).

Code the writer fenced or put in backticks stays code, re-fenced by the bot so that it cannot break out.
The Jira side is `bot.render.jira_wiki.markdown_to_jira`: it renders markdown as wiki markup and escapes all
literal text, so what is inert here is inert there too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sandboxes.text import clean_text, clean_title

__all__ = ["md_block", "md_cell", "md_code", "md_inline", "one_line", "plain", "strip_markers"]

#: The bot's own markers: GitHub's `<!-- reprobot:kind:ref -->` (clean_text drops the comment; a bare
#: `reprobot:mojira` is still a marker to a search) and Jira's `{anchor:reprobot-...}`.
_MARKERS = re.compile(r"\{anchor:\s*reprobot-[^}\n]*\}?|reprobot:[\w.:/#-]*", re.I)
_SPACES = re.compile(r"\s+")
#: What markdown would read as markup in running text (`*` and `_` only make emphasis, which is harmless).
_ESCAPED = re.compile(r"[\\`<>\[\]&|~$#]")
_TOKEN = re.compile(
    r"(?P<code>(?P<ticks>`+)(?P<body>.+?)(?<!`)(?P=ticks)(?!`))"
    r"|(?P<url>(?:\b[a-z][a-z0-9+.-]*://|\b(?:mailto|xmpp):|\bwww\.)\S*)"
    r"|(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
    r"|(?P<mention>@[a-z0-9][\w-]*(?:/[\w.-]+)?)"
    r"|(?P<ref>(?:\b[\w.-]+/[\w.-]+)?#\d+\b|\bGH-\d+\b)",
    re.I,
)
#: A URL the bot links only when it is this plain: a host, a port, a path, nothing a browser reads differently.
_PLAIN_URL = re.compile(r"https?://(?P<host>[a-z0-9.-]+)(?::\d{1,5})?(?:[/?#][^\s\\<>\"'`|\[\]{}]*)?", re.I)
_TRAILING = ".,;:!?)'\""
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
#: A line that would underline the paragraph above into a heading, or be a rule.
_SETEXT_OR_RULE = re.compile(r"^\s*([=*_-])[=*_\s-]*$")


def strip_markers(text: str) -> str:
    """`text` without anything that reads as one of the bot's markers (until none is left: no nesting trick)."""
    while True:
        stripped = _MARKERS.sub("", text)
        if stripped == text:
            return text
        text = stripped


def plain(text: str) -> str:
    """What the reader sees of `text`: invisible characters and hidden parts removed (clean_text), markers too."""
    return strip_markers(clean_text(strip_markers(text)))


def one_line(text: str, limit: int = 240) -> str:
    """A one-line field that no tracker renders as markup (an issue title, a Jira summary): plain, one line."""
    return clean_title(plain(text), limit)


def md_code(text: str, *, cell: bool = False) -> str:
    """`text` as one inline code span that no backtick in it can close; in a table cell, `|` escaped as well."""
    text = text.replace("\n", " ")
    if not text:
        return ""
    if cell:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _allowed(url: str, hosts: frozenset[str]) -> bool:
    match = _PLAIN_URL.fullmatch(url)
    return match is not None and match.group("host").lower() in hosts


def _token(match: re.Match[str], hosts: frozenset[str], cell: bool) -> str:
    """One token of `_TOKEN`, made inert: a code span (re-emitted), an autolink to an allowed host, or code."""
    if match.group("code") is not None:
        return md_code(match.group("body"), cell=cell)
    url = match.group("url")
    if url is not None:
        link = url.rstrip(_TRAILING)
        tail = _escape(url[len(link) :])
        return (f"<{link}>" if _allowed(link, hosts) else md_code(link, cell=cell)) + tail
    return md_code(match.group(0), cell=cell)


def _escape(text: str) -> str:
    return _ESCAPED.sub(lambda m: "\\" + m.group(0), text)


def _inline(text: str, hosts: frozenset[str], cell: bool = False) -> str:
    """One line of untrusted text as markdown that renders as that text (see the module docstring)."""
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        out.append(_escape(text[pos : match.start()]))
        out.append(_token(match, hosts, cell))
        pos = match.end()
    out.append(_escape(text[pos:]))
    return "".join(out)


def _hosts(hosts: Iterable[str]) -> frozenset[str]:
    return frozenset(host.lower() for host in hosts)


def md_inline(text: str, hosts: Iterable[str] = ()) -> str:
    """Untrusted text for one line of markdown (a heading, a list item, after a label): inert, on one line."""
    return _inline(_SPACES.sub(" ", plain(text)).strip(), _hosts(hosts))


def md_cell(text: str, hosts: Iterable[str] = ()) -> str:
    """Untrusted text for one cell of a markdown table: inert, one line, every `|` escaped."""
    return _inline(_SPACES.sub(" ", plain(text)).strip(), _hosts(hosts), cell=True)


def _fenced(body: list[str], info: str) -> list[str]:
    """A fenced code block with `body`, its fence longer than any backtick run inside (so nothing closes it)."""
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    words = info.split()
    lang = re.sub(r"[^\w+-]", "", words[0]) if words else ""
    return [fence + lang, *body, fence]


def _line(line: str, hosts: frozenset[str]) -> str:
    text = _inline(line, hosts)
    rule = _SETEXT_OR_RULE.match(text)
    if rule is not None:  # `---` or `===` would turn the line above into a heading
        text = text[: rule.start(1)] + "\\" + text[rule.start(1) :]
    return text


def md_block(text: str, hosts: Iterable[str] = ()) -> str:
    """Untrusted multi-line text as markdown lines (to quote with `> `): inert, its code blocks kept as code."""
    allowed = _hosts(hosts)
    lines = plain(text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None or (opened.group("fence")[0] == "`" and "`" in opened.group("info")):
            out.append(_line(lines[i], allowed))
            i += 1
            continue
        fence = opened.group("fence")
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence (or the end of the text, which closes it too)
        out.extend(_fenced(body, opened.group("info")))
    return "\n".join(out)


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]} and len(line) - len(line.lstrip()) <= 3

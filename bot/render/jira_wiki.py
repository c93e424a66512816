"""Markdown (what the bot's renderers write) → Jira wiki markup (what Jira renders), pure; the Jira side of inertness.

Jira Server and the v2 API render descriptions and comment bodies as wiki markup, so markdown would show its
backticks and fences raw. Converted: fenced code, inline code, bold, links (to http(s) or the bot's own relative
paths), autolinks, headings, lists, quotes and tables. Dropped: the HTML comments GitHub hides (markers) and
`<details>` wrappers.

Only those markdown constructs become wiki markup. Everything else is literal text and is escaped so that Jira
shows it as such: `[`, `]` (links, `[~user]` and `[~accountid:…]` mentions), `{`, `}` (macros such as `{html}`,
`{noformat}`, `{{monospace}}`), `!` (images), `|` (tables, link aliases) with a backslash, which Jira honours;
`&` as `&amp;` (entities) and `\\` as `&#92;` (a double backslash is a line break); the colon of a URL scheme,
so that Jira does not autolink what markdown shows as text. Inside `{{…}}` the same escapes apply (Jira renders
markup there), and a code block cannot be closed or left by a `{noformat}` or `{code}` in its text.

Text made inert for GitHub (bot/render/inert.py) is literal in markdown, so it stays literal here.
"""

from __future__ import annotations

import re

__all__ = ["jira_literal", "markdown_to_jira"]

_HTML_COMMENT = re.compile(r"<!--.*?-->\n?", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)[^`]*$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_QUOTE = re.compile(r"^ {0,3}> ?")
_SUMMARY = re.compile(r"<details>\s*<summary>(.*?)</summary>|<summary>(.*?)</summary>")
_INLINE = re.compile(
    r"\\(?P<esc>[!-/:-@\[-`{-~])"
    r"|(?P<code>(?P<ticks>`+)(?P<body>.+?)(?<!`)(?P=ticks)(?!`))"
    r"|<(?P<auto>[a-z][a-z0-9+.-]*:[^\s<>\[\]{}|\\]*)>"
    r"|!?\[(?P<label>(?:[^\]\\\n]|\\.)*)\]\((?P<href>(?:https?://|/)[^\s()<>\[\]{}|\\]*)\)"
    r"|\*\*(?P<bold>.+?)\*\*"
    r"|(?P<url>\bhttps?://[^\s<>\[\]{}|\"'`\\]+)",
    re.I,
)
#: Characters with a meaning in wiki markup that backslash-escaping turns into text.
_SPECIAL = frozenset("[]{}!|")
_ENTITIES = {"&": "&amp;", "\\": "&#92;"}
_SPACED_BANG = re.compile(r"\\!(?=\s)")
#: A scheme's colon, for `https://`, `ftp://`, `mailto:` and the rest Jira autolinks.
_SCHEME = re.compile(r"\b([a-z][a-z0-9+.-]*):(?=//|[^\s@]+@)", re.I)
#: Macros that open or close a block: inside a code block their names are broken so the block holds.
_BLOCK_MACRO = re.compile(r"\{(\s*)(noformat|code|quote|panel|html|color|anchor|section|column)", re.I)
_TRAILING = ".,;:!?)'\""


def jira_literal(text: str) -> str:
    """`text` as wiki markup that Jira renders as exactly that text: no link, mention, macro, image or entity."""
    out = "".join(_ENTITIES.get(ch) or ("\\" + ch if ch in _SPECIAL else ch) for ch in text)
    # An image opens with `!` and a non-space: a `!` before a space ("thanks! Only…") opens nothing, left as it is.
    out = _SPACED_BANG.sub("!", out)
    return _SCHEME.sub(lambda m: m.group(1) + "\\:", out)


def _code_span(body: str) -> str:
    body = body.strip()
    # Jira renders markup inside {{…}}: its text is escaped like any other.
    return "{{" + jira_literal(body) + "}}" if body else jira_literal(body)


def _token(match: re.Match[str]) -> str:
    """One markdown construct of `_INLINE` as wiki markup."""
    if match.group("esc") is not None:
        return jira_literal(match.group("esc"))
    if match.group("code") is not None:
        return _code_span(match.group("body"))
    if match.group("auto") is not None:
        return f"[{match.group('auto')}]"
    if match.group("href") is not None:
        label = _inline(match.group("label"))
        return f"[{label}|{match.group('href')}]" if label else f"[{match.group('href')}]"
    if match.group("bold") is not None:
        return f"*{_inline(match.group('bold'))}*"
    url = match.group("url")
    link = url.rstrip(_TRAILING)  # GitHub leaves trailing punctuation out of an autolink, too
    return f"[{link}]" + jira_literal(url[len(link) :])


def _inline(text: str) -> str:
    """One line of markdown as wiki markup: its constructs converted, the rest literal."""
    out: list[str] = []
    pos = 0
    for match in _INLINE.finditer(text):
        out.append(jira_literal(text[pos : match.start()]))
        out.append(_token(match))
        pos = match.end()
    out.append(jira_literal(text[pos:]))
    return "".join(out)


def _depth(indent: str) -> int:
    return 1 + len(indent.replace("\t", "    ")) // 2


def _code_block(lang: str, body: list[str]) -> list[str]:
    """A `{code}` or `{noformat}` block whose text cannot close it or open another block."""
    opening, closing = (f"{{code:{lang}}}", "{code}") if lang else ("{noformat}", "{noformat}")
    return [opening, *(_BLOCK_MACRO.sub(r"{ \1\2", line) for line in body), closing]


def _row(line: str, header: bool) -> str:
    cells = _CELL_SPLIT.split(line.strip().removeprefix("|").removesuffix("|"))
    # GFM reads `\|` as a pipe in a cell, code spans included; here it is literal text again, escaped below.
    texts = [_inline(cell.strip().replace("\\|", "|")) for cell in cells]
    return "||" + "||".join(texts) + "||" if header else "| " + " | ".join(texts) + " |"


def _line(line: str) -> str:
    """A line outside code, quotes and tables."""
    if (m := _HEADING.match(line)) is not None:
        return f"h{len(m.group(1))}. {_inline(m.group(2))}"
    if (m := _BULLET.match(line)) is not None:
        return "*" * _depth(m.group(1)) + " " + _inline(m.group(2))
    if (m := _NUMBERED.match(line)) is not None:
        return "#" * _depth(m.group(1)) + " " + _inline(m.group(2))
    return _inline(line)


def _quote(inner: list[str]) -> list[str]:
    """A block quote: `bq.` for one line of text, `{quote}` around anything longer (Jira has no nesting)."""
    body = _blocks(inner, quoted=True)
    if len(body) == 1 and not body[0].startswith("{"):
        return ["bq. " + body[0]]
    return ["{quote}", *body, "{quote}"]


def _blocks(lines: list[str], *, quoted: bool = False) -> list[str]:
    """Markdown lines as wiki lines."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if (opened := _FENCE.match(line)) is not None:
            fence, body = opened.group(1), []
            i += 1
            while i < len(lines) and not (len(lines[i].strip()) >= len(fence) and set(lines[i].strip()) == {fence[0]}):
                body.append(lines[i])
                i += 1
            out += _code_block(opened.group(2), body)  # an unterminated fence closes, so the rest of the page renders
        elif _QUOTE.match(line):
            inner = []
            while i < len(lines) and _QUOTE.match(lines[i]):
                inner.append(_QUOTE.sub("", lines[i], count=1))
                i += 1
            out += _blocks(inner, quoted=True) if quoted else _quote(inner)
            continue
        elif stripped in ("<details>", "</details>"):
            pass
        elif (summary := _SUMMARY.fullmatch(stripped)) is not None:
            out.append(f"*{_inline(summary.group(1) or summary.group(2) or '')}*")
        elif stripped.startswith("|"):
            header = i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]) is not None
            out.append(_row(line, header))
            i += 1 if header else 0
        else:
            out.append(_line(line))
        i += 1
    return out


def markdown_to_jira(text: str) -> str:
    """The markdown `text` as Jira wiki markup, its literal text inert."""
    return "\n".join(_blocks(_HTML_COMMENT.sub("", text).split("\n")))

"""What a tracker would bring alive in text the bot posts: the checks behind the issue 28 inertness tests.

GitHub: the body is parsed by a CommonMark parser with tables (markdown-it); raw HTML, images and links to hosts
not allowed are live, and so is any mention, issue reference or bare URL in text outside code and links (GitHub
finds those after rendering). Jira: escapes (`\\x`) are text, code blocks must close where they were opened, and
outside them no `[`, `]` (links, mentions), `{`, `}` (macros) beyond `{{…}}` and `{quote}`, `!…!` (images),
entity or URL scheme may remain.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from sandboxes.text import is_invisible

__all__ = ["invisible", "live_markdown", "live_wiki", "markdown_tokens"]

_LIVE_TEXT = re.compile(r"(?<![\w`])@\w|#\d|[a-z]+://|www\.")


def invisible(text: str) -> list[str]:
    """The invisible characters in `text` (line breaks aside), as U+XXXX."""
    return [f"U+{ord(ch):04X}" for ch in text if ch != "\n" and is_invisible(ch)]


def markdown_tokens(body: str) -> list[Any]:
    """`body` parsed as GitHub would (CommonMark with tables): the block tokens."""
    return list(MarkdownIt("commonmark").enable("table").parse(body))


def live_markdown(body: str, links: re.Pattern[str], markers: tuple[str, ...] = ()) -> list[str]:
    """What GitHub would bring alive in `body`; `links` matches the hrefs allowed, `markers` the bot's own."""
    problems: list[str] = []
    tokens = markdown_tokens(body)
    in_link = False
    for token in [t for block in tokens for t in [block, *(block.children or [])]]:
        if token.type == "html_block" and token.content.strip() in markers:
            continue
        if token.type in ("html_block", "html_inline", "image"):
            problems.append(f"{token.type}: {token.content!r}")
        elif token.type == "link_open" and not links.fullmatch(str(token.attrs.get("href"))):
            problems.append(f"link to {token.attrs.get('href')}")
        in_link = token.type == "link_open" or (in_link and token.type != "link_close")
        if token.type == "text" and not in_link and _LIVE_TEXT.search(token.content):
            problems.append(f"live mention, reference or autolink in {token.content!r}")
    return problems


def _outside_code(text: str, problems: list[str]) -> list[str]:
    """The lines of wiki `text` outside its code blocks; a macro line inside one is a breakout, recorded."""
    outside: list[str] = []
    closing: str | None = None
    for line in text.split("\n"):
        if closing is not None:
            if line == closing:
                closing = None
            elif re.match(r"\s*\{(noformat|code)", line, re.I):
                problems.append(f"code block broken out of by {line!r}")
            continue
        if line in ("{noformat}", "{code}") or line.startswith("{code:"):
            closing = "{noformat}" if line == "{noformat}" else "{code}"
            continue
        outside.append(line)
    if closing is not None:
        problems.append("a code block is never closed")
    return outside


def live_wiki(text: str, links: re.Pattern[str]) -> list[str]:
    """What Jira would bring alive in wiki markup `text`; `links` matches the URLs allowed in `[…]` links."""
    problems: list[str] = []
    rest = re.sub(r"\\.", "\0", "\n".join(_outside_code(text, problems)))  # escaped characters are text
    rest = re.sub(r"\[(?:[^\[\]|\n]*\|)?(?:" + links.pattern + r")\]", "", rest)
    rest = re.sub(r"\{\{|\}\}|^\{quote\}$|^\{anchor:reprobot-[\w-]+\}$", "", rest, flags=re.M)
    for what, pattern in [
        ("link or mention", r"\[|\]"),
        ("macro", r"\{|\}"),
        ("image", r"![^\s!]+!"),
        ("entity", r"&(?!amp;)"),
        ("autolink", r"[a-z]+://"),
    ]:
        problems += [f"{what}: {m.group(0)!r}" for m in re.finditer(pattern, rest)]
    return problems

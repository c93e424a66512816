"""Cleaning of untrusted text (issue titles, bodies, comments) before an agent reads it or the bot writes it.

This is the one place that decides which characters are hidden. It lives in `sandboxes`, the lowest layer,
so that the agents, the handlers, the job core and the renderers all share it.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["INVISIBLE_RANGES", "clean_commit_message", "clean_text", "clean_title", "is_invisible"]

# The link-reference idiom markdown writers use for comments (`[//]: # (hidden)`): it renders as nothing.
_MD_REF_COMMENT = re.compile(
    r"^ {0,3}\[[^\]\n]*\]:[ \t]*(?:<>|<?#>?)(?:[ \t]+(?:\([^\n]*\)|\"[^\n]*\"|'[^\n]*'))?[ \t]*$", re.M
)
# Wrapper tags GitHub renders invisibly; the text between them is still part of the report.
_WRAPPER_TAGS = re.compile(r"</?(?:details|summary|br|p|div|span|sub|sup|kbd|b|i|em|strong)\b[^>]*>", re.I)
# Tags that open a CommonMark HTML block (kind 6): the block runs to the next blank line and is raw HTML.
_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div"
    "|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li"
    "|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td"
    "|tfoot|th|thead|title|tr|track|ul"
)
#: What GitHub shows literally: a fenced code block (to its closing fence or the end) and an inline code span.
#: An HTML comment that opens first hides a fence inside it; a fence or span that opens first shows a comment.
#: Inside a raw HTML block (`<div>` up to a blank line) backticks are no code: a comment there stays hidden,
#: and one that opens there hides what follows up to its end, blank lines too.
_COMMENT_PATTERN = r"<!--.*?(?:-->|\Z)"
_LITERAL_OR_COMMENT = re.compile(
    rf"(?P<html>^ {{0,3}}</?(?i:{_BLOCK_TAGS})(?=[\s/>]|$)(?:[^\n<]+|{_COMMENT_PATTERN}|<|\n(?![ \t]*(?:\n|\Z)))*)"
    r"|(?P<fence>^[ \t]*(?P<tick>`{3,}|~{3,})[^\n]*(?:\n.*?(?:^[ \t]*(?P=tick)[ \t]*$|\Z)|\Z))"
    rf"|(?P<comment>{_COMMENT_PATTERN})"
    r"|(?P<span>(?P<ticks>`+)(?!`)[^\n]{1,2000}?(?<!`)(?P=ticks)(?!`))",
    re.S | re.M,
)
_COMMENT = re.compile(_COMMENT_PATTERN, re.S)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_WHITESPACE = re.compile(r"\s+")

#: Code points that render as nothing but are not all in category Cf: Unicode's Default_Ignorable_Code_Point
#: set (DerivedCoreProperties.txt: Hangul fillers, variation selectors, tag characters, ...), plus the
#: braille pattern blank, which renders as an empty cell and is a favourite "invisible" padding.
INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space, (non-)joiner, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format characters
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors 1-16
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # reserved specials
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tag characters, variation selectors 17-256 and the rest of the ignorable plane
)
_INVISIBLE = frozenset(cp for lo, hi in INVISIBLE_RANGES for cp in range(lo, hi + 1))
# Cf: format characters (zero-width, bidi); Cc: other controls; Co: private use (renders as nothing or a
# box whose meaning only the sender knows); Cs: lone surrogates, which cannot even be encoded as UTF-8.
_DROPPED_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cs"})
# Line breaks that are not "\n": normalised, so line-based parsers and readers see the same lines.
_LINE_BREAKS = {"\r\n": "\n", "\r": "\n", "\u2028": "\n", "\u2029": "\n", "\x85": "\n", "\x0b": "\n", "\x0c": "\n"}
_LINE_BREAK_RE = re.compile("|".join(map(re.escape, _LINE_BREAKS)))


def is_invisible(ch: str) -> bool:
    """True for one character `clean_text` removes: a format/control/private-use character or a known filler."""
    return ord(ch) in _INVISIBLE or unicodedata.category(ch) in _DROPPED_CATEGORIES


def clean_text(text: str) -> str:
    """What a reader of the rendered report sees, as plain text: hidden parts and invisible characters removed.

    - markdown comments (`<!-- ... -->`, unterminated ones to the end, and `[//]: # (...)` lines) are dropped;
    - wrapper tags GitHub does not show (`<details>`, `<b>`, ...) are dropped, their text kept;
    - every line break (CR, CRLF, U+2028, U+2029, NEL, VT, FF) becomes "\\n", every space separator a space;
    - format (Cf), control (Cc, except tab and newline), private-use (Co) and surrogate (Cs) characters and the
      Default_Ignorable fillers (Hangul fillers, variation selectors, tag characters) and U+2800 are removed.

    Decision: emoji ZWJ sequences lose their joiner and variation selectors (a family emoji becomes its
    members side by side). That is still readable, and no joiner can hide text between visible characters.
    """
    # Plain ASCII text with nothing to clean, the common case (each acknowledged delivery cleans its issue's
    # title and body), is returned by one scan instead of five substitutions: every pattern of `_clean`
    # needs a "<", a "[" or a control character (all ASCII line breaks but "\n" are control characters).
    if text.isascii() and "<" not in text and "[" not in text and not _ASCII_CONTROL.search(text):
        return text
    return _clean(text)


def _clean(text: str) -> str:
    """`clean_text` without its shortcut for plain ASCII text."""
    text = _LINE_BREAK_RE.sub(lambda m: _LINE_BREAKS[m.group(0)], text)
    # Invisible characters go first: markup they interrupted is then seen whole, and cleaning is idempotent.
    if text.isascii():  # the common case: only ASCII control characters can hide here
        return _hide_markup(_ASCII_CONTROL.sub("", text))
    out: list[str] = []
    for ch in text:
        if ch in "\n\t":
            out.append(ch)
        elif not is_invisible(ch):
            out.append(" " if unicodedata.category(ch) == "Zs" else ch)
    return _hide_markup("".join(out))


def _hide_markup(text: str) -> str:
    """Comments and invisible wrapper tags removed, except where GitHub shows them: in code, as written.

    A report that pastes HTML output (`<p><img alt="x" /></p>`) in a code block must keep its tags: they are
    what the user saw. Removing may join what was apart (`<b>` between backticks), so it runs to a fixed point.
    """
    for _ in range(4):
        out: list[str] = []
        last = 0
        for m in _LITERAL_OR_COMMENT.finditer(text):
            out.append(_hide_tags(text, last, m.start()))
            if m.group("html") is not None:
                block = _COMMENT.sub("", m.group(0))
                out.append(_hide_tags(block, 0, len(block)))
            elif m.group("comment") is None:
                out.append(m.group(0))
            last = m.end()
        out.append(_hide_tags(text, last, len(text)))
        cleaned = "".join(out)
        if cleaned == text:
            break
        text = cleaned
    return text


def _hide_tags(text: str, start: int, end: int) -> str:
    """text[start:end] without wrapper tags and comment lines; a line begun before `start` is no comment line."""
    part = text[start:end]
    head = ""
    if start > 0 and text[start - 1] != "\n":
        cut = part.find("\n") + 1 or len(part)
        head, part = part[:cut], part[cut:]
    return _WRAPPER_TAGS.sub("", head + _MD_REF_COMMENT.sub("", part))


def clean_title(text: str, limit: int = 120) -> str:
    """An issue title fit for a PR title, commit subject or heading: cleaned, on one line, at most `limit` long."""
    title = _WHITESPACE.sub(" ", clean_text(text)).strip()
    if len(title) > limit:
        title = title[: limit - 1].rstrip() + "…"
    return title


def clean_commit_message(message: str, limit: int = 120) -> str:
    """A commit message whose subject is a clean title and whose body is cleaned text."""
    subject, _, body = message.partition("\n")
    body = clean_text(body).strip("\n")
    return clean_title(subject, limit) + (f"\n\n{body}" if body else "")

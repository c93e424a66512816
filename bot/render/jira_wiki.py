"""Markdown (what bot/render/report.py renders) → Jira wiki markup (what Jira's REST v2 comments render), pure.

Jira Server and the v2 API render comment bodies as wiki markup, so markdown would show its backticks and fences
raw. Converted: fenced code, inline code, bold, links, headings, lists, quotes and tables. Dropped: the HTML
comments GitHub hides (markers) and `<details>` wrappers. Code is never rewritten inside a fence or backticks.
"""

from __future__ import annotations

import re

__all__ = ["markdown_to_jira"]

_HTML_COMMENT = re.compile(r"<!--.*?-->\n?", re.DOTALL)
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _inline(text: str) -> str:
    """Inline markup outside code spans; a code span becomes {{...}} and is left alone."""
    out: list[str] = []
    pos = 0
    for match in _INLINE_CODE.finditer(text):
        out.append(_styles(text[pos : match.start()]))
        code = match.group(2).strip()
        # Jira's {{...}} cannot hold braces unescaped.
        out.append("{{" + code.replace("{", "\\{").replace("}", "\\}") + "}}")
        pos = match.end()
    out.append(_styles(text[pos:]))
    return "".join(out)


def _styles(text: str) -> str:
    text = _LINK.sub(lambda m: f"[{m.group(1)}|{m.group(2)}]", text)
    return _BOLD.sub(lambda m: f"*{m.group(1)}*", text)


def _depth(indent: str) -> int:
    return 1 + len(indent.replace("\t", "    ")) // 2


def markdown_to_jira(text: str) -> str:
    """The markdown `text` as Jira wiki markup."""
    text = _HTML_COMMENT.sub("", text)
    lines: list[str] = []
    fence: str | None = None  # the opening fence while inside a code block
    close = "{noformat}"
    for line in text.split("\n"):
        if fence is not None:
            stripped = line.strip()
            if len(stripped) >= len(fence) and set(stripped) == {fence[0]}:
                lines.append(close)
                fence = None
            else:
                lines.append(line)
            continue
        opened = _FENCE.match(line)
        if opened:
            fence, lang = opened.group(1), opened.group(2)
            close = "{code}" if lang else "{noformat}"
            lines.append(f"{{code:{lang}}}" if lang else "{noformat}")
            continue
        stripped = line.strip()
        if stripped in ("<details>", "</details>"):
            continue
        summary = re.fullmatch(r"<details>\s*<summary>(.*?)</summary>|<summary>(.*?)</summary>", stripped)
        if summary:
            lines.append(f"*{_inline(summary.group(1) or summary.group(2) or '')}*")
            continue
        if _TABLE_RULE.match(line) and lines and lines[-1].startswith("|"):
            # The row above was the header: Jira marks header cells with double bars.
            lines[-1] = "||" + "||".join(c.strip() for c in lines[-1].strip().strip("|").split("|")) + "||"
            continue
        if (m := _HEADING.match(line)) is not None:
            lines.append(f"h{len(m.group(1))}. {_inline(m.group(2))}")
        elif (m := _BULLET.match(line)) is not None:
            lines.append("*" * _depth(m.group(1)) + " " + _inline(m.group(2)))
        elif (m := _NUMBERED.match(line)) is not None:
            lines.append("#" * _depth(m.group(1)) + " " + _inline(m.group(2)))
        elif stripped.startswith(">"):
            lines.append("bq. " + _inline(stripped.lstrip("> ")))
        else:
            lines.append(_inline(line))
    if fence is not None:  # an unterminated fence still closes, so the rest of Jira's page renders
        lines.append(close)
    return "\n".join(lines)

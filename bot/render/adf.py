"""Atlassian Document Format (ADF) → markdown, pure.

Jira Cloud sends descriptions and comment bodies either as a plain string (REST v2, Jira Server) or as an ADF
document (``{"type": "doc", "version": 1, "content": [...]}``; REST v3, Cloud webhooks, Mojira). Everything
downstream of intake (command parsing, the request builder, the crash parser) reads markdown-ish text, so this one
converter serves Jira and Mojira alike. It does no I/O and never raises on unknown nodes: an unknown node keeps the
text of its children, so nothing the reporter wrote is lost.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["adf_to_markdown"]


def adf_to_markdown(doc: object) -> str:
    """Render ``doc`` (an ADF document, a plain string, a JSON string of a document, or None) as markdown.

    A string that is not a JSON ADF document is returned as is (Jira Server bodies are already text). None gives
    "". The result has no trailing blank lines.
    """
    if doc is None:
        return ""
    if isinstance(doc, str):
        stripped = doc.lstrip()
        if stripped.startswith("{") and '"type"' in stripped:
            try:
                parsed = json.loads(stripped)
            except ValueError:
                return doc
            if isinstance(parsed, dict) and parsed.get("type") == "doc":
                return adf_to_markdown(parsed)
        return doc
    if isinstance(doc, list):
        return _blocks(doc, "").strip("\n")
    if not isinstance(doc, dict):
        return str(doc)
    if doc.get("type") == "doc" or "type" not in doc:
        return _blocks(_children(doc), "").strip("\n")
    return _blocks([doc], "").strip("\n")


def _children(node: dict[str, Any]) -> list[Any]:
    content = node.get("content")
    return content if isinstance(content, list) else []


def _attrs(node: dict[str, Any]) -> dict[str, Any]:
    attrs = node.get("attrs")
    return attrs if isinstance(attrs, dict) else {}


def _blocks(nodes: list[Any], indent: str) -> str:
    """Render block nodes, separated by blank lines, each line prefixed with ``indent``."""
    parts = [_block(node, indent) for node in nodes if isinstance(node, dict)]
    return "\n\n".join(part for part in parts if part != "")


def _prefix(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))


def _block(node: dict[str, Any], indent: str) -> str:
    kind = node.get("type")
    if kind == "paragraph":
        return _prefix(_inline(_children(node)), indent)
    if kind == "heading":
        level = _attrs(node).get("level", 1)
        level = level if isinstance(level, int) and 1 <= level <= 6 else 1
        return _prefix("#" * level + " " + _inline(_children(node)), indent)
    if kind == "codeBlock":
        lang = _attrs(node).get("language") or ""
        body = "".join(_plain(child) for child in _children(node))
        fence = "````" if "```" in body else "```"
        return _prefix(f"{fence}{lang}\n{body}\n{fence}", indent)
    if kind == "blockquote":
        inner = _blocks(_children(node), "")
        return _prefix("\n".join("> " + line if line else ">" for line in inner.split("\n")), indent)
    if kind == "rule":
        return indent + "---"
    if kind in ("bulletList", "orderedList"):
        return _list(node, indent)
    if kind == "table":
        return _prefix(_table(node), indent)
    if kind in ("mediaSingle", "mediaGroup"):
        return _prefix(" ".join(_media(child) for child in _children(node) if isinstance(child, dict)), indent)
    if kind == "media":
        return _prefix(_media(node), indent)
    if kind in ("text", "hardBreak", "mention", "emoji", "inlineCard", "status", "date"):
        return _prefix(_inline([node]), indent)
    # panel, expand, nestedExpand, layoutSection, layoutColumn, taskList, decisionList and unknown containers:
    # keep the content so no text is lost.
    children = _children(node)
    if children and all(isinstance(c, dict) and c.get("type") in _INLINE for c in children):
        return _prefix(_inline(children), indent)
    return _blocks(children, indent)


_INLINE = {"text", "hardBreak", "mention", "emoji", "inlineCard", "status", "date"}


def _list(node: dict[str, Any], indent: str) -> str:
    ordered = node.get("type") == "orderedList"
    start = _attrs(node).get("order", 1)
    number = start if isinstance(start, int) else 1
    lines: list[str] = []
    for item in _children(node):
        if not isinstance(item, dict):
            continue
        marker = f"{number}. " if ordered else "- "
        number += 1
        body = _blocks(_children(item), "")
        # Items are rendered tight (no blank line between blocks of one item), nested lists indented under it.
        body_lines = [line for line in body.split("\n") if line.strip() != ""] or [""]
        pad = " " * len(marker)
        lines.append(indent + marker + body_lines[0])
        lines.extend(indent + pad + line for line in body_lines[1:])
    return "\n".join(lines)


def _table(node: dict[str, Any]) -> str:
    rows: list[list[str]] = []
    header = False
    for row in _children(node):
        if not isinstance(row, dict):
            continue
        cells = [c for c in _children(row) if isinstance(c, dict)]
        if not rows and cells and all(c.get("type") == "tableHeader" for c in cells):
            header = True
        rows.append([_blocks(_children(c), "").replace("\n", " ").replace("|", "\\|") for c in cells])
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out = ["| " + " | ".join(rows[0]) + " |"]
    if not header:
        out = ["| " + " | ".join([""] * width) + " |"]
        body = rows
    else:
        body = rows[1:]
    out.append("|" + "---|" * width)
    out.extend("| " + " | ".join(r) + " |" for r in body)
    return "\n".join(out)


def _media(node: dict[str, Any]) -> str:
    if node.get("type") != "media":
        return ""
    attrs = _attrs(node)
    name = attrs.get("alt") or attrs.get("id") or "attachment"
    return f"[attachment: {name}]"


def _plain(node: object) -> str:
    """The text of a node without formatting (for code blocks)."""
    if not isinstance(node, dict):
        return ""
    if node.get("type") == "text":
        text = node.get("text")
        return text if isinstance(text, str) else ""
    if node.get("type") == "hardBreak":
        return "\n"
    return "".join(_plain(child) for child in _children(node))


def _inline(nodes: list[Any]) -> str:
    return "".join(_inline_node(node) for node in nodes if isinstance(node, dict))


def _inline_node(node: dict[str, Any]) -> str:
    kind = node.get("type")
    attrs = _attrs(node)
    if kind == "text":
        text = node.get("text")
        return _marked(text if isinstance(text, str) else "", node.get("marks"))
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        label = attrs.get("text") or attrs.get("id") or ""
        label = str(label)
        return label if label.startswith("@") else "@" + label
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName") or "")
    if kind in ("inlineCard", "blockCard", "embedCard"):
        url = attrs.get("url")
        return f"<{url}>" if isinstance(url, str) and url else ""
    if kind == "status":
        return f"[{attrs.get('text', '')}]"
    if kind == "date":
        return str(attrs.get("timestamp", ""))
    return _inline(_children(node))


def _marked(text: str, marks: object) -> str:
    if not text or not isinstance(marks, list):
        return text
    kinds = {m.get("type"): m for m in marks if isinstance(m, dict)}
    if "code" in kinds:
        # Code marks exclude the other text styles in ADF; a link may still wrap it.
        tick = "``" if "`" in text else "`"
        text = f"{tick}{text}{tick}"
    else:
        if "strike" in kinds:
            text = f"~~{text}~~"
        if "em" in kinds:
            text = f"*{text}*"
        if "strong" in kinds:
            text = f"**{text}**"
    link = kinds.get("link")
    if link is not None:
        href = _attrs(link).get("href")
        if isinstance(href, str) and href:
            text = f"[{text}]({href})"
    return text

"""Pure helpers of the dashboard's pages: highlighted diffs and trajectory steps as a readable timeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from bot.render.report import clip_output

#: Characters of one step's output shown on the page (the tail, as in the PR body).
STEP_OUTPUT_CHARS = 3000
#: Step fields shown as the step's main text, in this order; the rest are shown as small JSON.
_TEXT_FIELDS = ("thought", "observation", "output", "stdout", "stderr", "message")


def diff_html(diff: str) -> Markup:
    """The diff as highlighted HTML (pygments escapes the text itself)."""
    return Markup(highlight(diff or "(empty)", DiffLexer(), HtmlFormatter(cssclass="diff")))


def diff_css() -> str:
    """The stylesheet of `diff_html`."""
    return str(HtmlFormatter().get_style_defs(".diff"))


@dataclass(frozen=True)
class StepView:
    """One step of a trajectory as the timeline shows it."""

    idx: int
    kind: str
    title: str
    texts: list[tuple[str, str]]
    extra: str


def step_view(idx: int, kind: str, content: Any) -> StepView:
    """Turn one stored step (any JSON value) into a timeline entry: title, cut texts, other fields."""
    if not isinstance(content, dict):
        return StepView(idx, kind, kind, [("value", clip_output(str(content), STEP_OUTPUT_CHARS))], "")
    title = kind + (f" · {content['name']}" if content.get("name") else "")
    texts = [
        (name, clip_output(str(content[name]), STEP_OUTPUT_CHARS))
        for name in _TEXT_FIELDS
        if content.get(name) not in (None, "")
    ]
    rest = {k: v for k, v in content.items() if k not in _TEXT_FIELDS and k != "name"}
    extra = json.dumps(rest, indent=1, ensure_ascii=False, default=str)[:2000] if rest else ""
    return StepView(idx, kind, title, texts, extra)


def conversation_view(doc: Any, limit: int = 60) -> list[tuple[str, str]]:
    """(role, text) of a saved LLM conversation (`DATA_DIR/trajectories/<id>.json`), each text cut."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    out = []
    for m in (messages or [])[:limit]:
        if not isinstance(m, dict):
            continue
        text = m.get("content") or ""
        if m.get("tool_calls"):
            text = f"{text}\n→ {json.dumps(m['tool_calls'], ensure_ascii=False)[:1000]}".strip()
        out.append((str(m.get("role", "?")), clip_output(str(text), STEP_OUTPUT_CHARS)))
    return out

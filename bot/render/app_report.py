"""App reproductions on self-hosted runners, as a comment: the steps, the oracle, what was blocked, how to replay."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.render.report import clip_output, fence

_APP_HEADINGS = {
    "reproduced": "✅ Reproduced on a runner",
    "not_reproduced": "❌ Not reproduced on a runner",
    "abstained": "⏸️ The runner's agent abstained",
    "error": "⚠️ The app reproduction failed",
}
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
_MAX_STEPS_SHOWN = 30


def artifact_url(public_url: str | None, sha256: str, name: str) -> str:
    """Where readers open a runner's artifact on the bot's server (relative without a public URL)."""
    return f"{(public_url or '').rstrip('/')}/artifacts/{sha256}/{name}"


def _inline(value: object, limit: int = 160) -> str:
    """Text from a report or an app as inline code: no markdown, links or @mentions can come alive."""
    text = " ".join(str(value).split()).replace("`", "'")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"`{text}`" if text else "—"


def _step_line(n: int, step: Mapping[str, Any]) -> str:
    action = _inline(step.get("action") or "?", 40)
    parts = [f"{n}. {action}"]
    if step.get("target"):
        parts.append(f"on {_inline(step['target'])}")
    if step.get("input") not in (None, ""):
        parts.append(f"with {_inline(step['input'])}")
    return " ".join(parts)


def _artifact_order(result: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """Screenshot artifacts in the order the agent took them (its `screenshots`), the rest after by name."""
    images = [n for n in names if n.lower().endswith(_IMAGE_SUFFIXES)]
    wanted = [str(p).replace("\\", "/").rsplit("/", 1)[-1] for p in result.get("screenshots") or []]
    ordered = [n for w in wanted for n in images if n == w or n.endswith("__" + w)]
    ordered = list(dict.fromkeys(ordered))
    return ordered + sorted(n for n in images if n not in ordered)


def render_app_reproduction(result_json: Mapping[str, Any], artifact_urls: Mapping[str, str]) -> str:
    """The reproduction comment of an app job run on a runner: steps, the oracle's evidence, screenshots, replay.

    `result_json` is the agent's result (status, steps, actions, oracle, screenshots, replay, seconds, reasons);
    `artifact_urls` maps each uploaded artifact's name to its address.
    """
    status = str(result_json.get("status") or "error")
    lines = [f"### {_APP_HEADINGS.get(status, _APP_HEADINGS['error'])}", ""]
    steps = [s for s in result_json.get("steps") or [] if isinstance(s, Mapping)]
    if steps:
        lines += ["**Steps to reproduce** (as the agent understood the report):", ""]
        lines += [_step_line(i, s) for i, s in enumerate(steps[:_MAX_STEPS_SHOWN], 1)]
        if len(steps) > _MAX_STEPS_SHOWN:
            lines.append(f"… and {len(steps) - _MAX_STEPS_SHOWN} more (see the action log)")
        lines.append("")
    oracle = result_json.get("oracle")
    if isinstance(oracle, Mapping) and oracle:
        kind = oracle.get("kind") or oracle.get("type") or oracle.get("fired") or "oracle"
        lines += [f"**Evidence**: the oracle {_inline(kind, 60)} fired.", ""]
        evidence = oracle.get("evidence", {k: v for k, v in oracle.items() if k not in ("kind", "type", "fired")})
        text = evidence if isinstance(evidence, str) else json.dumps(evidence, indent=2, ensure_ascii=False)
        lines += [fence(clip_output(text)), ""]
    elif status == "not_reproduced":
        lines += ["No oracle fired: no page error, console error, HTTP 5xx or wrong text was seen.", ""]
    reasons = [str(r) for r in result_json.get("reasons") or []]
    if reasons:
        lines += ["**Why**:", "", *[f"- {_inline(r, 300)}" for r in reasons], ""]
    blocked = [str(u) for u in result_json.get("blocked") or []]
    if blocked:
        # The browser is confined to the app's origin: say what it was kept from, the run went on without it.
        lines += ["**Blocked** (requests to other hosts than the app's, not made):", ""]
        lines += [f"- {_inline(u, 200)}" for u in blocked[:_MAX_STEPS_SHOWN]]
        if len(blocked) > _MAX_STEPS_SHOWN:
            lines.append(f"… and {len(blocked) - _MAX_STEPS_SHOWN} more (see the log)")
        lines.append("")
    shots = _artifact_order(result_json, list(artifact_urls))
    if shots:
        lines += ["**Screenshots** (one per step):", ""]
        lines += [f"![{_inline(n, 80).strip('`')}]({artifact_urls[n]})" for n in shots]
        lines.append("")
    actions = result_json.get("actions") or []
    links = [
        f"[{name}]({artifact_urls[name]})"
        for name in ("actions.json", "log.txt", "runner.log")
        if name in artifact_urls
    ]
    summary = f"{len(actions)} action(s)"
    if isinstance(result_json.get("seconds"), int | float):
        summary += f" in {float(result_json['seconds']):.1f} s"
    usage = result_json.get("model_usage")
    if isinstance(usage, Mapping) and usage.get("calls"):
        # A model drove the actions (game loop): say what it cost.
        summary += (
            f" · model: {int(usage['calls'])} call(s), {int(usage.get('prompt_tokens') or 0):,} prompt + "
            f"{int(usage.get('completion_tokens') or 0):,} completion tokens, "
            f"${float(usage.get('cost_usd') or 0):.4f}"
        )
    lines += [f"{summary}" + (f" · {' · '.join(links)}" if links else ""), ""]
    if result_json.get("replay"):
        lines += ["**Replay it yourself**:", "", fence(str(result_json["replay"]), "sh"), ""]
    return "\n".join(lines).rstrip() + "\n"

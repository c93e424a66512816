"""With a model: propose the JSON action for a step no element matched, filtered and fed back when invalid."""

from __future__ import annotations

import inspect
import json
import re

from agents.app.driver import ACTIONS, Element
from agents.app.s2r import Complete, Step

_SYSTEM = (
    "You operate an app's UI to reproduce a bug. Given one step of the report and the numbered interactive elements "
    'on screen, answer with one JSON object only: {"action": one of '
    + ", ".join(ACTIONS)
    + ', "element": the element number (for click, long_click, input), "input": text to type or key to press}. '
    "Pick the element that performs the step, or that leads towards the screen where it can be performed."
)


def _screen(elements: list[Element]) -> str:
    return "\n".join(
        f"{i}: {e.role} text={e.text[:60]!r} label={e.label[:40]!r} id={e.id!r}" for i, e in enumerate(elements)
    )


def check_action(reply: str, elements: list[Element]) -> tuple[dict[str, object], Element | None]:
    """The action and its element from a model's reply; ValueError says what is invalid (the feedback)."""
    m = re.search(r"\{.*\}", reply, re.S)
    if m is None:
        raise ValueError("no JSON object in the answer")
    try:
        data = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    action = data.get("action") if isinstance(data, dict) else None
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    value = data.get("input") or ""
    if not isinstance(value, str):
        raise ValueError("input must be a string")
    if action not in ("click", "long_click", "input"):
        return {"action": action, "target": "", "input": value}, None
    index = data.get("element")
    if not isinstance(index, int) or not 0 <= index < len(elements):
        raise ValueError(f"element must be a number from 0 to {len(elements) - 1}, not {index!r}")
    element = elements[index]
    name = element.text or element.label or element.id
    out: dict[str, object] = {"action": action, "target": name, "input": value, "locator": element.locator}
    return {**out, "role": element.role, "via": "model"}, element


async def propose_action(
    complete: Complete, step: Step, elements: list[Element], *, attempts: int = 2
) -> tuple[dict[str, object], Element | None] | None:
    """The model's action for `step` on this screen, or None when it gives no valid one in `attempts` tries."""
    if not elements:
        return None
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Step: {json.dumps(step.to_json())}\nElements:\n{_screen(elements)}"},
    ]
    for _ in range(attempts):
        answer = complete(messages)
        reply = await answer if inspect.isawaitable(answer) else answer
        try:
            return check_action(str(reply), elements)
        except ValueError as exc:
            messages += [
                {"role": "assistant", "content": str(reply)},
                {"role": "user", "content": f"Invalid: {exc}. Answer with one JSON object only."},
            ]
    return None

"""The model-driven action loop: with a model, JSON macro actions are proposed from the screenshot and the state.

Each turn the model sees the report's steps, the structured state (position, look, wielded item, inventory, pointed
thing, chat and log tail), the outcome of its last actions (and which of them were invalid, with why), and the
screenshot as an image part when the model accepts images. Only the last N turns stay in context, so a long loop
costs the same per turn. The loop ends when the oracle fires, the model says it is done, or the turn or time cap is
reached. Token counts and cost are summed for the closing note.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agents.game.driver import MACROS, GameState, validate_macro

#: Bounds the model's actions must keep (a macro outside them is filtered out and the reason fed back).
MAX_TEXT = 200
MAX_SECONDS = 10.0
_KEY = re.compile(r"[A-Za-z0-9_]{1,16}")
_JSON = re.compile(r"(\[.*\]|\{.*\})", re.S)

_SYSTEM = (
    "You play a game to reproduce a player's bug report. Each turn you get the report's steps, the game state as "
    "JSON and the outcome of your last actions (and maybe a screenshot). Reply with JSON only: a list of 1-5 macro "
    "actions, each one of "
    '{"action": "press", "key": K, "seconds": S}, {"action": "write", "text": T}, '
    '{"action": "command", "text": "/..."}, {"action": "click", "button": "left"|"right"}, '
    '{"action": "look", "yaw": radians, "pitch": radians}, {"action": "wait", "seconds": S}. '
    f"Text is at most {MAX_TEXT} characters on one line; seconds are 0-{MAX_SECONDS:g}; pitch is -1.57..1.57 "
    "(positive looks down); key is a key name (a digit selects a hotbar slot). "
    'Reply {"done": true, "reason": "..."} when every step has been played and nothing more can be tried.'
)


class Reply(Protocol):
    """What a model call may return besides plain text: the content with its token counts (bot.llm.ModelReply)."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    cost: float


#: A model: messages -> text or a Reply, sync or async.
ModelCall = Callable[[list[dict[str, Any]]], "str | Reply | Awaitable[str | Reply]"]


@dataclass
class ModelUsage:
    """Calls, tokens and cost the loop spent (tokens come from the reply when it carries them)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def add(self, reply: object, messages: list[dict[str, Any]]) -> str:
        """Count one reply; return its text."""
        self.calls += 1
        text = str(getattr(reply, "content", reply) or "")
        if not text and not hasattr(reply, "content"):
            return ""  # the call failed before the model answered: nothing was charged
        prompt = getattr(reply, "prompt_tokens", None)
        completion = getattr(reply, "completion_tokens", None)
        # A plain-text model reports no usage: estimate four characters per token (images count as their text).
        self.prompt_tokens += int(prompt) if isinstance(prompt, int) else (len(json.dumps(messages)) + 3) // 4
        self.completion_tokens += int(completion) if isinstance(completion, int) else (len(text) + 3) // 4
        cost = getattr(reply, "cost", None)
        self.cost += float(cost) if isinstance(cost, (int, float)) else 0.0
        return text

    def to_json(self) -> dict[str, Any]:
        """The usage as JSON (what the closing note reports)."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.prompt_tokens + self.completion_tokens,
            "cost_usd": round(self.cost, 6),
        }


def check_model_macro(action: object) -> dict[str, Any]:
    """A model's macro, reduced to its known arguments and checked against the bounds; ValueError says why not."""
    macro = validate_macro(action)
    kind = str(macro["action"])
    out: dict[str, Any] = {"action": kind}
    allowed = {*MACROS[kind], "seconds"} if kind == "press" else set(MACROS[kind])
    for arg in allowed:
        if arg in macro:
            out[arg] = macro[arg]
    if kind in ("write", "command"):
        text = out["text"]
        if not isinstance(text, str) or "\n" in text or len(text) > MAX_TEXT:
            raise ValueError(f"{kind} text must be one line of at most {MAX_TEXT} characters")
        if kind == "command" and not text.startswith("/"):
            raise ValueError("a command starts with /")
    if kind == "press" and not (isinstance(out["key"], str) and _KEY.fullmatch(out["key"])):
        raise ValueError("press key must be a key name (letters, digits or _)")
    if kind in ("press", "wait"):
        try:
            seconds = float(out.get("seconds") or 0)
        except (TypeError, ValueError):
            raise ValueError(f"{kind} seconds must be a number") from None
        if not 0 <= seconds <= MAX_SECONDS:
            raise ValueError(f"{kind} lasts 0-{MAX_SECONDS:g} seconds")
        out["seconds"] = seconds
    if kind == "look":
        try:
            yaw, pitch = float(out["yaw"]), float(out["pitch"])
        except (TypeError, ValueError):
            raise ValueError("look yaw and pitch must be numbers (radians)") from None
        if not (math.isfinite(yaw) and abs(yaw) <= 2 * math.pi and abs(pitch) <= math.pi / 2):
            raise ValueError("look yaw is -6.28..6.28 and pitch -1.57..1.57 radians")
        out["yaw"], out["pitch"] = yaw, pitch
    return out


def parse_proposal(reply: str) -> tuple[list[dict[str, Any]], list[str], bool]:
    """The valid macros of a reply, the reasons the others were dropped, and whether the model says it is done."""
    m = _JSON.search(reply)
    if m is None:
        return [], ["no JSON in the reply"], False
    try:
        data = json.loads(m.group(1))
    except json.JSONDecodeError as exc:
        return [], [f"the JSON does not parse: {exc}"], False
    if isinstance(data, dict) and data.get("done"):
        return [], [], True
    items = data if isinstance(data, list) else [data]
    valid, problems = [], []
    for i, item in enumerate(items[:5], 1):
        try:
            valid.append(check_model_macro(item))
        except ValueError as exc:
            problems.append(f"action {i} {json.dumps(item)[:120]} was dropped: {exc}")
    if len(items) > 5:
        problems.append(f"only the first 5 of {len(items)} actions are played")
    return valid, problems, False


@dataclass
class Turn:
    """One turn of the loop: what the model answered and what came of it."""

    reply: str
    feedback: str


@dataclass
class LoopOutcome:
    """How the loop ended and what it cost."""

    turns: int = 0
    stopped: str = ""  # "oracle" | "done" | "turns" | "time" | "model_failed"
    usage: ModelUsage = field(default_factory=ModelUsage)
    dropped: int = 0


class Player(Protocol):
    """What the loop plays on: a session that performs macros and tells whether the oracle fired."""

    verdict: Any

    async def do(self, action: dict[str, Any]) -> GameState:
        """Perform one macro, screenshot and judge it; the state after it."""
        ...


def _image_part(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    data = base64.b64encode(path.read_bytes()).decode()
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


async def turn_message(
    goal: str, state: GameState, feedback: str, screenshot: Path | None, images: bool
) -> dict[str, Any]:
    """The user message of one turn: the goal, the outcome so far and the state; the screenshot when accepted."""
    text = f"{goal}\n\nOutcome of your last actions: {feedback}\n\nState now:\n{json.dumps(state.to_json())}"
    part = await asyncio.to_thread(_image_part, screenshot) if images else None
    if part is None:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text}, part]}


async def model_loop(
    model: ModelCall,
    player: Player,
    state: GameState,
    goal: str,
    *,
    max_turns: int = 8,
    context_turns: int = 3,
    deadline: float | None = None,
    images: bool = False,
    screenshot: Callable[[], Path | None] = lambda: None,
    note: Callable[[str], None] = lambda _line: None,
) -> LoopOutcome:
    """Propose, filter, play and feed back until the oracle fires, the model is done, or a cap is reached.

    Only the last `context_turns` turns (the model's reply and the outcome fed back) stay in the messages.
    """
    out = LoopOutcome()
    history: list[Turn] = []
    feedback = "nothing played yet"
    empty = 0
    for turn in range(1, max_turns + 1):
        if deadline is not None and time.monotonic() > deadline:
            out.stopped = "time"
            return out
        messages: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM}]
        for past in history[-context_turns:] if context_turns > 0 else []:
            messages += [
                {"role": "assistant", "content": past.reply},
                {"role": "user", "content": f"Outcome: {past.feedback}"},
            ]
        messages.append(await turn_message(goal, state, feedback, screenshot(), images))
        answer = model(messages)
        raw = await answer if inspect.isawaitable(answer) else answer
        reply = out.usage.add(raw, messages)
        out.turns = turn
        empty = empty + 1 if not reply.strip() else 0
        if empty == 2:
            note(f"model turn {turn}: two empty replies in a row; the loop stops")
            out.stopped = "model_failed"
            return out
        actions, problems, done = parse_proposal(reply)
        out.dropped += len(problems)
        if done:
            note(f"model turn {turn}: the model is done")
            out.stopped = "done"
            return out
        for problem in problems:
            note(f"model turn {turn}: {problem}")
        chat_before = len(state.chat)
        played = 0
        for action in actions:
            state = await player.do(action)
            played += 1
            if player.verdict is not None:
                out.stopped = "oracle"
                return out
        new_chat = state.chat[chat_before:] if len(state.chat) >= chat_before else state.chat[-5:]
        parts = [f"{played} action(s) played; no crash, the bug is not reproduced yet"]
        if new_chat:
            parts.append("new chat: " + " | ".join(new_chat[-5:]))
        if problems:
            parts.append("invalid: " + "; ".join(problems))
        if not actions and not problems:
            parts.append("the reply had no action")
        feedback = ". ".join(parts)
        history.append(Turn(reply, feedback))
    out.stopped = "turns"
    return out

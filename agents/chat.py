"""The model seam agents and reviewers talk to: a ChatModel protocol and its reply types (no I/O here)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.trajectory import FormatError


class LLMError(RuntimeError):
    """The model endpoint refused a request or kept failing; the message says why, never the key."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model sent it; `arguments` is the raw JSON text, parsed on demand."""

    id: str
    name: str
    arguments: str

    def parsed(self) -> dict[str, Any]:
        """The arguments as a dict; FormatError (shown to the model) when they are not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise FormatError(f"the arguments of {self.name!r} are not valid JSON ({exc.msg} at {exc.pos})") from None
        if not isinstance(value, dict):
            raise FormatError(f"the arguments of {self.name!r} must be a JSON object, got {type(value).__name__}")
        return value


@dataclass(frozen=True)
class ModelReply:
    """One assistant turn: its text (the thought) and any tool calls, plus what it cost."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


class ChatModel(Protocol):
    """What an agent needs from a model: one completion with tools, accounted to a trajectory."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        trajectory: str = "job",
        purpose: str = "agent",
    ) -> ModelReply:
        """Send the conversation; return the assistant's reply. Raises LimitsExceeded past a budget."""
        ...


def string_param(description: str, **extra: Any) -> dict[str, Any]:
    """A described string parameter of a tool schema."""
    return {"type": "string", "description": description, **extra}


def int_param(description: str) -> dict[str, Any]:
    """A described integer parameter of a tool schema."""
    return {"type": "integer", "description": description}


def string_list_param(description: str) -> dict[str, Any]:
    """A described list-of-strings parameter of a tool schema."""
    return {"type": "array", "items": {"type": "string"}, "description": description}


def tool_schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI function-tool schema; every parameter must carry a description."""
    for pname, prop in properties.items():
        if not prop.get("description"):
            raise ValueError(f"tool {name}: parameter {pname} has no description")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def verdict_from_reply(reply: ModelReply, tool: str) -> dict[str, Any]:
    """The arguments of the reply's call to `tool`, or a JSON object found in its text; FormatError otherwise."""
    for call in reply.tool_calls:
        if call.name == tool:
            return call.parsed()
    text = reply.content.strip()
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        try:
            value = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    raise FormatError(f"expected a call to {tool}")

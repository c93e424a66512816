"""The LLM repair agent: a small ReAct loop (thought + one tool call per step) driven by exceptions."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from agents.chat import ChatModel
from agents.repair.llm.tools import STRATEGIES, TOOL_SCHEMAS, Toolbox
from agents.trajectory import FormatError, LimitsExceeded, Submitted, Trajectory
from sandboxes.workspace import workspace_diff

log = logging.getLogger(__name__)

#: Older tool outputs are shortened to this many characters, so the prompt grows by a bounded amount per step.
ELIDED_CHARS = 240


def load_prompt(name: str) -> str:
    """A prompt file from agents/prompts/."""
    return resources.files("agents").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def system_prompt(strategy: str) -> str:
    """The base instructions plus the strategy's own."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    return load_prompt("system").strip() + "\n\n## Your task\n" + load_prompt(strategy).strip() + "\n"


@dataclass(frozen=True)
class AgentConfig:
    """Knobs of one repair trajectory."""

    strategy: str = "freeform"
    max_steps: int = 40
    keep_full: int = 4
    save_to: Path | None = None


class RepairAgent:
    """Runs one trajectory: the model thinks and calls a tool each step until finish or a budget stops it."""

    def __init__(self, model: ChatModel, tools: Toolbox, trajectory: Trajectory, issue: str, config: AgentConfig):
        self.model = model
        self.tools = tools
        self.traj = trajectory
        self.config = config
        self.steps = 0
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(config.strategy)},
            {"role": "user", "content": f"Bug report:\n\n{issue.strip()}\n\n{self._budget_line()}"},
        ]

    def _budget_line(self) -> str:
        left = self.config.max_steps - self.steps
        return f"[Steps left: {left} of {self.config.max_steps}.{' Finish now.' if left <= 2 else ''}]"

    def prompt(self) -> list[dict[str, Any]]:
        """The conversation as sent: tool outputs older than the last few are cut to a short excerpt."""
        tool_idx = [i for i, m in enumerate(self.messages) if m["role"] == "tool"]
        old = set(tool_idx[: -self.config.keep_full]) if self.config.keep_full else set(tool_idx)
        out = []
        for i, m in enumerate(self.messages):
            if i in old and len(m["content"]) > ELIDED_CHARS:
                m = {**m, "content": m["content"][:ELIDED_CHARS] + " [… older output elided; rerun to see it]"}
            out.append(m)
        return out

    async def run(self) -> None:
        """Step until Submitted or LimitsExceeded (both propagate); the conversation is saved in `finally`."""
        try:
            while True:
                await self.step()
        finally:
            await self.save()

    async def step(self) -> None:
        """One ReAct step: ask the model, run its tool call(s), append the observation and the budget left."""
        if self.steps >= self.config.max_steps:
            raise LimitsExceeded(f"step budget spent: {self.config.max_steps} steps")
        self.steps += 1
        reply = await self.model.complete(self.prompt(), TOOL_SCHEMAS, trajectory=self.traj.id)
        self.messages.append(reply.as_message())
        await self.traj.step(
            "model",
            thought=reply.content[:2000],
            calls=[{"name": c.name, "arguments": c.arguments[:2000]} for c in reply.tool_calls],
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=round(reply.cost, 6),
        )
        if not reply.tool_calls:
            note = "FormatError: no tool call. Think briefly, then call exactly one tool (finish when done)."
            await self.traj.step("format_error", error=note)
            self.messages.append({"role": "user", "content": f"{note}\n{self._budget_line()}"})
            return
        for call in reply.tool_calls:
            try:
                observation = await self.tools.call(call)
                kind = "tool"
            except FormatError as exc:
                observation, kind = f"FormatError: {exc}", "format_error"
            except Submitted:
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": "submitted"})
                await self.traj.step("tool", name=call.name, observation="submitted")
                raise
            await self.traj.step(kind, name=call.name, observation=observation[:4000])
            self.messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": f"{observation}\n\n{self._budget_line()}"}
            )

    async def save(self) -> None:
        """Write the full conversation and the current diff next to the store (best effort, never raises)."""
        if self.config.save_to is None:
            return
        try:
            diff = await workspace_diff(self.tools.sandbox.spec.workspace)
        except (OSError, RuntimeError) as exc:
            diff = f"(diff unavailable: {exc})"
        doc = {
            "id": self.traj.id,
            "strategy": self.config.strategy,
            "steps": self.steps,
            "status": self.traj.status,
            "hypotheses": self.tools.hypotheses,
            "messages": self.messages,
            "diff": diff,
        }
        try:
            self.config.save_to.parent.mkdir(parents=True, exist_ok=True)
            self.config.save_to.write_text(json.dumps(doc, indent=1))
        except OSError as exc:
            log.warning("trajectory %s: could not save conversation: %s", self.traj.id, exc)

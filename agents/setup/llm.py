"""The model-driven setup agent (ExecutionAgent): generated guidelines, then command-and-feedback attempts."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.chat import ChatModel, LLMError
from agents.repair.llm import ELIDED_CHARS, load_prompt
from agents.setup.shell import SetupShell
from agents.setup.tools import SETUP_TOOLS, DeadEnd, SetupTools, SpecAccepted, repo_files
from agents.trajectory import FormatError, LimitsExceeded
from sandboxes.envspec import EnvironmentSpec
from sandboxes.setup_agent import SetupBudget, SetupFailed

log = logging.getLogger(__name__)

_LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".c": "c",
    ".cpp": "c++",
    ".sh": "shell",
}
_KEY_FILES = ("Makefile", "setup.py", "setup.cfg", "tox.ini", "pyproject.toml", "package.json", "justfile")
_README_CHARS = 3000
_KEY_CHARS = 1500


def detect_languages(files: list[str]) -> list[str]:
    """Languages of the repo's files, most frequent first (shell last: scripts accompany every language)."""
    counts = Counter(_LANGUAGES[Path(f).suffix] for f in files if Path(f).suffix in _LANGUAGES)
    ranked = [lang for lang, _ in counts.most_common() if lang != "shell"]
    return ranked + (["shell"] if "shell" in counts else []) or ["unknown"]


def repo_context(repo: Path, ci_commands: tuple[str, ...], draft: EnvironmentSpec | None) -> tuple[list[str], str]:
    """The languages and the facts both prompts start from: file list, README excerpt, build files, CI steps."""
    files = repo_files(repo)
    languages = detect_languages(files)
    parts = [f"Languages by file count: {', '.join(languages)}", "Files:\n" + "\n".join(files)]
    readmes = [f for f in files if "/" not in f and f.lower().startswith("readme")]
    for name in readmes[:1]:
        parts.append(f"{name} (start):\n{(repo / name).read_text(errors='replace')[:_README_CHARS]}")
    scripts = [f for f in files if "/" not in f and (f in _KEY_FILES or f.endswith(".sh"))]
    for name in scripts[:6]:
        parts.append(f"{name}:\n{(repo / name).read_text(errors='replace')[:_KEY_CHARS]}")
    if ci_commands:
        parts.append("Test-looking CI steps:\n" + "\n".join(ci_commands))
    if draft is not None:
        parts.append(f"The repository signals suggested (unverified): {' '.join(draft.test_command)}")
    return languages, "\n\n".join(parts)


def failure_summary(number: int, reason: str, tried: list[str]) -> str:
    """What one failed attempt did, for the next attempt's first message and the final error."""
    steps = "; ".join(tried[-8:]) or "nothing ran"
    return f"attempt {number}: {reason} (tried: {steps})"


@dataclass
class SetupAgentConfig:
    """Knobs of the setup agent."""

    trajectory: str = "setup"
    keep_full: int = 4
    save_to: Path | None = None


@dataclass
class _Attempt:
    messages: list[dict[str, Any]]
    tools: SetupTools
    cycles: int = 0
    spec: EnvironmentSpec | None = None
    reason: str = ""


@dataclass
class LlmSetupAgent:
    """SetupAgent backed by a model: it implements sandboxes.setup_agent.SetupAgent."""

    model: ChatModel
    shell_for: Callable[[Path], SetupShell]
    config: SetupAgentConfig = field(default_factory=SetupAgentConfig)
    attempts: list[_Attempt] = field(default_factory=list)
    guidelines: str = ""

    async def discover(
        self,
        repo: Path,
        draft: EnvironmentSpec | None,
        *,
        budget: SetupBudget,
        ci_commands: tuple[str, ...] = (),
    ) -> EnvironmentSpec:
        """A spec whose tests ran in the sandbox; SetupFailed when every attempt hit a dead end or a budget."""
        languages, context = repo_context(repo, ci_commands, draft)
        shell = self.shell_for(repo)
        failures: list[str] = []
        try:
            self.guidelines = await self._guidelines(languages, context)
            for number in range(1, budget.max_restarts + 2):
                attempt = await self._attempt(shell, languages[0], context, failures, budget)
                if attempt.spec is not None:
                    log.info("setup agent: spec found in attempt %d after %d cycles", number, attempt.cycles)
                    return replace(attempt.spec, ci_commands=ci_commands)
                failures.append(failure_summary(number, attempt.reason, attempt.tools.tried))
                log.info("setup agent: %s", failures[-1])
        except LimitsExceeded as exc:
            raise SetupFailed(f"model budget spent during setup: {exc}") from None
        except LLMError as exc:
            raise SetupFailed(f"model error during setup: {exc}") from None
        finally:
            self.save()
        raise SetupFailed(
            f"no working test command after {len(failures)} attempt(s) of at most {budget.max_cycles} cycles: "
            + " | ".join(failures)
        )

    async def _guidelines(self, languages: list[str], context: str) -> str:
        """Meta-prompting: one call in which the model writes install/test guidelines for these languages."""
        prompt = load_prompt("setup_guidelines").replace("{languages}", ", ".join(languages))
        prompt = prompt.replace("{context}", context)
        reply = await self.model.complete(
            [{"role": "user", "content": prompt}], None, trajectory=self.config.trajectory, purpose="setup-guidelines"
        )
        return reply.content.strip() or "(no guidelines were produced)"

    def _first_messages(self, context: str, failures: list[str], budget: SetupBudget) -> list[dict[str, Any]]:
        system = load_prompt("setup_system").replace("{guidelines}", self.guidelines)
        user = f"Find how to run this repository's tests.\n\n{context}"
        if failures:
            user += "\n\nEarlier attempts failed; do not repeat them:\n" + "\n".join(f"- {f}" for f in failures)
        user += f"\n\n[Cycles left: {budget.max_cycles} of {budget.max_cycles}.]"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _prompt(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation as sent: tool outputs older than the last few are cut to a short excerpt."""
        tool_idx = [i for i, m in enumerate(messages) if m["role"] == "tool"]
        old = set(tool_idx[: -self.config.keep_full]) if self.config.keep_full else set(tool_idx)
        return [
            {**m, "content": m["content"][:ELIDED_CHARS] + " [… older output elided]"}
            if i in old and len(m["content"]) > ELIDED_CHARS
            else m
            for i, m in enumerate(messages)
        ]

    async def _attempt(
        self, shell: SetupShell, language: str, context: str, failures: list[str], budget: SetupBudget
    ) -> _Attempt:
        """One fresh conversation: cycles of model turn and tool feedback until a spec, a dead end or the limit."""
        attempt = _Attempt(self._first_messages(context, failures, budget), SetupTools(shell, language=language))
        self.attempts.append(attempt)
        while attempt.cycles < budget.max_cycles:
            attempt.cycles += 1
            left = budget.max_cycles - attempt.cycles
            budget_line = f"[Cycles left: {left} of {budget.max_cycles}.{' Propose a spec now.' if left <= 2 else ''}]"
            reply = await self.model.complete(
                self._prompt(attempt.messages), SETUP_TOOLS, trajectory=self.config.trajectory, purpose="setup"
            )
            attempt.messages.append(reply.as_message())
            if not reply.tool_calls:
                note = "FormatError: no tool call. Think briefly, then call exactly one tool."
                attempt.messages.append({"role": "user", "content": f"{note}\n{budget_line}"})
                continue
            for call in reply.tool_calls:
                try:
                    observation = await attempt.tools.call(call)
                except FormatError as exc:
                    observation = f"FormatError: {exc}"
                except SpecAccepted as done:
                    attempt.messages.append({"role": "tool", "tool_call_id": call.id, "content": str(done)})
                    attempt.spec = done.spec
                    return attempt
                except DeadEnd as dead:
                    attempt.messages.append({"role": "tool", "tool_call_id": call.id, "content": "restarting"})
                    attempt.reason = f"gave up: {dead}"
                    return attempt
                attempt.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"{observation}\n\n{budget_line}"}
                )
        attempt.reason = f"cycle limit reached ({budget.max_cycles} cycles) without a working spec"
        return attempt

    def save(self) -> None:
        """Write the guidelines and every attempt's conversation (best effort, never raises)."""
        if self.config.save_to is None:
            return
        doc = {
            "id": self.config.trajectory,
            "guidelines": self.guidelines,
            "attempts": [
                {
                    "cycles": a.cycles,
                    "reason": a.reason,
                    "spec": a.spec.to_json() if a.spec else None,
                    "messages": a.messages,
                }
                for a in self.attempts
            ],
        }
        try:
            self.config.save_to.parent.mkdir(parents=True, exist_ok=True)
            self.config.save_to.write_text(json.dumps(doc, indent=1))
        except OSError as exc:
            log.warning("setup agent: could not save its conversation: %s", exc)

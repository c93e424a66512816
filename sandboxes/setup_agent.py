"""ExecutionAgent interface: the model-driven setup loop used when policy and repo signals are not enough.

The loop itself (language guidelines by meta-prompting, command-and-feedback cycles with summarized output)
needs the LLM client and lives with it; this module fixes the contract the environment layer calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sandboxes.envspec import EnvironmentSpec

#: Seed 003's budget: at most this many command/feedback cycles per attempt, and this many fresh restarts.
MAX_CYCLES = 40
MAX_RESTARTS = 3


class SetupFailed(RuntimeError):
    """The setup agent used its budget without finding a working test command; the message says why."""


@dataclass(frozen=True)
class SetupBudget:
    """How much the setup agent may spend on one repo."""

    max_cycles: int = MAX_CYCLES
    max_restarts: int = MAX_RESTARTS


class SetupAgent(Protocol):
    """Finds (or repairs) the EnvironmentSpec of a repo by running commands in a sandbox and reading results."""

    async def discover(
        self,
        repo: Path,
        draft: EnvironmentSpec | None,
        *,
        budget: SetupBudget,
        ci_commands: tuple[str, ...] = (),
    ) -> EnvironmentSpec:
        """A spec whose test command ran and produced results; raises SetupFailed when the budget runs out.

        `draft` is what policy and repo signals gave (None when they gave nothing); `ci_commands` are the
        test-looking CI steps found in the repo, which the agent uses as hints.
        """
        ...

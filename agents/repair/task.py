"""What every repair agent is given for one job: the report, its reproduction, the baseline and the budgets.

The pipeline builds one `RepairTask` per job and hands it to each registered agent it runs
(agents/repair/registry.py). It is plain data plus the model seam, so agents never need the bot's own types.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.chat import ChatModel
from agents.reading import IssueFacts
from agents.reproduce import Reproduction
from sandboxes.environment import Baseline

#: One trajectory's model usage so far, by trajectory id (the job's ledger answers it).
UsageOf = Callable[[str], Mapping[str, Any]]


@dataclass(frozen=True)
class RepairTask:
    """One job's inputs to its repair agents."""

    facts: IssueFacts
    issue_text: str
    #: The synthesized BRT that fails the reported way, and the ranked suspects; None when none reproduced.
    reproduction: Reproduction | None
    #: The reproduction's own steps, which a trajectory built on it records as its first steps.
    shared_steps: list[dict[str, Any]]
    baseline: Baseline
    #: The cogeneration strategy (freeform, tdd, tld, fix-only, brt-only) of the agents that have one.
    strategy: str
    denied_paths: tuple[str, ...]
    test_timeout: float
    #: Run a candidate's impacted regression tests before the full suite (REPROBOT_TEST_IMPACT).
    test_impact: bool = True
    #: A candidate's BRT run may take this many times the buggy run's (REPROBOT_CANDIDATE_TIMEOUT_FACTOR).
    candidate_timeout_factor: float = 5.0
    #: Set once the job's vote is settled: an agent still running may stop at its next step.
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    #: The job's model and its step budget; None when no model is configured.
    model: ChatModel | None = None
    max_steps: int = 0
    usage: UsageOf | None = None
    #: Where agents that hold a conversation save it, one `<trajectory id>.json` each.
    conversations: Path | None = None

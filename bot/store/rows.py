"""Typed rows the store returns: frozen dataclasses built from sqlite-utils row dicts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from bot.store.schema import TERMINAL_JOB_STATUSES


class _Row:
    """Builds a frozen row dataclass from a sqlite-utils row dict, decoding JSON and boolean columns."""

    JSON_FIELDS: ClassVar[tuple[str, ...]] = ()
    BOOL_FIELDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """Convert one row (column name -> stored value); unknown columns are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for name in names:
            value = row[name]
            if name in cls.JSON_FIELDS and value is not None:
                value = json.loads(value)
            elif name in cls.BOOL_FIELDS and value is not None:
                value = bool(value)
            values[name] = value
        return cls(**values)


@dataclass(frozen=True)
class IssueRow(_Row):
    """An issue on a forge; `number_or_key` is "12" on GitHub, "MC-123" on Jira, a file name locally."""

    id: int
    forge: str
    repo: str
    number_or_key: str
    title: str
    body: str
    url: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class DeliveryRow(_Row):
    """One webhook delivery, recorded so a redelivery never runs twice."""

    id: int
    delivery_id: str
    source: str
    event: str
    received_at: str
    job_id: int | None
    payload: str | None = None
    planned: list[dict[str, Any]] | None = None
    promoted_at: str | None = None
    promote_error: str | None = None

    JSON_FIELDS = ("planned",)


@dataclass(frozen=True)
class JobRow(_Row):
    """A queued unit of work; see bot.jobs.queue for the state machine."""

    JSON_FIELDS = ("payload", "result", "labels")

    id: int
    kind: str
    issue_id: int | None
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    run_after: str
    lease_owner: str | None
    lease_expires_at: str | None
    last_error: str | None
    result: Any
    concurrency_key: str | None
    dedupe_key: str | None
    created_at: str
    updated_at: str
    #: The labels a runner needs to take this job; None: a worker's job.
    labels: list[str] | None = None
    #: Whose runner job this is (bot/store/tenants.py): only a runner with it in its scope takes the job.
    tenant: str | None = None

    @property
    def terminal(self) -> bool:
        """True once the job will never run again."""
        return self.status in TERMINAL_JOB_STATUSES


@dataclass(frozen=True)
class TrajectoryRow(_Row):
    """One agent run for a job: totals plus the number of recorded steps."""

    id: int
    job_id: int | None
    agent: str
    strategy: str
    seed: int
    status: str
    steps: int
    seconds: float
    tokens: int
    cost: float
    error: str | None
    created_at: str
    finished_at: str | None


@dataclass(frozen=True)
class StepRow(_Row):
    """One recorded step of a trajectory (thought, action, observation, ...), `idx` counting from 0."""

    JSON_FIELDS = ("content",)

    trajectory_id: int
    idx: int
    kind: str
    content: Any
    created_at: str


@dataclass(frozen=True)
class PatchRow(_Row):
    """A candidate patch; `fix_hash` identifies its normalized fix part for grouping."""

    BOOL_FIELDS = ("has_test",)

    id: int
    job_id: int | None
    trajectory_id: int | None
    diff: str
    fix_hash: str
    has_test: bool
    fix_lines: int
    total_lines: int
    created_at: str


@dataclass(frozen=True)
class ReviewRow(_Row):
    """One reviewer's verdict on a patch, with the evidence it rests on."""

    JSON_FIELDS = ("evidence",)
    BOOL_FIELDS = ("accepted",)

    id: int
    patch_id: int
    reviewer: str
    accepted: bool
    reason: str
    evidence: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class SelectionRow(_Row):
    """A selector's choice (or None) with its explanation and the groups it saw."""

    JSON_FIELDS = ("groups",)

    id: int
    job_id: int | None
    selector: str
    patch_id: int | None
    explanation: str
    groups: list[Any]
    created_at: str


@dataclass(frozen=True)
class PublicationRow(_Row):
    """What the bot posted for an issue, so a retried job updates it instead of posting again."""

    id: int
    job_id: int | None
    issue_id: int
    kind: str
    forge_ref: str
    body_hash: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class InstallationRow(_Row):
    """A GitHub App installation; `removed_at` is set once it is uninstalled."""

    JSON_FIELDS = ("repos",)

    installation_id: int
    account: str
    repos: list[str]
    created_at: str
    removed_at: str | None


@dataclass(frozen=True)
class PrOutcomeRow(_Row):
    """Whether a pull request the bot opened was merged, recorded when it closed."""

    BOOL_FIELDS = ("merged",)

    id: int
    repo: str
    pr_number: int
    merged: bool
    closed_at: str


@dataclass(frozen=True)
class EnvironmentRow(_Row):
    """A built environment in the cache, keyed by a hash of (repo, commit, spec)."""

    JSON_FIELDS = ("spec",)

    key: str
    repo: str
    spec: dict[str, Any]
    path: str
    created_at: str
    last_used_at: str

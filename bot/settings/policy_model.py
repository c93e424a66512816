"""The effective policy as frozen dataclasses: one class per section of `.github/reprobot.yml`, one field per key.

bot/settings/policy.py validates and merges the YAML layers into a mapping (its KEYS table documents each key);
`Policy.from_dict` turns that merged mapping into this typed tree, and `to_dict` gives the mapping back (what
the store caches). tests/test_policy_model.py checks that the leaves here and the KEYS table name the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, TypeVar, get_type_hints

__all__ = [
    "AbstentionPolicy",
    "AgentPolicy",
    "BudgetPolicy",
    "CommandsPolicy",
    "EnvironmentPolicy",
    "LabelsPolicy",
    "PathsPolicy",
    "Policy",
    "PublishPolicy",
    "ReproducePolicy",
    "ReviewPolicy",
    "RunnerTarget",
    "SelectionPolicy",
    "TriggersPolicy",
]


@dataclass(frozen=True)
class LabelsPolicy:
    """`triggers.labels`: the labels that start a job."""

    fix: str
    reproduce: str


@dataclass(frozen=True)
class CommandsPolicy:
    """`triggers.commands`: who may run slash commands, and the reply to anyone else."""

    enabled: bool
    allowed: tuple[str, ...]
    permission: str
    reply_to_others: bool


@dataclass(frozen=True)
class TriggersPolicy:
    """`triggers`: what an opened issue, a label or a comment starts."""

    on_open: str
    labels: LabelsPolicy
    commands: CommandsPolicy


@dataclass(frozen=True)
class AbstentionPolicy:
    """`abstention`: when the bot stays out."""

    threshold: float
    llm: bool


@dataclass(frozen=True)
class AgentPolicy:
    """`agent`: which agent, strategy and budget of steps a fix job uses."""

    kind: str
    strategy: str
    trajectories: int
    max_steps: int


@dataclass(frozen=True)
class ReviewPolicy:
    """`review`: the model reviewers."""

    llm: bool


@dataclass(frozen=True)
class SelectionPolicy:
    """`selection`: the patch selector."""

    selector: str


@dataclass(frozen=True)
class EnvironmentPolicy:
    """`environment`: how the repo's tests are set up and run."""

    setup: str | None
    test: str | None
    timeout: float
    sandbox: str
    allow_direct_references: bool


@dataclass(frozen=True)
class PublishPolicy:
    """`publish`: the pull request's shape."""

    draft: bool
    branch_prefix: str
    labels: tuple[str, ...]
    closes_issue: bool


@dataclass(frozen=True)
class PathsPolicy:
    """`paths`: what a patch may not touch."""

    deny: tuple[str, ...]


@dataclass(frozen=True)
class RunnerTarget:
    """`reproduce.runner`: a self-hosted runner that reproduces instead of the bot's sandbox."""

    labels: tuple[str, ...]
    app_url: str | None
    driver: str
    game: str | None


@dataclass(frozen=True)
class ReproducePolicy:
    """`reproduce`: where reproductions run."""

    runner: RunnerTarget


@dataclass(frozen=True)
class BudgetPolicy:
    """`budget`: a job's spending and wall-clock caps."""

    max_cost_usd: float
    max_minutes: float


_T = TypeVar("_T")


def _build(cls: type[_T], tree: Mapping[str, Any]) -> _T:
    """`cls` from a mapping of its fields; nested classes from nested mappings, lists as tuples."""
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        hint, value = hints[f.name], tree[f.name]
        if is_dataclass(hint):
            value = _build(hint, value)  # type: ignore[arg-type]
        elif isinstance(value, list):
            value = tuple(value)
        elif hint is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # YAML's `300` for a number key
        values[f.name] = value
    return cls(**values)


def _plain(node: Any) -> Any:
    """A dataclass tree as nested dicts, tuples as lists (the YAML and JSON shape)."""
    if is_dataclass(node) and not isinstance(node, type):
        return {f.name: _plain(getattr(node, f.name)) for f in fields(node)}
    if isinstance(node, tuple):
        return [_plain(v) for v in node]
    return node


@dataclass(frozen=True)
class Policy:
    """A repo's effective policy (its file over its `_extends` chain over the defaults), typed."""

    triggers: TriggersPolicy
    abstention: AbstentionPolicy
    agent: AgentPolicy
    review: ReviewPolicy
    selection: SelectionPolicy
    environment: EnvironmentPolicy
    publish: PublishPolicy
    paths: PathsPolicy
    reproduce: ReproducePolicy
    budget: BudgetPolicy

    @classmethod
    def from_dict(cls, tree: Mapping[str, Any]) -> Policy:
        """The typed policy of a complete, validated mapping (`load_policy`'s result); KeyError if a key lacks."""
        return _build(cls, tree)

    def to_dict(self) -> dict[str, Any]:
        """The policy as the nested mapping `load_policy` returns (lists, not tuples)."""
        plain: dict[str, Any] = _plain(self)
        return plain

"""The typed policy: the dataclass tree names exactly the documented keys, and round-trips load_policy's mapping."""

from __future__ import annotations

import dataclasses
from typing import Any, get_type_hints

import pytest

from bot.settings.policy import KEYS, PolicyError, defaults, effective_policy, load_policy, load_policy_model
from bot.settings.policy_model import Policy, RunnerTarget


def fetcher(files: dict[tuple[str, str], str]):  # type: ignore[no-untyped-def]
    async def fetch(repo: str, path: str) -> str | None:
        return files.get((repo, path))

    return fetch


def leaves(cls: Any, prefix: str = "") -> list[str]:
    """The dotted names of every leaf field of a dataclass tree."""
    names: list[str] = []
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            names += leaves(hint, f"{prefix}{f.name}.")
        else:
            names.append(f"{prefix}{f.name}")
    return names


def test_the_model_names_every_documented_key_and_no_other() -> None:
    assert sorted(leaves(Policy)) == sorted(KEYS)


def test_defaults_round_trip() -> None:
    policy = Policy.from_dict(defaults())
    assert policy.to_dict() == defaults()
    assert policy.agent.trajectories == 4 and policy.environment.timeout == 300.0
    assert isinstance(policy.paths.deny, tuple) and isinstance(policy.to_dict()["paths"]["deny"], list)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.agent.kind = "llm"  # type: ignore[misc]


async def test_load_policy_model_is_load_policy_typed() -> None:
    files = {("o/r", ".github/reprobot.yml"): "agent:\n  trajectories: 2\nreproduce:\n  runner:\n    labels: [web]\n"}
    typed = await load_policy_model(fetcher(files), "o/r")
    assert typed.to_dict() == await load_policy(fetcher(files), "o/r")
    assert typed.agent.trajectories == 2
    assert typed.reproduce.runner == RunnerTarget(labels=("web",), app_url=None, driver="web", game=None)


async def test_load_policy_model_keeps_the_errors() -> None:
    with pytest.raises(PolicyError) as info:
        await load_policy_model(fetcher({("o/r", ".github/reprobot.yml"): "agent:\n  kind: gpt\n"}), "o/r")
    assert info.value.key == "agent.kind" and "not one of" in info.value.problem


def test_a_partial_cached_policy_fills_in_the_defaults() -> None:
    cached = {"triggers": {"commands": {"enabled": False}}, "retired_key": 1}
    policy = effective_policy(cached)
    assert policy.triggers.commands.enabled is False
    assert policy.triggers.commands.allowed == ("OWNER", "MEMBER", "COLLABORATOR")
    assert effective_policy(None) == Policy.from_dict(defaults())

"""Policy: defaults, deep merge, `_extends` chains, and validation errors that name the key."""

from __future__ import annotations

import pytest

from bot.settings.policy import KEYS, PolicyError, deep_merge, defaults, load_policy, policy_table


def fetcher(files: dict[tuple[str, str], str]):  # type: ignore[no-untyped-def]
    async def fetch(repo: str, path: str) -> str | None:
        return files.get((repo, path))

    return fetch


async def test_no_file_gives_the_documented_defaults() -> None:
    assert await load_policy(fetcher({}), "o/r") == defaults()
    assert defaults()["triggers"]["labels"]["fix"] == "reprobot:fix"


async def test_repo_file_merges_over_defaults_key_by_key() -> None:
    files = {("o/r", ".github/reprobot.yml"): "agent:\n  trajectories: 2\npublish:\n  labels: [bot]\n"}
    policy = await load_policy(fetcher(files), "o/r")
    assert policy["agent"]["trajectories"] == 2
    assert policy["agent"]["kind"] == "classic"  # untouched sibling keeps its default
    assert policy["publish"]["labels"] == ["bot"]


async def test_org_dot_github_repo_is_used_when_the_repo_has_no_file() -> None:
    files = {("o/.github", ".github/reprobot.yml"): "triggers:\n  on_open: reproduce\n"}
    assert (await load_policy(fetcher(files), "o/r"))["triggers"]["on_open"] == "reproduce"


async def test_extends_chain_layers_in_order() -> None:
    files = {
        ("o/r", ".github/reprobot.yml"): "_extends: shared:policies/base.yml\nagent:\n  trajectories: 3\n",
        ("o/shared", "policies/base.yml"): "_extends: .github\nagent:\n  trajectories: 8\n  strategy: tdd\n",
        ("o/.github", ".github/reprobot.yml"): "publish:\n  draft: false\nagent:\n  strategy: tld\n",
    }
    policy = await load_policy(fetcher(files), "o/r")
    assert policy["agent"]["trajectories"] == 3
    assert policy["agent"]["strategy"] == "tdd"
    assert policy["publish"]["draft"] is False


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("agent:\n  trajectories: many\n", "agent.trajectories", "an integer"),
        ("agent:\n  kind: gpt\n", "agent.kind", "not one of"),
        ("agnet:\n  kind: llm\n", "agnet", "unknown key"),
        ("abstention:\n  threshold: 3\n", "abstention.threshold", "above the maximum"),
        ("publish: yes\n", "publish", "mapping"),
        ("agent: [1\n", "(file)", "not valid YAML"),
        ("- a\n- b\n", "(file)", "mapping"),
        ("_extends: nowhere\n", "_extends", "does not exist"),
    ],
)
async def test_invalid_policy_names_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        await load_policy(fetcher({("o/r", ".github/reprobot.yml"): text}), "o/r")
    assert info.value.key == key and problem in info.value.problem


async def test_circular_extends_is_an_error() -> None:
    files = {("o/r", ".github/reprobot.yml"): "_extends: o/x\n", ("o/x", ".github/reprobot.yml"): "_extends: o/r\n"}
    with pytest.raises(PolicyError, match="circular"):
        await load_policy(fetcher(files), "o/r")


def test_deep_merge_replaces_lists_and_keeps_inputs() -> None:
    base = {"a": {"b": [1], "c": 1}}
    assert deep_merge(base, {"a": {"b": [2]}}) == {"a": {"b": [2], "c": 1}}
    assert base == {"a": {"b": [1], "c": 1}}


def test_table_lists_every_key() -> None:
    table = policy_table()
    assert all(f"`{key}`" in table for key in KEYS)


def test_the_policy_page_carries_the_current_policy_table() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "policy.md").read_text()
    assert policy_table() in page

"""Per-repo policy: `.github/reprobot.yml`, `_extends`, deep merge over server defaults, validation errors."""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from bot.settings.policy_model import Policy
from sandboxes.pathpolicy import DEFAULT_DENIED

POLICY_PATH = ".github/reprobot.yml"
ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE")


@dataclass(frozen=True)
class Key:
    """One documented policy key: its default, the check it must pass, and what it means."""

    default: Any
    kind: str
    doc: str
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None


#: Every key a policy may set (dotted path → definition). docs/policy.md's table is generated from this.
KEYS: dict[str, Key] = {
    "triggers.on_open": Key("none", "str", "what an opened issue runs", ("none", "reproduce", "fix")),
    "triggers.labels.fix": Key("reprobot:fix", "str", "label that starts a fix job"),
    "triggers.labels.reproduce": Key("reprobot:reproduce", "str", "label that starts a reproduction job"),
    "triggers.commands.enabled": Key(True, "bool", "whether slash commands in comments are obeyed"),
    "triggers.commands.allowed": Key(
        ["OWNER", "MEMBER", "COLLABORATOR"], "list", "author associations allowed to run commands", ASSOCIATIONS
    ),
    "triggers.commands.permission": Key(
        "write", "str", "else: collaborator permission needed (via the API)", ("admin", "write", "read", "none")
    ),
    "triggers.commands.reply_to_others": Key(True, "bool", "one polite reply per issue to anyone else"),
    "abstention.threshold": Key(
        0.5,
        "float",
        "act only when the triage score reaches this (REPROBOT_ABSTAIN_THRESHOLD is a floor)",
        minimum=0,
        maximum=1,
    ),
    "abstention.llm": Key(
        False, "bool", "also ask the model how actionable the report is (needs a deployment model; else a note)"
    ),
    "agent.kind": Key("classic", "str", "agent: classic (no LLM), llm, auto", ("classic", "llm", "auto")),
    "agent.strategy": Key(
        "freeform",
        "str",
        "cogeneration strategy of llm trajectories (a `/fix strategy=` option overrides it)",
        ("freeform", "tdd", "tld", "fix-only", "brt-only"),
    ),
    "agent.trajectories": Key(
        4, "int", "parallel trajectories per fix job (capped by REPROBOT_MAX_TRAJECTORIES)", minimum=1, maximum=32
    ),
    "agent.max_steps": Key(
        30, "int", "step limit per llm trajectory (tightens REPROBOT_LLM_MAX_STEPS)", minimum=1, maximum=500
    ),
    "review.llm": Key(
        False, "bool", "add the spec reviewer and the BRT relevance judge (needs a deployment model; else a note)"
    ),
    "selection.selector": Key("ranked", "str", "patch selector", ("default", "dual-level", "ranked", "reject-no-test")),
    "environment.setup": Key(
        None, "str?", "setup command run in the sandbox (no network) before the tests (null: detect)"
    ),
    "environment.test": Key(None, "str?", "test command (null: detect from the repo's files)"),
    "environment.timeout": Key(
        300, "float", "seconds for one test-suite run (capped by REPROBOT_MAX_TEST_TIMEOUT)", minimum=1, maximum=7200
    ),
    "environment.sandbox": Key("bwrap", "str", "sandbox backend", ("bwrap", "docker")),
    "environment.allow_direct_references": Key(
        False, "bool", "accept URL, path and VCS requirements (fetched as files, built only in the sandbox)"
    ),
    "publish.draft": Key(True, "bool", "open pull requests as drafts"),
    "publish.branch_prefix": Key("reprobot/issue-", "str", "branch name before the issue number"),
    "publish.labels": Key([], "list", "labels added to the pull request"),
    "publish.closes_issue": Key(True, "bool", "put `Fixes #N` in the PR body"),
    "paths.deny": Key(
        list(DEFAULT_DENIED),
        "list",
        "globs a patch may not touch: both paths of a rename count, and so do symlinks into them",
    ),
    "reproduce.runner.labels": Key(
        [],
        "list",
        "reproductions go to a self-hosted runner that has all these labels, e.g. [web] (empty: the bot's sandbox)",
    ),
    "reproduce.runner.app_url": Key(None, "str?", "the app a runner reproduces on (an address the runner reaches)"),
    "reproduce.runner.driver": Key("web", "str", "the runner's driver", ("web", "android")),
    # Game reproduction (issue 19): a game repo (a Minetest mod or game) is reproduced in the game on the runner.
    "reproduce.runner.game": Key(
        None, "str?", "the game a runner reproduces in (minetest, minecraft); no app_url then"
    ),
    "budget.max_cost_usd": Key(1.0, "float", "model spend cap per job (tightens REPROBOT_LLM_MAX_COST)", minimum=0),
    "budget.max_minutes": Key(
        30,
        "float",
        "wall-clock cap per job: the job stops with an error after it (capped by REPROBOT_MAX_JOB_MINUTES)",
        minimum=1,
    ),
}


class PolicyError(ValueError):
    """The policy file is invalid; `key` names the offending key (or the file) and `problem` says why."""

    def __init__(self, key: str, problem: str, source: str = POLICY_PATH) -> None:
        super().__init__(f"{source}: `{key}`: {problem}")
        self.key = key
        self.problem = problem
        self.source = source


def defaults() -> dict[str, Any]:
    """The server defaults as a nested mapping."""
    tree: dict[str, Any] = {}
    for dotted, key in KEYS.items():
        node = tree
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = copy.deepcopy(key.default)
    return tree


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`: mappings merge key by key, anything else (lists included) replaces."""
    out = copy.deepcopy(dict(base))
    for name, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(name), Mapping):
            out[name] = deep_merge(out[name], value)
        else:
            out[name] = copy.deepcopy(value)
    return out


def parse_yaml(text: str, source: str = POLICY_PATH) -> dict[str, Any]:
    """Parse one policy file into a mapping; an empty file is an empty mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise PolicyError("(file)", f"not valid YAML{where}: {getattr(exc, 'problem', exc)}", source) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PolicyError("(file)", f"must be a mapping of keys, not a {type(data).__name__}", source)
    return data


def _check(dotted: str, key: Key, value: Any, source: str) -> None:
    kind = key.kind.rstrip("?")
    if value is None and key.kind.endswith("?"):
        return
    ok = {
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[kind]
    if not ok:
        wanted = {"str": "a string", "bool": "true or false", "int": "an integer", "float": "a number"}
        raise PolicyError(dotted, f"expected {wanted.get(kind, 'a list of strings')}, got {value!r}", source)
    items = value if kind == "list" else [value]
    for item in items:
        if key.choices and item not in key.choices:
            raise PolicyError(dotted, f"{item!r} is not one of {', '.join(map(str, key.choices))}", source)
    if key.minimum is not None and value < key.minimum:
        raise PolicyError(dotted, f"{value!r} is below the minimum {key.minimum:g}", source)
    if key.maximum is not None and value > key.maximum:
        raise PolicyError(dotted, f"{value!r} is above the maximum {key.maximum:g}", source)


def validate(tree: Mapping[str, Any], source: str = POLICY_PATH, prefix: str = "") -> None:
    """Raise PolicyError naming the first unknown key or bad value in `tree` (a partial policy is fine)."""
    for name, value in tree.items():
        dotted = f"{prefix}{name}"
        if dotted == "_extends":
            continue
        if dotted in KEYS:
            _check(dotted, KEYS[dotted], value, source)
        elif any(k.startswith(dotted + ".") for k in KEYS):
            if not isinstance(value, Mapping):
                raise PolicyError(dotted, f"expected a mapping of keys, got {value!r}", source)
            validate(value, source, dotted + ".")
        else:
            raise PolicyError(dotted, "unknown key (see the policy table in docs/policy.md)", source)


#: Fetches (repo "owner/name", path) → file text, or None when the file does not exist.
Fetch = Callable[[str, str], Awaitable[str | None]]


def _extends_target(value: Any, owner: str, source: str) -> tuple[str, str]:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError("_extends", f"expected 'repo', 'owner/repo' or 'owner/repo:path', got {value!r}", source)
    repo, _, path = value.strip().partition(":")
    if "/" not in repo:
        repo = f"{owner}/{repo}"
    return repo, path or POLICY_PATH


async def load_policy(fetch: Fetch, repo: str, *, max_depth: int = 3) -> dict[str, Any]:
    """The effective policy of `repo`: its file over its `_extends` chain over the defaults.

    A repo without a file gets the org's `.github` repo policy if it has one, else the defaults.
    """
    owner = repo.split("/", 1)[0]
    layers: list[dict[str, Any]] = []
    target: tuple[str, str] | None = (repo, POLICY_PATH)
    seen: set[tuple[str, str]] = set()
    while target is not None:
        if target in seen or len(seen) > max_depth:
            raise PolicyError("_extends", f"chain too long or circular at {target[0]}:{target[1]}", layers_src(seen))
        seen.add(target)
        source = f"{target[0]}:{target[1]}"
        text = await fetch(*target)
        if text is None:
            if target == (repo, POLICY_PATH) and repo != f"{owner}/.github":
                target = (f"{owner}/.github", POLICY_PATH)
                continue
            if layers:
                raise PolicyError("_extends", f"{source} does not exist", layers[-1].get("__source__", POLICY_PATH))
            break
        layer = parse_yaml(text, source)
        validate(layer, source)
        layer["__source__"] = source
        layers.append(layer)
        target = _extends_target(layer["_extends"], owner, source) if "_extends" in layer else None
    merged = defaults()
    for layer in reversed(layers):
        merged = deep_merge(merged, {k: v for k, v in layer.items() if k not in ("_extends", "__source__")})
    return merged


async def load_policy_model(fetch: Fetch, repo: str, *, max_depth: int = 3) -> Policy:
    """`load_policy` as the typed model (bot/settings/policy_model.py); the same PolicyError on a bad file."""
    return Policy.from_dict(await load_policy(fetch, repo, max_depth=max_depth))


def effective_policy(tree: Mapping[str, Any] | None) -> Policy:
    """The typed policy of a possibly partial mapping over the defaults (a policy cached by an older bot)."""
    return Policy.from_dict(deep_merge(defaults(), tree or {}))


def layers_src(seen: set[tuple[str, str]]) -> str:
    """A readable list of the files visited, for an `_extends` error."""
    return ", ".join(sorted(f"{r}:{p}" for r, p in seen))


def policy_table() -> str:
    """docs/policy.md's markdown table of every key, its default and meaning."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for dotted, key in KEYS.items():
        choices = f" ({' / '.join(map(str, key.choices))})" if key.choices and key.kind != "list" else ""
        rows.append(f"| `{dotted}` | `{json.dumps(key.default)}` | {key.doc}{choices} |")
    return "\n".join(rows)

"""Hypothesis strategies for the soak: signed-able webhook bodies mutated from GitHub's recorded payloads.

Mutations aim at what broke intake before: a field the handlers read given another JSON type, ints past
SQLite's int64, lone surrogates, deep nesting, missing keys, a payload sent under another event's name, and
bodies that are not JSON at all (truncated, not UTF-8, nested past the parser's limit).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

#: Paths the handlers read: mutated far more often than a random one, since that is where bugs hide.
HOT_PATHS = (
    "action",
    "installation",
    "installation.id",
    "sender",
    "sender.login",
    "sender.type",
    "repository",
    "repository.full_name",
    "repository.default_branch",
    "issue",
    "issue.number",
    "issue.title",
    "issue.body",
    "issue.html_url",
    "issue.pull_request",
    "label",
    "label.name",
    "comment",
    "comment.id",
    "comment.body",
    "comment.user",
    "comment.user.login",
    "comment.user.type",
    "comment.author_association",
    "installation.account",
    "installation.account.login",
    "repositories",
    "pull_request",
    "pull_request.number",
    "pull_request.merged",
    "pull_request.head",
    "pull_request.head.ref",
)
EVENTS = ("issues", "issue_comment", "installation", "pull_request", "ping", "star")
#: Replaced, in the JSON text, by nesting of the drawn depth (json.dumps itself cannot write deep values).
_DEEP = "@@deep-{}@@"
_DEEP_TEXT = re.compile(r'"@@deep-(\d+)@@"')
_DELETE = object()

_surrogate = st.builds(
    lambda head, code, tail: head + chr(code) + tail,
    st.text(max_size=5),
    st.integers(0xD800, 0xDFFF),
    st.text(max_size=5),
)
_huge_int = st.sampled_from([2**63, 2**63 - 1, 2**64 + 1, -(2**63) - 1, -(2**63), 10**30, -1, 0])
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    _huge_int,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    _surrogate,
    st.sampled_from(["octo/app", "reprobot:fix", "/reprobot help", "/fix trajectories=99", "Bot", "OWNER"]),
)
_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=3),
    st.dictionaries(st.text(max_size=6), _scalar, max_size=3),
    st.integers(50, 5000).map(_DEEP.format),
    st.just(_DELETE),
)


def _paths(node: Any, prefix: str = "", depth: int = 0) -> Iterator[str]:
    if isinstance(node, dict) and depth < 4:
        for key, child in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path
            yield from _paths(child, path, depth + 1)


def _apply(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        if not isinstance(node, dict):
            return
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if not isinstance(node, dict):
        return
    if value is _DELETE:
        node.pop(last, None)
    else:
        node[last] = value


def _encode(data: Any) -> bytes:
    text = json.dumps(data)  # ensure_ascii: a lone surrogate becomes the JSON escape \udXXX, as a sender may write
    return _DEEP_TEXT.sub(lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), text).encode()


@st.composite
def deliveries(draw: st.DrawFn, bases: list[tuple[str, dict[str, Any]]]) -> tuple[str, bytes]:
    """(X-GitHub-Event, body): a recorded payload with 0-4 mutations, or a body that is not even JSON."""
    event, payload = draw(st.sampled_from(bases))
    data = copy.deepcopy(payload)
    for _ in range(draw(st.integers(0, 4))):
        paths = sorted(set(_paths(data)))
        path = draw(st.sampled_from(HOT_PATHS) | st.sampled_from(paths)) if paths else draw(st.sampled_from(HOT_PATHS))
        _apply(data, path, draw(_value))
    if draw(st.integers(0, 9)) == 0:
        event = draw(st.sampled_from(EVENTS))  # the body of one event under another's name
    body = _encode(data)
    shape = draw(st.sampled_from(["json"] * 12 + ["truncated", "not-utf8", "deep", "scalar"]))
    if shape == "truncated":
        body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif shape == "not-utf8":
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])) + body[at:]
    elif shape == "deep":
        depth = draw(st.integers(1000, 200_000))
        body = b"[" * depth + b"]" * depth
    elif shape == "scalar":
        body = _encode(draw(_scalar))
    return event, body


def draw_batch(bases: list[tuple[str, dict[str, Any]]], n: int, batch_seed: int) -> list[tuple[str, bytes]]:
    """`n` deliveries drawn by hypothesis (reproducible from `batch_seed`), for a soak loop to send."""
    out: list[tuple[str, bytes]] = []

    @seed(batch_seed)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(deliveries(bases))
    def collect(delivery: tuple[str, bytes]) -> None:
        out.append(delivery)

    collect()
    return out

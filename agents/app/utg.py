"""The UI transition graph (UTG): screens as nodes (hash of the normalized element list), actions as edges.

When a step's target is on no element of the current screen (the report skipped a step), the agent searches the
graph it knows for a path to a screen that has the target, and otherwise explores breadth-first from the current
screen within a depth and time budget. The graph is saved per app version, so the next run of the same build
starts with what earlier runs learned.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from agents.app.driver import Driver, DriverError, Element, state_hash

log = logging.getLogger(__name__)

#: Presses one exploration spends at most (each after a reset to its branch's screen).
MAX_EXPLORE_ACTIONS = 40
#: Roles worth pressing while exploring; typing into fields is left to the steps.
CLICKABLE = frozenset({"button", "link", "tab", "checkbox", "radio", "menuitem", "switch", "summary", "option"})


def click_action(element: Element) -> dict[str, object]:
    """The JSON action that presses `element` (its locator, and its text for a replay that must re-match)."""
    return {
        "action": "click",
        "target": element.text or element.label or element.id,
        "input": "",
        "locator": element.locator,
        "role": element.role,
    }


@dataclass
class UTG:
    """Nodes are state hashes with their elements; edges are (from, action, to)."""

    version: str = ""
    states: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    edges: list[tuple[str, dict[str, object], str]] = field(default_factory=list)

    def add_state(self, elements: list[Element]) -> str:
        """Record a screen; returns its hash."""
        key = state_hash(elements)
        self.states.setdefault(key, [e.to_json() for e in elements])
        return key

    def add_edge(self, src: str, action: dict[str, object], dst: str) -> None:
        """Record that `action` on `src` leads to `dst` (once)."""
        if not any(s == src and a.get("locator") == action.get("locator") and d == dst for s, a, d in self.edges):
            self.edges.append((src, action, dst))

    def elements(self, key: str) -> list[Element]:
        """The recorded elements of a state."""
        return [Element(**{**e, "bounds": tuple(e["bounds"])}) for e in self.states.get(key, [])]  # type: ignore[arg-type]

    def path(self, src: str, goal: Callable[[list[Element]], Element | None]) -> list[dict[str, object]] | None:
        """The shortest known action path from `src` to a state where `goal` finds its element."""
        seen, queue = {src}, deque([(src, list[dict[str, object]]())])
        while queue:
            node, actions = queue.popleft()
            if actions and goal(self.elements(node)) is not None:
                return actions
            for s, action, d in self.edges:
                if s == node and d not in seen:
                    seen.add(d)
                    queue.append((d, [*actions, action]))
        return None

    def save(self, cache_dir: Path) -> None:
        """Write the graph to the cache, keyed by app version."""
        if not self.version:
            return
        cache_dir.mkdir(parents=True, exist_ok=True)
        data = {"version": self.version, "states": self.states, "edges": self.edges}
        (cache_dir / f"utg-{self.version}.json").write_text(json.dumps(data))

    @classmethod
    def load(cls, cache_dir: Path | None, version: str) -> UTG:
        """The cached graph of this app version, or an empty one."""
        path = cache_dir / f"utg-{version}.json" if cache_dir else None
        if path is None or not path.is_file():
            return cls(version)
        try:
            data = json.loads(path.read_text())
            return cls(version, data["states"], [(s, a, d) for s, a, d in data["edges"]])
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring a corrupt UTG cache %s", path)
            return cls(version)


#: Brings the driver back to the screen an exploration path starts from (restart and replay what ran so far).
Reset = Callable[[list[dict[str, object]]], Awaitable[None]]


async def explore(
    driver: Driver,
    utg: UTG,
    reset: Reset,
    goal: Callable[[list[Element]], Element | None],
    *,
    max_depth: int = 2,
    max_branch: int = 12,
    deadline: float,
    order: str = "bfs",
    seed: int = 0,
    rank: Callable[[Element], float] | None = None,
    allowed: Callable[[Element], bool] | None = None,
    max_actions: int = MAX_EXPLORE_ACTIONS,
) -> list[dict[str, object]] | None:
    """Breadth-first exploration from the current screen until a screen where `goal` matches.

    `rank` orders each screen's controls, the most promising first (text close to the step's target), before
    `max_branch` cuts them; `allowed` drops controls never to press (a link to another host). At most
    `max_actions` presses are spent, and none after `deadline`.

    `order="random"` tries each screen's elements in a seeded random order instead of document order (a page
    whose first elements are many look-alike links reaches its other controls sooner); the seed keeps runs
    repeatable.

    `reset(path)` restarts the app, replays the steps so far and then `path`; exploration happens between resets,
    so every branch starts from the same screen. Returns the click path, or None when the budget runs out.
    """
    rng = random.Random(seed)
    start = await driver.observe()
    root = utg.add_state(start)
    queue: deque[tuple[list[dict[str, object]], list[Element]]] = deque([([], start)])
    seen = {root}
    spent = 0
    while queue:
        path, elements = queue.popleft()
        if len(path) >= max_depth:
            continue
        src = state_hash(elements)
        candidates = [e for e in elements if e.role in CLICKABLE and not e.editable and (allowed is None or allowed(e))]
        if order == "random":
            rng.shuffle(candidates)
        if rank is not None:
            candidates.sort(key=lambda e: -rank(e))  # stable: equal ranks keep document (or shuffled) order
        candidates = candidates[:max_branch]
        for i, element in enumerate(candidates):
            if time.monotonic() > deadline or spent >= max_actions:
                log.info("explore: budget spent (%d presses)", spent)
                return None
            spent += 1
            try:
                if i or path:
                    await reset(path)
            except DriverError as exc:
                log.info("explore: cannot return to the branch's screen: %s", exc)
                continue
            action = click_action(element)
            try:
                await driver.act(action, element)
            except DriverError as exc:
                log.info("explore: %s failed: %s", element.describe(), exc)
                continue
            after = await driver.observe()
            dst = utg.add_state(after)
            utg.add_edge(src, action, dst)
            if goal(after) is not None:
                return [*path, action]
            if dst not in seen:
                seen.add(dst)
                queue.append(([*path, action], after))
    return None

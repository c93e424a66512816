"""The probe harness seeds from the call the reproduction test is about, and compares objects by their state.

A reproduction test often builds its input with many calls into the repo (constructors, setup helpers) before
the one call the report is about. Those setup calls must not use up the seed budget, or the changed function is
never replayed on near inputs and two different fixes look the same. Results that are lists of objects without
a `__repr__` must compare by what the objects hold, not only by how many there are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

from patch_selectors.assess_run import HARNESS
from patch_selectors.probe_harness import MAX_SEEDS, norm_repr, state_repr

ROSTER = '''\
class Player:
    def __init__(self, name, team, score):
        self.name = name
        self.team = team
        self.score = score


def leaders(players):
    """The best-scoring player of each team, in the order the teams first appear."""
    best = {}
    for p in players:
        if p.team not in best or p.score > best[p.team].score:
            best[p.team] = p
    return list(best.values())
'''

# More constructor calls than the seed budget, then the call the report is about.
BRT = """\
from roster import Player, leaders


def test_leaders():
    players = [Player(n, t, s) for n, t, s in [
        ("ann", "red", 3), ("bob", "red", 9), ("cy", "blue", 4), ("di", "blue", 1),
        ("ed", "green", 2), ("flo", "green", 8), ("gus", "red", 5), ("hal", "blue", 6),
    ]]
    assert [p.name for p in leaders(players)] == ["bob", "hal", "flo"]
"""


class Plain:
    def __init__(self, value: int) -> None:
        self.value = value
        self._cache = object()


class Shown:
    def __repr__(self) -> str:
        return "Shown!"


def test_state_repr_tells_plain_objects_apart_by_their_public_attributes() -> None:
    a, b = [Plain(1), Plain(2)], [Plain(1), Plain(3)]
    assert norm_repr(a) == norm_repr(b)  # what the plain repr sees: two objects, alike
    assert state_repr(a) != state_repr(b)
    assert state_repr(a) == "[Plain(value=1), Plain(value=2)]"  # private attributes left out
    assert state_repr(Shown()) == "Shown!"  # an object's own repr is kept
    loop = Plain(0)
    loop.value = loop  # type: ignore[assignment]
    assert state_repr(loop) == "Plain(value=<Plain>)"  # one level down, so cycles end


def test_state_repr_of_equal_dicts_and_sets_does_not_depend_on_their_order() -> None:
    first, second = {"b": 2, "a": [1]}, {"a": [1], "b": 2}
    assert state_repr(first) == state_repr(second) == "{'a': [1], 'b': 2}"
    assert state_repr({"x", "y"}) == state_repr({"y", "x"}) == "{'x', 'y'}"
    assert state_repr(set()) == "set()" and state_repr(frozenset()) == "frozenset()"
    assert state_repr(frozenset({2, 1})) == "frozenset({1, 2})"
    # An OrderedDict compares its order, so it keeps it; unequal dicts stay apart.
    assert state_repr(OrderedDict(b=1, a=2)) == "{'b': 1, 'a': 2}"
    assert state_repr({"a": 1}) != state_repr({"a": 2})


def test_the_reported_call_is_seeded_and_alike_printing_variants_are_both_probed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "roster.py").write_text(ROSTER)
    (repo / "tests" / "test_brt.py").write_text(BRT)
    # The harness runs as a script: copied out of the package, as the sandbox gets it.
    harness = tmp_path / "harness.py"
    shutil.copy(HARNESS, harness)
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "targets": [{"file": "roster.py", "qualname": "leaders"}],
                "seed_prefix": "tests/test_brt.py",
                "root": f"{repo}/",
                "lines": {},
            }
        )
    )
    out = tmp_path / "out.json"
    argv = [sys.executable, str(harness), str(config), str(out), "--", "-q", "-p", "no:cacheprovider", "tests"]
    subprocess.run(argv, cwd=repo, check=True, capture_output=True, env={"PYTHONPATH": str(repo), "PATH": "/usr/bin"})
    document = json.loads(out.read_text())
    assert document["seeds"] == MAX_SEEDS + 1  # the budget of setup calls, and the reported call besides
    rows = [r for r in document["probes"] if ".leaders(" in r["key"]]
    labels = [r["mutated"] for r in rows]
    # Probed first, on the list one shorter at each end: two inputs whose reprs print alike.
    assert document["probes"][0]["key"].startswith("roster.leaders(")
    assert {"seed", "arg0:0", "arg0:1"} <= set(labels)
    assert len({r["key"] for r in rows}) == len(rows)
    drop_first = next(r for r in rows if r["mutated"] == "arg0:1")
    assert "Player(name='bob'" in drop_first["value"] and "Player(name='ann'" not in drop_first["value"]

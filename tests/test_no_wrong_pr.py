"""Each fix the bot once published wrong on a development case: assessed again, it must not be confident.

Precision before recall: a fix the correctness assessment cannot tell from a different, equally validated one
goes into a `suggested` comment, never a PR. These cases come from `reprobot eval` runs on the development set
(the wrong candidate is the one the search produced there); they need ../shared and skip without it.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.settings.config import Settings
from patch_selectors.assess_run import assess_records
from patch_selectors.records import Review, make_record
from patch_selectors.reviewers import ReviewEnv
from tests.conftest import QUIXBUGS, require_shared
from tests.review_envs import case_checkout, sandboxed_review_env

# The reproduction test the bot wrote from the report (its graph, its expected order).
TOPOLOGICAL_BRT = """\
from node import Node
from topological_ordering import topological_ordering


def test_topological_ordering_reported_bug():
    five, seven, three = Node(5), Node(7), Node(3)
    eleven, eight, two = Node(11), Node(8), Node(2)
    nine, ten = Node(9), Node(10)
    five.outgoing_nodes = [eleven]
    seven.outgoing_nodes = [eleven, eight]
    three.outgoing_nodes = [eight, ten]
    eleven.incoming_nodes = [five, seven]
    eleven.outgoing_nodes = [two, nine, ten]
    eight.incoming_nodes = [seven, three]
    eight.outgoing_nodes = [nine]
    two.incoming_nodes = [eleven]
    nine.incoming_nodes = [eleven, eight]
    ten.incoming_nodes = [eleven, three]
    result = [x.value for x in topological_ordering([five, seven, three, eleven, eight, two, nine, ten])]
    assert result == [5, 7, 3, 11, 8, 10, 2, 9]
"""

_LINE = "            if set(ordered_nodes).issuperset(nextnode.outgoing_nodes) and nextnode not in ordered_nodes:\n"


def _fix(new_condition: str) -> str:
    new = f"            if {new_condition} and nextnode not in ordered_nodes:\n"
    return (
        "diff --git a/topological_ordering.py b/topological_ordering.py\n"
        "--- a/topological_ordering.py\n+++ b/topological_ordering.py\n"
        "@@ -3,7 +3,7 @@ def topological_ordering(nodes):\n"
        " \n     for node in ordered_nodes:\n         for nextnode in node.outgoing_nodes:\n"
        f"-{_LINE}+{new}                 ordered_nodes.append(nextnode)\n \n     return ordered_nodes\n"
    )


def _brt_part() -> str:
    lines = TOPOLOGICAL_BRT.splitlines()
    added = "".join(f"+{line}\n" for line in lines)
    header = "diff --git a/tests/test_brt.py b/tests/test_brt.py\nnew file mode 100644\n--- /dev/null\n"
    return f"{header}+++ b/tests/test_brt.py\n@@ -0,0 +1,{len(lines)} @@\n{added}"


@pytest.fixture
async def topological_env(tmp_path: Path, settings: Settings) -> AsyncIterator[ReviewEnv]:
    """The development case's buggy repo, with its environment and baseline, in real sandboxes."""
    base = case_checkout(require_shared(QUIXBUGS / "topological_ordering"), tmp_path / "base")
    env, _ = await sandboxed_review_env(base, tmp_path / "scratch", settings)
    yield env
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


async def test_topological_ordering_the_wrong_superset_fix_is_not_confident(topological_env: ReviewEnv) -> None:
    """The search found two one-token fixes; both pass the BRT. Only the near inputs tell them apart."""
    right = make_record(
        "right", _fix("set(ordered_nodes).issuperset(nextnode.incoming_nodes)") + _brt_part(), [Review(True, "brt")]
    )
    wrong = make_record(
        "wrong", _fix("set(nodes).issuperset(nextnode.outgoing_nodes)") + _brt_part(), [Review(True, "brt")]
    )
    verdicts = await assess_records([right, wrong], topological_env)
    assert verdicts["wrong"].verdict == "unsure", verdicts["wrong"].reasons
    assert verdicts["wrong"].disagreements, "the two fixes differ on a near input of the reported call"

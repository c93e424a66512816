"""A candidate's BRT run gets a timeout scaled from the buggy run; cut-off candidates get the full one last."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.localize.ranking import Location
from agents.repair.classic import search as classic
from agents.repair.classic.search import (
    CandidateCache,
    ClassicSearch,
    SearchLimits,
    candidate_timeout,
)
from agents.repair.mutation.templates import Candidate
from agents.reproduce.brt import Reproduction
from agents.reproduce.types import BrtCandidate
from agents.trajectory import Submitted, Trajectory
from sandboxes.base import Limits, SandboxSpec
from sandboxes.environment import prepare_environment
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.testrun import Baseline, TestSuite
from tests.conftest import one_module_project

pytestmark = pytest.mark.timeout(300)


def test_the_timeout_scales_with_the_buggy_run_between_a_floor_and_the_full_timeout() -> None:
    limits = SearchLimits(brt_timeout=60.0, candidate_timeout_factor=5.0, candidate_min_timeout=2.0)
    assert candidate_timeout(0.1, limits) == 2.0  # a fast failing test: the floor
    assert candidate_timeout(1.0, limits) == 5.0
    assert candidate_timeout(30.0, limits) == 60.0  # a hang report's test: never above the full timeout
    assert candidate_timeout(0.1, SearchLimits(brt_timeout=60.0, candidate_timeout_factor=0)) == 60.0


SOURCE = "import time\n\n\ndef answer():\n    return 41\n"
# The report: answer() should be 42. The correct fix happens to be slow (it waits 3 s, past the 2 s floor);
# the other candidate never returns. Neither may be lost, and the hanging one must not cost the full timeout
# before the search has tried everything else.
HANGS = SOURCE.replace("return 41", "while True:\n        time.sleep(0.05)")
SLOW_FIX = SOURCE.replace("return 41", "time.sleep(3)\n    return 42")
BRT = "import mod\n\n\ndef test_answer():\n    assert mod.answer() == 42\n"


def _candidates(*_: Any, **__: Any) -> Iterator[Candidate]:
    yield Candidate("loop", "never returns", 5, HANGS)
    yield Candidate("fix", "slow but right", 5, SLOW_FIX)


async def test_cut_off_candidates_are_rechecked_with_the_full_timeout_when_nothing_else_validates(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (problem := available_backends()["bwrap"]) is not None:
        pytest.skip(f"bwrap unavailable: {problem}")
    workspace = one_module_project(tmp_path / "ws", SOURCE)
    env = await prepare_environment(workspace, env_cache, python=Path("/usr/bin/python3"))
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300), session="warm")
    monkeypatch.setattr(classic, "generate_candidates", _candidates)
    async with make_sandbox("bwrap", spec) as sb:
        runner = TestSuite(env, timeout=120)
        brt = BrtCandidate("tests/test_brt.py", BRT, "wrong_value", "42", "test_answer", "answer() returns 42")
        sb.write_file(brt.path, brt.source)
        before = await runner.run(sb, [brt.path])
        assert not before.all_passed and before.result.duration < 2.0, before.result.output
        repro = Reproduction(brt=brt, before=before, locations=[Location("mod.py", 5, 1.0, ("test",))])
        # Factor 1: the short timeout is the 2 s floor whether the buggy run started an interpreter or not.
        limits = SearchLimits(brt_timeout=8.0, max_alternatives=0, candidate_timeout_factor=1.0)
        search = ClassicSearch(
            repro, runner, Baseline(tests={"tests/test_other.py::test_other": "passed"}), CandidateCache(), limits
        )
        trajectory = Trajectory(id="t0", agent="classic", seed=0)
        with pytest.raises(Submitted, match="slow but right"):
            await search.run(sb, trajectory)
    tries = [(s["description"], s.get("timed_out_after")) for s in trajectory.steps if s["kind"] == "try_candidate"]
    # Both were cut off at the 2 s floor, then rechecked in order with the full 8 s: the hang again, then the fix.
    assert tries == [
        ("never returns", 2.0),
        ("slow but right", 2.0),
        ("never returns", 8.0),
        ("slow but right", None),
    ]
    assert trajectory.status == "fixed" and "time.sleep(3)" in trajectory.diff

"""Test impact selection for real: baseline coverage in the bwrap sandbox, then what a candidate's check runs."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agents.localize import impact
from agents.repair.classic.search import CandidateCache, ClassicSearch, SearchLimits
from sandboxes.base import Limits, Sandbox, SandboxSpec
from sandboxes.environment import BuiltEnvironment, prepare_environment, run_baseline
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.testrun import Baseline, TestRun, TestSuite
from tests.test_envspec import write

pytestmark = pytest.mark.timeout(300)

CALC = "SCALE = 1\n\n\ndef add(a, b):\n    return (a + b) * SCALE\n\n\ndef sub(a, b):\n    return (a - b) * SCALE\n"
PROJECT = {
    "setup.py": "from setuptools import setup\nsetup(name='calc', version='0.1', py_modules=['calc'])\n",
    "calc.py": CALC,
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n",
    "tests/test_calc.py": (
        "import calc\n\n\n"
        "def test_add(two):\n    assert calc.add(two, 1) == 3\n\n\n"
        "def test_sub():\n    assert calc.sub(5, 2) == 3\n\n\n"
        "def test_nothing():\n    assert True\n"
    ),
}


class RecordingRunner(TestSuite):
    """The real runner, remembering each selection it ran (empty: the full suite)."""

    __test__ = False

    def __init__(self, env: BuiltEnvironment) -> None:
        super().__init__(env, timeout=120)
        self.selections: list[list[str]] = []

    async def run(self, sandbox: Sandbox, selection: Iterable[str] = (), **kwargs: Any) -> TestRun:
        chosen = list(selection)
        self.selections.append(chosen)
        return await super().run(sandbox, chosen, **kwargs)


@contextlib.asynccontextmanager
async def _measured(
    tmp_path: Path, env_cache: Path, files: dict[str, str]
) -> AsyncIterator[tuple[Sandbox, RecordingRunner, ClassicSearch]]:
    """A bwrap sandbox on `files` with its baseline measured under coverage, and a search over it."""
    if (problem := available_backends()["bwrap"]) is not None:
        pytest.skip(f"bwrap unavailable: {problem}")
    workspace = write(tmp_path / "ws", files)
    env = await prepare_environment(workspace, env_cache, python=Path("/usr/bin/python3"))
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300))
    async with make_sandbox("bwrap", spec) as sb:
        baseline, run = await run_baseline(sb, env, timeout=300, coverage_rc=impact.coverage_rc(sb))
        coverage = await impact.read_coverage(sb, env.python)
        assert coverage is not None, run.result.output[-2000:]
        baseline = dataclasses.replace(baseline, coverage=coverage)
        runner = RecordingRunner(env)
        brt = SimpleNamespace(brt=SimpleNamespace(path="tests/test_brt.py", source=""))
        yield sb, runner, ClassicSearch(brt, runner, baseline, CandidateCache(), SearchLimits())  # type: ignore[arg-type]


async def test_candidate_checks_run_impacted_tests_first_and_fall_back_to_the_full_suite(
    tmp_path: Path, env_cache: Path
) -> None:
    async with _measured(tmp_path, env_cache, PROJECT) as (sb, runner, search):
        assert len(search.baseline.passing) == 3, search.baseline.tests

        async def check(path: str, old: str, new: str) -> tuple[bool, list[list[str]]]:
            runner.selections.clear()
            sb.write_file(path, new)
            try:
                ok, _, _ = await search._regressions(sb, (path, old, new))
            finally:
                sb.write_file(path, old)
            return ok, list(runner.selections)

        # A body edit breaking add(): only the test that ran that line runs, and the candidate is rejected.
        ok, runs = await check("calc.py", CALC, CALC.replace("(a + b) * SCALE", "(a + b + 1) * SCALE"))
        assert not ok and runs == [["tests/test_calc.py::test_add"]]
        # The same edit again (another trajectory's): the verdict is shared, nothing runs.
        ok, runs = await check("calc.py", CALC, CALC.replace("(a + b) * SCALE", "(a + b + 1) * SCALE"))
        assert not ok and runs == []
        # A body edit that keeps the tests passing survives the impacted test, then runs the full suite once.
        ok, runs = await check("calc.py", CALC, CALC.replace("(a - b) * SCALE", "(a - b) * SCALE * 1"))
        assert ok and runs == [["tests/test_calc.py::test_sub"], []]
        # A module-level statement and a conftest fixture: straight to the full suite.
        ok, runs = await check("calc.py", CALC, CALC.replace("SCALE = 1", "SCALE = 2"))
        assert not ok and runs == [[]]
        conftest = PROJECT["tests/conftest.py"]
        ok, runs = await check("tests/conftest.py", conftest, conftest.replace("return 2", "return 3"))
        assert not ok and runs == [[]]
        # With impact selection off (the previous method), every check is the full suite.
        search.limits = SearchLimits(test_impact=False)
        ok, runs = await check("calc.py", CALC, CALC.replace("(a + b) * SCALE", "(a + b + 1) * SCALE"))
        assert not ok and runs == [[]]


def test_baseline_without_coverage_selects_nothing() -> None:
    assert Baseline(tests={"t::a": "passed"}).coverage is None


def test_the_compact_export_reads_the_same_as_coverage_json_and_is_smaller(tmp_path: Path) -> None:
    """Many tests over the same lines: the compact form names each set of tests once."""
    import json
    import subprocess
    import sys

    from coverage import CoverageData

    from agents.localize.ranking import coverage_from_json

    (tmp_path / "pkg.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 7)))
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    for n in range(300):
        data.set_context(f"tests.test_big.test_case_{n}")
        data.add_lines({str(tmp_path / "pkg.py"): [1, 2, 3] + ([4, 5] if n % 2 else [6])})
    data.write()
    (tmp_path / "export.py").write_text(impact._EXPORT)
    compact_path, full_path = tmp_path / "compact.json", tmp_path / "full.json"
    subprocess.run([sys.executable, "export.py", ".coverage", str(compact_path)], cwd=tmp_path, check=True)
    rc = tmp_path / "rc"
    rc.write_text(f"[run]\ndata_file = {tmp_path / '.coverage'}\n[json]\nshow_contexts = True\n")
    subprocess.run(
        [sys.executable, "-m", "coverage", "json", f"--rcfile={rc}", "-o", str(full_path)], cwd=tmp_path, check=True
    )
    compact = coverage_from_json(json.loads(compact_path.read_text()), str(tmp_path))
    full = coverage_from_json(json.loads(full_path.read_text()), str(tmp_path))
    assert compact == full and len(compact["pkg.py"][4]) == 150
    assert compact_path.stat().st_size * 5 < full_path.stat().st_size


async def test_coverage_too_large_to_read_falls_back_to_the_full_suite() -> None:
    from sandboxes.base import SandboxError

    class Oversized:
        def write_file(self, relpath: str, content: str) -> None:
            pass

        async def run(self, argv: list[str], timeout: float) -> SimpleNamespace:
            return SimpleNamespace(exit_code=0, output="")

        def read_file(self, relpath: str) -> str:
            raise SandboxError(f"{relpath!r} is larger than 33554432 bytes")

    assert await impact.read_coverage(Oversized(), "python3") is None  # type: ignore[arg-type]


NORM = "def norm(x):\n    return x\n"
SHARED_LINE = {
    "setup.py": "from setuptools import setup\nsetup(name='norm', version='0.1', py_modules=['norm'])\n",
    "norm.py": NORM,
    "tests/test_norm.py": "".join(
        f"import norm\n\n\ndef test_{name}():\n    assert norm.norm({value}) {op}\n\n\n"
        for name, value, op in (
            ("a_loose", 5, "is not None"),
            ("b_loose", 6, "> -100"),
            ("c_exact", 7, "== 7"),
            ("d_loose", 8, "< 100"),
        )
    ),
}


async def test_impacted_tests_stop_at_the_first_failure_and_earlier_killers_run_first(
    tmp_path: Path, env_cache: Path
) -> None:
    """Four tests execute the edited line; only one pins its value. The first wrong candidate runs tests until that
    one fails and no further; the next wrong candidate runs it first, so one test decides."""
    async with _measured(tmp_path, env_cache, SHARED_LINE) as (sb, runner, search):
        exact = "tests/test_norm.py::test_c_exact"

        async def check(new: str) -> tuple[bool, str, TestRun, list[str]]:
            runner.selections.clear()
            sb.write_file("norm.py", new)
            try:
                ok, reason, first = await search._regressions(sb, ("norm.py", NORM, new))
            finally:
                sb.write_file("norm.py", NORM)
            return ok, reason, first, runner.selections[0]

        ok, reason, first, order = await check(NORM.replace("return x", "return x + 1"))
        assert not ok and reason == f"broke: {exact}"
        assert order.index(exact) == 2 and first.tests[exact] == "failed"
        assert "tests/test_norm.py::test_d_loose" not in first.tests  # stopped at the failure
        ok, reason, first, order = await check(NORM.replace("return x", "return x - 1"))
        assert not ok and order[0] == exact and list(first.tests) == [exact]
        # A candidate every test accepts still runs them all, then the full suite.
        ok, reason, first, order = await check(NORM.replace("return x", "return x * 1"))
        assert ok and len(runner.selections) == 2 and runner.selections[1] == []


DOCTESTING = {
    **PROJECT,
    # Dot-folders are not skipped (norecursedirs replaces pytest's default) and every module is imported for its
    # doctests: the way python-semver configured its suite.
    "setup.cfg": "[tool:pytest]\nnorecursedirs = .git build\naddopts = --doctest-modules\n",
    "calc.py": CALC.replace("    return (a + b)", '    """>>> add(1, 2)\n    3\n    """\n    return (a + b)'),
}


async def test_a_suite_that_imports_every_module_leaves_our_scratch_scripts_alone(
    tmp_path: Path, env_cache: Path
) -> None:
    """Our helper scripts in the scratch folder are neither collected nor run by the project's whole-suite runs.

    Before, a later full run imported the coverage export script, which ran at import and wrote a file named
    after pytest's own `-p` argument into the workspace: every candidate's diff then added that file.
    """
    async with _measured(tmp_path, env_cache, DOCTESTING) as (sb, runner, _search):
        run = await runner.run(sb)
        assert "calc.py::calc.add" in run.tests, run.tests
        assert not [t for t in run.tests if ".reprobot" in t], run.tests
        assert sorted(p.name for p in sb.spec.workspace.iterdir() if p.name.startswith("-")) == []

"""The baseline cache: a commit's suite runs once per environment, and any change to the tree runs it again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bot.pipeline.baseline import run_baseline
from bot.pipeline.environment import prepare_environment
from bot.pipeline.types import JobContext, JobRequest
from bot.settings.config import Settings
from bot.store import Store
from sandboxes import baseline_cache
from sandboxes.testrun import Baseline
from sandboxes.workspace import clone_workspace, git
from tests.conftest import make_git_repo

REPO = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_known_failure():\n    assert add(1, 1) == 3\n"
    ),
}


def test_a_baseline_survives_the_round_trip_coverage_included(tmp_path: Path) -> None:
    baseline = Baseline(
        tests={"t.py::a": "passed", "t.py::b": "failed"},
        seconds=1.5,
        output_tail="1 failed, 1 passed",
        collection_errors={"t2.py": "ImportError: x"},
        coverage={"calc.py": {2: {"t.py::a|run", "t.py::b|run"}}},
    )
    baseline_cache.store(tmp_path, "k", baseline)
    loaded = baseline_cache.load(tmp_path, "k")
    assert loaded == baseline and loaded is not None
    assert loaded.coverage == baseline.coverage and loaded.cached and not baseline.cached


def test_a_torn_entry_reads_as_absent(tmp_path: Path) -> None:
    baseline_cache.store(tmp_path, "k", Baseline(tests={"a": "passed"}))
    path = tmp_path / "baselines" / "k.json.gz"
    path.write_bytes(path.read_bytes()[:10])
    assert baseline_cache.load(tmp_path, "k") is None
    assert baseline_cache.load(tmp_path, "absent") is None


async def test_the_tree_hash_follows_content_not_the_clone(tmp_path: Path) -> None:
    first = make_git_repo(tmp_path / "a", REPO)
    second = make_git_repo(tmp_path / "b", REPO)
    tree = await baseline_cache.workspace_tree(first)
    assert tree == await baseline_cache.workspace_tree(second)  # two clones of one commit share a baseline
    (second / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    assert await baseline_cache.workspace_tree(second) != tree  # an edited file
    (first / "conftest.py").write_text("import sys\n")
    assert await baseline_cache.workspace_tree(first) != tree  # an untracked file changes what pytest runs
    assert "conftest.py" not in (await _git_status(first))  # the workspace's own index is left alone


async def _git_status(repo: Path) -> str:
    return (await git(repo, "diff", "--cached", "--name-only")).stdout


@pytest.mark.timeout(600)
async def test_a_second_job_on_the_same_tree_reuses_the_baseline(settings: Settings, tmp_path: Path) -> None:
    # Workspaces made the way the checkout stage makes them (the scratch folder excluded, then created).
    source = make_git_repo(tmp_path / "source", REPO)
    repo = await clone_workspace(source, tmp_path / "repo")
    ctx = JobContext(settings, Store.open(settings.store_path), 1, tmp_path / "work")
    request = JobRequest(repo=repo, issue_text="add is wrong", issue_ref="#1", sandbox="bwrap")
    env = await prepare_environment(ctx, repo, request)
    first = await run_baseline(ctx, repo, env, request)
    assert first.tests == {"tests/test_calc.py::test_add": "passed", "tests/test_calc.py::test_known_failure": "failed"}
    assert not first.cached
    # Another clone of the same commit (the next issue on this branch): read, not run.
    clone = await clone_workspace(source, tmp_path / "clone")
    again = await run_baseline(ctx, clone, env, request)
    assert again.cached and again == first
    # A test added to the tree is a different baseline: the suite runs again and sees it.
    (clone / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    changed = await run_baseline(ctx, clone, env, request)
    assert not changed.cached and "tests/test_more.py::test_more" in changed.tests
    # Turned off, every job runs its own.
    off = JobContext(dataclasses.replace(settings, baseline_cache=False), ctx.store, 2, tmp_path / "work2")
    assert not (await run_baseline(off, repo, env, request)).cached

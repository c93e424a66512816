"""`reprobot fix|reproduce` on a repo whose environment cannot run its tests: exit 7 naming the cause, no abstention."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import ISSUE, branches, calc_repo, run_cli


@pytest.fixture
def data_dir(tmp_path: Path, env_cache: Path) -> Path:
    """A private data dir that shares the session's environment cache."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    return data


@pytest.mark.parametrize("command", ["fix", "reproduce"])
def test_an_unimportable_project_is_an_environment_error_naming_the_module(
    tmp_path: Path, data_dir: Path, command: str
) -> None:
    # The tests' conftest needs a package nothing declares: no test module loads, so no test runs at all.
    repo = calc_repo(tmp_path / "calc", **{"tests/conftest.py": "import undeclared_pkg\n"})
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    code, doc, _ = run_cli(command, "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 7 and doc["status"] == "error", doc
    assert "'undeclared_pkg'" in doc["reasons"][0] and "environment" in doc["reasons"][0]
    assert doc["environment"]["python"], "the JSON says which Python the environment was built with"
    assert branches(repo) == ["main"]


def test_a_suite_that_collects_nothing_is_an_environment_error(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc", **{"pytest.ini": "[pytest]\npython_files = spec_*.py\n"})
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 7 and doc["status"] == "error"
    assert "collected no tests" in doc["reasons"][0] and "pytest.ini" in doc["reasons"][0]

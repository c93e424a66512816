"""`reprobot env detect|test` end to end: real repos, real environment builds, real sandboxes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings.config import Settings
from sandboxes.factory import available_backends
from tests.conftest import make_git_repo

pytestmark = pytest.mark.timeout(600)

PY_REPO = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.3.1"\n',
    "src/calc/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "import importlib.metadata\nimport pytest\nfrom calc import add\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n\n"
        "def test_metadata():\n    assert importlib.metadata.version('calc') == '0.3.1'\n\n"
        "def test_wrong():\n    assert add(1, 1) == 3\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n"
    ),
    "tests/test_broken.py": "import not_a_module_anywhere\n",
}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def data_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The CLI reads settings from the environment: point it at the test's data dir (shared env cache)."""
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(settings.data_dir))
    return settings


def test_detect_prints_the_spec_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings) -> None:
    repo = make_git_repo(tmp_path / "repo", PY_REPO)
    code, out, _ = cli(capsys, "env", "detect", "--repo", str(repo), "--json")
    assert code == 0
    spec = json.loads(out)
    assert spec["language"] == "python" and spec["report_format"] == "junit-xml"
    assert spec["project"] == ["calc", "0.3.1"] and spec["python_path"] == [".", "src"]


def test_detect_without_signals_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings
) -> None:
    repo = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    code, out, err = cli(capsys, "env", "detect", "--repo", str(repo), "--json")
    assert code == 7 and "no test setup found" in err
    doc = json.loads(out)
    assert doc == {"status": "error", "reasons": [doc["reasons"][0]], "exit_code": 7}
    assert "no test setup found" in doc["reasons"][0]


def test_env_test_on_a_non_repo_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "pyproject.toml").write_text("[project]\nname='x'\n")
    code, out, err = cli(capsys, "env", "test", "--repo", str(tmp_path / "plain"), "--json")
    assert code == 4 and "git repository" in err
    # With --json the handled error is also the one JSON document on stdout.
    doc = json.loads(out)
    assert doc["status"] == "error" and doc["exit_code"] == 4 and "git repository" in doc["reasons"][0]


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_env_test_counts_per_status_in_each_backend(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings
) -> None:
    problem = available_backends()[backend]
    if problem is not None:
        pytest.skip(f"{backend} backend unavailable: {problem}")
    repo = make_git_repo(tmp_path / "repo", PY_REPO)
    code, out, err = cli(capsys, "env", "test", "--repo", str(repo), "--sandbox", backend, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["passed"], result["failed"], result["skipped"], result["errors"]) == (2, 1, 1, 1), result
    assert result["tests"]["tests/test_calc.py::test_wrong"] == "failed"
    assert result["tests"]["tests/test_calc.py::test_metadata"] == "passed"  # static metadata shim
    assert set(result) >= {"passed", "failed", "skipped", "errors", "seconds", "tests"}
    assert not (repo / ".reprobot").exists()  # the user's checkout is never written to
    # The second run reuses the environment.
    code, out, _ = cli(capsys, "env", "test", "--repo", str(repo), "--sandbox", backend, "--json")
    assert code == 0 and json.loads(out)["cache_hit"] is True


def test_env_test_runs_a_node_suite_by_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings
) -> None:
    if shutil.which("node") is None or not shutil.which("npm"):
        pytest.skip("node/npm are not installed on this host")
    if available_backends()["bwrap"] is not None:
        pytest.skip(f"bwrap backend unavailable: {available_backends()['bwrap']}")
    pkg = {"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}
    repo = make_git_repo(
        tmp_path / "repo",
        {"package.json": json.dumps(pkg), "test.js": "const assert = require('assert');\nassert.equal(1 + 1, 2);\n"},
    )
    code, out, err = cli(capsys, "env", "test", "--repo", str(repo), "--sandbox", "bwrap", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["language"] == "node" and result["passed"] == 1 and result["failed"] == 0

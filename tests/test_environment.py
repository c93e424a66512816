"""Environment detection, JUnit parsing and the cached virtualenv build."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes.environment import (
    BASE_TEST_DEPS,
    ENV_MOUNT,
    EnvironmentError_,
    EnvironmentSpec,
    build_environment,
    detect_python_spec,
    parse_junit_xml,
    prepare_environment,
)
from sandboxes.setup_agent import SetupBudget, SetupFailed

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_a" name="test_ok" time="0.001"/>
<testcase classname="tests.test_a" name="test_bad[case1]" time="0.001"><failure message="x">boom</failure></testcase>
<testcase classname="tests.test_a.TestThing" name="test_err" time="0"><error message="e">E</error></testcase>
<testcase classname="tests.test_b" name="test_skip" time="0"><skipped message="s"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit_maps_ids_and_statuses() -> None:
    tests = parse_junit_xml(JUNIT)
    assert tests == {
        "tests/test_a.py::test_ok": "passed",
        "tests/test_a.py::test_bad[case1]": "failed",
        "tests/test_a.py::TestThing::test_err": "error",
        "tests/test_b.py::test_skip": "skipped",
    }


def test_parse_junit_tolerates_garbage() -> None:
    assert parse_junit_xml("<not xml") == {}


def test_detect_reads_pyproject_extras_and_requirements(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname="x"\ndependencies=["attrs>=22"]\n[project.optional-dependencies]\ntest=["hypothesis"]\n'
    )
    (tmp_path / "requirements-dev.txt").write_text("# tools\nrequests==2.31\n-e .\n--index-url http://x\n")
    (tmp_path / "src").mkdir()
    spec = detect_python_spec(tmp_path)
    for dep in (*BASE_TEST_DEPS, "attrs>=22", "hypothesis", "requests==2.31"):
        assert dep in spec.deps
    assert "-e ." not in spec.deps
    assert spec.python_path == (".", "src")
    assert set(spec.sources) == {"pyproject.toml", "requirements-dev.txt"}


def test_detect_survives_broken_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\nname=")
    assert detect_python_spec(tmp_path).deps == BASE_TEST_DEPS


async def test_environment_is_built_once_then_cached(env_cache: Path, tmp_path: Path) -> None:
    spec = detect_python_spec(tmp_path)
    first = await build_environment(spec, env_cache, python=Path("/usr/bin/python3"))
    second = await build_environment(spec, env_cache, python=Path("/usr/bin/python3"))
    assert second.cache_hit and second.path == first.path
    assert (first.path / "bin" / "python").exists()
    assert spec.cache_key("/usr/bin/python3") != spec.cache_key("/usr/bin/python3.12")


class ScriptedSetupAgent:
    """Stands in for the model-driven setup loop: answers with a fixed spec, or fails, and records calls."""

    def __init__(self, answer: EnvironmentSpec | None) -> None:
        self.answer = answer
        self.calls: list[tuple[Path, tuple[str, ...], int]] = []

    async def discover(
        self, repo: Path, draft: EnvironmentSpec | None, *, budget: SetupBudget, ci_commands: tuple[str, ...] = ()
    ) -> EnvironmentSpec:
        self.calls.append((repo, ci_commands, budget.max_cycles))
        if self.answer is None:
            raise SetupFailed("40 cycles used, no test command produced results")
        return self.answer


async def test_setup_agent_is_asked_only_when_signals_are_missing(env_cache: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "check.sh").write_text("exit 0\n")
    answer = EnvironmentSpec(language="shell", deps=(), test_command=("sh", "check.sh"), report_format="exit-code")
    agent = ScriptedSetupAgent(answer)
    env = await prepare_environment(bare, env_cache, python=Path("/usr/bin/python3"), agent=agent)
    assert env.spec == answer and agent.calls == [(bare, (), 40)]
    (bare / "requirements.txt").write_text("")
    again = await prepare_environment(bare, env_cache, python=Path("/usr/bin/python3"), agent=agent)
    assert again.spec.language == "python" and len(agent.calls) == 1


async def test_setup_agent_failure_is_an_environment_error(env_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(EnvironmentError_, match="setup agent failed too: 40 cycles"):
        await prepare_environment(tmp_path, env_cache, python=Path("/usr/bin/python3"), agent=ScriptedSetupAgent(None))
    with pytest.raises(EnvironmentError_, match="no test setup found"):
        await prepare_environment(tmp_path, env_cache, python=Path("/usr/bin/python3"))


async def test_console_scripts_point_at_the_mount_point(env_cache: Path, tmp_path: Path) -> None:
    env = await build_environment(detect_python_spec(tmp_path), env_cache, python=Path("/usr/bin/python3"))
    shebang = (env.path / "bin" / "pytest").read_text().splitlines()[0]
    assert shebang == f"#!{ENV_MOUNT}/bin/python"


async def test_the_project_itself_comes_from_the_workspace_only(env_cache: Path) -> None:
    # "six" stands for a project a dependency pulled in from PyPI (attrs via hypothesis).
    spec = EnvironmentSpec(deps=(*BASE_TEST_DEPS, "six"), project=("six", "9.9"), python_path=(".", "src"))
    env = await build_environment(spec, env_cache, python=Path("/usr/bin/python3"))
    (site,) = env.path.glob("lib/python3*/site-packages")
    assert not list(site.glob("six*"))
    pth = (site / "_reprobot_workspace.pth").read_text().split()
    assert pth == ["/workspace", "/workspace/src", "/workspace/.reprobot/meta"]

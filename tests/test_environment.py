"""Environment detection, JUnit parsing and the cached virtualenv build."""

from __future__ import annotations

from pathlib import Path

from sandboxes.environment import BASE_TEST_DEPS, build_environment, detect_python_spec, parse_junit_xml

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

"""Suites of older projects run for real in the bwrap sandbox, and a baseline that runs nothing says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes.base import ExecResult, Limits, SandboxSpec
from sandboxes.environment import BuiltEnvironment, prepare_environment, run_baseline
from sandboxes.envspec import EnvironmentSpec
from sandboxes.factory import make_sandbox
from sandboxes.testrun import TestRun, TestSuite, diagnose_baseline
from tests.test_envspec import write

# Settings under setup.cfg's old [pytest] section (pytest >= 4 refuses it), test files that only the project's own
# python_files pattern matches, and a nose-style `setup` method that pytest 8 no longer calls.
OLD_PROJECT = {
    "setup.cfg": "[pytest]\npython_files = check_*.py\n",
    "setup.py": "from setuptools import setup\nsetup(name='oldie', version='0.1', py_modules=['oldie'])\n",
    "oldie.py": "def double(x):\n    return 2 * x\n",
    "tests/check_oldie.py": (
        "import oldie\n\n\n"
        "class TestDouble:\n"
        "    def setup(self):\n        self.base = 21\n\n"
        "    def test_double(self):\n        assert oldie.double(self.base) == 42\n\n\n"
        "def test_zero():\n    assert oldie.double(0) == 0\n"
    ),
}


async def _baseline(workspace: Path, env_cache: Path) -> tuple[BuiltEnvironment, TestRun]:
    env = await prepare_environment(workspace, env_cache, python=Path("/usr/bin/python3"))
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300))
    async with make_sandbox("bwrap", spec) as sb:
        _, run = await run_baseline(sb, env, timeout=300)
    return env, run


async def test_old_style_suite_is_collected_and_its_nose_setup_runs(tmp_path: Path, env_cache: Path) -> None:
    workspace = write(tmp_path / "ws", OLD_PROJECT)
    env, run = await _baseline(workspace, env_cache)
    assert any(d.startswith("pytest<8") for d in env.spec.deps), env.spec.deps
    assert env.spec.pytest_source == "setup.cfg [pytest]"
    assert run.tests == {
        "tests/check_oldie.py::TestDouble::test_double": "passed",
        "tests/check_oldie.py::test_zero": "passed",
    }, run.result.output[-2000:]
    assert diagnose_baseline(run, env.spec) is None


NOSE_PROJECT = {
    "setup.cfg": "[nosetests]\nwhere = suite\n",
    "setup.py": "from setuptools import setup\nsetup(name='nosey', version='0.1', py_modules=['nosey'])\n",
    "nosey.py": "def shout(s):\n    return s.upper()\n",
    # Neither file nor class matches pytest's default patterns; nose collects both.
    "suite/shout_tests.py": (
        "from nose.tools import assert_equal, with_setup\n\nimport nosey\n\n\n"
        "class ShoutTest:\n"
        "    def setup(self):\n        self.word = 'hey'\n\n"
        "    def test_shout(self):\n        assert_equal(nosey.shout(self.word), 'HEY')\n"
    ),
}


async def test_nose_suite_runs_with_nose_collection_rules(tmp_path: Path, env_cache: Path) -> None:
    workspace = write(tmp_path / "ws", NOSE_PROJECT)
    env, run = await _baseline(workspace, env_cache)
    assert "nose" in env.spec.deps
    assert run.tests == {"suite/shout_tests.py::ShoutTest::test_shout": "passed"}, run.result.output[-2000:]


async def test_project_naming_rules_hold_for_the_suite_and_a_written_test_is_still_collected(
    tmp_path: Path, env_cache: Path
) -> None:
    workspace = write(
        tmp_path / "ws",
        {
            "pytest.ini": "[pytest]\npython_functions = check_*\npython_classes = Check\n",
            "tests/test_math.py": "def check_add():\n    assert 1 + 1 == 2\n\ndef helper_not_a_test():\n    raise X\n",
        },
    )
    env, run = await _baseline(workspace, env_cache)
    assert run.tests == {"tests/test_math.py::check_add": "passed"}
    # A reproduction test written the usual way (test_ prefix) runs when selected, beside the project's rules.
    write(workspace, {"tests/test_brt.py": "class TestBug:\n    def test_bug(self):\n        assert 1 + 1 == 3\n"})
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300))
    async with make_sandbox("bwrap", spec) as sb:
        brt = await TestSuite(env, timeout=300).run(sb, ["tests/test_brt.py"])
    assert brt.tests == {"tests/test_brt.py::TestBug::test_bug": "failed"}, brt.result.output[-2000:]


async def test_missing_module_is_named_as_an_environment_failure(tmp_path: Path, env_cache: Path) -> None:
    workspace = write(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "needy"\nversion = "1"\n',
            "needy.py": "import notinstalledanywhere\n",
            "tests/test_needy.py": "import needy\n\ndef test_it():\n    assert needy\n",
        },
    )
    env, run = await _baseline(workspace, env_cache)
    problem = diagnose_baseline(run, env.spec)
    assert problem is not None and "'notinstalledanywhere'" in problem and "ModuleNotFoundError" in problem


async def test_a_partly_importable_suite_runs_and_records_what_did_not_import(tmp_path: Path, env_cache: Path) -> None:
    workspace = write(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "half"\nversion = "1"\n',
            "tests/test_ok.py": "def test_ok():\n    pass\n",
            "tests/test_optional.py": "import someoptionalstack\n\ndef test_it():\n    pass\n",
        },
    )
    env = await prepare_environment(workspace, env_cache, python=Path("/usr/bin/python3"))
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300))
    async with make_sandbox("bwrap", spec) as sb:
        baseline, run = await run_baseline(sb, env, timeout=300)
    assert diagnose_baseline(run, env.spec) is None, "one module that does not import leaves the rest usable"
    assert baseline.passing == {"tests/test_ok.py::test_ok"}
    [(module, error)] = baseline.collection_errors.items()
    assert "test_optional" in module and "No module named 'someoptionalstack'" in error


async def test_nothing_collected_is_an_environment_failure(tmp_path: Path, env_cache: Path) -> None:
    workspace = write(
        tmp_path / "ws",
        {
            "pytest.ini": "[pytest]\npython_files = spec_*.py\n",
            "tests/test_never_matched.py": "def test_it():\n    pass\n",
        },
    )
    env, run = await _baseline(workspace, env_cache)
    problem = diagnose_baseline(run, env.spec)
    assert problem is not None and "collected no tests" in problem and "pytest.ini" in problem


CONFTEST_FAILS = (
    "ImportError while loading conftest '/workspace/conftest.py'.\nE   ModuleNotFoundError: No module named 'click'\n"
)


def _run(tests: dict[str, str], errors: dict[str, str], output: str, code: int) -> TestRun:
    result = ExecResult(exit_code=code, stdout=output, stderr="", duration=0.1)
    return TestRun(tests=tests, result=result, collection_errors=errors)


@pytest.mark.parametrize(
    ("tests", "errors", "output", "code", "expected"),
    [
        ({"a.py::t": "passed"}, {}, "", 0, None),
        # A test that errors in its own fixture still ran: the environment works.
        ({"a.py::t": "error"}, {}, "", 1, None),
        (
            {"tests/test_a.py": "error"},
            {"tests/test_a.py": "tests/test_a.py:1: in <module>\n    import yaml\nE   ModuleNotFoundError: ..."},
            "",
            2,
            "collecting the tests failed in tests/test_a.py: ModuleNotFoundError",
        ),
        (
            {"tests/test_a.py": "error"},
            {"tests/test_a.py": "E   SyntaxError: invalid syntax"},
            "",
            2,
            "collecting the tests failed in tests/test_a.py: SyntaxError: invalid syntax",
        ),
        ({}, {}, CONFTEST_FAILS, 4, "cannot import 'click'"),
        ({}, {}, "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --cov\n", 4, "exit code 4"),
        # Killed mid-run (a flood of output): the sandbox's verdict, not a broken environment.
        ({}, {}, "....", 137, None),
    ],
)
def test_diagnosis_names_the_cause(
    tests: dict[str, str], errors: dict[str, str], output: str, code: int, expected: str | None
) -> None:
    problem = diagnose_baseline(_run(tests, errors, output, code), EnvironmentSpec())
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem, problem

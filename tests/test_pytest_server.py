"""The preloaded pytest server of a warm session gives what an ordinary `python -m pytest` run gives, for real.

Every check runs the same pytest arguments both ways in one sandbox (bwrap, and the none backend) and
compares: exit codes, output, JUnit statuses; then what only the server could get wrong: timeouts, leftovers,
a run that kills itself or its group, stale modules, a project shadowing what the server preloaded.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from sandboxes.base import TRUNCATION_MARKER, WORKSPACE_MOUNT, ExecResult, Limits, PytestServing, SandboxSpec
from sandboxes.environment import BuiltEnvironment, prepare_environment
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.hostsandbox import ProcessSandbox
from sandboxes.results import parse_junit_xml
from sandboxes.testrun import TestSuite
from tests.test_envspec import write

pytestmark = pytest.mark.timeout(300)

BACKENDS = ["bwrap", "docker", "none"]

PROJECT = {
    "setup.py": "from setuptools import setup\nsetup(name='calc', version='0.1', py_modules=['calc'])\n",
    "calc.py": "VALUE = 1\n\n\ndef add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "import os\nimport sys\n\nimport pytest\n\n"
        "PRELOADED = 'calc' in sys.modules\n\n"
        "import calc\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture broke')\n\n\n"
        "def test_pass():\n    assert calc.add(1, 2) == 3\n\n\n"
        "def test_fail():\n    assert calc.add(1, 1) == 3\n\n\n"
        "def test_skip():\n    pytest.skip('not today')\n\n\n"
        "def test_error(broken):\n    pass\n\n\n"
        "def test_fresh():\n    assert not PRELOADED\n    assert calc.VALUE == 1\n\n\n"
        "def test_process():\n"
        "    print('ARGV', sys.argv[1:], 'PATH', sys.path[:3], 'UID', os.getuid(), 'CWD', os.getcwd())\n"
        "    print('ENV', sorted((k, v) for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'))\n"
        "    print('STDIN', sys.stdin.read(), 'MAIN', sys.modules['__main__'].__spec__.name)\n"
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> BuiltEnvironment:
    """A real per-repo environment (pytest, pytest-timeout) for the small project."""
    ws = write(tmp_path_factory.mktemp("build") / "ws", PROJECT)
    return asyncio.run(prepare_environment(ws, env_cache, python=Path("/usr/bin/python3")))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """A backend usable here, or a skip that says why not."""
    kind: str = request.param
    problem = available_backends().get(kind, "unknown backend")
    if problem is not None:
        pytest.skip(f"{kind} backend unavailable: {problem}")
    return kind


class Side:
    """One sandbox and how its python, paths and environment look from inside it."""

    def __init__(self, backend: str, workspace: Path, built: BuiltEnvironment, **limits: int) -> None:
        spec = SandboxSpec(workspace=workspace, mounts=built.mounts, limits=Limits(wall_seconds=60, **limits))
        sb = make_sandbox(backend, spec)
        assert isinstance(sb, PytestServing)
        self.sb: Any = sb  # ProcessSandbox or DockerSandbox: run(), run_pytest() and the warm session
        self.workspace = workspace
        if backend == "none":
            # The none backend applies no mounts: the environment's python at its host path.
            self.python = str(built.mounts[0].host / "bin" / "python")
            self.root = str(workspace.resolve())
        else:
            self.python = built.python
            self.root = WORKSPACE_MOUNT
        self.env = {"PYTHONPATH": self.root}

    async def ordinary(self, *args: str, timeout: float = 60) -> ExecResult:
        return await self.sb.run([self.python, "-m", "pytest", *args], timeout=timeout, env=self.env)

    async def served(self, *args: str, timeout: float = 60) -> ExecResult | None:
        return await self.sb.run_pytest(self.python, list(args), timeout=timeout, env=self.env)

    async def both(self, *args: str) -> tuple[ExecResult, ExecResult]:
        ordinary = await self.ordinary(*args)
        served = await self.served(*args)
        assert served is not None, "the pytest server did not serve the run"
        return ordinary, served


BASE = ("-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--timeout=30")


def _normal(text: str) -> str:
    """Output with what differs between any two runs (durations, object addresses) masked."""
    text = re.sub(r"in \d+\.\d+s", "in Ns", text)
    return re.sub(r"0x[0-9a-f]+", "0x", text)


async def test_results_output_and_junit_statuses_match_an_ordinary_run(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    side = Side(backend, write(tmp_path / "ws", PROJECT), built)
    async with side.sb:
        args = (*BASE, "-s", "-rN", f"--junitxml={side.root}/report.xml", "tests/test_calc.py")
        ordinary = await side.ordinary(*args)
        statuses = [parse_junit_xml((side.workspace / "report.xml").read_text())]
        (side.workspace / "report.xml").unlink()
        served = await side.served(*args)
        assert served is not None
        statuses.append(parse_junit_xml((side.workspace / "report.xml").read_text()))
        assert (served.exit_code, served.timed_out) == (ordinary.exit_code, False) == (1, False)
        assert _normal(served.output) == _normal(ordinary.output), served.output
        assert "fixture broke" in served.output and "ARGV" in served.output
        assert statuses[0] == statuses[1]
        assert statuses[1] == {
            "tests/test_calc.py::test_pass": "passed",
            "tests/test_calc.py::test_fail": "failed",
            "tests/test_calc.py::test_skip": "skipped",
            "tests/test_calc.py::test_error": "error",
            "tests/test_calc.py::test_fresh": "passed",
            "tests/test_calc.py::test_process": "passed",
        }


async def test_collection_error_no_tests_and_usage_error_exit_as_ordinary_runs(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    files = {**PROJECT, "tests/test_broken.py": "import nowhere_to_be_found\n", "empty/test_none.py": "X = 1\n"}
    side = Side(backend, write(tmp_path / "ws", files), built)
    async with side.sb:
        for args, code in (
            (("tests/test_broken.py",), 2),
            (("empty",), 5),
            (("--no-such-option",), 4),
            (("tests/test_calc.py::test_pass",), 0),
        ):
            ordinary, served = await side.both(*BASE, *args)
            assert served.exit_code == ordinary.exit_code == code, (args, served.output)
            assert _normal(served.output) == _normal(ordinary.output)
        assert "nowhere_to_be_found" in served.output or code == 0


async def test_a_hanging_run_times_out_and_the_next_run_is_served(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    files = {**PROJECT, "tests/test_hang.py": "import time\n\ndef test_hang():\n    time.sleep(120)\n"}
    side = Side(backend, write(tmp_path / "ws", files), built)
    async with side.sb:
        hung = await side.served("-q", "-p", "no:cacheprovider", "tests/test_hang.py", timeout=3)
        assert hung is not None and hung.timed_out and hung.exit_code == 137
        again = await side.served(*BASE, "tests/test_calc.py::test_pass")
        assert again is not None and again.exit_code == 0 and not again.timed_out


async def test_background_processes_die_with_their_run(backend: str, built: BuiltEnvironment, tmp_path: Path) -> None:
    files = {
        **PROJECT,
        "tests/test_spawn.py": (
            "import subprocess\n\n"
            "def test_spawn():\n"
            "    same = subprocess.Popen(['sleep', '300'])\n"
            # Its own session: only a pid namespace sweep finds it (bwrap), as when a cold sandbox ends.
            "    away = subprocess.Popen(['sleep', '301'], start_new_session=True)\n"
            "    open('pids', 'w').write(f'{same.pid} {away.pid}')\n"
        ),
        "tests/test_gone.py": (
            "import os\n\n"
            "def state(pid):\n"
            "    try:\n        return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]\n"
            "    except OSError:\n        return 'gone'\n\n"
            "def test_gone():\n"
            "    same, away = open('pids').read().split()\n"
            "    assert state(same) in ('gone', 'Z')\n"
            "    if os.environ.get('CHECK_AWAY'):\n"
            "        assert state(away) in ('gone', 'Z')\n"
        ),
    }
    side = Side(backend, write(tmp_path / "ws", files), built)
    if backend != "none":
        side.env["CHECK_AWAY"] = "1"  # own pid namespace: even what left the run's session is found
    async with side.sb:
        spawned = await side.served(*BASE, "tests/test_spawn.py")
        assert spawned is not None and spawned.exit_code == 0, spawned and spawned.output
        checked = await side.served(*BASE, "tests/test_gone.py")
        assert checked is not None and checked.exit_code == 0, checked and checked.output


async def test_a_run_that_exits_hard_or_kills_its_group_is_reported_as_an_ordinary_one(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    files = {
        **PROJECT,
        "tests/test_exit.py": "import os\n\ndef test_exit():\n    os._exit(3)\n",
        "tests/test_group.py": "import os, signal\n\ndef test_group():\n    os.killpg(os.getpgid(0), signal.SIGKILL)\n",
    }
    side = Side(backend, write(tmp_path / "ws", files), built)
    async with side.sb:
        for test, code in (("tests/test_exit.py", 3), ("tests/test_group.py", 137)):
            ordinary, served = await side.both(*BASE, test)
            assert served.exit_code == ordinary.exit_code == code, served.output
        after = await side.served(*BASE, "tests/test_calc.py::test_pass")
        assert after is not None and after.exit_code == 0


async def test_other_commands_close_the_server_and_edited_sources_are_seen(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    side = Side(backend, write(tmp_path / "ws", PROJECT), built)
    async with side.sb:
        first = await side.served(*BASE, "tests/test_calc.py::test_fresh")
        assert first is not None and first.exit_code == 0, first and first.output
        session = side.sb._session
        assert session is not None and session.resident is not None
        echo = await side.sb.run(["sh", "-c", "echo between"])
        assert echo.stdout == "between\n" and session.resident is None
        # The server never imported calc (test_fresh asserts it): the edit shows in the next served run.
        side.sb.write_file("calc.py", "VALUE = 2\n\n\ndef add(a, b):\n    return a + b\n")
        second = await side.served(*BASE, "tests/test_calc.py::test_fresh")
        assert second is not None and second.exit_code == 1 and "assert 2 == 1" in second.output
        assert session.resident is not None
        # A module and a test file created after the server started are found (no stale folder listings).
        side.sb.write_file("extra.py", "WORD = 'new'\n")
        side.sb.write_file("tests/test_extra.py", "import extra\n\ndef test_extra():\n    assert extra.WORD == 'new'\n")
        third = await side.served(*BASE, "tests/test_extra.py")
        assert third is not None and third.exit_code == 0, third and third.output


async def test_output_is_capped_like_an_ordinary_runs(backend: str, built: BuiltEnvironment, tmp_path: Path) -> None:
    files = {**PROJECT, "tests/test_loud.py": "def test_loud():\n    print('x' * 20000 + 'END')\n"}
    side = Side(backend, write(tmp_path / "ws", files), built, output_bytes=4000)
    async with side.sb:
        served = await side.served(*BASE, "-s", "tests/test_loud.py")
        assert served is not None and served.exit_code == 0
        assert served.stdout_truncated and TRUNCATION_MARKER.split("{")[0] in served.stdout
        assert served.stdout.rstrip().endswith("passed in " + served.stdout.rstrip().rsplit("passed in ", 1)[1])
        assert len(served.stdout.encode()) < 4000 + 200


async def test_a_project_module_shadowing_the_preload_runs_the_ordinary_way(
    backend: str, built: BuiltEnvironment, tmp_path: Path
) -> None:
    # The project's own `iniconfig` would win over the environment's in an ordinary run; a server that has
    # already imported the environment's cannot give that run, so it declines it.
    files = {**PROJECT, "iniconfig.py": "raise ImportError('the project shadows iniconfig')\n"}
    side = Side(backend, write(tmp_path / "ws", files), built)
    async with side.sb:
        assert await side.served(*BASE, "tests/test_calc.py::test_pass") is None


async def test_runner_results_are_the_same_with_and_without_the_server(built: BuiltEnvironment, tmp_path: Path) -> None:
    if (problem := available_backends()["bwrap"]) is not None:
        pytest.skip(f"bwrap unavailable: {problem}")
    runs = []
    for on in (False, True):
        ws = write(tmp_path / f"ws-{on}", PROJECT)
        spec = SandboxSpec(workspace=ws, mounts=built.mounts, limits=Limits(wall_seconds=60), pytest_server=on)
        async with make_sandbox("bwrap", spec) as sb:
            runner = TestSuite(built, timeout=60)
            runs.append((await runner.run(sb, ["tests/test_calc.py"]), await runner.run(sb, [])))
            assert isinstance(sb, ProcessSandbox) and sb._session is not None
            assert (sb._session.resident is not None) is on
    for without, with_server in zip(runs[0], runs[1], strict=True):
        assert with_server.tests == without.tests and with_server.tests
        assert with_server.result.exit_code == without.result.exit_code == 1
        assert with_server.collected and with_server.collection_errors == without.collection_errors


async def test_an_environment_without_pytest_falls_back(backend: str, built: BuiltEnvironment, tmp_path: Path) -> None:
    side = Side(backend, write(tmp_path / "ws", PROJECT), built)
    side.python = "/usr/bin/python3"  # no pytest in it: the server cannot preload
    async with side.sb:
        assert await side.served(*BASE, "tests/test_calc.py::test_pass") is None
        ordinary = await side.ordinary(*BASE, "tests/test_calc.py::test_pass")
        assert ordinary.exit_code == 1 and "No module named pytest" in ordinary.output

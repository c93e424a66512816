"""Host-side tool runs: output, exit codes, and a timeout that takes the whole process group down."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from sandboxes.environment import (
    EnvironmentError_,
    EnvironmentSpec,
    host_step_argv,
    host_step_problem,
    run_fetch_steps,
)
from sandboxes.hostrun import UnsafeHostEnv, host_env, run_host


async def test_output_and_exit_code(tmp_path: Path) -> None:
    run = await run_host(["sh", "-c", "pwd; echo err >&2; exit 3"], timeout=30, cwd=tmp_path)
    assert run.code == 3 and not run.timed_out
    assert run.stdout.split() == [str(tmp_path), "err"]
    split = await run_host(["sh", "-c", "echo out; echo err >&2"], timeout=30, merge_stderr=False)
    assert (split.stdout, split.stderr) == ("out\n", "err\n")


async def test_timeout_kills_the_tools_children_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    run = await run_host(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], timeout=1)
    assert run.timed_out and run.code == -1 and "timed out" in run.stdout
    assert time.monotonic() - started < 30
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the background child outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purpose (and may be reaped while we look).
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_host_tools_get_a_scrubbed_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secrets = {
        "REPROBOT_LLM_API_KEY": "canary-llm",
        "REPROBOT_GITHUB_PRIVATE_KEY": "canary-pem",
        "GITHUB_TOKEN": "canary-gh",
        "AWS_SECRET_ACCESS_KEY": "canary-aws",
        "SOME_UNLISTED_SETTING": "canary-other",
    }
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    run = await run_host(["sh", "-c", "env; echo HOME_EXISTS=$(test -d $HOME && echo yes)"], timeout=30)
    env = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    assert not [v for v in secrets.values() if v in run.stdout]
    assert env["PIP_FIND_LINKS"] == str(tmp_path) and env["HTTPS_PROXY"] == "http://127.0.0.1:3128"
    assert env["HOME_EXISTS"] == "yes" and env["HOME"] != os.path.expanduser("~")
    assert not os.path.exists(env["HOME"]), "the scratch HOME is removed after the run"


def test_secret_looking_extras_are_refused() -> None:
    assert host_env("/tmp/h", {"CARGO_TERM_COLOR": "never"})["CARGO_TERM_COLOR"] == "never"
    for name in ("REPROBOT_LLM_API_KEY", "GITHUB_TOKEN", "NPM_TOKEN", "MY_API_KEY", "DB_PASSWORD"):
        with pytest.raises(UnsafeHostEnv, match=name):
            host_env("/tmp/h", {name: "x"})


@pytest.mark.parametrize(
    ("files", "step", "reason"),
    [
        ({".mvn/extensions.xml": "<extensions/>"}, "mvn -q dependency:go-offline", ".mvn/extensions.xml"),
        ({".mvn/jvm.config": "-javaagent:x.jar"}, "mvn -q dependency:go-offline", ".mvn/jvm.config"),
        ({"sub/pom.xml": "<build><extensions>"}, "mvn -q dependency:go-offline", "sub/pom.xml"),
        ({}, "./gradlew dependencies", "Gradle build scripts are code"),
    ],
)
async def test_fetch_steps_that_load_repo_code_are_refused(
    tmp_path: Path, files: dict[str, str], step: str, reason: str
) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    spec = EnvironmentSpec(language="java", deps=(), fetch_steps=(step,))
    with pytest.raises(EnvironmentError_, match="refused: .*" + re.escape(reason)):
        await run_fetch_steps(spec, tmp_path)


def test_npm_always_gets_ignore_scripts_and_steps_run_without_a_shell() -> None:
    assert host_step_argv("npm ci") == ["npm", "ci", "--ignore-scripts"]
    assert host_step_argv("npm install --ignore-scripts") == ["npm", "install", "--ignore-scripts"]
    assert host_step_argv("go mod download; touch /tmp/x") == ["go", "mod", "download;", "touch", "/tmp/x"]
    assert host_step_problem("mvn -q dependency:go-offline", Path("/nonexistent")) is None


async def test_fetch_steps_see_no_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REPROBOT_LLM_API_KEY", "canary-llm")
    monkeypatch.setenv("GITHUB_TOKEN", "canary-gh")
    spec = EnvironmentSpec(language="shell", deps=(), fetch_steps=("sh -c 'env > seen-env'",))
    await run_fetch_steps(spec, tmp_path)
    seen = (tmp_path / "seen-env").read_text()
    assert "canary-" not in seen and "REPROBOT_" not in seen and "PATH=" in seen

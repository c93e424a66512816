"""The model-driven setup agent against the scripted model server: real HTTP, real sandboxes, real env builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.setup.llm import LlmSetupAgent, detect_languages
from bot.cli import main
from bot.pipeline.baseline import run_baseline
from bot.pipeline.environment import prepare_environment
from bot.pipeline.setup_model import setup_agent_for
from bot.pipeline.types import JobContext, JobRequest
from bot.settings.config import Settings
from bot.store import Store
from sandboxes.environment import EnvironmentError_
from sandboxes.envspec import detect_spec
from sandboxes.factory import available_backends
from sandboxes.setup_agent import SetupBudget, SetupFailed
from tests.conftest import make_git_repo
from tests.fakes.llm_server import ScriptedLLM, load_script
from tests.llm_helpers import llm_settings, scripted_server_thread

pytestmark = pytest.mark.timeout(600)

SECRET = "sk-test-secret"
CHECKS_REPO = {
    "README.md": "Tiny arithmetic helpers. Run ./run_checks.sh before sending changes.\n",
    "lib/add.sh": "add() { echo $(($1 + $2)); }\n",
    "checks/add_check.sh": '. ./lib/add.sh\n[ "$(add 1 2)" = 3 ] || { echo "add failed"; exit 1; }\n',
    "run_checks.sh": 'set -e\nfor c in checks/*_check.sh; do sh "$c"; echo "ok $c"; done\n',
}
UNITTEST_REPO = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": (
        "import unittest\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_wrong(self):\n        self.assertEqual(add(1, 1), 3)\n"
    ),
}


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")


def agent_for(settings: Settings, srv: ScriptedLLM) -> LlmSetupAgent:
    agent = setup_agent_for(llm_settings(settings, srv.base_url), "bwrap")
    assert agent is not None
    return agent


def sent_text(srv: ScriptedLLM, index: int) -> str:
    """Everything the model was shown in request `index` (messages only)."""
    return json.dumps(srv.requests[index]["messages"])


async def test_no_signals_repo_gets_a_working_spec_from_the_loop(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    with pytest.raises(ValueError, match="no test setup found"):
        detect_spec(repo)
    async with ScriptedLLM(load_script("setup_checks_folder")) as srv:
        agent = agent_for(settings, srv)
        spec = await agent.discover(repo, None, budget=SetupBudget())
    assert spec.test_command == ("sh", "run_checks.sh") and spec.report_format == "exit-code"
    assert spec.sources == ("setup-agent",) and spec.language == "shell"
    # Meta-prompting: the first call has no tools and names the language and the key files.
    first = srv.requests[0]
    assert "tools" not in first and "shell" in sent_text(srv, 0) and "run_checks.sh" in sent_text(srv, 0)
    # The guidelines the model wrote open every attempt's system prompt.
    assert "driver script at the root" in srv.requests[1]["messages"][0]["content"]
    # The command really ran in the sandbox and its output came back.
    assert "exit code 0" in sent_text(srv, 4) and "ok checks/add_check.sh" in sent_text(srv, 4)
    assert len(srv.requests) == 5 and agent.attempts[0].cycles == 4
    saved = json.loads(agent.config.save_to.read_text())  # type: ignore[union-attr]
    assert saved["attempts"][0]["spec"]["test_command"] == ["sh", "run_checks.sh"]


async def test_restart_after_a_dead_end_then_success(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", UNITTEST_REPO)
    async with ScriptedLLM(load_script("setup_restart")) as srv:
        agent = agent_for(settings, srv)
        spec = await agent.discover(repo, None, budget=SetupBudget())
    assert spec.report_format == "junit-xml" and spec.test_command == ("pytest", "tests")
    assert [a.spec is not None for a in agent.attempts] == [False, True]
    # The wrong proposal was really run and rejected, and the model was told why.
    assert "REJECTED" in sent_text(srv, 2) and "no test results" in sent_text(srv, 2)
    # Attempt 2 is a fresh conversation that carries a summary of what failed.
    restart = srv.requests[3]["messages"]
    assert len(restart) == 2 and "Earlier attempts failed" in restart[1]["content"]
    assert "gave up: guessed a test/ folder" in restart[1]["content"] and "rejected" in restart[1]["content"]
    assert "Ran 2 tests" in sent_text(srv, 5)  # unittest's own output, from the sandbox


async def test_cycle_limit_ends_in_setup_failed(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    async with ScriptedLLM(load_script("setup_cycle_limit")) as srv:
        agent = agent_for(settings, srv)
        with pytest.raises(SetupFailed) as failed:
            await agent.discover(repo, None, budget=SetupBudget(max_cycles=2, max_restarts=1))
    message = str(failed.value)
    assert "no working test command after 2 attempt(s) of at most 2 cycles" in message
    assert message.count("cycle limit reached (2 cycles)") == 2
    assert len(srv.requests) == 5  # guidelines + 2 attempts x 2 cycles, nothing more
    assert "Cycles left: 1 of 2. Propose a spec now." in sent_text(srv, 2)


async def test_malformed_calls_are_observations_and_no_secret_reaches_the_sandbox(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("REPROBOT_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(var, SECRET)
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    async with ScriptedLLM(load_script("setup_malformed")) as srv:
        agent = agent_for(settings, srv)
        spec = await agent.discover(repo, None, budget=SetupBudget())
    assert spec.test_command == ("sh", "run_checks.sh")
    expected = [
        "are not valid JSON",
        "FormatError: no tool call",
        "unknown tool 'run_shell'",
        "refused",
        "refused requirement",
        "`report_format` must be one of",
    ]
    for index, phrase in enumerate(expected, start=2):
        assert phrase in sent_text(srv, index), (index, phrase)
    env_output = sent_text(srv, 8)
    assert "PATH=/opt/reprobot-env/bin" in env_output
    assert srv.headers[0]["authorization"] == f"Bearer {SECRET}"  # the key is used for the model only ...
    assert all(SECRET not in json.dumps(r) for r in srv.requests)  # ... and never shown by a sandboxed command


async def test_budget_stop_is_a_setup_failure(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    async with ScriptedLLM(load_script("setup_checks_folder")) as srv:
        s = llm_settings(settings, srv.base_url, llm_max_cost=0.0001)
        agent = setup_agent_for(s, "bwrap")
        assert agent is not None
        with pytest.raises(SetupFailed, match="model budget spent during setup: job cost budget spent"):
            await agent.discover(repo, None, budget=SetupBudget())


async def test_pipeline_uses_the_agent_and_runs_the_baseline(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", UNITTEST_REPO)
    async with ScriptedLLM(load_script("setup_restart")) as srv:
        s = llm_settings(settings, srv.base_url)
        ctx = JobContext(s, Store.open(s.store_path), 1, tmp_path / "work")
        request = JobRequest(repo=repo, issue_text="add is wrong", issue_ref="#1", sandbox="bwrap")
        env = await prepare_environment(ctx, repo, request)
        baseline = await run_baseline(ctx, repo, env, request)
    assert baseline.tests == {
        "tests/test_calc.py::CalcTest::test_add": "passed",
        "tests/test_calc.py::CalcTest::test_wrong": "failed",
    }
    assert ctx.ledger is not None and ctx.ledger.usage().calls == 6  # the job's cost line includes setup


def test_env_test_cli_runs_the_suite_the_agent_found(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    with scripted_server_thread(load_script("setup_checks_folder")) as srv:
        env: dict[str, Any] = {
            "REPROBOT_DATA_DIR": str(settings.data_dir),
            "REPROBOT_LLM_BASE_URL": srv.base_url,
            "REPROBOT_LLM_MODEL": "scripted-model",
            "REPROBOT_LLM_API_KEY": SECRET,
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        code = main(["env", "test", "--repo", str(repo), "--sandbox", "bwrap", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["language"] == "shell" and result["passed"] == 1 and result["failed"] == 0
    assert not (repo / ".reprobot").exists()


def test_without_a_model_no_signals_is_still_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    assert setup_agent_for(settings, "bwrap") is None
    assert detect_languages(["a.py", "b.py", "run.sh", "x.go"]) == ["python", "go", "shell"]


async def test_agent_failure_reaches_the_environment_layer(settings: Settings, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    async with ScriptedLLM(load_script("setup_cycle_limit")[:1]) as srv:  # the script runs out: HTTP 400
        s = llm_settings(settings, srv.base_url)
        ctx = JobContext(s, Store.open(s.store_path), 1, tmp_path / "work")
        request = JobRequest(repo=repo, issue_text="x", issue_ref="#1", sandbox="bwrap")
        with pytest.raises(EnvironmentError_, match="setup agent failed too: model error during setup"):
            await prepare_environment(ctx, repo, request)


def test_env_detect_cli_asks_the_agent_when_a_model_is_configured(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_git_repo(tmp_path / "repo", CHECKS_REPO)
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(settings.data_dir))
    code = main(["env", "detect", "--repo", str(repo), "--json"])
    assert code == 7 and "no test setup found" in capsys.readouterr().err  # no model: the plain error
    with scripted_server_thread(load_script("setup_checks_folder")) as srv:
        monkeypatch.setenv("REPROBOT_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("REPROBOT_LLM_MODEL", "scripted-model")
        code = main(["env", "detect", "--repo", str(repo), "--sandbox", "bwrap", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    spec = json.loads(out)
    assert spec["test_command"] == ["sh", "run_checks.sh"] and spec["sources"] == ["setup-agent"]
    assert not (repo / ".reprobot").exists()  # the agent worked on a scratch clone

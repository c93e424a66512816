"""End to end on the GitHub double: the deployment's caps bound `/fix` and the policy, and a model reproduces.

The status comment says what was clamped; with a scripted model, the policy turns the LLM reviewers on, and
`/reproduce` posts the model's BRT as the reproduction.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bot.settings.config import Settings
from tests.conftest import QUIXBUGS, require_shared
from tests.fakes.github_git import commit_file
from tests.fakes.llm_server import ScriptedLLM, load_script
from tests.gh_env import GitHubEnv, bot_comments
from tests.llm_helpers import llm_settings

REPO = "octo/gcd"
pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _host_gcd(env: GitHubEnv, policy: str) -> dict[str, Any]:
    src = require_shared(QUIXBUGS) / "gcd"
    env.double.add_repo(REPO, src / "repo")
    commit_file(env.double.root / "git", REPO, ".github/reprobot.yml", policy)
    title, _, body = (src / "issue.md").read_text().partition("\n")
    return env.double.add_issue(REPO, title.lstrip("# ").strip(), body.strip())


def _command(env: GitHubEnv, issue: dict[str, Any], body: str) -> dict[str, Any]:
    comment = {"id": 777000 + len(body), "body": body, "author_association": "OWNER"}
    comment["user"] = {"login": "owner", "id": 78, "type": "User"}
    return env.payload("issue_comment", "created", REPO, issue, comment=comment, sender=comment["user"])


def _fix_trajectories(env: GitHubEnv) -> list[Any]:
    job = next(j for j in env.jobs() if j.kind == "github.fix")
    return [t for t in env.store.runs.list_trajectories(job.id) if t.strategy != "reproduce"]


async def test_fix_over_the_trajectory_cap_runs_the_cap_and_says_so(tmp_path: Path, settings: Settings) -> None:
    capped = dataclasses.replace(settings, trajectories=2, max_trajectories=8, max_test_timeout=600.0)
    async with GitHubEnv(tmp_path, capped) as env:
        issue = _host_gcd(env, "environment:\n  timeout: 7200\n")
        status, _ = await env.send("issue_comment", _command(env, issue, "/fix trajectories=32"))
        assert status == 202
        await env.drain()
        assert len(_fix_trajectories(env)) == 8
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1
        body = comments[0]["body"]
        assert "opened pull request" in body
        assert "trajectories 32 → 8: deployment cap REPROBOT_MAX_TRAJECTORIES" in body
        assert "test timeout 7200 s → 600 s: deployment cap REPROBOT_MAX_TEST_TIMEOUT" in body
        pr = env.double.repos[REPO].pulls[0]
        assert "trajectories 32 → 8" in pr["body"] and "trajectories: 8 (" in pr["body"]


async def test_policy_turns_the_llm_reviewers_on_when_a_model_is_configured(tmp_path: Path, settings: Settings) -> None:
    policy = "agent:\n  kind: llm\n  trajectories: 1\nreview:\n  llm: true\nabstention:\n  llm: true\n"
    async with (
        ScriptedLLM(load_script("freeform_gcd")) as srv,
        GitHubEnv(tmp_path, llm_settings(settings, srv.base_url)) as env,
    ):
        issue = _host_gcd(env, policy)
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        assert (await env.send("issues", payload))[0] == 202
        await env.drain()
        pulls = env.double.repos[REPO].pulls
        assert len(pulls) == 1, [j.last_error for j in env.jobs()]
        assert "| spec | accepted |" in pulls[0]["body"] and "| brt-relevance | accepted |" in pulls[0]["body"]
        assert srv.served == len(srv.steps)


async def test_policy_llm_reviewers_without_a_model_are_off_with_a_note(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_gcd(env, "review:\n  llm: true\n")
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        assert (await env.send("issues", payload))[0] == 202
        await env.drain()
        pulls = env.double.repos[REPO].pulls
        assert len(pulls) == 1, [j.last_error for j in env.jobs()]
        assert "| spec |" not in pulls[0]["body"]
        note = "LLM reviewers off: the deployment has no model configured"
        assert note in pulls[0]["body"]
        assert note in bot_comments(env.double, REPO, issue["number"])[0]["body"]


async def test_reproduce_with_a_model_posts_the_models_brt(tmp_path: Path, settings: Settings) -> None:
    async with (
        ScriptedLLM(load_script("brtonly_gcd")) as srv,
        GitHubEnv(tmp_path, llm_settings(settings, srv.base_url)) as env,
    ):
        issue = _host_gcd(env, "agent:\n  kind: auto\n")
        command = _command(env, issue, "/reproduce")
        assert (await env.send("issue_comment", command))[0] == 202
        await env.drain()
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1, [c["body"][:200] for c in comments]
        body = comments[0]["body"]
        assert "Reproduced" in body, body
        # The model's test, not the synthesized one, and its failing output on the current code.
        assert "tests/test_gcd_reproduction.py" in body and "assert gcd(13, 13) == 13" in body
        assert "RecursionError" in body
        assert env.double.repos[REPO].pulls == []
        assert srv.served == len(srv.steps)
        job = next(j for j in env.jobs() if j.kind == "github.reproduce")
        assert job.result is not None and job.result["status"] == "reproduced"
        reactions = [r["content"] for r in env.double.repos[REPO].reactions]
        assert reactions == ["eyes", "rocket"]


def test_cli_reproduce_agent_llm_writes_the_models_brt(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main
    from bot.evaluate.run import _git_repo_from
    from tests.llm_helpers import scripted_server_thread

    case = require_shared(QUIXBUGS) / "gcd"
    repo = _git_repo_from(case / "repo", tmp_path / "repo")
    with scripted_server_thread(load_script("brtonly_gcd")) as srv:
        for key, value in {
            "REPROBOT_DATA_DIR": str(settings.data_dir),
            "REPROBOT_LLM_BASE_URL": srv.base_url,
            "REPROBOT_LLM_MODEL": "scripted-model",
        }.items():
            monkeypatch.setenv(key, value)
        argv = ["reproduce", "--repo", str(repo), "--issue", str(case / "issue.md"), "--agent", "llm"]
        code = main([*argv, "--out", str(tmp_path / "out"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "reproduced" and result["test_files"] == ["tests/test_gcd_reproduction.py"]
    assert result["brt"]["fails_before"] and result["brt"]["passes_after"] is None
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "assert gcd(13, 13) == 13" in comment and "RecursionError" in comment

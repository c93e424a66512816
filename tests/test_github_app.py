"""End to end on the GitHub double with real git and the classic agent: labels, commands, policy, faults."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.settings.config import Settings
from tests.conftest import QUIXBUGS, require_shared
from tests.gh_env import GitHubEnv, bot_comments

REPO = "octo/gcd"
pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _host_case(env: GitHubEnv, case: str = "gcd", *, without_examples: Path | None = None) -> dict[str, Any]:
    src = require_shared(QUIXBUGS) / case
    repo = src / "repo"
    if without_examples is not None:
        # The code's own `>>>` examples are evidence for the assessment; without them only the BRT speaks.
        repo = shutil.copytree(repo, without_examples)
        for path in repo.rglob("*.py"):
            lines = path.read_text().splitlines()
            # Drop each `>>>` line and the result printed under it.
            drop = {i + k for i, ln in enumerate(lines) if ln.lstrip().startswith(">>>") for k in (0, 1)}
            path.write_text("\n".join(ln for i, ln in enumerate(lines) if i not in drop) + "\n")
    env.double.add_repo(REPO, repo)
    env.double.repos[REPO].collaborators["maintainer"] = "write"
    text = (src / "issue.md").read_text()
    title, _, body = text.partition("\n")
    return env.double.add_issue(REPO, title.lstrip("# ").strip(), body.strip())


def _comment(env: GitHubEnv, issue: dict[str, Any], body: str, user: str, association: str) -> dict[str, Any]:
    comment = {"id": 555000 + len(body), "body": body, "author_association": association}
    comment["user"] = {"login": user, "id": 77, "type": "User"}
    return env.payload("issue_comment", "created", REPO, issue, comment=comment, sender=comment["user"])


async def test_a_fix_the_assessment_doubts_is_suggested_not_opened(tmp_path: Path, settings: Settings) -> None:
    env = GitHubEnv(tmp_path, settings)
    env.publish_unsure = False  # the default deployment: precision before recall
    async with env:
        issue = _host_case(env, without_examples=tmp_path / "gcd-without-examples")
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        status, _ = await env.send("issues", payload)
        assert status == 202
        await env.drain()
        assert env.double.repos[REPO].pulls == []
        comments = bot_comments(env.double, REPO, issue["number"])
        suggestion = [c for c in comments if "not verified enough for a pull request" in c["body"]]
        assert len(suggestion) == 1, [c["body"][:200] for c in comments]
        body = suggestion[0]["body"]
        assert "gcd(b, a % b)" in body and "no evidence beyond the BRT" in body
        assert "Fixes #" not in body


async def test_labeled_issue_opens_exactly_one_pr(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        status, answer = await env.send("issues", payload)
        assert status == 202, answer
        await env.drain()
        pulls = env.double.repos[REPO].pulls
        assert len(pulls) == 1, [j.last_error for j in env.jobs()]
        pr = pulls[0]
        assert pr["head"]["ref"] == f"reprobot/issue-{issue['number']}" and pr["draft"] is True
        assert f"Fixes #{issue['number']}" in pr["body"] and "BRT output before the fix" in pr["body"]
        fixed = env.double.branch_file(REPO, pr["head"]["ref"], "gcd.py")
        assert fixed is not None and "gcd(b, a % b)" in fixed
        assert env.double.branch_file(REPO, pr["head"]["ref"], "tests/test_reprobot_issue.py") is not None
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1 and f"#{pr['number']}" in comments[0]["body"]
        assert env.double.violations == []
        calls = [c[0] for c in env.double.calls]
        assert calls.count("issues/create-comment") == 1 and calls.count("issues/update-comment") >= 3
        # The token is nowhere on disk: not in a .git/config, the store, a trajectory or the PR.
        assert env.double.tokens
        for token in env.double.tokens:
            assert token not in pr["body"] and token not in comments[0]["body"]
            for path in env.settings.data_dir.rglob("*"):
                if path.is_file() and not path.is_symlink() and "cache" not in path.parts:
                    assert token.encode() not in path.read_bytes(), path


async def test_reproduce_command_from_collaborator_and_stranger(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        stranger = _comment(env, issue, "/reproduce", "passerby", "NONE")
        status, _ = await env.send("issue_comment", stranger)
        assert status == 202  # only the one polite reply is queued
        kinds = [j.kind for j in env.jobs()]
        assert kinds == ["github.reply"]
        status, _ = await env.send("issue_comment", _comment(env, issue, "/reproduce", "passerby", "NONE"))
        assert [j.kind for j in env.jobs()] == ["github.reply"]
        await env.drain()
        assert len(bot_comments(env.double, REPO, issue["number"])) == 1

        command = _comment(env, issue, "please\n/reproduce\n", "owner", "OWNER")
        status, answer = await env.send("issue_comment", command)
        assert status == 202, answer
        await env.drain()
        repo = env.double.repos[REPO]
        reactions = [r["content"] for r in repo.reactions if r["target"] == ("comment", command["comment"]["id"])]
        assert reactions == ["eyes", "rocket"]
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 2  # the polite reply, then the one reproduction comment
        assert "Reproduced" in comments[1]["body"] and "python -m pytest" in comments[1]["body"]
        assert repo.pulls == [] and env.double.violations == []


async def test_invalid_policy_gets_one_comment_naming_the_key(tmp_path: Path, settings: Settings) -> None:
    from tests.fakes.github_git import commit_file

    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        commit_file(env.double.root / "git", REPO, ".github/reprobot.yml", "agent:\n  trajectories: many\n")
        for _ in range(2):
            payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
            assert (await env.send("issues", payload))[0] == 202
            await env.drain()
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1
        assert "`agent.trajectories`" in comments[0]["body"] and "many" in comments[0]["body"]
        assert {j.status for j in env.jobs()} == {"done"}
        assert env.double.repos[REPO].pulls == []


async def test_502_and_secondary_rate_limit_are_retried(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        env.double.fail("issues/create-comment", 502, times=2)
        env.double.fail("pulls/create", 403, headers={"Retry-After": "1"})
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        assert (await env.send("issues", payload))[0] == 202
        await env.drain()
        assert [j.status for j in env.jobs()] == ["done"]
        assert len(env.double.repos[REPO].pulls) == 1
        assert len(bot_comments(env.double, REPO, issue["number"])) == 1
        calls = [c[0] for c in env.double.calls]
        assert calls.count("pulls/create") == 2 and calls.count("issues/create-comment") == 3


async def test_plain_4xx_is_not_retried_and_dead_letters_the_job(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        env.double.fail("issues/get", 404)
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        assert (await env.send("issues", payload))[0] == 202
        await env.drain()
        job = env.jobs()[0]
        assert job.status == "dead" and "Not Found" in (job.last_error or "")
        assert [c[0] for c in env.double.calls].count("issues/get") == 1


async def test_command_on_an_unactionable_report_answers_with_reasons(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        _host_case(env)
        issue = env.double.add_issue(REPO, "Please add dark mode", "It would be nice to have a dark theme.")
        assert (await env.send("issue_comment", _comment(env, issue, "/fix", "owner", "OWNER")))[0] == 202
        await env.drain()
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1 and "not acting" in comments[0]["body"] and "Reasons" in comments[0]["body"]
        reactions = [r["content"] for r in env.double.repos[REPO].reactions]
        assert reactions == ["eyes", "confused"] and env.double.repos[REPO].pulls == []


async def test_serve_with_in_process_workers_answers_help(tmp_path: Path, settings: Settings) -> None:
    from aiohttp import web

    from bot.intake.server import make_app

    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        runner = web.AppRunner(make_app(env.settings, workers=2), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            payload = _comment(env, issue, "/reprobot help", "maintainer", "CONTRIBUTOR")
            status, _ = await env.double.deliver(f"http://127.0.0.1:{port}/webhooks/github", "issue_comment", payload)
            assert status == 202
            for _ in range(100):
                if bot_comments(env.double, REPO, issue["number"]):
                    break
                await asyncio.sleep(0.1)
        finally:
            await runner.cleanup()
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1 and "/reproduce" in comments[0]["body"]
        # CONTRIBUTOR is not enough by association; the collaborator API said "write".
        assert "repos/get-collaborator-permission-level" in [c[0] for c in env.double.calls]


async def test_opened_issue_follows_the_policy_on_open(tmp_path: Path, settings: Settings) -> None:
    from tests.fakes.github_git import commit_file

    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        opened = env.payload("issues", "opened", REPO, issue)
        assert (await env.send("issues", opened))[0] == 202
        await env.drain()
        assert bot_comments(env.double, REPO, issue["number"]) == []  # default on_open: none
        assert env.jobs()[0].result == {"status": "nothing_to_do"}
        commit_file(env.double.root / "git", REPO, ".github/reprobot.yml", "triggers:\n  on_open: reproduce\n")
        assert (await env.send("issues", opened))[0] == 202  # a new delivery of the same kind of event
        await env.drain()
        comments = bot_comments(env.double, REPO, issue["number"])
        assert len(comments) == 1 and "Reproduced" in comments[0]["body"]
        assert env.double.repos[REPO].pulls == []


async def test_a_rerun_that_lost_its_records_updates_instead_of_duplicating(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        for delivery in ("first", "second"):
            payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
            assert (await env.send("issues", payload, delivery_id=delivery))[0] == 202
            await env.drain()
            # As if the worker died right after posting: the store forgot what was published.
            with env.store.db.conn:
                env.store.db.conn.execute("DELETE FROM publications")
        assert len(env.double.repos[REPO].pulls) == 1
        assert len(bot_comments(env.double, REPO, issue["number"])) == 1
        calls = [c[0] for c in env.double.calls]
        assert calls.count("pulls/create") == 1 and calls.count("pulls/update") == 1
        assert calls.count("issues/create-comment") == 1


async def test_policy_can_widen_who_may_command(tmp_path: Path, settings: Settings) -> None:
    from tests.fakes.github_git import commit_file

    async with GitHubEnv(tmp_path, settings) as env:
        issue = _host_case(env)
        policy = "triggers:\n  commands:\n    allowed: [OWNER, CONTRIBUTOR]\n"
        commit_file(env.double.root / "git", REPO, ".github/reprobot.yml", policy)
        # Until a job has read the repo's policy, the defaults apply: a contributor gets the polite reply.
        assert (await env.send("issue_comment", _comment(env, issue, "/reprobot help", "alice", "CONTRIBUTOR")))[
            0
        ] == 202
        # Any job reads the policy, e.g. an unrelated label (nothing to do).
        assert (await env.send("issues", env.payload("issues", "labeled", REPO, issue, label={"name": "bug"})))[
            0
        ] == 202
        await env.drain()
        assert (await env.send("issue_comment", _comment(env, issue, "/reprobot help", "alice", "CONTRIBUTOR")))[
            0
        ] == 202
        await env.drain()
        bodies = [c["body"] for c in bot_comments(env.double, REPO, issue["number"])]
        assert len(bodies) == 2 and "write access" in bodies[0] and "/reproduce" in bodies[1]

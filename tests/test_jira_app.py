"""End to end on the Jira double and the GitHub double (real git, the classic agent), through /webhooks/jira."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from bot.settings.config import Settings
from tests.conftest import QUIXBUGS, require_shared
from tests.fakes.jira import JiraIssue
from tests.gh_env import load_payload
from tests.jira_env import JiraEnv

REPO = "octo/gcd"
pytestmark = [pytest.mark.slow, pytest.mark.shared]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """One trajectory: these tests follow the Jira side of a job, not the search (test_github_app covers M > 1)."""
    return replace(settings, trajectories=1)


MAPPING = [
    {
        "project": "SHOP",
        "github": REPO,
        # Status names: the transition leading there is found (pr_merged's "Done" is reached by "Approve").
        "transitions": {"pr_opened": "In Review", "pr_merged": "Done"},
        "issue_labels": ["reprobot"],
        "commands": {"allow": ["alice"], "roles": ["Developers"]},
    }
]


def _host_case(env: JiraEnv, labels: list[str]) -> JiraIssue:
    src = require_shared(QUIXBUGS) / "gcd"
    env.double.add_repo(REPO, src / "repo")
    title, _, body = (src / "issue.md").read_text().partition("\n")
    return env.jira.add_issue("SHOP", title.lstrip("# ").strip(), body.strip(), labels=labels)


def _bot_comments(issue: JiraIssue) -> list[str]:
    return [c["body"] for c in issue.comments if c["author"]["name"] == "reprobot"]


async def test_issue_created_with_the_trigger_label_opens_one_pr_and_updates_jira(
    tmp_path: Path, settings: Settings
) -> None:
    async with JiraEnv(tmp_path, settings, MAPPING) as env:
        issue = _host_case(env, ["reprobot-fix", "backend"])
        status, answer = await env.send_jira(env.issue_created(issue), "created-1")
        assert status == 202 and answer["jobs"] == ["jira.issue"], answer
        await env.drain()
        jobs = await asyncio.to_thread(env.jobs)
        assert [j.status for j in jobs] == ["done"], [j.last_error for j in jobs]
        pulls = env.double.repos[REPO].pulls
        assert len(pulls) == 1
        pr = pulls[0]
        assert pr["head"]["ref"] == "reprobot/issue-shop-1"
        assert "SHOP-1" in pr["title"] and "SHOP-1" in pr["body"] and "BRT output before the fix" in pr["body"]
        fixed = env.double.branch_file(REPO, pr["head"]["ref"], "gcd.py")
        assert fixed is not None and "gcd(b, a % b)" in fixed
        # One status comment on Jira, edited in place through the stages, ending with the PR and its evidence.
        comments = _bot_comments(issue)
        assert len(comments) == 1, comments
        assert pr["html_url"] in comments[0] and "fails before the fix" in comments[0]
        ops = [c[0] for c in env.jira.calls]
        assert ops.count("comment/add") == 1 and ops.count("comment/update") >= 3
        assert [link["object"]["url"] for link in issue.remote_links] == [pr["html_url"]]
        assert issue.status == "In Review" and "reprobot" in issue.labels
        # Jira never saw a token of GitHub's, nor the comment a GitHub-only hidden marker.
        for token in env.double.tokens:
            assert token not in comments[0]
        assert "<!--" not in comments[0]
        # A redelivery and a second run change nothing on either side.
        assert (await env.send_jira(env.issue_created(issue), "created-1"))[0] == 200
        await env.drain()
        assert len(env.double.repos[REPO].pulls) == 1 and len(_bot_comments(issue)) == 1
        # GitHub says the PR was merged: the Jira issue takes the `pr_merged` transition.
        closed = load_payload("pull_request", "closed")
        closed["repository"]["full_name"] = REPO
        closed["installation"] = {"id": 1}
        closed["pull_request"] |= {"number": pr["number"], "merged": True, "head": {"ref": pr["head"]["ref"]}}
        status, answer = await env.send("pull_request", closed)
        assert status == 202 and answer["jobs"] == ["jira.merged"], answer
        await env.drain()
        assert issue.status == "Done" and len(_bot_comments(issue)) == 1


async def test_reproduce_command_in_a_jira_comment_posts_a_reproduction(tmp_path: Path, settings: Settings) -> None:
    async with JiraEnv(tmp_path, settings, MAPPING) as env:
        issue = _host_case(env, [])
        env.jira.add_role("SHOP", "Developers", ["dev-dana"])
        stranger = env.comment_created(issue, "/reproduce", "passerby")
        assert (await env.send_jira(stranger, "c-1"))[0] == 202  # the job asks Jira for the roles
        member = env.comment_created(issue, "Could you check?\n/reproduce", "dev-dana")
        assert (await env.send_jira(member, "c-2"))[0] == 202
        await env.drain()
        jobs = await asyncio.to_thread(env.jobs)
        outcomes = sorted((j.kind, (j.result or {}).get("status")) for j in jobs)
        assert outcomes == [
            ("jira.reply", "replied"),  # the polite reply the stranger's job queued once Jira said no role
            ("jira.reproduce", "not_allowed"),
            ("jira.reproduce", "reproduced"),
        ], [(j.kind, j.status, j.last_error) for j in jobs]
        comments = _bot_comments(issue)
        polite = [c for c in comments if "thanks!" in c]
        reproduction = [c for c in comments if "Reproduced" in c]
        assert len(polite) == 1 and "passerby" in polite[0]
        assert len(reproduction) == 1 and "python -m pytest" in reproduction[0]
        assert env.double.repos[REPO].pulls == [] and issue.remote_links == []
        assert "project/role" in [c[0] for c in env.jira.calls]


async def test_unmapped_project_gets_nothing_and_loses_nothing(tmp_path: Path, settings: Settings) -> None:
    async with JiraEnv(tmp_path, settings, MAPPING) as env:
        _host_case(env, [])
        other = env.jira.add_issue("OPS", "crash", "the gcd crashes", labels=["reprobot-fix"])
        status, answer = await env.send_jira(env.issue_created(other), "unmapped")
        assert status == 200 and "not mapped" in answer["message"]
        await env.drain()
        assert await asyncio.to_thread(env.jobs) == []
        assert env.jira.calls == [] and env.double.repos[REPO].pulls == []

        def stored() -> list[tuple[str, str | None]]:
            rows = env.store.db.query("SELECT delivery_id FROM deliveries")
            deliveries = [env.store.deliveries.get_delivery(r["delivery_id"]) for r in rows]
            return [(d.event, d.payload) for d in deliveries if d is not None]

        [(event, body)] = await asyncio.to_thread(stored)
        assert body is not None
        assert event == "jira:issue_created" and "OPS-1" in body  # the delivery and its body are kept


async def test_a_plain_git_repo_gets_the_fix_as_a_pushed_branch(tmp_path: Path, settings: Settings) -> None:
    import shutil
    import subprocess

    from tests.conftest import make_git_repo

    src = require_shared(QUIXBUGS) / "gcd"
    files = {p.relative_to(src / "repo").as_posix(): p.read_text() for p in (src / "repo").rglob("*") if p.is_file()}
    work = make_git_repo(tmp_path / "gcd-src", files)
    bare = tmp_path / "gcd.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    shutil.rmtree(work)
    mapping = [
        {"project": "SHOP", "git": f"file://{bare}", "credential": "GCD", "transitions": {"pr_opened": "In Review"}}
    ]
    async with JiraEnv(tmp_path / "env", settings, mapping, credentials={"GCD": "deploy:git-secret-123"}) as env:
        title, _, body = (src / "issue.md").read_text().partition("\n")
        issue = env.jira.add_issue("SHOP", title.lstrip("# ").strip(), body.strip(), labels=["reprobot-fix"])
        assert (await env.send_jira(env.issue_created(issue), "git-1"))[0] == 202
        await env.drain()
        jobs = await asyncio.to_thread(env.jobs)
        assert [(j.status, (j.result or {}).get("status")) for j in jobs] == [("done", "fixed")], [
            j.last_error for j in jobs
        ]
        shown = subprocess.run(
            ["git", "show", "reprobot/issue-shop-1:gcd.py"], cwd=bare, capture_output=True, text=True, check=True
        ).stdout
        assert "gcd(b, a % b)" in shown
        [comment] = _bot_comments(issue)
        assert "prepared branch" in comment and "reprobot/issue-shop-1" in comment and "git-secret-123" not in comment
        assert issue.remote_links == [] and issue.status == "In Review"

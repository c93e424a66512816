"""JiraForge on the real `jira` client against the Jira double; the plain-git code side against a bare repo."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from jira import JIRAError

from bot.forges.git import GitRemoteForge
from bot.forges.jira import JiraForge, jira_client, jira_forge_for_job
from bot.jobs.handoff import publish_fields
from bot.settings.config import Settings
from bot.settings.jira_mapping import parse_mapping
from bot.store.rows import JobRow
from sandboxes.workspace import GitError
from tests.conftest import FIXTURES, make_git_repo, require_shared
from tests.fakes.jira import JiraDouble

TOKEN = "pat-123"


@pytest.fixture
async def double() -> AsyncIterator[JiraDouble]:
    """A started Jira double that accepts a bearer token and email + API token."""
    jira = JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=TOKEN, basic=("bot@example.com", "api-tok"))
    await jira.start()
    yield jira
    await jira.stop()


def _bare_repo(tmp_path: Path) -> Path:
    src = make_git_repo(tmp_path / "src", {"m.py": "X = 1\n", ".github/reprobot.yml": "agent:\n  trajectories: 1\n"})
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True, capture_output=True)
    return bare


def _forge(double: JiraDouble, tmp_path: Path, key: str, extra: str = "", **settings: object) -> JiraForge:
    text = f"projects: [{{site: '{double.site}', project: SHOP, git: 'file://{_bare_repo(tmp_path)}'{extra}}}]"
    entry = parse_mapping(text).projects[0]
    assert entry.git is not None
    client = jira_client(
        Settings(data_dir=tmp_path, **settings) if settings else Settings(jira_token=TOKEN), double.site
    )
    return JiraForge(client, key, entry, GitRemoteForge(entry.git, branch="main"), retry_base=0.01)


async def test_status_comments_are_edited_in_place_and_found_again(double: JiraDouble, tmp_path: Path) -> None:
    words = [{"type": "text", "text": "it "}, {"type": "text", "text": "crashes", "marks": [{"type": "strong"}]}]
    issue = double.add_issue("SHOP", "crash", {"type": "doc", "content": [{"type": "paragraph", "content": words}]})
    forge = _forge(double, tmp_path, issue.key)
    assert (await forge.get_issue())["body"] == "it **crashes**"
    first = await forge.upsert_status("fix", "starting\n\n```\nlog\n```")
    again = await forge.upsert_status("fix", "done: **PR**", first)
    lost = await forge.upsert_status("fix", "done again", None)  # the store lost its record: found by its anchor
    other = await forge.upsert_status("reproduce", "reproducing")
    assert first == again == lost != other
    bodies = [c["body"] for c in issue.comments]
    assert len(bodies) == 2 and bodies[0].startswith("{anchor:reprobot-status-fix}\n") and "done again" in bodies[0]
    first_body = await forge.upsert_status("policy", "x\n```\nlog\n```")
    assert "{noformat}\nlog\n{noformat}" in issue.comments[-1]["body"] and first_body
    assert await forge.reply_once("job-1", "hello") == await forge.reply_once("job-1", "hello")
    assert sum("hello" in c["body"] for c in issue.comments) == 1


async def test_transitions_by_name_links_labels_and_roles(double: JiraDouble, tmp_path: Path) -> None:
    issue = double.add_issue("SHOP", "crash", "it crashes", labels=["ui"])
    double.add_role("SHOP", "Developers", ["dana"])
    double.add_role("SHOP", "Users", ["uma"])
    forge = _forge(double, tmp_path, issue.key, ", commands: {allow: [alice], roles: [Developers]}")
    assert await forge.transition("start progress") and issue.status == "In Progress"  # a transition's name
    assert await forge.transition("In Review") and issue.status == "In Review"  # a target status's name
    assert not await forge.transition("Deploy") and issue.status == "In Review"  # not offered: logged, not fatal
    await forge.link("https://github.example/o/r/pull/1", "reprobot: fix")
    await forge.link("https://github.example/o/r/pull/1", "reprobot: fix")
    assert [link["object"]["url"] for link in issue.remote_links] == ["https://github.example/o/r/pull/1"]
    await forge.add_labels(["reprobot", "ui"])
    await forge.add_labels(["reprobot"])
    assert issue.labels == ["ui", "reprobot"]
    assert await forge.permission("alice") == "write"  # the allowlist, without asking Jira
    assert await forge.permission("dana") == "write" and await forge.permission("acc-dana") == "write"
    assert await forge.permission("uma") == "none" and await forge.permission("mallory") == "none"


async def test_server_errors_and_rate_limits_are_retried_once_policy(double: JiraDouble, tmp_path: Path) -> None:
    issue = double.add_issue("SHOP", "crash", "it crashes")
    forge = _forge(double, tmp_path, issue.key)
    double.fail("comment/add", 503, times=2)
    double.fail("comment/list", 429, headers={"Retry-After": "0"}, times=1)
    await forge.upsert_status("fix", "hello")
    ops = [c[0] for c in double.calls]
    assert ops.count("comment/add") == 3 and ops.count("comment/list") == 2 and len(issue.comments) == 1
    double.fail("issue/get", 400)
    with pytest.raises(JIRAError) as caught:
        await forge.get_issue()
    assert caught.value.status_code == 400 and [c[0] for c in double.calls].count("issue/get") == 1


async def test_auth_modes_search_and_permissions_through_the_real_client(double: JiraDouble, tmp_path: Path) -> None:
    double.add_issue("SHOP", "a", "x", labels=["reprobot-fix"])
    double.add_issue("SHOP", "b", "y")
    double.add_issue("OPS", "c", "z", labels=["reprobot-fix"])
    # The client blocks: it runs on a thread, as in the forge, while the double answers on this loop.
    basic = jira_client(Settings(jira_email="bot@example.com", jira_api_token="api-tok"), double.site)
    found = await asyncio.to_thread(basic.search_issues, 'project = SHOP AND labels = "reprobot-fix"')
    assert [i.key for i in found] == ["SHOP-1"] and found[0].fields.summary == "a"
    perms = await asyncio.to_thread(basic.my_permissions, "SHOP", permissions="ADD_COMMENTS")
    assert perms["permissions"]["ADD_COMMENTS"]["havePermission"] is True
    assert (await asyncio.to_thread(basic.myself))["name"] == "reprobot"
    wrong = jira_client(Settings(jira_token="nope"), double.site)
    with pytest.raises(JIRAError) as caught:
        await asyncio.to_thread(wrong.issue, "SHOP-1")
    assert caught.value.status_code == 401


async def test_plain_git_code_side_pushes_a_branch_and_reads_the_policy(double: JiraDouble, tmp_path: Path) -> None:
    bare = _bare_repo(tmp_path / "r")
    code = GitRemoteForge(f"file://{bare}", branch="main", credential="deploy:s3cret")
    assert await code.fetch_file("", ".github/reprobot.yml") == "agent:\n  trajectories: 1\n"
    assert await code.fetch_file("", "missing.txt") is None
    work = await code.clone(tmp_path / "work", "main")
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    commit = await code.push_branch(
        work, branch="reprobot/issue-shop-1", base_commit=base, diff=diff, message="Fix SHOP-1"
    )
    shown = subprocess.run(
        ["git", "show", "reprobot/issue-shop-1:m.py"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout
    assert shown == "X = 2\n" and len(commit) == 40
    change = await code.open_or_update_change_request(
        branch="reprobot/issue-shop-1", base="main", title="t", body="b", draft=False, labels=[]
    )
    assert change.number == 0 and "reprobot/issue-shop-1" in change.url
    code.close()
    broken = GitRemoteForge(f"file://{tmp_path}/nowhere.git", credential="deploy:s3cret")
    with pytest.raises(GitError) as failed:
        await broken.clone(tmp_path / "w2", "main")
    assert "s3cret" not in str(failed.value)
    with pytest.raises(ValueError, match="credentials"):
        GitRemoteForge("https://user:pw@git.example/x.git")


async def test_a_runner_result_for_a_jira_issue_publishes_on_that_issue(double: JiraDouble, tmp_path: Path) -> None:
    """The runner job carries the Jira issue's fields back: its result job finds the same issue and repository."""
    issue = double.add_issue("SHOP", "crash", "it crashes")
    mapping = parse_mapping(
        f"projects: [{{site: '{double.site}', project: SHOP, git: 'file://{_bare_repo(tmp_path)}'}}]"
    )
    payload = {"site": double.site, "project": "SHOP", "components": [], "key": issue.key, "mode": "reproduce"}
    row = {"id": 1, "kind": "jira.reproduce", "issue_id": None, "payload": payload, "status": "running"}
    row |= {"attempts": 1, "max_attempts": 3, "run_after": "", "lease_owner": None, "lease_expires_at": None}
    row |= {"last_error": None, "result": None, "concurrency_key": f"jira:{issue.key}", "dedupe_key": None}
    job = JobRow(**row, created_at="", updated_at="")
    publish = publish_fields(job)
    assert publish["kind"] == "jira.app_result" and publish["concurrency_key"] == f"jira:{issue.key}"
    settings = Settings(data_dir=tmp_path, jira_token=TOKEN)
    async with aiohttp.ClientSession() as session:
        forge = await jira_forge_for_job(7, publish, settings, session, None, mapping)  # type: ignore[arg-type]
    assert forge.ref == issue.key and (await forge.get_issue())["body"] == "it crashes"

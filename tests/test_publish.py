"""The forge protocol and the publish module: status comments keyed by kind, on the GitHub double and locally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.forges.base import Forge
from bot.forges.github import GitHubForge
from bot.forges.github_client import InstallationTokens, client
from bot.forges.local import LocalForge, read_issue_file
from bot.settings.config import Settings
from tests.conftest import QUIXBUGS, require_shared
from tests.gh_env import INSTALLATION, GitHubEnv, bot_comments


def _as_forge(forge: Forge) -> Forge:
    """mypy checks here that each forge implements the protocol."""
    return forge


def test_both_forges_implement_the_protocol(tmp_path: Path) -> None:
    issue_file = tmp_path / "crash-on-empty.md"
    issue_file.write_text("# Crash on empty input\n\nIt crashes.\n")
    local: Forge = LocalForge(tmp_path, read_issue_file(issue_file))
    assert local.ref == "issue crash-on-empty" and local.issue_slug == "crash-on-empty"
    assert _as_forge(LocalForge(tmp_path)).repo_name == str(tmp_path)
    gh: Forge = GitHubForge(object(), "octo/app", 7, token="t", git_url="https://git.example/")  # type: ignore[arg-type]
    assert (gh.ref, gh.issue_slug, gh.repo_name) == ("#7", "7", "octo/app")
    assert (
        gh.rerun_command("b", "tests/t.py")
        == "git fetch origin b && git checkout FETCH_HEAD\npython -m pytest -q tests/t.py"
    )
    assert local.rerun_command(None, "tests/t.py") == "python -m pytest -q tests/t.py"


@pytest.mark.shared
async def test_status_comments_of_two_kinds_are_edited_separately(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        src = tmp_path / "seed"
        src.mkdir()
        (src / "m.py").write_text("X = 1\n")
        env.double.add_repo("octo/app", src, installation_id=INSTALLATION)
        issue = env.double.add_issue("octo/app", "bug", "body")
        async with aiohttp.ClientSession() as session:
            token = await InstallationTokens(env.settings).token(session, INSTALLATION)
            gh = client(session, env.settings, token)
            forge = GitHubForge(gh, "octo/app", issue["number"], token=token, git_url=env.double.git_url)
            first = await forge.upsert_status("reproduce", "the reproduction")
            fix = await forge.upsert_status("fix", "working on a fix")
            # No record passed (a store that lost its rows): the comment of the same kind is found by its marker.
            again = await forge.upsert_status("reproduce", "the reproduction, edited")
            assert again == first != fix
            assert await forge.upsert_status("fix", "opened a PR", known=fix) == fix
        bodies = [c["body"] for c in bot_comments(env.double, "octo/app", issue["number"])]
        assert len(bodies) == 2
        assert bodies[0].endswith("\nthe reproduction, edited") and "status-reproduce" in bodies[0]
        assert bodies[1].endswith("\nopened a PR") and "status-fix" in bodies[1]


def _comment(env: GitHubEnv, repo: str, issue: dict[str, Any], body: str, comment_id: int) -> dict[str, Any]:
    comment: dict[str, Any] = {"id": comment_id, "body": body, "author_association": "OWNER"}
    comment["user"] = {"login": "owner", "id": 77, "type": "User"}
    return env.payload("issue_comment", "created", repo, issue, comment=comment, sender=comment["user"])


@pytest.mark.slow
@pytest.mark.shared
async def test_a_reproduction_survives_a_later_fix(tmp_path: Path, settings: Settings) -> None:
    repo = "octo/gcd"
    async with GitHubEnv(tmp_path, settings) as env:
        case = require_shared(QUIXBUGS) / "gcd"
        env.double.add_repo(repo, case / "repo")
        title, _, body = (case / "issue.md").read_text().partition("\n")
        issue = env.double.add_issue(repo, title.lstrip("# ").strip(), body.strip())
        assert (await env.send("issue_comment", _comment(env, repo, issue, "/reproduce", 9001)))[0] == 202
        await env.drain()
        reproduction = [dict(c) for c in bot_comments(env.double, repo, issue["number"])]
        assert len(reproduction) == 1 and "Reproduced" in reproduction[0]["body"]
        assert (await env.send("issue_comment", _comment(env, repo, issue, "/fix", 9002)))[0] == 202
        await env.drain()
        pulls = env.double.repos[repo].pulls
        assert len(pulls) == 1, [j.last_error for j in env.jobs()]
        comments = bot_comments(env.double, repo, issue["number"])
        assert len(comments) == 2
        # The reproduction comment is the same comment, unchanged; the fix has its own, naming the PR.
        assert (comments[0]["id"], comments[0]["body"]) == (reproduction[0]["id"], reproduction[0]["body"])
        assert f"#{pulls[0]['number']}" in comments[1]["body"] and "Reproduced" not in comments[1]["body"]
        kinds = {row["kind"] for row in env.store.db.table("publications").rows}
        assert {"status-reproduce", "status-fix", "pr", "branch"} <= kinds


async def test_publish_records_each_kind_and_skips_an_unchanged_status(tmp_path: Path) -> None:
    from bot.jobs.publish import Publication, Recorder, publish_outcome
    from bot.pipeline.types import JobOutcome
    from bot.store import Store

    store = Store.memory()
    stored = store.publications.upsert_issue("local", str(tmp_path), "slow-import")
    forge = LocalForge(tmp_path)
    rec = Recorder(store, stored.id, None)
    failed = JobOutcome(job_id=1, status="error", reasons=["the tests did not collect"])
    pub = Publication("fix", "Slow import", "c0ffee", "c0ffee", "reprobot/issue-x", "Fix it", "Fix it", True)
    assert await publish_outcome(forge, rec, failed, pub, None) == {"status": "error", "reasons": failed.reasons}
    assert "no result (error)" in forge.statuses["fix"]
    first = store.publications.get_publication(stored.id, "status-fix")
    assert first is not None and first.forge_ref == "fix"
    # The same body again is not sent again (a retried job); another kind is a publication of its own.
    forge.statuses["fix"] = "left as posted"
    await publish_outcome(forge, rec, failed, pub, None)
    assert forge.statuses["fix"] == "left as posted"
    await publish_outcome(forge, rec, failed, Publication(**(vars(pub) | {"kind": "reproduce"})), None)
    assert "no result (error)" in forge.statuses["reproduce"] and forge.statuses["fix"] == "left as posted"
    assert store.publications.get_publication(stored.id, "status-reproduce") is not None

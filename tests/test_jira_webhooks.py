"""POST /webhooks/jira: every recorded body accepted when signed, 401/400 for bad input, redeliveries run once."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bot.render.jira_wiki import markdown_to_jira
from bot.settings.config import Settings
from bot.store import Store
from tests.conftest import FIXTURES, require_shared
from tests.fakes.jira import JiraDouble
from tests.inert_checks import live_markdown, live_wiki
from tests.jira_env import JIRA_SECRET, JIRA_TOKEN, JiraEnv, jira_webhook
from tests.runner_procs import serve

MAPPED = [{"project": "TEST", "github": "octo/app", "on_create": "none"}]
NO_LINKS = re.compile(r"(?!)")


def _recorded() -> list[Path]:
    return sorted((FIXTURES / "jira" / "webhooks").glob("*.json"))


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.stem)
async def test_every_recorded_body_is_accepted_when_signed(path: Path, tmp_path: Path, settings: Settings) -> None:
    require_shared(path)
    async with JiraEnv(tmp_path, settings, MAPPED) as env:
        body = path.read_bytes()  # the recorded bytes as they are: their site is not ours, so nothing is planned
        status, answer = await env.send_jira(body, f"id-{path.stem}")
        assert status == 200, answer
        again = await env.send_jira(body, f"id-{path.stem}")
        assert again[0] == 200 and "redelivery" in again[1]["message"]
        rows = await _deliveries(env)
        assert [(r["delivery_id"], r["source"]) for r in rows] == [(f"jira:id-{path.stem}", "jira")]


async def _deliveries(env: JiraEnv) -> list[dict[str, Any]]:
    def read() -> list[dict[str, Any]]:
        return [dict(r) for r in env.store.db.query("SELECT delivery_id, source, event FROM deliveries")]

    return await asyncio.to_thread(read)


async def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
        return resp.status, await resp.json()


async def test_bad_signatures_malformed_bodies_and_headers(tmp_path: Path, settings: Settings) -> None:
    async with JiraEnv(tmp_path, settings, MAPPED) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes", labels=["reprobot-fix"])
        body = json.dumps(env.issue_created(issue)).encode()
        base = {"Content-Type": "application/json", "X-Atlassian-Webhook-Identifier": "w-1"}
        assert (await _post(env.jira_hook, body, base))[0] == 401  # unsigned
        assert (await _post(env.jira_hook, body, base | env.jira.sign(body, "wrong")))[0] == 401
        tampered = body.replace(b'"crash"', b'"crash!"', 1)
        assert (await _post(env.jira_hook, tampered, base | env.jira.sign(body, JIRA_SECRET)))[0] == 401
        status, answer = await _post(env.jira_hook, body, base | {"X-Hub-Signature": "sha1=abc"})
        assert status == 401 and "sha256" in answer["message"]
        no_id = {"Content-Type": "application/json"} | env.jira.sign(body, JIRA_SECRET)
        assert (await _post(env.jira_hook, body, no_id))[0] == 400
        for bad in (body[: len(body) // 2], b"\xff\xfe not utf-8", b"[" * 100_000, b"[1, 2]"):
            status, answer = await _post(env.jira_hook, bad, base | env.jira.sign(bad, JIRA_SECRET))
            assert status == 400, (bad[:20], answer)
        wrong_type = json.loads(body)
        wrong_type["issue"]["key"] = 42
        raw = json.dumps(wrong_type).encode()
        status, answer = await _post(env.jira_hook, raw, base | env.jira.sign(raw, JIRA_SECRET))
        assert status == 400 and "`issue.key`" in answer["message"]
        assert await _deliveries(env) == []  # nothing refused was recorded
        status, answer = await env.send_jira(body, "w-1")
        assert status == 202 and answer["jobs"] == ["jira.issue"]


async def test_redelivery_with_the_same_identifier_runs_nothing_twice(tmp_path: Path, settings: Settings) -> None:
    async with JiraEnv(tmp_path, settings, MAPPED) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes", labels=["reprobot-reproduce"])
        body = env.issue_created(issue)
        assert (await env.send_jira(body, "same"))[0] == 202
        for retry in range(3):
            status, answer = await env.jira.deliver(
                env.jira_hook, body, identifier="same", secret=JIRA_SECRET, retry=retry
            )
            assert status == 200 and "redelivery" in answer["message"]
        jobs = await asyncio.to_thread(env.jobs)
        assert [(j.kind, j.payload["mode"]) for j in jobs] == [("jira.issue", "reproduce")]


async def test_unmapped_project_plans_nothing_but_is_recorded(tmp_path: Path, settings: Settings) -> None:
    async with JiraEnv(tmp_path, settings, MAPPED) as env:
        issue = env.jira.add_issue("OTHER", "crash", "it crashes", labels=["reprobot-fix"])
        status, answer = await env.send_jira(env.issue_created(issue), "unmapped-1")
        assert status == 200 and "OTHER" in answer["message"] and "not mapped" in answer["message"]
        rows = await _deliveries(env)
        assert rows == [{"delivery_id": "jira:unmapped-1", "source": "jira", "event": "jira:issue_created"}]
        assert await asyncio.to_thread(env.jobs) == []


async def test_labels_commands_and_permissions_plan_the_right_jobs(tmp_path: Path, settings: Settings) -> None:
    mapping = [
        {"project": "TEST", "github": "octo/app", "commands": {"allow": ["alice"], "roles": ["Developers"]}},
        {"project": "NOROLE", "github": "octo/app", "commands": {"allow": ["alice"], "roles": []}},
    ]
    async with JiraEnv(tmp_path, settings, mapping) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes")
        assert (await env.send_jira(env.issue_created(issue), "c-0"))[0] == 200  # no trigger label
        # The label is added later: the changelog says so.
        update = env.jira.webhook(jira_webhook("webhook-issue_updated_without_comment"), issue)
        update["changelog"] = {"items": [{"field": "labels", "fromString": "ui", "toString": "ui reprobot-fix"}]}
        status, answer = await env.send_jira(update, "u-1")
        assert status == 202 and answer["jobs"] == ["jira.issue"]
        words = [{"type": "text", "text": "please "}, {"type": "hardBreak"}, {"type": "text", "text": "/reproduce"}]
        adf = {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": words}]}
        status, answer = await env.send_jira(env.comment_created(issue, adf, "alice"), "c-1")
        assert status == 202 and answer["jobs"] == ["jira.reproduce"]
        status, answer = await env.send_jira(env.comment_created(issue, "/fix strategy=tdd", "bob"), "c-2")
        assert status == 202 and answer["jobs"] == ["jira.fix"]  # bob: the job asks Jira for his roles
        status, _ = await env.send_jira(env.comment_created(issue, "just a comment", "bob"), "c-3")
        assert status == 200
        other = env.jira.add_issue("NOROLE", "x", "y")
        status, answer = await env.send_jira(env.comment_created(other, "/fix", "bob"), "c-4")
        assert status == 202 and answer["jobs"] == ["jira.reply"]  # the one polite reply
        jobs = {j.kind: j.payload for j in await asyncio.to_thread(env.jobs)}
        assert (
            jobs["jira.reproduce"]["association"] == "MEMBER" and "permission_unverified" not in jobs["jira.reproduce"]
        )
        assert jobs["jira.fix"]["permission_unverified"] is True and jobs["jira.fix"]["options"] == {"strategy": "tdd"}
        assert jobs["jira.issue"]["mode"] == "fix" and jobs["jira.reply"]["polite"] is True


async def test_per_site_secrets_and_the_unsigned_opt_in(tmp_path: Path, settings: Settings) -> None:
    secrets = {"https://other.example": "other-secret", "self": "ours"}
    async with JiraEnv(tmp_path / "a", settings, MAPPED, secrets=secrets) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes", labels=["reprobot-fix"])
        body = env.issue_created(issue)
        status, answer = await env.send_jira(body, "s-1", secret="other-secret")
        assert status == 401 and "https://other.example" in answer["message"]  # another site's secret
        assert (await env.send_jira(body, "s-2", secret="ours"))[0] == 202
        assert (await env.send_jira(body, "s-3", secret=None))[0] == 401
    async with JiraEnv(tmp_path / "b", settings, MAPPED, secrets={}, allow_unsigned=True) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes", labels=["reprobot-fix"])
        body = env.issue_created(issue)
        assert (await env.send_jira(body, "s-4", secret=None))[0] == 202
        assert (await env.send_jira(body, "s-5", secret="wrong"))[0] == 401  # a signature present is still checked


async def test_one_comment_announced_twice_plans_one_job(tmp_path: Path, settings: Settings) -> None:
    """Jira Server announces a comment as `jira:issue_updated` too: the comment id, not the delivery, dedupes."""
    mapping = [{"project": "TEST", "github": "octo/app", "commands": {"allow": ["alice"]}}]
    async with JiraEnv(tmp_path, settings, mapping) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes")
        created = env.comment_created(issue, "/reproduce", "alice")
        updated = env.jira.webhook(
            jira_webhook("webhook-issue_updated_with_comment"), issue, comment=created["comment"]
        )
        assert (await env.send_jira(created, "first"))[0] == 202
        assert (await env.send_jira(updated, "second"))[0] == 202
        # Our own status comments never read as commands, even when they quote one.
        ours = env.comment_created(issue, "{anchor:reprobot-status-fix}\n/reproduce", "reprobot")
        assert (await env.send_jira(ours, "third"))[0] == 200
        jobs = await asyncio.to_thread(env.jobs)
        assert [j.kind for j in jobs] == ["jira.reproduce"]


async def test_unsigned_mode_never_speaks_for_a_site_with_a_secret(tmp_path: Path) -> None:
    """Issue 28: sites A and C sign, B cannot; an unsigned delivery claiming A is refused by `reprobot serve`."""
    a, b = (JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=JIRA_TOKEN) for _ in range(2))
    await a.start()
    await b.start()
    try:
        site_c = "https://c.example.net/jira"
        mapping = tmp_path / "mapping.yml"
        entries = [{"site": s, "project": "TEST", "github": "octo/app", "installation": 1} for s in (a.site, b.site)]
        mapping.write_text(yaml.safe_dump({"projects": entries}))
        env = {
            "REPROBOT_JIRA_WEBHOOK_SECRET": f"{a.site}=secret-of-a {site_c}=secret-of-c",
            "REPROBOT_JIRA_ALLOW_UNSIGNED": "1",
            "REPROBOT_JIRA_MAPPING": str(mapping),
        }
        data = tmp_path / "data"
        with serve(data, tmp_path / "serve.log", **env) as url:
            hook = f"{url}/webhooks/jira"
            on_a = a.add_issue("TEST", "crash", "it crashes", labels=["reprobot-fix"])
            created = a.webhook(jira_webhook("webhook-issue_created"), on_a)
            status, answer = await a.deliver(hook, created, identifier="forged-1", secret=None)
            assert status == 401 and a.site in answer["message"], answer
            status, _ = await a.deliver(hook, created, identifier="forged-2", secret="secret-of-c")
            assert status == 401  # C's secret does not speak for A either
            forged = a.add_comment(on_a.key, "/fix", "admin")  # a maintainer's name, claimed without a signature
            comment = a.webhook(jira_webhook("webhook-cloud_comment_added"), on_a, comment=forged)
            assert (await a.deliver(hook, comment, identifier="forged-3", secret=None))[0] == 401
            on_b = b.add_issue("TEST", "crash", "it crashes", labels=["reprobot-fix"])
            created_b = b.webhook(jira_webhook("webhook-issue_created"), on_b)
            assert (await b.deliver(hook, created_b, identifier="unsigned-b", secret=None))[0] == 202  # B: no secret
            assert (await a.deliver(hook, created, identifier="signed-a", secret="secret-of-a"))[0] == 202
        with Store.open(data / "reprobot.db") as store:
            store.deliveries.promote_deliveries()
            jobs = sorted((job.payload["site"], job.payload["delivery_id"]) for job in store.jobs.list_jobs())
        assert jobs == sorted([(b.site, "jira:unsigned-b"), (a.site, "jira:signed-a")])
    finally:
        await a.stop()
        await b.stop()


async def test_the_polite_reply_names_the_commenter_inert(tmp_path: Path, settings: Settings) -> None:
    """Issue 28: a Jira display name is the commenter's to choose; the reply quoting it mentions and links nobody."""
    mapping = [{"project": "TEST", "github": "octo/app", "commands": {"roles": []}}]  # nobody may run commands
    async with JiraEnv(tmp_path, settings, mapping) as env:
        issue = env.jira.add_issue("TEST", "crash", "it crashes")
        body = env.comment_created(issue, "/fix", "mallory")
        body["comment"]["author"]["displayName"] = "[~admin] @org/team <img src=x> [x|https://evil.example] {html}"
        assert (await env.send_jira(body, "p-1"))[0] == 202
        (job,) = await asyncio.to_thread(env.jobs)
    text = job.payload["text"]
    assert text.endswith("thanks! Only the project's maintainers can run reprobot commands here.")
    assert live_markdown(text, NO_LINKS) == [] and live_wiki(markdown_to_jira(text), NO_LINKS) == [], text

"""Webhook intake: status codes for bad input, dedupe of redeliveries, ping, health; the server stays up."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from bot.settings.config import Settings
from tests.gh_env import GitHubEnv, load_payload


async def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
        return resp.status


async def test_bad_input_gets_documented_codes_and_server_stays_healthy(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        payload = load_payload("ping", "payload")
        body = json.dumps(payload).encode()
        base = {"Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-1"}
        assert await _post(env.hook_url, body, base | env.double.sign(body)) == 200
        assert await _post(env.hook_url, body, base | env.double.sign(body, "wrong")) == 401
        assert await _post(env.hook_url, body, base) == 401  # no signature at all
        tampered = body.replace(b"}", b' ,"x": 1}', 1)
        assert await _post(env.hook_url, tampered, base | env.double.sign(body)) == 401
        no_event = {k: v for k, v in base.items() if k != "X-GitHub-Event"}
        assert await _post(env.hook_url, body, no_event | env.double.sign(body)) == 400
        no_delivery = {k: v for k, v in base.items() if k != "X-GitHub-Delivery"}
        assert await _post(env.hook_url, body, no_delivery | env.double.sign(body)) == 400
        truncated = body[: len(body) // 2]
        assert await _post(env.hook_url, truncated, base | env.double.sign(truncated)) == 400
        unknown = base | {"X-GitHub-Event": "star", "X-GitHub-Delivery": "d-2"}
        assert await _post(env.hook_url, body, unknown | env.double.sign(body)) == 200
        big = b'{"a": "' + b"x" * (env.settings.webhook_max_bytes + 10) + b'"}'
        assert await _post(env.hook_url, big, base | env.double.sign(big)) == 413
        async with aiohttp.ClientSession() as session:
            for path in ("/healthz", "/readyz"):
                async with session.get(env.url + path) as resp:
                    assert resp.status == 200, path
        assert await _post(env.hook_url, body, base | {"X-GitHub-Delivery": "d-3"} | env.double.sign(body)) == 200


async def test_redelivery_is_answered_200_and_queues_nothing(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue()
        first = await env.send("issues", payload, delivery_id="same-id")
        assert first == (202, first[1]) and first[1]["jobs"] == ["github.issue"]
        again = await env.send("issues", payload, delivery_id="same-id")
        assert again == (200, again[1]) and again[1]["job_id"] is None  # acknowledged, not promoted yet
        assert "wait for a worker" in again[1]["message"]
        [job_id] = env.store.deliveries.promote_deliveries()
        for _ in range(3):
            again = await env.send("issues", payload, delivery_id="same-id")
            assert again == (200, again[1]) and again[1]["job_id"] == job_id
        assert env.store.deliveries.promote_deliveries() == [] and len(env.store.jobs.list_jobs()) == 1


async def test_installation_and_pr_closed_are_recorded(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        inst = load_payload("installation", "created")
        assert await env.send("installation", inst) == (202, {"message": "queued", "jobs": ["github.labels"]})
        assert env.store.publications.get_installation(int(inst["installation"]["id"])) is not None
        pr = load_payload("pull_request", "closed")
        pr["pull_request"]["head"]["ref"] = "reprobot/issue-7"
        pr["pull_request"]["merged"] = True
        assert (await env.send("pull_request", pr))[0] == 200
        outcome = env.store.publications.get_pr_outcome(
            pr["repository"]["full_name"], int(pr["pull_request"]["number"])
        )
        assert outcome is not None and outcome.merged


async def test_mid_sized_body_is_read_whole_and_no_secret_means_401(tmp_path: Path, settings: Settings) -> None:
    from dataclasses import replace

    from aiohttp.test_utils import TestClient, TestServer

    from bot.intake.server import make_app

    async with GitHubEnv(tmp_path, settings) as env:
        payload = load_payload("ping", "payload") | {"padding": "x" * 300_000}
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "big"}
        assert await _post(env.hook_url, body, headers | env.double.sign(body)) == 200
        chunked = {"Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "chunked"}

        async def chunks():  # type: ignore[no-untyped-def]
            for i in range(0, len(body), 4096):
                yield body[i : i + 4096]

        async with aiohttp.ClientSession() as session:
            resp = await session.post(env.hook_url, data=chunks(), headers=chunked | env.double.sign(body))
            assert resp.status == 200
        unsigned = replace(env.settings, github_webhook_secret=None)
        async with TestClient(TestServer(make_app(unsigned, store=env.store))) as client:
            resp = await client.post("/webhooks/github", data=body, headers=headers)
            assert resp.status == 401


async def test_the_delivered_event_is_stored(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue("opened")
        assert (await env.send("issues", payload, delivery_id="stored-1"))[0] == 202
        seen = env.store.deliveries.get_delivery("stored-1")
        assert seen is not None and json.loads(seen.payload or "") == payload
        assert seen.planned is not None and [p["kind"] for p in seen.planned] == ["github.issue"]
        assert seen.job_id is None and seen.promoted_at is None
        [job_id] = env.store.deliveries.promote_deliveries()
        promoted = env.store.deliveries.get_delivery("stored-1")
        assert promoted is not None and promoted.job_id == job_id and promoted.promoted_at is not None
        job = env.store.jobs.get_job(job_id)
        assert job is not None and job.kind == "github.issue" and job.payload["delivery_id"] == "stored-1"


async def test_the_double_fails_a_test_on_a_call_outside_the_spec(tmp_path: Path, settings: Settings) -> None:
    import pytest

    with pytest.raises(AssertionError, match="outside the GitHub OpenAPI subset"):
        async with GitHubEnv(tmp_path, settings) as env:
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{env.double.url}/repos/o/r/issues/1/comments", json={"text": "x"}) as r:
                    assert r.status == 422  # body lacks the required `body`
                async with session.get(f"{env.double.url}/repos/o/r/hooks") as r:
                    assert r.status == 404  # not an operation of the subset
            assert len(env.double.violations) == 2


async def test_oversized_chunked_body_gets_413(tmp_path: Path, settings: Settings) -> None:
    from dataclasses import replace

    from aiohttp.test_utils import TestClient, TestServer

    from bot.intake.server import make_app
    from bot.store import Store

    small = replace(settings, github_webhook_secret="s", webhook_max_bytes=1000)
    # A (wrong) signature header: a body without one is refused before it is read, with 401.
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "c"}
    headers["X-Hub-Signature-256"] = "sha256=" + "0" * 64

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b"x" * 500

    async with TestClient(TestServer(make_app(small, store=Store.memory()))) as client:
        resp = await client.post("/webhooks/github", data=chunks(), headers=headers)
        assert resp.status == 413
        assert (await client.get("/healthz")).status == 200


def test_answers_are_json_even_when_a_message_is_not_valid_unicode() -> None:
    from bot.intake.server import _reply

    plain = _reply(202, "queued", jobs=["github.issue"])
    assert plain.status == 202 and plain.content_type == "application/json"
    assert json.loads(plain.body) == {"message": "queued", "jobs": ["github.issue"]}  # type: ignore[arg-type]
    odd = _reply(400, "refused: \ud800")  # a lone surrogate, which orjson refuses: json escapes it instead
    assert odd.status == 400 and json.loads(odd.body) == {"message": "refused: \ud800"}  # type: ignore[arg-type]

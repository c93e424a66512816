"""The event loop of `serve` and `worker` never waits for the store: calls go to a thread, webhooks only plan."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from gidgethub.sansio import Event

from bot.intake.server import make_app
from bot.jobs.queue import Queue
from bot.settings.config import Settings
from bot.store import DeliveryRejected, PlannedAction, PlannedJob, Store, StoreOnEventLoop, forbid_store_calls_on_loop
from bot.store.base import StoreConnection
from handlers.github import Intake, router
from tests.gh_env import GitHubEnv, bot_comments, load_payload

#: How long another connection holds the write lock: several heartbeats of the running job (lease 3 s).
HOLD_SECONDS = 5.0


def _hold_write_lock(path: Path, acquired: threading.Event, seconds: float) -> None:
    """Another process's writer, as SQLite sees it: BEGIN IMMEDIATE on its own connection, then wait."""
    conn = sqlite3.connect(str(path), timeout=10, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        acquired.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _probe_while_held(db: Path, url: str) -> list[float]:
    """Hold the store's write lock from another thread and time /healthz meanwhile (from this thread).

    The probes run off the server's loop, so a loop stalled on the lock shows up as a slow answer here.
    """
    acquired = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(db, acquired, HOLD_SECONDS))
    holder.start()
    try:
        assert acquired.wait(10), "could not take the write lock"
        time.sleep(1.5)  # past the job's next heartbeat, which now needs the lock
        times = []
        for _ in range(4):
            started = time.monotonic()
            with urllib.request.urlopen(url + "/healthz", timeout=HOLD_SECONDS * 3) as resp:
                assert resp.status == 200
            times.append(time.monotonic() - started)
            time.sleep(0.5)
        return times
    finally:
        holder.join()


async def _wait_for(predicate: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not await asyncio.to_thread(predicate):  # type: ignore[arg-type]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_healthz_answers_within_1s_while_another_connection_holds_the_write_lock_during_a_job(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As deployed: without the guard, a store call left on the loop would stall it rather than raise.
    monkeypatch.setattr(StoreConnection, "loop_guard", False)
    async with GitHubEnv(tmp_path, settings) as env:
        env.small_repo_issue()
        # The job waits for its installation token, which GitHub does not send until released: it stays
        # running, and its worker renews the lease every second while another connection holds the lock.
        env.double.hang("apps/create-installation-access-token")
        app = make_app(replace(env.settings, worker_lease=3.0), store=env.store, workers=1)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        try:
            issue = await asyncio.to_thread(env.store.publications.upsert_issue, "github", "octo/app", "1")
            payload = {"installation_id": 1, "repo": "octo/app", "number": 1, "text": "hello from the test"}
            job_id = await asyncio.to_thread(
                Queue(env.store).enqueue, "github.reply", issue.id, payload, concurrency_key=None
            )
            token_asked = lambda: any(op == "apps/create-installation-access-token" for op, *_ in env.double.calls)  # noqa: E731
            await _wait_for(token_asked, 30, "the job to ask for its token")

            times = await asyncio.to_thread(_probe_while_held, env.settings.store_path, url)

            # The acceptance line of issue 13 (generous: an answer takes milliseconds; a stalled loop, seconds).
            assert max(times) < 1.0, times
            job = await asyncio.to_thread(env.store.jobs.get_job, job_id)
            assert job is not None and job.status == "running"
            env.double.release()
            replied = lambda: bool(bot_comments(env.double, "octo/app", 1))  # noqa: E731
            await _wait_for(replied, 30, "the job to reply once the lock and GitHub are free")
        finally:
            env.double.release()
            await runner.cleanup()


async def test_a_blocking_store_call_from_serving_code_on_the_loop_raises() -> None:
    store = Store.memory()
    with forbid_store_calls_on_loop():
        with pytest.raises(StoreOnEventLoop, match="to_thread"):
            store.jobs.list_jobs()
        with pytest.raises(StoreOnEventLoop):
            store.ping_write()
        # The same call on a thread is what serving code does; tasks it creates inherit the mark.
        assert await asyncio.to_thread(store.jobs.list_jobs) == []
        with pytest.raises(StoreOnEventLoop):
            await asyncio.create_task(_read(store))
    # Outside serving code (a test's own checks, a script) the call is allowed; so is the never-waiting ack.
    assert store.jobs.list_jobs() == []
    with forbid_store_calls_on_loop():
        assert store.deliveries.try_accept_deliveries([("d-1", "github", "ping", [], b"")]) == [True]


async def _read(store: Store) -> None:
    store.deliveries.pending_deliveries()


def test_the_guard_is_for_event_loops_only() -> None:
    store = Store.memory()
    with forbid_store_calls_on_loop():  # no loop runs on this thread: a blocking call only blocks itself
        assert store.jobs.list_jobs() == []


def _installation_event(action: str, installation_id: int = 42) -> Event:
    data = load_payload("installation", "created")
    data["action"] = action
    data["installation"] = dict(data["installation"], id=installation_id)
    return Event(data, event="installation", delivery_id=f"inst-{action}-{installation_id}")


async def test_installation_handlers_only_plan_and_never_write() -> None:
    store = Store.memory()
    intake = Intake(store)
    with forbid_store_calls_on_loop():  # as in a request: a write here would raise
        await router.dispatch(_installation_event("created"), None, intake=intake)
        await router.dispatch(_installation_event("deleted", 43), None, intake=intake)
    # An installation's repositories get their trigger labels from a job; the handler only plans it.
    assert [(j.kind, j.repo) for j in intake.planned] == [("github.labels", "Codertocat/Hello-World")]
    assert [a.kind for a in intake.actions] == ["installation", "installation_removed"]
    assert store.publications.get_installation(42) is None  # nothing written until the delivery is


def test_a_planned_action_is_written_in_its_deliverys_transaction() -> None:
    store = Store.memory()
    created = PlannedAction("installation", {"installation_id": 7, "account": "octo", "repos": ["octo/a"]})
    assert store.deliveries.accept_delivery("d-1", "github", "installation", [created]) is True
    installation = store.publications.get_installation(7)
    assert installation is not None and installation.repos == ["octo/a"] and installation.removed_at is None
    # A redelivery writes nothing: the installation keeps what its first delivery said.
    changed = PlannedAction("installation", {"installation_id": 7, "account": "octo", "repos": ["octo/b"]})
    assert store.deliveries.accept_delivery("d-1", "github", "installation", [changed]) is False
    installation = store.publications.get_installation(7)
    assert installation is not None and installation.repos == ["octo/a"]
    # An action that cannot be written takes its delivery with it, and only its own delivery.
    bad = PlannedAction("pr_outcome", {"repo": "octo/a", "pr_number": "not a number", "merged": True})
    job = PlannedJob("github.reply", "github", "octo/a", "3", {"text": "hi"}, None, "reply-3")
    results = store.deliveries.accept_deliveries(
        [("d-bad", "github", "pull_request", [job, bad], b"{}"), ("d-good", "github", "pull_request", [job], b"{}")]
    )
    assert isinstance(results[0], DeliveryRejected) and results[1] is True
    assert store.deliveries.get_delivery("d-bad") is None and store.deliveries.pending_deliveries() == 1
    assert store.publications.get_pr_outcome("octo/a", 0) is None


def test_an_unknown_planned_action_is_refused_before_the_transaction() -> None:
    store = Store.memory()
    with pytest.raises(DeliveryRejected, match="planned action"):
        store.deliveries.accept_delivery("d-1", "github", "x", [PlannedAction("drop_tables", {})])
    assert store.deliveries.get_delivery("d-1") is None


async def test_a_webhook_request_that_calls_the_store_on_the_loop_fails(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def plan_with_a_blocking_read(self: Intake) -> list[PlannedJob | PlannedAction]:
        self.store.jobs.list_jobs()  # what a handler must not do: it would hold the loop on a busy store
        return [*self.planned, *self.actions]

    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue()
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-1"}
        async with aiohttp.ClientSession() as session:
            async with session.post(env.hook_url, data=body, headers=headers | env.double.sign(body)) as resp:
                assert resp.status == 202  # the real plan: the request reaches the store only through threads
            monkeypatch.setattr(Intake, "plan", plan_with_a_blocking_read)
            headers["X-GitHub-Delivery"] = "d-2"
            async with session.post(env.hook_url, data=body, headers=headers | env.double.sign(body)) as resp:
                assert resp.status == 500
        assert await asyncio.to_thread(env.store.deliveries.get_delivery, "d-2") is None

"""The webhook inbox commit (inline when the write lock is free, on a thread when not), promotion, WAL checkpoints."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.intake.group_commit import GroupCommit
from bot.settings.config import Settings
from bot.store import DeliveryRejected, PlannedJob, Store
from bot.store.bodies import LZ4_FRAME_MAGIC, BodyCodecError, pack_body, unpack_body
from tests.gh_env import GitHubEnv

# Every test runs on both engines (tests/conftest.py `engine`): SQLite, and a real PostgreSQL server.
pytestmark = pytest.mark.usefixtures("engine")


def _job(delivery_id: str) -> PlannedJob:
    return PlannedJob(
        kind="github.issue",
        forge="github",
        repo="o/r",
        number_or_key="1",
        payload={"delivery_id": delivery_id},
        concurrency_key="github:o/r#1",
        dedupe_key=f"github-delivery:{delivery_id}:github.issue",
        title="t",
    )


def _delivery(delivery_id: str) -> tuple[str, str, str, list[PlannedJob], bytes]:
    return (delivery_id, "github", "issues", [_job(delivery_id)], b'{"x": 1}')


def _direct(commits: GroupCommit) -> int:
    """Commits made without a thread: inline on the loop (SQLite), on an asynchronous connection (PostgreSQL)."""
    return commits.inline_commits + commits.async_commits


def _hold_write_lock(path: Path) -> Any:
    """Another connection (as another process would) that holds the store's write lock until it commits.

    Opened through Store.open, so that on the PostgreSQL engine it is a connection to the same database.
    """
    other = Store.open(path).conn.db.conn
    other.execute("BEGIN IMMEDIATE")
    return other


def test_try_accept_writes_when_free_and_writes_nothing_when_locked(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        other = _hold_write_lock(path)
        assert store.deliveries.try_accept_deliveries([_delivery("d-1")]) is None
        other.execute("COMMIT")
        other.close()
        assert store.deliveries.get_delivery("d-1") is None and store.jobs.list_jobs() == []
        assert store.deliveries.try_accept_deliveries([_delivery("d-1")]) == [True]
        assert store.deliveries.try_accept_deliveries([_delivery("d-1")]) == [False]  # a redelivery records nothing
        assert (
            store.deliveries.pending_deliveries() == 1 and store.jobs.list_jobs() == []
        )  # acknowledged, not yet promoted
        assert len(store.deliveries.promote_deliveries()) == 1
        assert len(store.jobs.list_jobs()) == 1
        # The busy timeout is back to normal after the non-waiting attempt (SQLite's; PostgreSQL's try-lock has none).
        if isinstance(store.db.conn, sqlite3.Connection):
            assert store.db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000


def test_try_accept_gives_way_to_another_thread_of_this_process(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        taken, release = threading.Event(), threading.Event()

        def hold() -> None:  # e.g. an in-process worker (`serve --workers N`) in the middle of a write
            with store.conn.write():
                taken.set()
                release.wait()

        holder = threading.Thread(target=hold)
        holder.start()
        taken.wait()
        try:
            assert store.deliveries.try_accept_deliveries([_delivery("d-1")]) is None
        finally:
            release.set()
            holder.join()
        assert store.deliveries.try_accept_deliveries([_delivery("d-1")]) == [True]


async def test_group_commit_waits_for_a_held_lock_on_a_thread_not_on_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        commits = GroupCommit(store)
        assert await commits.accept(_delivery("d-0")) is True
        assert (_direct(commits), commits.thread_commits) == (1, 0)

        other = _hold_write_lock(path)
        pending = [asyncio.create_task(commits.accept(_delivery(f"d-{i}"))) for i in (1, 2)]
        ticks = 0
        for _ in range(20):  # the loop keeps turning while the batch waits for the lock
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 20 and not any(t.done() for t in pending)
        other.execute("COMMIT")
        other.close()
        results = await asyncio.gather(*pending)
        assert results == [True, True]
        if store.conn.set_based_inbox:  # PostgreSQL: the batch waited on its asynchronous connection
            assert (commits.async_commits, commits.thread_commits) == (2, 0)
        else:
            assert commits.thread_commits >= 1
        # Once the thread is idle again, the next batch is committed inline.
        before = _direct(commits)
        assert await commits.accept(_delivery("d-1")) is False  # redelivery
        assert _direct(commits) == before + 1
        assert len(store.deliveries.promote_deliveries()) == 3 and len(store.jobs.list_jobs()) == 3
        await commits.close()


async def test_drain_waits_for_a_batch_still_waiting_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store.open(path)
    commits = GroupCommit(store)
    other = _hold_write_lock(path)
    waiting = asyncio.create_task(commits.accept(_delivery("d-1")))
    drained = asyncio.create_task(commits.drain())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not drained.done() and not waiting.done()
    other.execute("COMMIT")
    other.close()
    await drained
    assert waiting.done() and waiting.result() is True
    await commits.close()
    store.close()  # nothing is left running on the connection
    with Store.open(path) as again:
        assert again.deliveries.get_delivery("d-1") is not None  # recorded durably, seen after a restart
        assert len(again.deliveries.promote_deliveries()) == 1  # and its job is queued by the next worker


async def test_a_bad_delivery_fails_alone_and_its_neighbours_are_stored(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        commits = GroupCommit(store)
        bad = ("d-bad", "github", "issues", [PlannedJob("k", "nowhere", "o/r", "1", {}, None, None)], b"")
        surrogate = _delivery("d-sur")
        surrogate[3][0] = PlannedJob("k", "github", "o/r", "1", {}, None, None, title="\ud800 lone")
        batch = [_delivery("d-1"), bad, surrogate, _delivery("d-2")]
        results = await asyncio.gather(*(commits.accept(d) for d in batch), return_exceptions=True)
        assert results[0] is True and results[3] is True
        assert isinstance(results[1], DeliveryRejected) and "forge" in str(results[1])
        assert isinstance(results[2], DeliveryRejected) and "surrogate" in str(results[2])
        assert _direct(commits) == 1  # one commit for the whole batch, bad bodies and all
        assert store.deliveries.get_delivery("d-1") is not None and store.deliveries.get_delivery("d-2") is not None
        assert store.deliveries.get_delivery("d-bad") is None and store.deliveries.get_delivery("d-sur") is None
        # The same through the thread path (a batch that had to wait for the lock).
        assert store.deliveries.accept_deliveries([_delivery("d-3"), bad])[0] is True
        with pytest.raises(DeliveryRejected):
            store.deliveries.accept_delivery(*bad)
        await commits.close()


def _refuse_writes(store: Store, refuse: bool) -> None:
    """Make the inbox refuse every write, or stop: SQLite's query_only; on PostgreSQL a "disk full" trigger."""
    if not store.conn.set_based_inbox:
        store.conn.nowait_connection().execute(f"PRAGMA query_only = {'ON' if refuse else 'OFF'}")
    elif refuse:
        store.db.execute(
            "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no space left' USING ERRCODE = 'disk_full'; END $$"
        )
        store.db.execute("CREATE TRIGGER full_disk BEFORE INSERT ON deliveries EXECUTE FUNCTION full_disk()")
    else:
        store.db.execute("DROP TRIGGER full_disk ON deliveries")


async def test_a_store_error_reaches_every_request_of_the_batch(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        commits = GroupCommit(store)
        # The store itself refuses writes (as with a full disk): that is not one delivery's fault.
        _refuse_writes(store, True)
        results = await asyncio.gather(
            commits.accept(_delivery("d-1")), commits.accept(_delivery("d-2")), return_exceptions=True
        )
        assert all(isinstance(r, sqlite3.OperationalError) for r in results), results
        _refuse_writes(store, False)
        assert store.deliveries.get_delivery("d-1") is None  # the batch's transaction rolled back as a whole
        assert await commits.accept(_delivery("d-1")) is True  # and the commit path still works
        await commits.close()


@pytest.mark.sqlite_only
def test_wal_checkpointer_takes_over_checkpoints_and_gives_them_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        checkpointer = store.wal_checkpointer(interval=0.01)
        assert checkpointer is not None
        checkpointer.start()
        assert store.db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for i in range(50):
            store.deliveries.accept_delivery(*_delivery(f"d-{i}"))
        checkpointer.stop()
        assert checkpointer.checkpoints >= 1  # at least the final one on stop
        assert store.db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert not any(t.name == "reprobot-wal-checkpoint" for t in threading.enumerate())
        # Everything written is in the main database file now: the WAL has no frames left to copy.
        busy, log_frames, copied = store.db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and log_frames == copied
    with Store.open(path) as again:
        assert again.deliveries.pending_deliveries() == 50


@pytest.mark.sqlite_only
def test_savepoint_journals_stay_in_memory_on_both_connections(tmp_path: Path) -> None:
    # A batch's savepoint copies each page it changes; on disk that was a new temp file per group commit.
    with Store.open(tmp_path / "s.db") as store:
        for conn in (store.db.conn, store.conn.nowait_connection()):
            assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY
        big = [(f"d-{i}", "github", "issues", [_job(f"d-{i}")], bytes(range(256)) * 64) for i in range(40)]
        assert store.deliveries.try_accept_deliveries(big) == [True] * 40


def test_memory_store_has_no_checkpointer() -> None:
    assert Store.memory().wal_checkpointer() is None


async def test_server_stays_responsive_while_a_delivery_waits_for_the_store(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue()
        other = _hold_write_lock(env.settings.store_path)  # e.g. a worker process in the middle of a write
        try:
            sent = asyncio.create_task(env.send("issues", payload, delivery_id="held"))
            async with aiohttp.ClientSession() as session, session.get(env.url + "/healthz") as resp:
                assert resp.status == 200  # the loop is not stuck behind the lock
            assert not sent.done()  # no answer before the delivery is committed
        finally:
            other.execute("COMMIT")
            other.close()
        status, body = await sent
        assert status == 202 and body["jobs"] == ["github.issue"]
        assert (await env.send("issues", payload, delivery_id="held"))[0] == 200
        assert len(env.store.deliveries.promote_deliveries()) == 1 and len(env.store.jobs.list_jobs()) == 1


def _polite(delivery_id: str) -> tuple[str, str, str, list[PlannedJob], bytes]:
    job = PlannedJob("github.reply", "github", "o/r", "1", {"delivery_id": delivery_id}, None, "polite:o/r#1")
    return (delivery_id, "github", "issue_comment", [job], b"{}")


def test_promotion_queues_each_delivery_once_in_order_and_keeps_dedupe_keys(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        store.deliveries.accept_deliveries([_delivery("d-1"), _polite("p-1"), _polite("p-2"), _delivery("d-2")])
        assert (
            store.deliveries.accept_delivery("nothing", "github", "issues", []) is True
        )  # recorded, nothing to promote
        assert store.deliveries.pending_deliveries() == 4
        ids = store.deliveries.promote_deliveries(limit=3)
        assert len(ids) == 3 and ids[1] == ids[2]  # the second polite reply found the first one's job
        assert store.deliveries.pending_deliveries() == 1
        rest = store.deliveries.promote_deliveries()
        assert len(rest) == 1 and rest[0] > max(ids)  # oldest first
        assert store.deliveries.promote_deliveries() == [] and store.deliveries.pending_deliveries() == 0
        jobs = sorted(store.jobs.list_jobs(), key=lambda j: j.id)
        assert [j.payload["delivery_id"] for j in jobs] == ["d-1", "p-1", "d-2"]
        assert [store.deliveries.get_delivery(d).job_id for d in ("d-1", "p-1", "p-2", "d-2")] == [
            ids[0],
            ids[1],
            ids[1],
            rest[0],
        ]  # type: ignore[union-attr]
        nothing = store.deliveries.get_delivery("nothing")
        assert nothing is not None and nothing.planned is None and nothing.job_id is None


def test_a_plan_that_cannot_be_queued_is_marked_and_does_not_block_the_rest(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        store.deliveries.accept_deliveries([_delivery("d-1"), _delivery("d-2"), _delivery("d-3")])
        # A row written by an older or broken release: the plan lacks fields.
        store.db.execute("UPDATE deliveries SET planned = ? WHERE delivery_id = 'd-2'", ('[{"kind": "x"}]',))
        ids = store.deliveries.promote_deliveries()
        assert len(ids) == 2 and len(store.jobs.list_jobs()) == 2
        bad = store.deliveries.get_delivery("d-2")
        assert bad is not None and bad.promoted_at is not None and bad.job_id is None
        assert bad.promote_error is not None and bad.promote_error.startswith("TypeError")
        assert store.deliveries.pending_deliveries() == 0


def test_an_idle_promotion_does_not_wait_for_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        store.db.conn.execute("PRAGMA busy_timeout = 50")  # a wrongly taken lock fails fast, not after 30 s
        other = _hold_write_lock(path)
        try:
            assert store.deliveries.promote_deliveries() == []
        finally:
            other.execute("COMMIT")
            other.close()


def test_acknowledged_deliveries_survive_a_restart_and_the_next_claim_runs_them(tmp_path: Path) -> None:
    from bot.jobs.queue import Queue

    path = tmp_path / "s.db"
    with Store.open(path) as store:
        store.deliveries.accept_deliveries([_delivery("d-1"), _delivery("d-2")])
    with Store.open(path) as store:  # e.g. the web process died right after answering 202
        job = Queue(store).claim("w-1")
        assert job is not None and job.kind == "github.issue" and job.payload["delivery_id"] == "d-1"
        assert store.deliveries.pending_deliveries() == 0 and len(store.jobs.list_jobs()) == 2


async def test_deliveries_accepted_in_consecutive_loop_turns_share_one_commit(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        commits = GroupCommit(store)
        first = asyncio.create_task(commits.accept(_delivery("d-1")))
        await asyncio.sleep(0)  # d-1 reaches accept in this turn ...
        second = asyncio.create_task(commits.accept(_delivery("d-2")))  # ... and d-2 in the next
        assert await asyncio.gather(first, second) == [True, True]
        assert (_direct(commits), commits.thread_commits) == (1, 0)
        await commits.close()


def test_old_delivery_bodies_are_dropped_and_the_delivery_still_dedupes(tmp_path: Path) -> None:
    now = [1_000_000.0]
    with Store.open(tmp_path / "s.db", clock=lambda: now[0]) as store:
        store.deliveries.accept_deliveries([_delivery(f"old-{i}") for i in range(5)])
        now[0] += 40 * 86400
        store.deliveries.accept_deliveries([_delivery("new")])
        assert store.deliveries.prune_delivery_bodies(now[0] - 30 * 86400, batch=2) == 5  # several batches
        assert store.deliveries.prune_delivery_bodies(now[0] - 30 * 86400) == 0
        old, new = store.deliveries.get_delivery("old-0"), store.deliveries.get_delivery("new")
        assert old is not None and old.payload is None and old.planned is not None
        assert new is not None and new.payload == '{"x": 1}'
        assert store.deliveries.accept_delivery(*_delivery("old-0")) is False  # still a redelivery
        assert len(store.deliveries.promote_deliveries()) == 6  # the plans were kept


async def test_the_loop_never_waits_for_the_shared_store_connection(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue()
        assert (await env.send("issues", payload, delivery_id="seen"))[0] == 202
        taken, release = threading.Event(), threading.Event()

        def hold() -> None:  # an in-process worker thread holding the shared connection (say, waiting on a lock)
            with env.store.conn._lock:
                taken.set()
                release.wait(5)  # bounded, so that a loop blocked on this lock fails the test instead of hanging

        holder = threading.Thread(target=hold)
        holder.start()
        taken.wait()
        try:
            fresh = await asyncio.wait_for(env.send("issues", payload, delivery_id="fresh"), 10)
            assert fresh[0] == 202  # the ack path has its own connection
            again = asyncio.create_task(env.send("issues", payload, delivery_id="seen"))
            async with aiohttp.ClientSession() as session, session.get(env.url + "/healthz") as resp:
                assert resp.status == 200
            # Answered while the lock is still held: the redelivery's read waits on a thread, not on the loop.
            assert holder.is_alive() and not again.done()
        finally:
            release.set()
            holder.join()
        assert (await again)[0] == 200


def test_a_body_is_kept_byte_exact_and_packed(tmp_path: Path) -> None:
    # A GitHub-sized body with non-ASCII text and, after it, bytes that are not UTF-8 at all.
    raw = ('{"body": "' + "naïve ✓ " * 1500 + '"}').encode() + b"\xff\xfe"
    with Store.open(tmp_path / "s.db") as store:
        assert store.deliveries.accept_delivery("d-1", "github", "issues", [], raw) is True
        [row] = store.db.query(
            "SELECT b.payload, b.packed FROM delivery_bodies b JOIN deliveries d ON d.id = b.delivery_id"
        )
        assert row["payload"] == "" and unpack_body(row["packed"]) == raw  # what was signed, byte for byte
        assert len(row["packed"]) < len(raw) // 4  # packed: the point of storing it so
        delivery = store.deliveries.get_delivery("d-1")
        assert delivery is not None and delivery.payload == raw.decode("utf-8", "replace")
        assert store.deliveries.accept_delivery("d-2", "github", "issues", [], b"") is True
        empty = store.deliveries.get_delivery("d-2")
        assert empty is not None and empty.payload is None  # no body, no row for it


def test_a_body_stored_as_text_before_schema_9_still_reads(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        store.deliveries.accept_delivery("d-old", "github", "issues", [], b"")
        with store.conn.write() as db:  # as schema 8 wrote it: the decoded text, nothing packed
            db.execute(
                "INSERT INTO delivery_bodies (delivery_id, payload)"
                " SELECT id, ? FROM deliveries WHERE delivery_id = 'd-old'",
                ('{"old": "é"}',),
            )
        old = store.deliveries.get_delivery("d-old")
        assert old is not None and old.payload == '{"old": "é"}'


def test_a_body_in_an_unknown_codec_is_refused_by_name(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        store.deliveries.accept_delivery("d-1", "github", "issues", [], b'{"x": 1}')
        with store.conn.write() as db:  # e.g. written by a newer release with another codec
            db.execute("UPDATE delivery_bodies SET packed = ?", (b"\x28\xb5\x2f\xfd" + b"\x00" * 8,))
        with pytest.raises(BodyCodecError, match="unknown codec"):
            store.deliveries.get_delivery("d-1")
    assert pack_body(b"abc")[:4] == LZ4_FRAME_MAGIC
    with pytest.raises(BodyCodecError, match="damaged"):
        unpack_body(pack_body(b"abc" * 100)[:-5])

"""Acks on PostgreSQL (issue 32): each batch commits on an asynchronous connection, never on the event loop;
batches in flight are bounded by REPROBOT_ACK_CONNECTIONS; what they write is what row by row would."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from bot.intake.group_commit import GroupCommit
from bot.store import DeliveryRejected, PlannedAction, PlannedJob, Store
from bot.store.pg import WRITE_LOCK_KEY
from tests.pg_server import PgServer


def _job(n: int) -> PlannedJob:
    return PlannedJob("github.issue", "github", "o/r", str(n), {"n": n}, f"o/r#{n}", f"dk-{n}")


def _delivery(delivery_id: str, *plan: Any) -> Any:
    return (delivery_id, "github", "issues", list(plan), b'{"action": "labeled"}')


@contextlib.contextmanager
def _write_lock_held(url: str) -> Iterator[None]:
    """Another connection holds the store's write lock exclusively (as a promotion does) inside the block."""
    with psycopg.connect(url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        yield
        other.rollback()


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_batch_commits_on_an_async_connection_while_the_loop_keeps_turning(pg_server: PgServer) -> None:
    url = pg_server.new_database()
    store = Store.open(url)
    commits = GroupCommit(store)
    try:
        with _write_lock_held(url):
            waiting = [asyncio.create_task(commits.accept(_delivery(f"d-{i}", _job(i)))) for i in range(3)]
            await asyncio.sleep(0.3)  # the batch waits for the lock on the server; the loop runs meanwhile
            assert not any(task.done() for task in waiting)
        assert await asyncio.gather(*waiting) == [True, True, True]
        assert (commits.async_commits, commits.thread_commits, commits.inline_commits) == (1, 0, 0)
        assert await commits.accept(_delivery("d-1", _job(1))) is False  # a redelivery
        assert len(await asyncio.to_thread(store.deliveries.promote_deliveries)) == 3
    finally:
        await commits.close()
        store.close()


async def test_batches_in_flight_are_bounded_and_later_requests_wait_for_a_connection(pg_server: PgServer) -> None:
    url = pg_server.new_database()
    store = Store.open(url)
    commits = GroupCommit(store, connections=2)
    try:
        with _write_lock_held(url):
            first = asyncio.create_task(commits.accept(_delivery("d-1", _job(1))))
            await _turns(3)
            second = asyncio.create_task(commits.accept(_delivery("d-2", _job(2))))
            await _turns(3)
            later = [asyncio.create_task(commits.accept(_delivery(f"d-{i}", _job(i)))) for i in (3, 4)]
            await asyncio.sleep(0.2)
            assert len(commits._in_flight) == 2 and len(commits._pending) == 2  # the third batch waits its turn
        assert await asyncio.gather(first, second, *later) == [True] * 4
        assert commits.async_commits == 3  # d-3 and d-4 went out together once a connection was free
    finally:
        await commits.close()
        store.close()


async def test_batches_the_one_statement_does_not_cover_go_row_by_row_on_a_thread(pg_server: PgServer) -> None:
    with Store.open(pg_server.new_database()) as store:
        commits = GroupCommit(store)
        # Bookkeeping actions are written row by row.
        action = PlannedAction("installation", {"installation_id": 7, "account": "o", "repos": ["o/r"]})
        assert await commits.accept(_delivery("a-1", action)) is True
        assert commits.thread_commits == 1 and commits.async_commits == 0
        # PostgreSQL's text holds no NUL: the statement fails, wrote nothing, and row by row rejects that one alone.
        batch = [asyncio.create_task(commits.accept(_delivery(i, _job(n)))) for n, i in enumerate(("b-1", "b-\x00"))]
        results = await asyncio.gather(*batch, return_exceptions=True)
        assert results[0] is True and isinstance(results[1], DeliveryRejected)
        assert commits.thread_commits == 2
        assert store.deliveries.get_delivery("b-1") is not None
        await commits.close()


async def test_a_connection_the_server_dropped_fails_its_batch_and_the_next_batch_reconnects(
    pg_server: PgServer,
) -> None:
    url = pg_server.new_database()
    with Store.open(url) as store:
        commits = GroupCommit(store)
        assert await commits.accept(_delivery("d-1", _job(1))) is True
        with psycopg.connect(url, autocommit=True) as admin:  # kill the ack connection, as a failover would
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'WITH lock%%'"
            )
        with pytest.raises(sqlite3.OperationalError):  # a 500: GitHub delivers it again
            await commits.accept(_delivery("d-2", _job(2)))
        assert await commits.accept(_delivery("d-3", _job(3))) is True  # on a new connection
        assert store.deliveries.get_delivery("d-2") is None and store.deliveries.get_delivery("d-3") is not None
        await commits.close()


def test_bodies_stay_in_their_row_on_postgresql(pg_server: PgServer) -> None:
    with Store.open(pg_server.new_database()) as store:
        options = store.db.execute("SELECT reloptions FROM pg_class WHERE relname = 'delivery_bodies'").fetchone()
        assert options is not None and "toast_tuple_target=8160" in options[0]


async def test_a_database_that_does_not_answer_fails_the_batch_within_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.store import pg_async
    from bot.store.plans import prepare

    monkeypatch.setattr(pg_async, "CONNECT_TIMEOUT", 1)
    with socket.socket() as silent:  # accepts the TCP connection, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        acks = pg_async.AsyncAcks(f"postgresql://reprobot@127.0.0.1:{silent.getsockname()[1]}/x")
        row = prepare(_delivery("d-1", _job(1)))
        assert not isinstance(row, DeliveryRejected)
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="timeout"):
            await acks.ack("2026-01-01T00:00:00+00:00", [row])
        assert time.monotonic() - started < 10

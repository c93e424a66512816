"""The inbox's batches (issue 32): on PostgreSQL a whole ack batch is one round trip and a promotion a fixed few,
and on both engines a batch writes exactly what row by row would (dedupe, bodies, plans, dedupe keys, errors)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.store import DeliveryRejected, PlannedAction, PlannedJob, Store
from bot.store.bodies import unpack_body
from bot.store.deliveries import Deliveries
from tests.pg_server import PgServer


def _job(n: int, *, title: str = "t", dedupe: str | None = None, issue: str | None = None) -> PlannedJob:
    return PlannedJob(
        "github.issue", "github", "o/r", issue or str(n), {"n": n}, f"o/r#{n}", dedupe or f"dk-{n}", title=title
    )


def _delivery(delivery_id: str, *jobs: PlannedJob, body: bytes = b'{"action": "labeled"}') -> Any:
    return (delivery_id, "github", "issues", list(jobs), body)


@contextlib.contextmanager
def _round_trips(raw: Any) -> Iterator[list[int]]:
    """Count what the server answers with ReadyForQuery (libpq's trace): one per exchange the client waited for."""
    out = [0]
    with tempfile.TemporaryFile() as log:
        raw.pgconn.trace(log.fileno())
        try:
            yield out
        finally:
            raw.pgconn.untrace()
            log.seek(0)
            out[0] = log.read().count(b"\tReadyForQuery\t")


def test_an_ack_batch_is_one_round_trip_on_postgresql_whatever_its_size(pg_server: PgServer) -> None:
    with Store.open(pg_server.new_database()) as store:
        raw = store.conn.nowait_connection().raw
        assert store.deliveries.try_accept_deliveries([_delivery("warm", _job(0))]) == [True]  # prepares it
        for size in (1, 8, 40):
            batch = [_delivery(f"d-{size}-{i}", _job(i)) for i in range(size)]
            with _round_trips(raw) as trips:
                assert store.deliveries.try_accept_deliveries(batch) == [True] * size
            assert trips == [1], f"a batch of {size}: {trips[0]} round trips"
            with _round_trips(raw) as trips:  # the same batch again: every one a redelivery
                assert store.deliveries.try_accept_deliveries(batch) == [False] * size
            assert trips == [1]
        # The thread path (a batch that had to wait for the lock) is one statement on the shared connection.
        with _round_trips(store.db.conn.raw) as trips:
            store.deliveries.accept_deliveries([_delivery("t-1", _job(1)), _delivery("t-2", _job(2))])
            store.deliveries.accept_deliveries([_delivery("t-3", _job(3))])
        assert trips[0] <= 3  # two statements, and preparing the statement on this connection once


def test_promoting_a_batch_takes_the_same_few_round_trips_whatever_its_size(pg_server: PgServer) -> None:
    with Store.open(pg_server.new_database()) as store:
        raw = store.db.conn.raw
        store.deliveries.accept_deliveries([_delivery("warm", _job(0))])
        assert len(store.deliveries.promote_deliveries()) == 1  # prepares it
        for size in (1, 10, 100):
            store.deliveries.accept_deliveries([_delivery(f"d-{size}-{i}", _job(size * 1000 + i)) for i in range(size)])
            with _round_trips(raw) as trips:
                assert len(store.deliveries.promote_deliveries()) == size
            # Is anything waiting; BEGIN with the write lock; the pending rows; the one statement; COMMIT.
            assert trips == [5], f"promoting {size}: {trips[0]} round trips"


def test_a_batch_writes_what_row_by_row_would(tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "postgresql":  # every write below is one set-based statement there: row by row must not run

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("went row by row")

        monkeypatch.setattr(Deliveries, "_record_all", refuse)
        monkeypatch.setattr(Deliveries, "_promote_rows", refuse)
    with Store.open(tmp_path / "s.db") as store:
        big = b'{"body": "' + b"x" * 20_000 + b'"}'
        first = store.deliveries.try_accept_deliveries(
            [
                _delivery("d-1", _job(1), body=big),
                _delivery("d-1", _job(1), body=b"{}"),  # the same delivery twice in one batch: the first wins
                _delivery("d-2", _job(2, title="old", issue="7"), _job(3, dedupe="shared")),
                _delivery("empty", body=b""),  # nothing planned, no body
            ]
        )
        assert first == [True, False, True, True]
        assert store.deliveries.try_accept_deliveries([_delivery("d-2", _job(2))]) == [False]  # a redelivery
        row = store.deliveries.get_delivery("d-1")
        assert row is not None and row.payload is not None and row.payload.encode() == big
        assert unpack_body(store.db.execute("SELECT packed FROM delivery_bodies").fetchone()[0]) == big
        assert store.db.execute("SELECT count(*) FROM delivery_bodies").fetchone()[0] == 2
        empty = store.deliveries.get_delivery("empty")
        assert empty is not None and empty.payload is None and empty.planned is None
        before = store.jobs.insert_job(
            "github.issue", None, {}, concurrency_key=None, max_attempts=3, dedupe_key="taken", now=0.0, run_after=0.0
        )[0]
        store.deliveries.accept_deliveries(
            [
                _delivery("d-3", _job(4, title="new", issue="7"), _job(5, dedupe="shared")),
                _delivery("d-4", _job(6, dedupe="taken")),
            ]
        )
        store.db.execute("UPDATE deliveries SET planned = '[]' WHERE delivery_id = 'empty'")  # an older release's
        ids = store.deliveries.promote_deliveries()
        assert len(ids) == 6 and len(set(ids)) == 5 and ids[2] == ids[4] and ids[5] == before
        assert ids[:2] == sorted(ids[:2]) and ids[3] > ids[2]  # queued in plan order
        issue = store.publications.find_issue("github", "o/r", "7")
        assert issue is not None and issue.title == "new"  # the later plan's title
        jobs = {job.id: job for job in store.jobs.list_jobs()}
        assert len(jobs) == 5 and jobs[ids[0]].issue_id != jobs[ids[1]].issue_id == jobs[ids[3]].issue_id
        assert [store.deliveries.get_delivery(d).job_id for d in ("d-1", "d-2", "d-3", "d-4")] == [  # type: ignore[union-attr]
            ids[0],
            ids[1],
            ids[3],
            before,
        ]
        assert store.deliveries.get_delivery("empty").job_id is None  # type: ignore[union-attr]
        assert store.deliveries.pending_deliveries() == 0


@pytest.mark.usefixtures("engine")
def test_a_batch_with_bookkeeping_actions_and_a_bad_plan_keeps_its_meaning(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        install = PlannedAction("installation", {"installation_id": 5, "account": "o", "repos": ["o/r"]})
        assert store.deliveries.try_accept_deliveries([_delivery("i-1", install), _delivery("d-1", _job(1))]) == [
            True,
            True,
        ]
        assert store.db.execute("SELECT account FROM installations").fetchall() == [("o",)]
        store.deliveries.accept_deliveries([_delivery("d-2", _job(2)), _delivery("d-3", _job(3))])
        store.db.execute("UPDATE deliveries SET planned = '[{\"kind\": 1}]' WHERE delivery_id = 'd-2'")
        store.db.execute("UPDATE deliveries SET planned = 'not json' WHERE delivery_id = 'd-3'")
        assert len(store.deliveries.promote_deliveries()) == 1
        sql = "SELECT promoted_at, job_id, promote_error FROM deliveries WHERE delivery_id IN ('d-2', 'd-3')"
        rows = sorted(store.db.execute(sql).fetchall(), key=lambda row: str(row[2]))
        assert [(row[1], str(row[2]).split(":")[0]) for row in rows] == [(None, "JSONDecodeError"), (None, "TypeError")]
        assert all(row[0] is not None for row in rows)


def test_a_delivery_postgresql_cannot_store_fails_alone_in_its_batch(pg_server: PgServer) -> None:
    with Store.open(pg_server.new_database()) as store:
        # PostgreSQL's text holds no NUL: the one statement fails, and the batch goes row by row.
        results = store.deliveries.try_accept_deliveries(
            [_delivery("d-1", _job(1)), _delivery("d-\x00", _job(2)), _delivery("d-3", _job(3))]
        )
        assert results is not None and results[0] is True and results[2] is True
        assert isinstance(results[1], DeliveryRejected)
        # A plan whose field has another type than the statement's arrays carry is promoted row by row.
        store.db.execute("UPDATE deliveries SET planned = ? WHERE delivery_id = 'd-3'", ('[{"kind": 1}]',))
        odd = _job(4).to_json() | {"max_attempts": "5"}
        store.deliveries.accept_deliveries([_delivery("d-4", _job(4))])
        store.db.execute("UPDATE deliveries SET planned = ? WHERE delivery_id = 'd-4'", (f"[{_dumps(odd)}]",))
        assert len(store.deliveries.promote_deliveries()) == 2
        assert store.deliveries.pending_deliveries() == 0


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value)

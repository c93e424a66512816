"""Webhook inbox: record a delivery with what it plans in one short commit; promote its jobs to the queue later."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sqlite_utils import Database

from bot.store import pg_batch
from bot.store.base import StoreConnection
from bot.store.bodies import unpack_body
from bot.store.pg import PgConnection, PgStoreConnection
from bot.store.pg_async import AsyncAcks
from bot.store.plans import DeliveryRecord, DeliveryRejected, PlannedAction, PlannedJob, Prepared, prepare
from bot.store.publications import apply_action
from bot.store.rows import DeliveryRow
from bot.store.schema import FORGES
from bot.store.sql import check_choice, dumps, iso

log = logging.getLogger(__name__)

#: Errors that belong to one delivery's data (the PostgreSQL engine raises them under these names too).
_DATA_ERRORS = (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError, ValueError)


class _RowByRow(Exception):
    """A batch the set-based statement did not write (a data error): write it row by row instead."""


def _clean(rows: Sequence[Prepared | DeliveryRejected]) -> list[Prepared]:
    """The deliveries of a batch that were not refused before the statement."""
    return [row for row in rows if not isinstance(row, DeliveryRejected)]


def _merged(rows: Sequence[Prepared | DeliveryRejected], written: Sequence[bool]) -> list[bool | DeliveryRejected]:
    """Per delivery of the batch: its refusal, or what the statement said of it (`written`, in order)."""
    fresh = iter(written)
    return [row if isinstance(row, DeliveryRejected) else next(fresh) for row in rows]


class Deliveries:
    """The inbox (`store.deliveries`): acknowledging a delivery costs one row and one commit.

    Promotion of its planned jobs happens off that path, on every worker's poll.
    """

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection (and its no-wait connection for the webhook path)."""
        self._conn = conn

    def accept_delivery(
        self,
        delivery_id: str,
        source: str,
        event: str,
        jobs: Sequence[PlannedJob | PlannedAction],
        payload: bytes = b"",
    ) -> bool:
        """Record a delivery with its body and planned jobs; False for a redelivery (nothing is written).

        The planned jobs wait in the inbox until `promote_deliveries` (run by every worker's claim) queues them.
        Raises DeliveryRejected when the delivery cannot be stored (nothing is written).
        """
        result = self.accept_deliveries([(delivery_id, source, event, jobs, payload)])[0]
        if isinstance(result, DeliveryRejected):
            raise result
        return result

    def accept_deliveries(self, deliveries: Sequence[DeliveryRecord]) -> list[bool | DeliveryRejected]:
        """`accept_delivery` for several deliveries in one transaction (the server's group commit).

        Each delivery is isolated: one that cannot be stored gets a DeliveryRejected in its place and the
        others are written all the same.
        """
        prepared = [prepare(delivery) for delivery in deliveries]
        now = iso(self._conn.clock())
        if self._conn.set_based_inbox and pg_batch.fits_ack(prepared):
            with self._conn.autocommit() as pg, contextlib.suppress(_RowByRow):  # type: ignore[attr-defined]
                results = self._ack_set(pg, now, prepared, wait=True)
                assert results is not None  # it waited for the lock
                return results
        with self._conn.write() as db:
            return self._record_all(db.conn, now, prepared)

    def try_accept_deliveries(self, deliveries: Sequence[DeliveryRecord]) -> list[bool | DeliveryRejected] | None:
        """`accept_deliveries` if the write lock is free right now, else None and nothing is written.

        Never waits: another thread of this process or another connection holding the lock makes it
        return None at once, so the event loop can run it inline and hand a contended batch to a thread.
        """
        prepared = [prepare(delivery) for delivery in deliveries]
        if self._conn.set_based_inbox and pg_batch.fits_ack(prepared):
            with self._conn.try_autocommit() as pg:  # type: ignore[attr-defined]
                if pg is None:
                    return None
                with contextlib.suppress(_RowByRow):
                    return self._ack_set(pg, iso(self._conn.clock()), prepared, wait=False)
        with self._conn.try_write() as conn:
            if conn is None:
                return None
            now = iso(self._conn.clock())
            return self._record_all(conn, now, prepared)

    def async_acks(self, size: int = 1) -> AsyncAcks | None:
        """`size` asynchronous ack connections on PostgreSQL (the caller closes them); None on SQLite, whose
        commits are short enough to run on the loop (bot/intake/group_commit.py)."""
        if not isinstance(self._conn, PgStoreConnection):
            return None
        return AsyncAcks(self._conn.url, size)

    async def accept_deliveries_async(
        self, acks: AsyncAcks, deliveries: Sequence[DeliveryRecord]
    ) -> list[bool | DeliveryRejected] | None:
        """`accept_deliveries` in one statement on one of `acks`' connections, never blocking the loop.

        None when the batch is not for the one statement (bookkeeping actions, or a data error that wrote
        nothing): `accept_deliveries` then writes it row by row, on a thread.
        """
        rows = [prepare(delivery) for delivery in deliveries]
        if not pg_batch.fits_ack(rows):
            return None
        clean = _clean(rows)
        if not clean:  # every one was refused before the statement
            return _merged(rows, [])
        try:
            written = await acks.ack(iso(self._conn.clock()), clean)
        except _DATA_ERRORS:
            return None
        return _merged(rows, written)

    @staticmethod
    def _ack_set(
        pg: PgConnection, now: str, rows: list[Prepared | DeliveryRejected], *, wait: bool
    ) -> list[bool | DeliveryRejected] | None:
        """A batch in one statement on PostgreSQL (None when the lock is held and not `wait`).

        Raises _RowByRow after a data error, which wrote nothing (the statement is its own transaction):
        the batch then goes row by row, where each delivery's error stays its own.
        """
        clean = _clean(rows)
        if not clean:  # every one was refused before the transaction
            return _merged(rows, [])
        try:
            written = pg_batch.ack(pg, now, clean, wait=wait)
        except _DATA_ERRORS as exc:
            raise _RowByRow from exc
        return None if written is None else _merged(rows, written)

    def _record_all(
        self, conn: sqlite3.Connection, now: str, rows: list[Prepared | DeliveryRejected]
    ) -> list[bool | DeliveryRejected]:
        """Insert a batch under one savepoint; only when one of them fails, again one savepoint each.

        A savepoint per delivery costs two statements each, as many as the delivery's own inserts, and
        almost every batch is clean: so the batch is tried whole first, and a data error in it rolls the
        batch back and records each delivery in isolation, so that the failure stays that delivery's.
        """
        conn.execute("SAVEPOINT batch")
        try:
            results = [row if isinstance(row, DeliveryRejected) else self._insert(conn, now, row) for row in rows]
        except _DATA_ERRORS:
            conn.execute("ROLLBACK TO batch")
            conn.execute("RELEASE batch")
            return [self._record(conn, now, row) for row in rows]
        conn.execute("RELEASE batch")
        return results

    def _insert(self, conn: sqlite3.Connection, now: str, row: Prepared) -> bool:
        """Write one prepared delivery (no savepoint of its own); False for a redelivery."""
        delivery_id, source, event, planned, packed, actions = row
        # RETURNING rather than lastrowid: one round trip on PostgreSQL, where lastval() would be another.
        new_row = conn.execute(
            """INSERT INTO deliveries (delivery_id, source, event, received_at, planned)
            VALUES (?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING RETURNING id""",
            (delivery_id, source, event, now, planned),
        ).fetchone()
        if new_row is None:
            return False  # a redelivery: its effect is already written
        if packed is not None:
            # `payload` (NOT NULL) holds the text of bodies written before schema 9 only; see bot/store/bodies.py.
            conn.execute(
                "INSERT INTO delivery_bodies (delivery_id, payload, packed) VALUES (?, '', ?)", (new_row[0], packed)
            )
        for action in actions:
            apply_action(conn, now, action)
        if planned:
            self._conn.queue_changed(conn)
        return True

    def _record(self, conn: sqlite3.Connection, now: str, row: Prepared | DeliveryRejected) -> bool | DeliveryRejected:
        """Insert one prepared delivery inside its own savepoint, so that its failure is its own."""
        if isinstance(row, DeliveryRejected):
            return row
        conn.execute("SAVEPOINT delivery")
        try:
            inserted = self._insert(conn, now, row)
        except _DATA_ERRORS as exc:
            # A data error of this delivery (a lock or disk error is not caught: it fails the whole batch).
            conn.execute("ROLLBACK TO delivery")
            conn.execute("RELEASE delivery")
            log.warning("delivery %s: cannot be stored: %s", row[0], exc)
            return DeliveryRejected(f"delivery {row[0]} cannot be stored: {exc}")
        conn.execute("RELEASE delivery")
        return inserted

    def pending_deliveries(self) -> int:
        """Deliveries whose planned jobs are not promoted yet."""
        sql = "SELECT count(*) AS n FROM deliveries WHERE planned IS NOT NULL AND promoted_at IS NULL"
        return int(self._conn.rows(sql)[0]["n"])

    def promote_deliveries(self, *, limit: int = 200) -> list[int]:
        """Queue the planned jobs of up to `limit` pending deliveries, oldest first; returns their job ids.

        `limit` bounds how long the write lock is held (about 50 us a delivery), since acks wait for it.

        Each delivery is promoted exactly once, in one transaction with its issue and jobs. A job whose dedupe
        key is taken is not queued again (the existing id is returned). A delivery whose plan cannot be queued
        is marked promoted with `promote_error` set, whatever the error, so it never blocks the deliveries behind
        it; only an operational error of the store itself (lock, I/O) propagates, and nothing is then promoted.
        """
        # A read first: the worker calls this on every poll, and an idle poll must not take the write lock.
        waiting = "SELECT 1 FROM deliveries WHERE planned IS NOT NULL AND promoted_at IS NULL LIMIT 1"
        if not self._conn.rows(waiting):
            return []
        now = iso(self._conn.clock())
        if self._conn.set_based_inbox:
            with contextlib.suppress(pg_batch.Unfit):  # rolled back: row by row decides
                return self._promote_set(now, limit)
        return self._promote_rows(now, limit)

    def _pending(self, db: Database, limit: int) -> list[tuple[int, str, str]]:
        return db.execute(
            """SELECT id, delivery_id, planned FROM deliveries
            WHERE planned IS NOT NULL AND promoted_at IS NULL ORDER BY id LIMIT ?""",
            (limit,),
        ).fetchall()

    def _promote_set(self, now: str, limit: int) -> list[int]:
        """Promote a batch in one statement (PostgreSQL); raises pg_batch.Unfit, having written nothing, if it can't."""
        with self._conn.write() as db:
            batch, failures = pg_batch.plan_promotion(self._pending(db, limit))
            ids = pg_batch.promote(db.conn, now, batch)  # type: ignore[arg-type]
        for delivery_id, exc in failures:
            log.warning("delivery %s: planned jobs cannot be queued: %s", delivery_id, exc)
        return ids

    def _promote_rows(self, now: str, limit: int) -> list[int]:
        """Promote a batch row by row, each delivery under its own savepoint."""
        ids: list[int] = []
        with self._conn.write() as db:
            for row_id, delivery_id, planned in self._pending(db, limit):
                db.execute("SAVEPOINT promote")
                try:
                    job_ids = [self._queue(db, now, PlannedJob.from_json(job)) for job in json.loads(planned)]
                except sqlite3.OperationalError:
                    raise  # a lock, I/O or disk error: not this delivery's fault; the next poll tries again
                except Exception as exc:  # any other error belongs to this one delivery: it must not block the rest
                    db.execute("ROLLBACK TO promote")
                    db.execute("RELEASE promote")
                    log.warning("delivery %s: planned jobs cannot be queued: %s", delivery_id, exc)
                    db.execute(
                        "UPDATE deliveries SET promoted_at = ?, promote_error = ? WHERE id = ?",
                        # The message may quote the bad value: make it storable text whatever it holds.
                        (now, f"{type(exc).__name__}: {exc}".encode("utf-8", "backslashreplace").decode(), row_id),
                    )
                    continue
                db.execute("RELEASE promote")
                first = job_ids[0] if job_ids else None
                db.execute("UPDATE deliveries SET promoted_at = ?, job_id = ? WHERE id = ?", (now, first, row_id))
                ids.extend(job_ids)
        return ids

    def prune_delivery_bodies(self, received_before: float, *, batch: int = 1000) -> int:
        """Drop the raw body of deliveries received before `received_before` (epoch seconds); returns how many.

        The deliveries stay, with their plan, so a redelivery is still recognised. Batched so that no
        transaction holds the write lock for long (webhook acknowledgements wait for it).
        """
        cutoff = iso(received_before)
        dropped = 0
        while True:
            with self._conn.write() as db:
                cursor = db.execute(
                    """DELETE FROM delivery_bodies WHERE delivery_id IN (
                        SELECT b.delivery_id FROM delivery_bodies b JOIN deliveries d ON d.id = b.delivery_id
                        WHERE d.received_at < ? LIMIT ?)""",
                    (cutoff, batch),
                )
            dropped += cursor.rowcount
            if cursor.rowcount < batch:
                return dropped

    def _queue(self, db: Database, now: str, job: PlannedJob) -> int:
        check_choice(job.forge, FORGES, "forge")
        issue_id = db.execute(
            """INSERT INTO issues (forge, repo, number_or_key, title, body, url, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (forge, repo, number_or_key) DO UPDATE SET title = excluded.title,
                body = excluded.body, url = excluded.url, updated_at = excluded.updated_at
            RETURNING id""",
            (job.forge, job.repo, job.number_or_key, job.title, job.body, job.url, now, now),
        ).fetchone()[0]
        row = db.execute(
            """INSERT INTO jobs (kind, issue_id, payload, status, max_attempts, run_after, dedupe_key,
                concurrency_key, created_at, updated_at)
            VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)
            ON CONFLICT (dedupe_key) DO NOTHING RETURNING id""",
            (
                job.kind,
                issue_id,
                dumps(dict(job.payload)),
                job.max_attempts,
                now,
                job.dedupe_key,
                job.concurrency_key,
                now,
                now,
            ),
        ).fetchone()
        if row is None:
            row = db.execute("SELECT id FROM jobs WHERE dedupe_key = ?", (job.dedupe_key,)).fetchone()
        return int(row[0])

    def remember_policy(self, repo: str, policy: Mapping[str, Any]) -> None:
        """Keep the effective policy a job just loaded for `repo` (the webhook path reads it)."""
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO policies (repo, policy, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (repo) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at""",
                (repo, dumps(dict(policy)), iso(self._conn.clock())),
            )

    def cached_policy(self, repo: str) -> dict[str, Any] | None:
        """The last policy loaded for `repo`, if any job loaded one."""
        rows = self._conn.rows("SELECT policy FROM policies WHERE repo = ?", (repo,))
        return json.loads(rows[0]["policy"]) if rows else None

    def record_delivery(self, delivery_id: str, source: str, event: str, job_id: int | None = None) -> bool:
        """Record a webhook delivery; False when this delivery id was already seen (a redelivery)."""
        with self._conn.write() as db:
            cursor = db.execute(
                """INSERT INTO deliveries (delivery_id, source, event, received_at, job_id)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING""",
                (delivery_id, source, event, self._conn.now(), job_id),
            )
            return cursor.rowcount == 1

    def link_delivery(self, delivery_id: str, job_id: int) -> None:
        """Attach the job a delivery produced."""
        with self._conn.write() as db:
            db.execute("UPDATE deliveries SET job_id = ? WHERE delivery_id = ?", (job_id, delivery_id))

    def get_delivery(self, delivery_id: str) -> DeliveryRow | None:
        """The recorded delivery, if any, with its body as text (None once pruned or when it had none)."""
        sql = """SELECT d.*, b.payload, b.packed FROM deliveries d LEFT JOIN delivery_bodies b ON b.delivery_id = d.id
            WHERE d.delivery_id = ?"""
        rows = self._conn.rows(sql, (delivery_id,))
        if not rows:
            return None
        row = rows[0]
        if row["packed"] is not None:  # written since schema 9: the raw bytes, packed
            row["payload"] = unpack_body(row["packed"]).decode("utf-8", "replace")
        return DeliveryRow.from_row(row)

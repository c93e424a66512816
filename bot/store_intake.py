"""Webhook inbox: record a delivery with the jobs it plans in one short commit; promote them to jobs later."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from bot.store_core import StoreCore, check_choice, dumps, is_busy, iso
from bot.store_schema import FORGES
from bot.store_wal import WalCheckpointer

log = logging.getLogger(__name__)

#: One webhook delivery for the inbox: (delivery id, source, event name, planned jobs, raw body).
DeliveryRecord = tuple[str, str, str, Sequence["PlannedJob"], bytes]


#: A delivery ready for its INSERTs: (delivery id, source, event, planned jobs as JSON text, body text).
_Prepared = tuple[str, str, str, str | None, str]


class DeliveryRejected(ValueError):
    """A delivery that cannot be stored (e.g. text that is not valid Unicode); nothing of it was written."""


@dataclass(frozen=True)
class PlannedJob:
    """A job a webhook asks for, with the issue it is about; kept on the delivery until a worker promotes it."""

    kind: str
    forge: str
    repo: str
    number_or_key: str
    payload: Mapping[str, Any]
    concurrency_key: str | None
    dedupe_key: str | None
    title: str = ""
    body: str = ""
    url: str | None = None
    max_attempts: int = 3

    def to_json(self) -> dict[str, Any]:
        """The planned job as a JSON object (the inverse of `from_json`)."""
        # Not dataclasses.asdict: it deep-copies, and this runs on every acknowledged delivery.
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"payload": dict(self.payload)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlannedJob:
        """Rebuild a planned job from `to_json` output; TypeError when a field is missing or unknown."""
        return cls(**data)


class StoreIntake(StoreCore):
    """The inbox: acknowledging a delivery costs one row and one commit; promotion happens off that path."""

    def __init__(self, conn: sqlite3.Connection, *, where: str, clock: Callable[[], float] = time.time) -> None:
        """Wrap the store connection; the webhook path opens its own connection to the same file on first use."""
        super().__init__(conn, where=where, clock=clock)
        self._nowait_lock = threading.Lock()
        self._nowait: sqlite3.Connection | None = None
        self._autocheckpoint_pages: int | None = None

    def close(self) -> None:
        """Close both connections."""
        with self._nowait_lock:
            if self._nowait is not None:
                self._nowait.close()
                self._nowait = None
        super().close()

    def wal_checkpointer(self, *, interval: float = 0.25) -> WalCheckpointer | None:
        """A background checkpointer for this store's WAL (not started), or None for an in-memory store."""
        if self.where == ":memory:":
            return None
        return WalCheckpointer(self._set_autocheckpoint, Path(self.where), interval=interval)

    def _set_autocheckpoint(self, pages: int) -> None:
        # PRAGMA takes no bound parameters; pages is an int from WalCheckpointer.
        self._autocheckpoint_pages = pages
        with self._lock:
            self.db.conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
        with self._nowait_lock:
            if self._nowait is not None:
                self._nowait.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")

    def _nowait_connection(self) -> sqlite3.Connection:
        """The webhook path's connection: busy_timeout 0, so a held write lock answers SQLITE_BUSY at once.

        Its own connection rather than toggling the shared one's timeout: that costs two statements a commit.
        An in-memory store has a single connection, which no other process can lock, so it uses that one.
        """
        if self.where == ":memory:":
            return self.db.conn
        if self._nowait is None:
            conn = sqlite3.connect(self.where, timeout=0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            if self._autocheckpoint_pages is not None:
                conn.execute(f"PRAGMA wal_autocheckpoint = {int(self._autocheckpoint_pages)}")
            self._nowait = conn
        return self._nowait

    def accept_delivery(
        self, delivery_id: str, source: str, event: str, jobs: Sequence[PlannedJob], payload: bytes = b""
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
        prepared = [_prepare(delivery) for delivery in deliveries]
        now = iso(self.clock())
        with self._write() as db:
            return [self._record(db.conn, now, row) for row in prepared]

    def try_accept_deliveries(self, deliveries: Sequence[DeliveryRecord]) -> list[bool | DeliveryRejected] | None:
        """`accept_deliveries` if the write lock is free right now, else None and nothing is written.

        Never waits: another thread of this process or another connection holding the lock makes it
        return None at once, so the event loop can run it inline and hand a contended batch to a thread.
        """
        prepared = [_prepare(delivery) for delivery in deliveries]
        # The memory store's single connection is the shared one, so its lock is the shared lock too.
        lock = self._lock if self.where == ":memory:" else self._nowait_lock
        if not lock.acquire(blocking=False):
            return None
        try:
            conn = self._nowait_connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    return None
                raise
            try:
                now = iso(self.clock())
                results = [self._record(conn, now, row) for row in prepared]
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return results
        finally:
            lock.release()

    def _record(self, conn: sqlite3.Connection, now: str, row: _Prepared | DeliveryRejected) -> bool | DeliveryRejected:
        """Insert one prepared delivery inside its own savepoint, so that its failure is its own."""
        if isinstance(row, DeliveryRejected):
            return row
        delivery_id, source, event, planned, body = row
        conn.execute("SAVEPOINT delivery")
        try:
            cursor = conn.execute(
                """INSERT INTO deliveries (delivery_id, source, event, received_at, planned)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING""",
                (delivery_id, source, event, now, planned),
            )
            inserted = cursor.rowcount == 1
            if inserted and body:
                conn.execute(
                    "INSERT INTO delivery_bodies (delivery_id, payload) VALUES (?, ?)", (cursor.lastrowid, body)
                )
        except (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError, ValueError) as exc:
            # A data error of this delivery (a lock or disk error is not caught: it fails the whole batch).
            conn.execute("ROLLBACK TO delivery")
            conn.execute("RELEASE delivery")
            log.warning("delivery %s: cannot be stored: %s", delivery_id, exc)
            return DeliveryRejected(f"delivery {delivery_id} cannot be stored: {exc}")
        conn.execute("RELEASE delivery")
        return inserted

    def pending_deliveries(self) -> int:
        """Deliveries whose planned jobs are not promoted yet."""
        sql = "SELECT count(*) AS n FROM deliveries WHERE planned IS NOT NULL AND promoted_at IS NULL"
        return int(self._rows(sql)[0]["n"])

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
        if not self._rows(waiting):
            return []
        now = iso(self.clock())
        ids: list[int] = []
        with self._write() as db:
            rows = db.execute(
                """SELECT id, delivery_id, planned FROM deliveries
                WHERE planned IS NOT NULL AND promoted_at IS NULL ORDER BY id LIMIT ?""",
                (limit,),
            ).fetchall()
            for row_id, delivery_id, planned in rows:
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
            with self._write() as db:
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
        with self._write() as db:
            db.execute(
                """INSERT INTO policies (repo, policy, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (repo) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at""",
                (repo, dumps(dict(policy)), iso(self.clock())),
            )

    def cached_policy(self, repo: str) -> dict[str, Any] | None:
        """The last policy loaded for `repo`, if any job loaded one."""
        rows = self._rows("SELECT policy FROM policies WHERE repo = ?", (repo,))
        return json.loads(rows[0]["policy"]) if rows else None


def _prepare(delivery: DeliveryRecord) -> _Prepared | DeliveryRejected:
    """Check and encode one delivery before the transaction: a bad one is rejected alone, without the lock."""
    delivery_id, source, event, jobs, payload = delivery
    try:
        for job in jobs:  # refuse a bad plan now, while the sender still gets an error for it
            check_choice(job.forge, FORGES, "forge")
        planned = dumps([job.to_json() for job in jobs]) if jobs else None
        # SQLite binds text as UTF-8: a lone surrogate would fail the INSERT, so find it here.
        for text in (delivery_id, source, event, planned or ""):
            text.encode("utf-8")
    except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
        return DeliveryRejected(f"delivery {delivery_id!r} cannot be stored: {exc}")
    return delivery_id, source, event, planned, payload.decode("utf-8", "replace") if payload else ""

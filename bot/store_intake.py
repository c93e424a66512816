"""Webhook intake in one transaction: record the delivery, upsert the issue, queue the job (all SQL here)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from bot.store_core import BUSY_TIMEOUT_MS, StoreCore, check_choice, dumps, iso
from bot.store_schema import FORGES
from bot.store_wal import WalCheckpointer


@dataclass(frozen=True)
class PlannedJob:
    """A job a webhook asks for, with the issue it is about; written by `Store.accept_delivery`."""

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
    extra: dict[str, Any] = field(default_factory=dict)


class StoreIntake(StoreCore):
    """The intake transaction, kept apart so that the webhook path costs one commit."""

    def wal_checkpointer(self, *, interval: float = 0.25) -> WalCheckpointer | None:
        """A background checkpointer for this store's WAL (not started), or None for an in-memory store."""
        if self.where == ":memory:":
            return None
        return WalCheckpointer(self.db.conn, self._lock, Path(self.where), interval=interval)

    def accept_delivery(
        self, delivery_id: str, source: str, event: str, jobs: Sequence[PlannedJob], payload: bytes = b""
    ) -> list[int] | None:
        """Record a delivery (with its body) and queue its jobs atomically; None for a redelivery.

        A job whose dedupe key exists already is not queued again; its existing id is returned instead.
        """
        return self.accept_deliveries([(delivery_id, source, event, jobs, payload)])[0]

    def accept_deliveries(
        self, deliveries: Sequence[tuple[str, str, str, Sequence[PlannedJob], bytes]]
    ) -> list[list[int] | None]:
        """`accept_delivery` for several deliveries in one transaction (the server's group commit)."""
        now = iso(self.clock())
        with self._write() as db:
            return [self._accept(db, now, *delivery) for delivery in deliveries]

    def try_accept_deliveries(
        self, deliveries: Sequence[tuple[str, str, str, Sequence[PlannedJob], bytes]]
    ) -> list[list[int] | None] | None:
        """`accept_deliveries` if the write lock is free right now, else None and nothing is written.

        Never waits: another thread of this process or another connection holding the lock makes it
        return None at once, so the event loop can run it inline and hand a contended batch to a thread.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            conn = self.db.conn
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):  # or extended
                    return None
                raise
            finally:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            try:
                now = iso(self.clock())
                results = [self._accept(self.db, now, *delivery) for delivery in deliveries]
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return results
        finally:
            self._lock.release()

    def _accept(
        self,
        db: Database,
        now: str,
        delivery_id: str,
        source: str,
        event: str,
        jobs: Sequence[PlannedJob],
        payload: bytes,
    ) -> list[int] | None:
        cursor = db.execute(
            """INSERT INTO deliveries (delivery_id, source, event, received_at, payload) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (delivery_id) DO NOTHING""",
            (delivery_id, source, event, now, payload.decode("utf-8", "replace")),
        )
        if cursor.rowcount != 1:
            return None
        ids: list[int] = []
        for job in jobs:
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
            ids.append(int(row[0]))
        if ids:
            db.execute("UPDATE deliveries SET job_id = ? WHERE delivery_id = ?", (ids[0], delivery_id))
        return ids

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

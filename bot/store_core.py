"""Store connection and transactions, plus the bookkeeping tables (issues, deliveries, publications, ...)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar, cast

from sqlite_utils import Database
from tenacity import Retrying

from bot.retry import retry_policy
from bot.store_rows import (
    Delivery,
    EnvironmentRecord,
    Installation,
    Issue,
    PrOutcome,
    Publication,
    _Row,
)
from bot.store_schema import FORGES, PUBLICATION_KINDS, migrate, schema_version

# How long a writer waits for another connection's write lock before giving up with "database is locked".
_BUSY_TIMEOUT_SECONDS = 30.0
#: The same, in the unit of `PRAGMA busy_timeout`.
BUSY_TIMEOUT_MS = int(_BUSY_TIMEOUT_SECONDS * 1000)

R = TypeVar("R", bound=_Row)
Params = dict[str, Any] | tuple[Any, ...]


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "table is locked" (another connection holds the lock)."""
    return isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorcode & 0xFF in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    )


def _wal_switch_retrying() -> Retrying:
    return retry_policy(Retrying, retry_on=is_busy, hint=lambda _: None, attempts=20, base=0.005, cap=0.2)


def iso(ts: float) -> str:
    """Epoch seconds as fixed-width ISO-8601 UTC text, so that text order is time order in SQL."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def parse_iso(text: str) -> float:
    """Inverse of iso(): ISO-8601 text to epoch seconds."""
    return datetime.fromisoformat(text).timestamp()


def dumps(value: Any) -> str:
    """JSON text for a JSON column."""
    return json.dumps(value, ensure_ascii=False)


def check_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    """Raise ValueError unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}")


class StoreCore:
    """Connection, transactions and bookkeeping tables; bot.store.Store adds jobs and pipeline records."""

    def __init__(self, conn: sqlite3.Connection, *, where: str, clock: Callable[[], float] = time.time) -> None:
        """Wrap an open connection (made with isolation_level=None) and bring its schema up to date."""
        # Plugins are not loaded: nothing third-party should run inside the bot's store connection.
        self.db = Database(conn, execute_plugins=False)
        self.clock = clock
        self.where = where
        # One connection is shared by the threads of a process, so statements and transactions are
        # serialized here; other processes are kept out by SQLite's own locks.
        self._lock = threading.RLock()
        conn.execute("PRAGMA foreign_keys = ON")
        if where != ":memory:":
            # Switching a fresh file to WAL needs an exclusive lock, and SQLite answers a race for it with
            # "database is locked" at once instead of calling the busy handler; so retry it briefly.
            for attempt in _wal_switch_retrying():
                with attempt:
                    self.db.enable_wal()
            # NORMAL is safe against application crashes in WAL mode and avoids an fsync per commit.
            conn.execute("PRAGMA synchronous = NORMAL")
        migrate(self.db, where=where)

    @classmethod
    def open(cls, path: Path, *, clock: Callable[[], float] = time.time) -> Self:
        """Open the store file at `path`, creating it and its directory if needed, and migrate it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
        try:
            return cls(conn, where=str(path), clock=clock)
        except BaseException:
            conn.close()
            raise

    @classmethod
    def memory(cls, *, clock: Callable[[], float] = time.time) -> Self:
        """A private in-memory store, for tests."""
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        return cls(conn, where=":memory:", clock=clock)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        with self._lock:
            return schema_version(self.db)

    # -- plumbing ---------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _write(self) -> Iterator[Database]:
        # BEGIN IMMEDIATE takes the write lock up front, so no other connection or process slips in between
        # our read and our write; a deferred transaction could instead fail to upgrade with SQLITE_BUSY.
        with self._lock:
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.execute("ROLLBACK")
                raise
            self.db.conn.execute("COMMIT")

    def ping_write(self) -> None:
        """Take and release the write lock: raises when the store cannot be written (for /readyz)."""
        with self._write() as db:
            db.execute("SELECT 1")

    def _rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db.query(sql, params))

    def _one(self, cls: type[R], sql: str, params: Params = ()) -> R | None:
        rows = self._rows(sql, params)
        return cls.from_row(rows[0]) if rows else None

    def _all(self, cls: type[R], sql: str, params: Params = ()) -> list[R]:
        return [cls.from_row(row) for row in self._rows(sql, params)]

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        with self._write() as db:
            return cast(int, db.table(table).insert(row).last_pk)

    def _now(self) -> str:
        return iso(self.clock())

    # -- issues and deliveries --------------------------------------------------------------------------

    def upsert_issue(
        self,
        forge: str,
        repo: str,
        number_or_key: str,
        *,
        title: str = "",
        body: str = "",
        url: str | None = None,
    ) -> Issue:
        """Insert the issue, or refresh title, body and url; (forge, repo, number_or_key) is its identity."""
        check_choice(forge, FORGES, "forge")
        key = str(number_or_key)
        params: dict[str, Any] = {"forge": forge, "repo": repo, "key": key, "title": title, "body": body}
        with self._write() as db:
            db.execute(
                """INSERT INTO issues (forge, repo, number_or_key, title, body, url, created_at, updated_at)
                VALUES (:forge, :repo, :key, :title, :body, :url, :now, :now)
                ON CONFLICT (forge, repo, number_or_key) DO UPDATE SET title = excluded.title,
                    body = excluded.body, url = excluded.url, updated_at = excluded.updated_at""",
                params | {"url": url, "now": self._now()},
            )
            issue = self.find_issue(forge, repo, key)
        assert issue is not None  # written in the same transaction
        return issue

    def get_issue(self, issue_id: int) -> Issue | None:
        """The issue with this id, if any."""
        return self._one(Issue, "SELECT * FROM issues WHERE id = ?", (issue_id,))

    def find_issue(self, forge: str, repo: str, number_or_key: str) -> Issue | None:
        """The issue with this identity, if any."""
        sql = "SELECT * FROM issues WHERE forge = ? AND repo = ? AND number_or_key = ?"
        return self._one(Issue, sql, (forge, repo, str(number_or_key)))

    def record_delivery(self, delivery_id: str, source: str, event: str, job_id: int | None = None) -> bool:
        """Record a webhook delivery; False when this delivery id was already seen (a redelivery)."""
        with self._write() as db:
            cursor = db.execute(
                """INSERT INTO deliveries (delivery_id, source, event, received_at, job_id)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING""",
                (delivery_id, source, event, self._now(), job_id),
            )
            return cursor.rowcount == 1

    def link_delivery(self, delivery_id: str, job_id: int) -> None:
        """Attach the job a delivery produced."""
        with self._write() as db:
            db.execute("UPDATE deliveries SET job_id = ? WHERE delivery_id = ?", (job_id, delivery_id))

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        """The recorded delivery, if any."""
        sql = """SELECT d.*, b.payload FROM deliveries d LEFT JOIN delivery_bodies b ON b.delivery_id = d.id
            WHERE d.delivery_id = ?"""
        return self._one(Delivery, sql, (delivery_id,))

    # -- publications -----------------------------------------------------------------------------------

    def upsert_publication(
        self,
        issue_id: int,
        kind: str,
        forge_ref: str,
        *,
        body_hash: str | None = None,
        job_id: int | None = None,
    ) -> Publication:
        """Record what was posted for (issue, kind), replacing the previous record; created_at is kept."""
        check_choice(kind, PUBLICATION_KINDS, "publication kind")
        params = {"job": job_id, "issue": issue_id, "kind": kind, "ref": forge_ref, "hash": body_hash}
        with self._write() as db:
            db.execute(
                """INSERT INTO publications
                    (job_id, issue_id, kind, forge_ref, body_hash, created_at, updated_at)
                VALUES (:job, :issue, :kind, :ref, :hash, :now, :now)
                ON CONFLICT (issue_id, kind) DO UPDATE SET job_id = COALESCE(excluded.job_id, job_id),
                    forge_ref = excluded.forge_ref, body_hash = excluded.body_hash,
                    updated_at = excluded.updated_at""",
                params | {"now": self._now()},
            )
            publication = self.get_publication(issue_id, kind)
        assert publication is not None  # written in the same transaction
        return publication

    def get_publication(self, issue_id: int, kind: str) -> Publication | None:
        """What was posted for (issue, kind), if anything."""
        sql = "SELECT * FROM publications WHERE issue_id = ? AND kind = ?"
        return self._one(Publication, sql, (issue_id, kind))

    # -- installations, PR outcomes, environment cache --------------------------------------------------

    def upsert_installation(self, installation_id: int, account: str, repos: list[str]) -> None:
        """Record (or revive) a GitHub App installation and its repositories."""
        with self._write() as db:
            db.execute(
                """INSERT INTO installations (installation_id, account, repos, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account,
                    repos = excluded.repos, removed_at = NULL""",
                (installation_id, account, dumps(repos), self._now()),
            )

    def remove_installation(self, installation_id: int) -> None:
        """Mark an installation as removed; its row is kept for history."""
        with self._write() as db:
            sql = "UPDATE installations SET removed_at = ? WHERE installation_id = ?"
            db.execute(sql, (self._now(), installation_id))

    def get_installation(self, installation_id: int) -> Installation | None:
        """The installation with this id, if any."""
        sql = "SELECT * FROM installations WHERE installation_id = ?"
        return self._one(Installation, sql, (installation_id,))

    def record_pr_outcome(self, repo: str, pr_number: int, merged: bool, closed_at: str | None = None) -> None:
        """Record how one of our pull requests ended (the latest report wins); closed_at defaults to now."""
        with self._write() as db:
            db.execute(
                """INSERT INTO pr_outcomes (repo, pr_number, merged, closed_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (repo, pr_number) DO UPDATE SET merged = excluded.merged,
                    closed_at = excluded.closed_at""",
                (repo, pr_number, int(merged), closed_at or self._now()),
            )

    def get_pr_outcome(self, repo: str, pr_number: int) -> PrOutcome | None:
        """The recorded outcome of a pull request, if any."""
        sql = "SELECT * FROM pr_outcomes WHERE repo = ? AND pr_number = ?"
        return self._one(PrOutcome, sql, (repo, pr_number))

    def put_environment(self, key: str, repo: str, spec: Mapping[str, Any], path: str) -> None:
        """Record a built environment under its cache key, replacing an older record of that key."""
        now = self._now()
        with self._write() as db:
            db.execute(
                """INSERT INTO environments (key, repo, spec, path, created_at, last_used_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET repo = excluded.repo,
                    spec = excluded.spec, path = excluded.path, created_at = excluded.created_at,
                    last_used_at = excluded.last_used_at""",
                (key, repo, dumps(dict(spec)), path, now, now),
            )

    def get_environment(self, key: str) -> EnvironmentRecord | None:
        """The cached environment for `key`, if any; marks it used so eviction can go least-recently-used."""
        with self._write() as db:
            db.execute("UPDATE environments SET last_used_at = ? WHERE key = ?", (self._now(), key))
            return self._one(EnvironmentRecord, "SELECT * FROM environments WHERE key = ?", (key,))

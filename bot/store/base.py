"""The store's one connection and transaction helper, shared by every concern object of `bot.store.Store`."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from sqlite_utils import Database
from tenacity import Retrying

from bot.retry import retry_policy
from bot.store.rows import _Row
from bot.store.schema import StoreError, migrate, schema_version
from bot.store.sql import BUSY_TIMEOUT_SECONDS, is_busy, iso
from bot.store.wal import WalCheckpointer

R = TypeVar("R", bound=_Row)
Params = dict[str, Any] | tuple[Any, ...]


class StoreOnEventLoop(StoreError):
    """A blocking store call was made on a thread that runs an event loop (use asyncio.to_thread)."""


#: True while async code of `serve` or `worker` runs (a request handler, a worker's job): see loop_guard.
_SERVING: contextvars.ContextVar[bool] = contextvars.ContextVar("reprobot_store_serving", default=False)


class forbid_store_calls_on_loop:
    """Mark the code inside (and the tasks it creates) as the event loop of `serve` or `worker`.

    There, with StoreConnection.loop_guard on, a blocking store call made on the loop's thread raises
    StoreOnEventLoop instead of stalling every request and job for up to the busy timeout.
    A class rather than @contextmanager: every webhook request enters it, and a generator-based context
    manager costs a few microseconds more per request.
    """

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _SERVING.set(True)

    def __exit__(self, *exc: object) -> None:
        _SERVING.reset(self._token)


#: Savepoint journals (and temporary tables) in memory. A transaction under a SAVEPOINT copies every page it
#: changes to a sub-journal, which otherwise spills past 64 KiB to a new file in the temp directory: a group
#: commit of a few webhook deliveries then created, wrote and unlinked a file on disk per commit. What it
#: holds only matters until the transaction ends (a crash rolls back from the WAL, not from it), so memory
#: loses nothing; it is a batch's changed pages, tens of KiB.
_TEMP_IN_MEMORY = "PRAGMA temp_store = MEMORY"


def _wal_switch_retrying() -> Retrying:
    return retry_policy(Retrying, retry_on=is_busy, hint=lambda _: None, attempts=20, base=0.005, cap=0.2)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the store file at `path` (created with its directory), shareable between threads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)


def connect_memory() -> sqlite3.Connection:
    """A private in-memory database, for tests."""
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)


class StoreConnection:
    """The shared connection: transactions, queries, the webhook path's no-wait connection, WAL checkpoints.

    One connection is shared by the threads of a process, so statements and transactions are serialized
    here; other processes are kept out by SQLite's own locks.
    """

    #: When True, a blocking call (any transaction or query below) made on a thread that is running an event
    #: loop, from code marked by `forbid_store_calls_on_loop` (the server's requests, the worker's jobs),
    #: raises StoreOnEventLoop: it could hold that loop for the whole busy timeout. The test suite turns it
    #: on for every store, so that each test run checks that `serve` and `worker` reach the store off-loop.
    loop_guard: ClassVar[bool] = False
    #: True when machines that share no filesystem share this store (PostgreSQL): artifact bytes then go
    #: into the database as well as under the data dir (see Runners.put_blob).
    shared_blobs: ClassVar[bool] = False
    #: True when claims lock rows (FOR UPDATE SKIP LOCKED) instead of the whole store (PostgreSQL).
    row_lock_claims: ClassVar[bool] = False
    #: True when the inbox writes a batch in one set-based statement (PostgreSQL: bot/store/pg_batch.py), where
    #: each statement costs a network round trip; SQLite's statements are function calls, row by row is fine.
    set_based_inbox: ClassVar[bool] = False

    def __init__(self, conn: sqlite3.Connection, *, where: str, clock: Callable[[], float] = time.time) -> None:
        """Wrap an open connection (made with isolation_level=None) and bring its schema up to date."""
        # Plugins are not loaded: nothing third-party should run inside the bot's store connection.
        self.db = Database(conn, execute_plugins=False)
        self.clock = clock
        self.where = where
        self._lock = threading.RLock()
        self._nowait_lock = threading.Lock()
        self._nowait: sqlite3.Connection | None = None
        self._autocheckpoint_pages: int | None = None
        conn.execute("PRAGMA foreign_keys = ON")
        if where != ":memory:":
            # Switching a fresh file to WAL needs an exclusive lock, and SQLite answers a race for it with
            # "database is locked" at once instead of calling the busy handler; so retry it briefly.
            for attempt in _wal_switch_retrying():
                with attempt:
                    self.db.enable_wal()
            # NORMAL is safe against application crashes in WAL mode and avoids an fsync per commit.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_TEMP_IN_MEMORY)
        migrate(self.db, where=where)

    def begin_statement(self, *, row_locks: bool) -> str:
        """How a write transaction begins: SQLite always takes the write lock up front."""
        return "BEGIN IMMEDIATE"

    def queue_changed(self, conn: Any) -> None:
        """Called inside a write transaction that made work for workers; the PostgreSQL engine wakes them."""

    def wakeups(self) -> Any:
        """A source of "the queue changed" wake-ups for workers (PostgreSQL's LISTEN), or None: workers poll."""
        return None

    def close(self) -> None:
        """Close both connections."""
        with self._nowait_lock:
            if self._nowait is not None:
                self._nowait.close()
                self._nowait = None
        with self._lock:
            self.db.close()

    def schema_version(self) -> int:
        """The schema version of the open database."""
        with self._lock:
            return schema_version(self.db)

    def check_thread(self) -> None:
        """Raise StoreOnEventLoop when the guard is on and serving code calls from the event loop's thread."""
        if self.loop_guard and _SERVING.get() and _on_event_loop():
            raise StoreOnEventLoop(
                f"blocking store call on the event loop's thread ({threading.current_thread().name}): "
                "it may wait for the write lock for up to the busy timeout; call it via asyncio.to_thread"
            )

    @contextlib.contextmanager
    def write(self, *, row_locks: bool = False) -> Iterator[Database]:
        """A BEGIN IMMEDIATE transaction: committed on exit, rolled back on an exception.

        row_locks: the transaction needs only the rows it locks itself (`FOR UPDATE ... SKIP LOCKED`, a claim)
        rather than the store's write lock. SQLite has no row locks and takes the write lock all the same.
        """
        self.check_thread()
        # BEGIN IMMEDIATE takes the write lock up front, so no other connection or process slips in between
        # our read and our write; a deferred transaction could instead fail to upgrade with SQLITE_BUSY.
        with self._lock:
            self.db.conn.execute(self.begin_statement(row_locks=row_locks))
            try:
                yield self.db
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.execute("ROLLBACK")
                raise
            self.db.conn.execute("COMMIT")

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """The rows of a query, as dicts."""
        self.check_thread()
        with self._lock:
            return list(self.db.query(sql, params))

    def one(self, cls: type[R], sql: str, params: Params = ()) -> R | None:
        """The first row of a query as `cls`, or None."""
        rows = self.rows(sql, params)
        return cls.from_row(rows[0]) if rows else None

    def all(self, cls: type[R], sql: str, params: Params = ()) -> list[R]:
        """Every row of a query as `cls`."""
        return [cls.from_row(row) for row in self.rows(sql, params)]

    def insert(self, table: str, row: dict[str, Any]) -> int:
        """Insert one row in its own transaction; returns its primary key."""
        with self.write() as db:
            return cast(int, db.table(table).insert(row).last_pk)

    def now(self) -> str:
        """The store clock's time as ISO text."""
        return iso(self.clock())

    # -- the webhook path's connection and WAL checkpoints ----------------------------------------------

    def nowait_connection(self) -> sqlite3.Connection:
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
            conn.execute(_TEMP_IN_MEMORY)
            if self._autocheckpoint_pages is not None:
                conn.execute(f"PRAGMA wal_autocheckpoint = {int(self._autocheckpoint_pages)}")
            self._nowait = conn
        return self._nowait

    @contextlib.contextmanager
    def try_write(self) -> Iterator[sqlite3.Connection | None]:
        """A BEGIN IMMEDIATE transaction on the no-wait connection, or None at once when the lock is taken.

        Never waits (so it is not guarded): another thread of this process or another connection holding
        the lock yields None, so the event loop can run it inline and hand a contended batch to a thread.
        """
        # The memory store's single connection is the shared one, so its lock is the shared lock too.
        lock = self._lock if self.where == ":memory:" else self._nowait_lock
        if not lock.acquire(blocking=False):
            yield None
            return
        try:
            conn = self.nowait_connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    yield None
                    return
                raise
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            lock.release()

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

"""`Store`: one SQLite file per deployment (WAL, sqlite-utils), reached through one object per concern."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlite_utils import Database

from bot.store.base import StoreConnection, connect, connect_memory
from bot.store.deliveries import Deliveries
from bot.store.environments import Environments
from bot.store.jobs import Jobs
from bot.store.mojira import MojiraReports
from bot.store.publications import Publications
from bot.store.runners import Runners
from bot.store.runs import Runs
from bot.store.views import Views
from bot.store.wal import WalCheckpointer


class Store:
    """Typed access to the deployment's database: `Store.open(path)`, or `Store.memory()` in tests.

    Each concern is its own object over one shared connection: `deliveries` (the webhook inbox),
    `jobs` (the queue), `runs` (trajectories, patches, reviews, selections), `publications` (issues,
    publications, installations, PR outcomes), `environments` and `runners` (self-hosted runners).
    Thread-safe. Separate processes may open the same file: every write is a BEGIN IMMEDIATE transaction.
    Every call may wait for the write lock, so async code reaches the store through `asyncio.to_thread`
    (see StoreConnection.loop_guard).
    """

    def __init__(self, conn: StoreConnection) -> None:
        """Compose the concern objects over one open connection (use `open` or `memory`)."""
        self.conn = conn
        self.deliveries = Deliveries(conn)
        self.jobs = Jobs(conn)
        self.runs = Runs(conn)
        self.publications = Publications(conn)
        self.environments = Environments(conn)
        self.mojira = MojiraReports(conn)  # the Mojira poller's cursors and reports
        # Read-only views for the dashboard and /metrics (issue 17).
        self.views = Views(conn)
        self.runners = Runners(conn)

    @classmethod
    def open(cls, path: Path | str, *, clock: Callable[[], float] = time.time) -> Self:
        """Open the store file at `path`, creating it and its directory if needed, and migrate it.

        A postgresql:// URL instead opens that PostgreSQL database (see `open_url`).
        """
        if isinstance(path, str) and path.split(":", 1)[0] in ("postgresql", "postgres"):
            return cls.open_url(path, clock=clock)
        sqlite = connect(Path(path))
        try:
            return cls(StoreConnection(sqlite, where=str(path), clock=clock))
        except BaseException:
            sqlite.close()
            raise

    @classmethod
    def open_url(cls, url: str, *, clock: Callable[[], float] = time.time) -> Self:
        """Open the PostgreSQL store at `url` (postgresql://...), creating and migrating its schema if needed."""
        from bot.store.pg import PgStoreConnection

        return cls(PgStoreConnection(url, clock=clock))

    @classmethod
    def memory(cls, *, clock: Callable[[], float] = time.time) -> Self:
        """A private in-memory store, for tests."""
        return cls(StoreConnection(connect_memory(), where=":memory:", clock=clock))

    @property
    def clock(self) -> Callable[[], float]:
        """The store's clock (epoch seconds)."""
        return self.conn.clock

    @property
    def db(self) -> Database:
        """The sqlite-utils database, for inspection in tests and tools (product code uses the concerns)."""
        return self.conn.db

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return self.conn.schema_version()

    def ping_write(self) -> None:
        """Take and release the write lock: raises when the store cannot be written (for /readyz)."""
        with self.conn.write() as db:
            db.execute("SELECT 1")

    def wal_checkpointer(self, *, interval: float = 0.25) -> WalCheckpointer | None:
        """A background checkpointer for this store's WAL (not started), or None for an in-memory store."""
        return self.conn.wal_checkpointer(interval=interval)

    def close(self) -> None:
        """Close the connections."""
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

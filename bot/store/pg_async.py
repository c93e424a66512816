"""The webhook path's acks on PostgreSQL without blocking the event loop: a few asynchronous connections.

An ack on PostgreSQL is one statement (bot/store/pg_batch.py), but its commit waits for the server to flush
its WAL (synchronous_commit stays on: the delivery is durable before the 2xx). Run on the loop through a
blocking connection, that wait stops every other request; run on a thread, batches still commit one after
another. Here each batch runs on a psycopg AsyncConnection of its own, so the loop goes on reading, verifying
and planning the next requests while a commit waits, and up to `size` batches commit at once, which lets the
server flush their WAL records together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.store.pg import sqlite_error
from bot.store.pg_batch import ACK_WAIT, ack_params, ack_results
from bot.store.plans import Prepared

__all__ = ["AsyncAcks"]

#: The ack statement is prepared once per connection; its plan does not depend on the batch's arrays, so the
#: server keeps one generic plan instead of planning it again for each batch's values.
_GENERIC_PLANS = "-c plan_cache_mode=force_generic_plan"
#: Seconds an ack waits for a new connection to the database.
CONNECT_TIMEOUT = 5


class AsyncAcks:
    """Up to `size` psycopg AsyncConnections in autocommit, each running one ack batch at a time.

    Connections open on first use and are kept; one that failed is dropped, so the next batch opens a new one.
    The caller bounds the batches in flight to `size` (GroupCommit does).
    """

    def __init__(self, url: str, size: int = 1) -> None:
        """Ack on the PostgreSQL server at `url`, up to `size` batches at a time (REPROBOT_ACK_CONNECTIONS)."""
        self.url = url
        self.size = size
        self._idle: list[Any] = []
        # A database that cannot be reached fails the batch's requests (GitHub's own timeout is 10 s) rather
        # than holding them for the system's TCP timeout; a connect_timeout in the URL wins.
        self._connect_args: dict[str, Any] = {"autocommit": True, "options": _GENERIC_PLANS}
        if "connect_timeout" not in url:
            self._connect_args["connect_timeout"] = CONNECT_TIMEOUT
        #: Statements sent (one per batch), for tests and the benchmark.
        self.round_trips = 0

    async def ack(self, now: str, rows: Sequence[Prepared]) -> list[bool]:
        """Write a batch of prepared deliveries (no actions) in one statement, waiting for the lock asynchronously.

        Returns, per delivery, False for a redelivery. Driver errors are raised as the sqlite3 classes the
        store's concerns catch (a data error leaves nothing written: the statement is its own transaction).
        """
        import psycopg

        conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = await psycopg.AsyncConnection.connect(self.url, **self._connect_args)
            self.round_trips += 1
            async with psycopg.AsyncCursor(conn) as cur:
                await cur.execute(ACK_WAIT, ack_params(now, rows), prepare=True)
                answer = await cur.fetchone()
        except (psycopg.Error, ValueError) as exc:
            if conn is not None and not conn.closed and not conn.broken:
                self._idle.append(conn)
            elif conn is not None:
                await conn.close()
            raise sqlite_error(exc) from exc
        self._idle.append(conn)
        results = ack_results(rows, answer)
        assert results is not None, "ACK_WAIT always gets the lock"
        return results

    async def close(self) -> None:
        """Close the idle connections (call it once no batch is in flight)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

"""Group commit of webhook deliveries: the inbox writes of concurrent requests share one transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.store import DeliveryRecord, DeliveryRejected, Store

__all__ = ["GroupCommit"]


class GroupCommit:
    """Writes the deliveries of concurrent requests to the inbox in one transaction, then answers each request.

    Requests that reach `accept` within two event-loop turns share one commit, run inline on the loop when
    the store's write lock is free (a short WAL commit with no fsync: checkpoints run on their own thread).
    The second turn lets requests whose bytes arrived while the first ones were handled join the batch:
    under load that doubles the batch and halves the commits, for one loop turn of latency.
    When another thread or process holds the lock, the batch waits for it on a worker thread instead, so the
    loop never blocks on a lock; later requests then join that thread's next commit until it is idle.
    On PostgreSQL a commit is a network round trip that waits for the server's WAL flush, so it never runs on
    the loop: each batch goes out on an asynchronous connection of its own (bot/store/pg_async.py), and the
    requests that arrive while it commits form the next batch. Up to REPROBOT_ACK_CONNECTIONS batches commit at
    once; one is the default, because on a machine whose cores PostgreSQL shares, the larger batches that one
    connection gathers cost the server less per delivery than two overlapping commits save.
    Each request gets its answer only after its own delivery is committed.
    """

    def __init__(self, store: Store, connections: int = 1) -> None:
        """Commit to `store`; on PostgreSQL, up to `connections` batches at once (opened on first use)."""
        self.store = store
        self._pending: list[tuple[DeliveryRecord, asyncio.Future[bool]]] = []
        self._scheduled = False
        self._task: asyncio.Task[None] | None = None
        self._acks = store.deliveries.async_acks(connections)
        self._in_flight: set[asyncio.Task[None]] = set()
        #: Commits made on the loop, on the worker thread and on asynchronous connections (tests, benchmark).
        self.inline_commits = 0
        self.thread_commits = 0
        self.async_commits = 0

    async def accept(self, delivery: DeliveryRecord) -> bool:
        """Queue the delivery for the next commit and wait until it is written (False for a redelivery)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._pending.append((delivery, future))
        if not self._scheduled and self._task is None:
            self._scheduled = True
            loop.call_soon(loop.call_soon, self._flush_inline)
        return await future

    async def drain(self) -> None:
        """Wait until every accepted delivery is committed or failed; call it before closing the store."""
        while self._pending or self._scheduled or self._task is not None or self._in_flight:
            if self._task is not None or self._in_flight:
                await asyncio.wait([t for t in (self._task, *self._in_flight) if t is not None])
            else:
                await asyncio.sleep(0)

    async def close(self) -> None:
        """Drain, then close the asynchronous connections."""
        await self.drain()
        if self._acks is not None:
            await self._acks.close()

    def _flush_inline(self) -> None:
        self._scheduled = False
        if self._acks is not None:
            self._flush_async()
            return
        if self._task is not None or not self._pending:
            return
        batch, self._pending = self._pending, []
        try:
            results = self.store.deliveries.try_accept_deliveries([d for d, _ in batch])
        except Exception as exc:  # hand the store's error to every waiting request
            _settle(batch, error=exc)
            return
        if results is None:  # the write lock is taken: wait for it on a thread, never on the loop
            self._pending = batch + self._pending
            self._task = asyncio.create_task(self._flush_threaded())
            return
        self.inline_commits += 1
        _settle(batch, results)

    def _flush_async(self) -> None:
        """Send the pending deliveries as one batch on a free asynchronous connection, if one is free."""
        assert self._acks is not None
        if not self._pending or len(self._in_flight) >= self._acks.size:
            return  # a batch in flight sends these when it is done
        batch, self._pending = self._pending, []
        task = asyncio.create_task(self._commit_async(batch))
        self._in_flight.add(task)
        task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        if not self._scheduled:  # requests that waited for a free connection go now
            self._flush_async()

    async def _commit_async(self, batch: list[tuple[DeliveryRecord, asyncio.Future[bool]]]) -> None:
        assert self._acks is not None
        deliveries = [d for d, _ in batch]
        try:
            results = await self.store.deliveries.accept_deliveries_async(self._acks, deliveries)
            if results is None:  # not for the one statement: row by row, on a thread
                results = await asyncio.to_thread(self.store.deliveries.accept_deliveries, deliveries)
                self.thread_commits += 1
            else:
                self.async_commits += 1
        except Exception as exc:  # hand the store's error to every waiting request
            _settle(batch, error=exc)
            return
        _settle(batch, results)

    async def _flush_threaded(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    results = await asyncio.to_thread(self.store.deliveries.accept_deliveries, [d for d, _ in batch])
                except Exception as exc:  # hand the store's error to every waiting request
                    _settle(batch, error=exc)
                    continue
                self.thread_commits += 1
                _settle(batch, results)
        finally:
            self._task = None


def _settle(
    batch: list[tuple[DeliveryRecord, asyncio.Future[bool]]],
    results: Sequence[bool | DeliveryRejected] | None = None,
    *,
    error: Exception | None = None,
) -> None:
    for i, (_, future) in enumerate(batch):
        if future.done():  # the request went away meanwhile
            continue
        if error is not None or results is None:
            future.set_exception(error or RuntimeError("no result"))
        elif isinstance(results[i], DeliveryRejected):  # this delivery alone failed; its neighbours are stored
            future.set_exception(results[i])  # type: ignore[arg-type]
        else:
            future.set_result(bool(results[i]))

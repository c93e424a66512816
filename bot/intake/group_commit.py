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
    Each request gets its answer only after its own delivery is committed.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: list[tuple[DeliveryRecord, asyncio.Future[bool]]] = []
        self._scheduled = False
        self._task: asyncio.Task[None] | None = None
        #: Commits made on the loop and on the worker thread (for tests and the benchmark).
        self.inline_commits = 0
        self.thread_commits = 0

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
        while self._pending or self._scheduled or self._task is not None:
            if self._task is not None:
                await asyncio.wait([self._task])
            else:
                await asyncio.sleep(0)

    def _flush_inline(self) -> None:
        self._scheduled = False
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

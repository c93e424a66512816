"""Network round trips per inbox batch on PostgreSQL, and promotion's cost per delivery on both engines.

Round trips are counted from libpq's own protocol trace (PQtrace through psycopg's `pgconn.trace`): each
ReadyForQuery message the server sends ends one exchange the client waited for, whatever the statements were.
Counted on the connection each step uses: for acks the no-wait connection and the server's asynchronous one, for
promotion the shared one; after one warm-up batch (a prepared statement's first use on a connection costs one more).

    .venv/bin/python bench/inbox_round_trips.py [--batch N] [--baseline DIR]

`--baseline DIR` measures the checkout at DIR (e.g. main's) too, in a fresh interpreter, after this one.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.store import Store

ROOT = Path(__file__).resolve().parents[1]

PROMOTE = 600  # deliveries promoted for the per-delivery cost (three batches of 200)


def _delivery(n: int) -> Any:
    from bot.store import PlannedJob

    job = PlannedJob(
        "github.issue", "github", "o/r", str(n), {"delivery_id": f"d-{n}", "installation_id": 1}, f"o/r#{n}", None
    )
    return (f"d-{n}", "github", "issues", [job], b'{"action": "labeled"}' * 500)


@contextlib.contextmanager
def _trace(raw: Any) -> Iterator[list[int]]:
    """Count the ReadyForQuery messages `raw` (a psycopg connection) receives inside the block."""
    out = [0]
    with tempfile.TemporaryFile() as log:
        raw.pgconn.trace(log.fileno())
        try:
            yield out
        finally:
            raw.pgconn.untrace()
            log.seek(0)
            out[0] = log.read().count(b"\tReadyForQuery\t")


def _round_trips(store: Store, batch: int) -> tuple[int, int]:
    """(round trips of one ack batch of `batch` deliveries, round trips of promoting it)."""
    store.deliveries.try_accept_deliveries([_delivery(-1 - i) for i in range(batch)])  # warm up
    store.deliveries.promote_deliveries()
    with _trace(store.conn.nowait_connection().raw) as acked:
        results = store.deliveries.try_accept_deliveries([_delivery(i) for i in range(batch)])
    assert results == [True] * batch, results
    with _trace(store.db.conn.raw) as promoted:
        assert len(store.deliveries.promote_deliveries()) == batch
    return acked[0], promoted[0]


def _async_round_trips(store: Store, batch: int) -> int | None:
    """Round trips of one ack batch on the server's path (an asynchronous connection); None if the code has none."""
    make = getattr(store.deliveries, "async_acks", None)
    if make is None:
        return None
    import asyncio

    async def measure() -> int:
        acks = make(1)
        try:
            await store.deliveries.accept_deliveries_async(acks, [_delivery(-500 - i) for i in range(batch)])
            with _trace(acks._idle[0]) as acked:  # the connection the warm-up opened and prepared
                results = await store.deliveries.accept_deliveries_async(
                    acks, [_delivery(500 + i) for i in range(batch)]
                )
            assert results == [True] * batch, results
            return acked[0]
        finally:
            await acks.close()

    return asyncio.run(measure())


def _promotion_cost(store: Store) -> float:
    """Microseconds per delivery to promote PROMOTE acknowledged deliveries."""
    for start in range(0, PROMOTE, 50):
        assert store.deliveries.accept_deliveries([_delivery(10_000 + n) for n in range(start, start + 50)])
    began = time.perf_counter()
    while store.deliveries.promote_deliveries():
        pass
    return (time.perf_counter() - began) / PROMOTE * 1e6


def main() -> None:
    """Print round trips per batch on PostgreSQL and promotion's cost on both engines."""
    argv = sys.argv[1:]
    batch = int(argv[argv.index("--batch") + 1]) if "--batch" in argv else 8
    # The checkout measured goes first on sys.path: this one, or --code's (how --baseline runs the other).
    sys.path.insert(0, argv[argv.index("--code") + 1] if "--code" in argv else str(ROOT))
    import bot
    from bot.store import Store
    from tests.pg_server import pg_bin, running

    print(f"inbox_round_trips: code from {Path(bot.__file__).resolve().parent.parent}")
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "s.db") as store:
        print(f"  sqlite     promotion {_promotion_cost(store):7.0f} us/delivery")
    if pg_bin() is None:
        print("  postgresql: skipped, no pg_ctl under /usr/lib/postgresql/*/bin")
        return
    with running() as server:
        with Store.open(server.new_database()) as store:
            acked, promoted = _round_trips(store, batch)
            print(f"  postgresql ack batch of {batch}: {acked} round trips; promoting it: {promoted} round trips")
            on_loop = _async_round_trips(store, batch)
            if on_loop is not None:
                print(f"  postgresql ack batch of {batch} on the server's async connection: {on_loop} round trips")
        with Store.open(server.new_database()) as store:
            print(f"  postgresql promotion {_promotion_cost(store):7.0f} us/delivery")
    if "--baseline" in argv:
        code = argv[argv.index("--baseline") + 1]
        subprocess.run([sys.executable, __file__, "--batch", str(batch), "--code", code], check=True)


if __name__ == "__main__":
    main()

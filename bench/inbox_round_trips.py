"""Network round trips per inbox batch on PostgreSQL, and promotion's cost per delivery on both engines.

Round trips are counted from libpq's own protocol trace (PQtrace through psycopg's `pgconn.trace`): each
ReadyForQuery message the server sends ends one exchange the client waited for, whatever the statements were.
Counted on the connection each step uses: the webhook path's no-wait connection for acks, the shared one for
promotion, after one warm-up batch (a prepared statement's first use on a connection costs one more).

    .venv/bin/python bench/inbox_round_trips.py [BATCH]

It runs against whatever `bot` is first on sys.path, so the same file measures another checkout too:
`PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/inbox_round_trips.py`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.store import PlannedJob, Store
from tests.pg_server import pg_bin, running

PROMOTE = 600  # deliveries promoted for the per-delivery cost (three batches of 200)


def _delivery(n: int) -> Any:
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
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    import bot

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
        with Store.open(server.new_database()) as store:
            print(f"  postgresql promotion {_promotion_cost(store):7.0f} us/delivery")


if __name__ == "__main__":
    main()

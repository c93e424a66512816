"""WAL checkpoints on a background thread, so that no commit on the webhook path pays for one (all SQL here)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from bot.store.sql import BUSY_TIMEOUT_MS

log = logging.getLogger(__name__)

#: SQLite's default `wal_autocheckpoint`, restored on the store's connection when the checkpointer stops.
DEFAULT_AUTOCHECKPOINT_PAGES = 1000


class WalCheckpointer:
    """Runs `PRAGMA wal_checkpoint(PASSIVE)` from its own connection while the store's own commits skip them.

    SQLite's automatic checkpoint runs inside the COMMIT that crosses the threshold and fsyncs there, which
    puts milliseconds on that one request. Here the store's connections have autocheckpoint off and a thread
    checkpoints every `interval` seconds instead. Durability is unchanged: a commit is in the WAL either way.
    A PASSIVE checkpoint takes no write lock, so it never blocks a writer.
    """

    def __init__(self, set_autocheckpoint: Callable[[int], None], path: Path, *, interval: float = 0.25) -> None:
        """Take over checkpoints of the store on `path`; `set_autocheckpoint(pages)` applies to its connections."""
        self._set_autocheckpoint = set_autocheckpoint
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0

    def start(self) -> None:
        """Turn the store connections' autocheckpoint off and start checkpointing in the background."""
        self._set_autocheckpoint(0)
        self._thread = threading.Thread(target=self._run, name="reprobot-wal-checkpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread after one last checkpoint and give the store connections their autocheckpoint back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._set_autocheckpoint(DEFAULT_AUTOCHECKPOINT_PAGES)

    def _run(self) -> None:
        conn = sqlite3.connect(str(self._path), isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            while True:
                stopping = self._stop.wait(self._interval)
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # a failed checkpoint is retried next round; commits go on
                    log.warning("WAL checkpoint of %s failed: %s", self._path, exc)
                if stopping:
                    return
        finally:
            conn.close()

"""Small SQL helpers shared by the store's modules: time as text, JSON columns, busy errors, checked choices."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

# How long a writer waits for another connection's write lock before giving up with "database is locked".
BUSY_TIMEOUT_SECONDS = 30.0
#: The same, in the unit of `PRAGMA busy_timeout`.
BUSY_TIMEOUT_MS = int(BUSY_TIMEOUT_SECONDS * 1000)


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "table is locked" (another connection holds the lock)."""
    return isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorcode & 0xFF in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    )


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

"""The cache of built test environments, keyed by their spec's hash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.store.base import StoreConnection
from bot.store.rows import EnvironmentRow
from bot.store.sql import dumps


class Environments:
    """Built environments by cache key (`store.environments`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    def put_environment(self, key: str, repo: str, spec: Mapping[str, Any], path: str) -> None:
        """Record a built environment under its cache key, replacing an older record of that key."""
        now = self._conn.now()
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO environments (key, repo, spec, path, created_at, last_used_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET repo = excluded.repo,
                    spec = excluded.spec, path = excluded.path, created_at = excluded.created_at,
                    last_used_at = excluded.last_used_at""",
                (key, repo, dumps(dict(spec)), path, now, now),
            )

    def get_environment(self, key: str) -> EnvironmentRow | None:
        """The cached environment for `key`, if any; marks it used so eviction can go least-recently-used."""
        with self._conn.write() as db:
            db.execute("UPDATE environments SET last_used_at = ? WHERE key = ?", (self._conn.now(), key))
            return self._conn.one(EnvironmentRow, "SELECT * FROM environments WHERE key = ?", (key,))

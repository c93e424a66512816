"""The Mojira poller's state: one cursor per followed query, and every report handed to a sink (seen reports)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.store.base import StoreConnection
from bot.store.rows import _Row
from bot.store.sql import dumps


@dataclass(frozen=True)
class MojiraCursor(_Row):
    """Where a followed query got to: the newest `updated` it has handed on."""

    name: str
    jql: str
    updated: str | None
    polled_at: str


@dataclass(frozen=True)
class MojiraRecord(_Row):
    """A report the poller has seen: its last `updated`, typed fields, triage, route and where it went."""

    JSON_FIELDS = ("report", "triage")

    key: str
    updated: str
    summary: str
    report: dict[str, Any]
    triage: dict[str, Any]
    route: str | None
    signature: str | None
    sink: str
    sink_ref: str | None
    first_seen_at: str
    updated_at: str


class MojiraReports:
    """Cursors and seen reports (`store.mojira`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    def cursor(self, name: str) -> MojiraCursor | None:
        """The cursor of the query named `name`, if it has polled before."""
        return self._conn.one(MojiraCursor, "SELECT * FROM mojira_cursors WHERE name = ?", (name,))

    def advance_cursor(self, name: str, jql: str, updated: str | None, *, newer: bool) -> None:
        """Record a poll; `updated` replaces the cursor when given (`newer`: it is later than the old one)."""
        now = self._conn.now()
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO mojira_cursors (name, jql, updated, polled_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET jql = excluded.jql, polled_at = excluded.polled_at,
                    updated = CASE WHEN ? THEN excluded.updated ELSE mojira_cursors.updated END""",
                (name, jql, updated, now, bool(newer and updated is not None)),
            )

    def get(self, key: str) -> MojiraRecord | None:
        """The seen report `key`, if any."""
        return self._conn.one(MojiraRecord, "SELECT * FROM mojira_reports WHERE key = ?", (key,))

    def record(
        self,
        key: str,
        updated: str,
        *,
        summary: str,
        report: Mapping[str, Any],
        triage: Mapping[str, Any],
        route: str | None,
        signature: str | None,
        sink: str,
        sink_ref: str | None,
    ) -> bool:
        """Record a report handed to `sink`; False (and nothing written) when it was recorded before."""
        now = self._conn.now()
        with self._conn.write() as db:
            cur = db.execute(
                """INSERT INTO mojira_reports (key, updated, summary, report, triage, route, signature, sink,
                    sink_ref, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (key) DO NOTHING""",
                (
                    key,
                    updated,
                    summary,
                    dumps(dict(report)),
                    dumps(dict(triage)),
                    route,
                    signature,
                    sink,
                    sink_ref,
                    now,
                    now,
                ),
            )
            return bool(cur.rowcount)

    def refresh(self, key: str, updated: str, *, summary: str, report: Mapping[str, Any]) -> None:
        """A seen report changed on Mojira: keep its newest fields (it is not handed to the sink again)."""
        with self._conn.write() as db:
            db.execute(
                "UPDATE mojira_reports SET updated = ?, summary = ?, report = ?, updated_at = ? WHERE key = ?",
                (updated, summary, dumps(dict(report)), self._conn.now(), key),
            )

    def with_signature(self, signature: str) -> list[str]:
        """Keys of the seen reports whose crash signature is `signature` (likely duplicates), oldest first."""
        rows = self._conn.rows(
            "SELECT key FROM mojira_reports WHERE signature = ? ORDER BY first_seen_at, key", (signature,)
        )
        return [str(r["key"]) for r in rows]

    def keys(self) -> list[str]:
        """Every seen report's key, in the order first seen."""
        return [str(r["key"]) for r in self._conn.rows("SELECT key FROM mojira_reports ORDER BY first_seen_at, key")]

    def recent(self, limit: int = 500) -> list[MojiraRecord]:
        """The seen reports, the latest first seen first (the dashboard's Mojira page)."""
        sql = "SELECT * FROM mojira_reports ORDER BY first_seen_at DESC, key DESC LIMIT ?"
        return self._conn.all(MojiraRecord, sql, (limit,))

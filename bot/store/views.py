"""Read-only views for operators: the dashboard's lists and the numbers /metrics exports (`store.views`).

Few and plain queries (no engine-specific SQL beyond what the rest of the store uses), so they port with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.store.base import StoreConnection
from bot.store.rows import DeliveryRow, IssueRow, JobRow, PublicationRow
from bot.store.sql import iso, parse_iso

#: The `kind` under which the queue gauges count the inbox: accepted deliveries not yet turned into jobs.
INBOX = "inbox"
#: A runner counts as online when it reached the server within this many seconds.
RUNNER_ONLINE_SECONDS = 120.0


@dataclass(frozen=True)
class JobListing:
    """One line of the dashboard's jobs list: the job and, when it has one, its issue."""

    job: JobRow
    issue: IssueRow | None


@dataclass(frozen=True)
class RunnerJob:
    """A job a runner took last (its lease owner), the GitHub installation it serves, and whether it holds it now."""

    runner_id: int
    job_id: int
    installation_id: int | None
    leased: bool


@dataclass(frozen=True)
class QueueStat:
    """Jobs of one kind in one status, and the age in seconds of the oldest (0 when none)."""

    kind: str
    status: str
    count: int
    oldest_age: float


@dataclass(frozen=True)
class RunnerView:
    """A self-hosted runner as the dashboard shows it; `leases` counts the jobs it holds now."""

    id: int
    name: str
    labels: list[str]
    version: str
    last_seen_at: str
    online: bool
    leases: int


class Views:
    """Queries behind the dashboard and the store-derived metrics; they never write."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    def list_jobs(
        self,
        *,
        repo: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int = 100,
    ) -> list[JobListing]:
        """Jobs matching every given filter (repo is the issue's), newest first, each with its issue."""
        sql = """SELECT j.*, i.id AS i_id, i.forge AS i_forge, i.repo AS i_repo, i.number_or_key AS i_number_or_key,
                i.title AS i_title, i.body AS i_body, i.url AS i_url, i.created_at AS i_created_at,
                i.updated_at AS i_updated_at
            FROM jobs j LEFT JOIN issues i ON i.id = j.issue_id
            WHERE (:repo IS NULL OR i.repo = :repo) AND (:kind IS NULL OR j.kind = :kind)
              AND (:status IS NULL OR j.status = :status)
            ORDER BY j.id DESC LIMIT :limit"""
        rows = self._conn.rows(sql, {"repo": repo, "kind": kind, "status": status, "limit": limit})
        out = []
        for row in rows:
            issue = None
            if row["i_id"] is not None:
                issue = IssueRow.from_row({k[2:]: v for k, v in row.items() if k.startswith("i_")})
            out.append(JobListing(JobRow.from_row(row), issue))
        return out

    def filter_choices(self) -> dict[str, list[str]]:
        """The repos, kinds and statuses present, for the jobs list's filter menus."""
        repos = [r["repo"] for r in self._conn.rows("SELECT DISTINCT repo FROM issues ORDER BY repo")]
        kinds = [r["kind"] for r in self._conn.rows("SELECT DISTINCT kind FROM jobs ORDER BY kind")]
        statuses = [r["status"] for r in self._conn.rows("SELECT DISTINCT status FROM jobs ORDER BY status")]
        return {"repo": repos, "kind": kinds, "status": statuses}

    def issue(self, issue_id: int) -> IssueRow | None:
        """The issue with this id, if any."""
        return self._conn.one(IssueRow, "SELECT * FROM issues WHERE id = ?", (issue_id,))

    def publications(self, issue_id: int) -> list[PublicationRow]:
        """What was posted for the issue (branch, PR, status comments), oldest first."""
        return self._conn.all(PublicationRow, "SELECT * FROM publications WHERE issue_id = ? ORDER BY id", (issue_id,))

    def installation_ids(self) -> list[int]:
        """The App's installations that are still installed (the dashboard's GitHub login checks them)."""
        rows = self._conn.rows("SELECT installation_id FROM installations WHERE removed_at IS NULL ORDER BY 1")
        return [int(r["installation_id"]) for r in rows]

    def runner_jobs(self, *, now: float) -> list[RunnerJob]:
        """Jobs runners took, with the installation each serves (the dashboard's runner scope for GitHub viewers).

        A runner job carries the forge job's installation in `publish` (bot/jobs/handoff.py); a job held
        directly carries its own. A job keeps the runner of its last attempt as its lease owner.
        """
        sql = """SELECT id, lease_owner, payload,
                CASE WHEN status = 'running' AND lease_expires_at > :now THEN 1 ELSE 0 END AS leased
            FROM jobs WHERE lease_owner LIKE 'runner:%' ORDER BY id"""
        out = []
        for row in self._conn.rows(sql, {"now": iso(now)}):
            owner = str(row["lease_owner"]).removeprefix("runner:")
            if not owner.isdigit():
                continue
            out.append(RunnerJob(int(owner), int(row["id"]), _installation_of(row["payload"]), bool(row["leased"])))
        return out

    def list_deliveries(self, *, limit: int = 100) -> list[DeliveryRow]:
        """The latest webhook deliveries (without their bodies), newest first."""
        sql = """SELECT id, delivery_id, source, event, received_at, job_id, NULL AS payload, planned, promoted_at,
                promote_error
            FROM deliveries ORDER BY id DESC LIMIT ?"""
        return self._conn.all(DeliveryRow, sql, (limit,))

    def queue_stats(self, *, now: float) -> list[QueueStat]:
        """Jobs by kind and status; for queued jobs the age of the oldest one that may run now."""
        sql = """SELECT kind, status, count(*) AS n,
                MIN(CASE WHEN status = 'queued' AND run_after <= :now THEN created_at END) AS oldest
            FROM jobs GROUP BY kind, status ORDER BY kind, status"""
        out = []
        for row in self._conn.rows(sql, {"now": iso(now)}):
            age = max(0.0, now - parse_iso(row["oldest"])) if row["oldest"] else 0.0
            out.append(QueueStat(row["kind"], row["status"], int(row["n"]), age))
        return out

    def inbox_stat(self, *, now: float) -> QueueStat:
        """Accepted deliveries whose planned jobs no worker has queued yet (kind "inbox"), and the oldest's age.

        Only a worker's poll turns the inbox into jobs: with every worker down this grows while the job
        queue stays empty, so /metrics reports it beside the queue.
        """
        sql = """SELECT count(*) AS n, MIN(received_at) AS oldest FROM deliveries
            WHERE planned IS NOT NULL AND promoted_at IS NULL"""
        row = self._conn.rows(sql)[0]
        age = max(0.0, now - parse_iso(row["oldest"])) if row["oldest"] else 0.0
        return QueueStat(INBOX, "pending", int(row["n"]), age)

    def runners(self, *, now: float) -> list[RunnerView]:
        """Registered runners with their leases (empty where this store has no runners table)."""
        has = self._conn.rows("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'runners'")
        if not has[0]["n"]:
            return []
        sql = """SELECT r.*, (SELECT count(*) FROM jobs j WHERE j.status = 'running'
                    AND j.lease_owner = 'runner:' || r.id AND j.lease_expires_at > :now) AS leases
            FROM runners r ORDER BY r.last_seen_at DESC, r.id"""
        out = []
        for row in self._conn.rows(sql, {"now": iso(now)}):
            labels: Any = row.get("labels") or "[]"
            out.append(
                RunnerView(
                    id=int(row["id"]),
                    name=str(row["name"]),
                    labels=list(json.loads(labels)),
                    version=str(row.get("version") or ""),
                    last_seen_at=str(row["last_seen_at"]),
                    online=now - parse_iso(row["last_seen_at"]) <= RUNNER_ONLINE_SECONDS,
                    leases=int(row["leases"]),
                )
            )
        return out


def _installation_of(payload: Any) -> int | None:
    """The GitHub installation a job's payload names (its own, or the one its result is published to)."""
    try:
        data = json.loads(payload) if isinstance(payload, str | bytes) else payload
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    publish = data.get("publish")
    found = data.get("installation_id", publish.get("installation_id") if isinstance(publish, dict) else None)
    return found if isinstance(found, int) and not isinstance(found, bool) else None

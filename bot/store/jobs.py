"""The job queue's atomic primitives; the policy (leases, retries, backoff) lives in bot.jobs.queue."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, cast

from bot.store.base import StoreConnection
from bot.store.rows import JobRow
from bot.store.schema import JOB_STATUSES
from bot.store.sql import check_choice, dumps, iso


class Jobs:
    """Insert, claim, extend, release, cancel, count and read jobs (`store.jobs`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    def insert_job(
        self,
        kind: str,
        issue_id: int | None,
        payload: Mapping[str, Any],
        *,
        concurrency_key: str | None,
        max_attempts: int,
        dedupe_key: str | None,
        now: float,
        run_after: float,
        labels: list[str] | None = None,
        tenant: str | None = None,
    ) -> tuple[int, bool]:
        """Insert a queued job, or find the job already holding `dedupe_key`; returns (id, created).

        `labels`: the job is for a self-hosted runner that has all of them (never for a worker).
        `tenant`: whose runner job it is (bot/store/tenants.py); None: the deployment's own.
        """
        with self._conn.write() as db:
            if dedupe_key is not None:
                rows = list(db.query("SELECT id FROM jobs WHERE dedupe_key = ?", (dedupe_key,)))
                if rows:
                    return int(rows[0]["id"]), False
            row = {"kind": kind, "issue_id": issue_id, "payload": dumps(dict(payload)), "status": "queued"}
            row |= {"max_attempts": max_attempts, "run_after": iso(run_after), "dedupe_key": dedupe_key}
            row |= {"concurrency_key": concurrency_key, "created_at": iso(now), "updated_at": iso(now)}
            row |= {"labels": None if labels is None else dumps(sorted(set(labels))), "tenant": tenant}
            job_id = cast(int, db.table("jobs").insert(row).last_pk)
            self._conn.queue_changed(db.conn)
            return job_id, True

    def claim_job(self, worker_id: str, *, now: float, lease_seconds: float) -> JobRow | None:
        """Atomically lease the oldest runnable job to `worker_id`, or return None.

        Runnable: queued with run_after passed, or running with an expired lease (its worker died); and no
        other job with the same concurrency key is running. Each claim counts as an attempt. An expired job
        that already used all its attempts is dead-lettered instead, as it may be what kills workers.
        """
        params = {"now": iso(now), "until": iso(now + lease_seconds), "worker": worker_id}
        # On PostgreSQL claims take row locks only (SKIP LOCKED: concurrent claimers pass each other by); the
        # unique index on running concurrency keys turns a lost race for a key into "nothing claimed".
        try:
            return self._claim(params)
        except sqlite3.IntegrityError:
            if not self._conn.row_lock_claims:
                raise  # SQLite's claims are serialized: this would be a bug in the claim, not a race
            return None

    def _claim(self, params: dict[str, Any]) -> JobRow | None:
        with self._conn.write(row_locks=True) as db:
            db.execute(
                """UPDATE jobs SET status = 'dead', lease_expires_at = NULL, updated_at = :now,
                    last_error = 'lease expired on attempt ' || attempts || ' of ' || max_attempts
                        || ' (worker lost)' || COALESCE('; previous error: ' || last_error, '')
                WHERE status = 'running' AND lease_expires_at <= :now AND attempts >= max_attempts""",
                params,
            )
            # A queued job also waits while its key's running job merely has an *expired* lease: that job is
            # reclaimed instead, so that at most one job per key is ever running.
            rows = list(
                db.query(
                    """SELECT j.id FROM jobs j
                    WHERE ((j.status = 'queued' AND j.run_after <= :now)
                           OR (j.status = 'running' AND j.lease_expires_at <= :now))
                      AND j.labels IS NULL
                      AND (j.concurrency_key IS NULL OR NOT EXISTS (
                           SELECT 1 FROM jobs r WHERE r.concurrency_key = j.concurrency_key
                             AND r.status = 'running' AND r.id != j.id))
                    ORDER BY j.id LIMIT 1 /* FOR UPDATE OF j SKIP LOCKED */""",
                    params,
                )
            )
            if not rows:
                return None
            db.execute(
                """UPDATE jobs SET
                    last_error = CASE WHEN status = 'running'
                        THEN 'lease of ' || lease_owner || ' expired on attempt ' || attempts
                        ELSE last_error END,
                    status = 'running', attempts = attempts + 1, lease_owner = :worker,
                    lease_expires_at = :until, updated_at = :now
                WHERE id = :id""",
                params | {"id": rows[0]["id"]},
            )
            return self.get_job(int(rows[0]["id"]))

    def claim_job_by_id(self, job_id: int, worker_id: str, *, now: float, lease_seconds: float) -> JobRow | None:
        """Lease one specific queued job to `worker_id` (an inline run such as the CLI's); None if not queued."""
        params = {"now": iso(now), "until": iso(now + lease_seconds), "worker": worker_id, "id": job_id}
        with self._conn.write() as db:
            cursor = db.execute(
                """UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_owner = :worker,
                    lease_expires_at = :until, updated_at = :now
                WHERE id = :id AND status = 'queued'""",
                params,
            )
            if cursor.rowcount != 1:
                return None
            return self.get_job(job_id)

    def extend_lease(self, job_id: int, worker_id: str, *, now: float, lease_seconds: float) -> bool:
        """Push the lease to now + lease_seconds; False if `worker_id` no longer holds the running job."""
        with self._conn.write() as db:
            cursor = db.execute(
                """UPDATE jobs SET lease_expires_at = ?, updated_at = ?
                WHERE id = ? AND status = 'running' AND lease_owner = ?""",
                (iso(now + lease_seconds), iso(now), job_id, worker_id),
            )
            return cursor.rowcount == 1

    def release_job(
        self,
        job_id: int,
        worker_id: str,
        *,
        status: str,
        now: float,
        result: Any = None,
        error: str | None = None,
        run_after: float | None = None,
    ) -> bool:
        """Move a running job held by `worker_id` to `status` (done, failed, queued or dead).

        result, error and run_after keep their stored value when None. False if the worker lost the job.
        """
        check_choice(status, JOB_STATUSES, "job status")
        params: dict[str, Any] = {"status": status, "now": iso(now), "id": job_id, "worker": worker_id}
        params |= {"result": None if result is None else dumps(result), "error": error}
        params |= {"run_after": None if run_after is None else iso(run_after)}
        with self._conn.write() as db:
            cursor = db.execute(
                """UPDATE jobs SET status = :status, result = COALESCE(:result, result),
                    last_error = COALESCE(:error, last_error), run_after = COALESCE(:run_after, run_after),
                    lease_expires_at = NULL, updated_at = :now
                WHERE id = :id AND status = 'running' AND lease_owner = :worker""",
                params,
            )
            return cursor.rowcount == 1

    def set_progress(self, job_id: int, stage: str, detail: str, *, since: float, now: float) -> bool:
        """Note the stage a running job is in (its `result` until it finishes); False if it is not running.

        The dashboard shows it with its elapsed time; finishing the job replaces it with the job's result.
        """
        progress = {"progress": {"stage": stage, "detail": detail[:300], "since": iso(since)}}
        with self._conn.write() as db:
            cursor = db.execute(
                "UPDATE jobs SET result = ?, updated_at = ? WHERE id = ? AND status = 'running'",
                (dumps(progress), iso(now), job_id),
            )
            return cursor.rowcount == 1

    def cancel_job(self, job_id: int, *, now: float) -> bool:
        """Cancel a queued or running job; False if it is unknown or already finished."""
        with self._conn.write() as db:
            cursor = db.execute(
                """UPDATE jobs SET status = 'cancelled', lease_expires_at = NULL, updated_at = ?
                WHERE id = ? AND status IN ('queued', 'running')""",
                (iso(now), job_id),
            )
            return cursor.rowcount == 1

    def count_running(self, *, now: float) -> int:
        """Running jobs whose lease is live (expired ones are waiting to be reclaimed)."""
        sql = "SELECT count(*) AS n FROM jobs WHERE status = 'running' AND lease_expires_at > ?"
        return int(self._conn.rows(sql, (iso(now),))[0]["n"])

    def get_job(self, job_id: int) -> JobRow | None:
        """The job with this id, if any."""
        return self._conn.one(JobRow, "SELECT * FROM jobs WHERE id = ?", (job_id,))

    def list_jobs(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        issue_id: int | None = None,
        limit: int = 100,
    ) -> list[JobRow]:
        """Jobs matching every given filter, newest first."""
        sql = """SELECT * FROM jobs WHERE (:status IS NULL OR status = :status)
            AND (:kind IS NULL OR kind = :kind) AND (:issue_id IS NULL OR issue_id = :issue_id)
            ORDER BY id DESC LIMIT :limit"""
        return self._conn.all(JobRow, sql, {"status": status, "kind": kind, "issue_id": issue_id, "limit": limit})

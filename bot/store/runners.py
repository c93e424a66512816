"""Self-hosted runners: their rows and hashed tokens, scoped registration tokens, the label- and scope-matched
claim, and log chunks and artifact records written only under the live lease of the current attempt."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from sqlite_utils import Database

from bot.store.base import StoreConnection
from bot.store.rows import JobRow, _Row
from bot.store.sql import dumps, iso
from bot.store.tenants import in_scope

#: Runner jobs a claim may take: queued and due, or running under a lapsed lease; oldest first.
_RUNNABLE = """SELECT id, labels, tenant FROM jobs
    WHERE labels IS NOT NULL
      AND ((status = 'queued' AND run_after <= :now) OR (status = 'running' AND lease_expires_at <= :now))
    ORDER BY id"""


def token_hash(token: str) -> str:
    """The stored form of a runner token: its SHA-256 (the token itself is shown once, at registration)."""
    return hashlib.sha256(token.encode()).hexdigest()


def runner_owner(runner_id: int) -> str:
    """The `lease_owner` of a job a runner holds; workers' ids never start with "runner:"."""
    return f"runner:{runner_id}"


#: What a write under a lease came to: stored, refused because the lease is not live, or refused by a quota.
WriteOutcome = Literal["stored", "lapsed", "log_full", "artifact_count", "artifact_bytes"]


@dataclass(frozen=True)
class RunnerRow(_Row):
    """One registered runner: labels it offers, the tenants it serves, its version, when it was last heard from."""

    JSON_FIELDS = ("labels", "scope")
    BOOL_FIELDS = ("ephemeral",)

    id: int
    name: str
    labels: list[str]
    version: str
    ephemeral: bool
    jobs_taken: int
    created_at: str
    last_seen_at: str
    #: Tenants whose jobs it takes (bot/store/tenants.py); None: registered before scopes, so it takes none.
    scope: list[str] | None = None
    #: The scoped registration token it registered with, if any.
    grant_id: int | None = None


@dataclass(frozen=True)
class RunnerGrant(_Row):
    """A scoped registration token the runner admin issued: runners registering with it get its scope."""

    JSON_FIELDS = ("scope",)

    id: int
    scope: list[str]
    note: str
    created_at: str


@dataclass(frozen=True)
class Lease:
    """What a runner's write to a job must hold: that job, running, leased to `owner` for `attempt`, until after
    `now` (epoch seconds)."""

    job_id: int
    owner: str
    attempt: int
    now: float


@dataclass(frozen=True)
class JobArtifact(_Row):
    """A file a runner uploaded for a job, stored once under its SHA-256."""

    job_id: int
    name: str
    sha256: str
    size: int
    created_at: str


class Runners:
    """Runner rows, the runners' claim on labelled jobs, their log chunks and artifacts (`store.runners`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    # -- registration -----------------------------------------------------------------------------------

    def add_runner(
        self,
        name: str,
        token: str,
        labels: Sequence[str],
        version: str,
        *,
        ephemeral: bool,
        scope: Sequence[str],
        grant_id: int | None = None,
    ) -> int:
        """Register a runner for `scope` (tenants, or ["deployment"]) under the hash of `token`; returns its id."""
        if not scope:
            raise ValueError("a runner needs a scope: tenants, or deployment")
        now = self._conn.now()
        row: dict[str, Any] = {"name": name, "token_hash": token_hash(token), "labels": dumps(sorted(set(labels)))}
        row |= {"version": version, "ephemeral": int(ephemeral), "created_at": now, "last_seen_at": now}
        row |= {"scope": dumps(sorted(set(scope))), "grant_id": grant_id}
        return self._conn.insert("runners", row)

    def runner_for_token(self, token: str) -> RunnerRow | None:
        """The runner holding `token`, or None (unknown or removed)."""
        sql = "SELECT * FROM runners WHERE token_hash = ?"
        return self._conn.one(RunnerRow, sql, (token_hash(token),))

    def get_runner(self, runner_id: int) -> RunnerRow | None:
        """The runner with this id, if it is still registered."""
        return self._conn.one(RunnerRow, "SELECT * FROM runners WHERE id = ?", (runner_id,))

    def touch(self, runner_id: int) -> None:
        """Record that the runner was heard from now."""
        with self._conn.write() as db:
            db.execute("UPDATE runners SET last_seen_at = ? WHERE id = ?", (self._conn.now(), runner_id))

    def remove_runner(self, runner_id: int) -> bool:
        """Forget a runner (its token stops working); False if it was already gone."""
        with self._conn.write() as db:
            return db.execute("DELETE FROM runners WHERE id = ?", (runner_id,)).rowcount == 1

    def list_runners(self) -> list[RunnerRow]:
        """Every registered runner, most recently seen first."""
        return self._conn.all(RunnerRow, "SELECT * FROM runners ORDER BY last_seen_at DESC, id")

    # -- scoped registration tokens -------------------------------------------------------------------------

    def add_grant(self, token: str, scope: Sequence[str], note: str) -> int:
        """Keep a scoped registration token (its hash only) for `scope`; returns its id."""
        row = {"token_hash": token_hash(token), "scope": dumps(sorted(set(scope))), "note": note}
        return self._conn.insert("runner_grants", row | {"created_at": self._conn.now()})

    def grant_for_token(self, token: str) -> RunnerGrant | None:
        """The scoped registration token `token` is, or None."""
        sql = "SELECT * FROM runner_grants WHERE token_hash = ?"
        return self._conn.one(RunnerGrant, sql, (token_hash(token),))

    def list_grants(self) -> list[RunnerGrant]:
        """Every scoped registration token still valid, oldest first."""
        return self._conn.all(RunnerGrant, "SELECT * FROM runner_grants ORDER BY id")

    def revoke_grant(self, grant_id: int) -> list[int] | None:
        """Revoke a scoped registration token and remove the runners it registered (their ids); None if unknown."""
        with self._conn.write() as db:
            if db.execute("DELETE FROM runner_grants WHERE id = ?", (grant_id,)).rowcount != 1:
                return None
            ids = [int(r["id"]) for r in db.query("SELECT id FROM runners WHERE grant_id = ?", (grant_id,))]
            db.execute("DELETE FROM runners WHERE grant_id = ?", (grant_id,))
            return ids

    def prune_stale(self, older_than: float) -> list[int]:
        """Remove runners not heard from since `older_than` (epoch seconds) and holding no live lease."""
        with self._conn.write() as db:
            rows = list(
                db.query(
                    """SELECT r.id FROM runners r WHERE r.last_seen_at < :cutoff AND NOT EXISTS (
                        SELECT 1 FROM jobs j WHERE j.status = 'running' AND j.lease_owner = 'runner:' || r.id
                          AND j.lease_expires_at > :cutoff)""",
                    {"cutoff": iso(older_than)},
                )
            )
            ids = [int(r["id"]) for r in rows]
            for runner_id in ids:
                db.execute("DELETE FROM runners WHERE id = ?", (runner_id,))
            return ids

    # -- the claim ----------------------------------------------------------------------------------------

    def claim_for_runner(self, runner: RunnerRow, *, now: float, lease_seconds: float) -> JobRow | None:
        """Atomically lease the oldest runnable job whose labels the runner all has, in its scope, or return None.

        Runnable as in the worker's claim: queued and due, or running with a lapsed lease (its runner died),
        which counts as another attempt; a lapsed job with no attempts left is dead-lettered instead.
        """
        params = {"now": iso(now), "until": iso(now + lease_seconds), "owner": runner_owner(runner.id)}
        offered = set(runner.labels)

        def fits(row: dict[str, Any]) -> bool:
            return set(json.loads(row["labels"])) <= offered and in_scope(runner.scope, row["tenant"])

        # Idle runners poll every second or so: look without the write lock first, so that waiting runners
        # do not take turns at the lock the webhook path needs.
        if not any(fits(r) for r in self._conn.rows(_RUNNABLE, params)):
            return None
        with self._conn.write() as db:
            db.execute(
                """UPDATE jobs SET status = 'dead', lease_expires_at = NULL, updated_at = :now,
                    last_error = 'lease of ' || lease_owner || ' lapsed on attempt ' || attempts || ' of '
                        || max_attempts || ' (runner lost)' || COALESCE('; previous error: ' || last_error, '')
                WHERE labels IS NOT NULL AND status = 'running' AND lease_expires_at <= :now
                  AND attempts >= max_attempts""",
                params,
            )
            rows = db.query(_RUNNABLE, params)
            # Label sets are small JSON lists; the subset and scope tests are plain Python in the same transaction.
            chosen = next((int(r["id"]) for r in rows if fits(r)), None)
            if chosen is None:  # another runner took it in between
                return None
            db.execute(
                """UPDATE jobs SET
                    last_error = CASE WHEN status = 'running'
                        THEN 'lease of ' || lease_owner || ' lapsed on attempt ' || attempts
                        ELSE last_error END,
                    status = 'running', attempts = attempts + 1, lease_owner = :owner,
                    lease_expires_at = :until, updated_at = :now
                WHERE id = :id""",
                params | {"id": chosen},
            )
            db.execute(
                "UPDATE runners SET jobs_taken = jobs_taken + 1, last_seen_at = :now WHERE id = :id",
                params | {"id": runner.id},
            )
            row = next(iter(db.query("SELECT * FROM jobs WHERE id = ?", (chosen,))))
            return JobRow.from_row(row)

    # -- logs and artifacts -------------------------------------------------------------------------------

    @staticmethod
    def _live(db: Database, lease: Lease) -> bool:
        """True when the lease is the job's current one: running, this owner, this attempt, not lapsed."""
        sql = """SELECT 1 AS x FROM jobs WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?
            AND lease_expires_at > ?"""
        return bool(list(db.query(sql, (lease.job_id, lease.owner, lease.attempt, iso(lease.now)))))

    def add_log_chunk(self, lease: Lease, seq: int, text: str, *, max_bytes: int) -> WriteOutcome:
        """Store chunk `seq` of the lease's attempt once (a resent chunk is ignored), past no `max_bytes`.

        The lease is checked in the same transaction: a chunk never lands after the job finished or was cancelled.
        """
        with self._conn.write() as db:
            if not self._live(db, lease):
                return "lapsed"
            sql = "SELECT COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) AS n FROM job_logs WHERE job_id = ?"
            used = next(iter(db.query(sql, (lease.job_id,))))["n"]
            if int(used) + len(text.encode()) > max_bytes:
                return "log_full"
            db.execute(
                "INSERT OR IGNORE INTO job_logs (job_id, seq, attempt, text, created_at) VALUES (?, ?, ?, ?, ?)",
                (lease.job_id, seq, lease.attempt, text, self._conn.now()),
            )
            return "stored"

    def job_log(self, job_id: int, attempt: int | None = None) -> str:
        """The job's log (one attempt's, or every attempt's in order), chunks joined by sequence number."""
        sql = """SELECT text FROM job_logs WHERE job_id = :job AND (:attempt IS NULL OR attempt = :attempt)
            ORDER BY attempt, seq"""
        return "".join(str(r["text"]) for r in self._conn.rows(sql, {"job": job_id, "attempt": attempt}))

    def add_artifact(
        self, lease: Lease, name: str, sha256: str, size: int, *, max_count: int, max_bytes: int
    ) -> WriteOutcome:
        """Record (or replace) the job's artifact `name`, stored under `sha256`, within the job's quota.

        The job holds at most `max_count` artifacts of at most `max_bytes` together (a replaced name counts once,
        at its new size). The lease and the quota are checked in the same transaction as the record.
        """
        row: dict[str, Any] = {"job_id": lease.job_id, "name": name, "sha256": sha256, "size": size}
        with self._conn.write() as db:
            if not self._live(db, lease):
                return "lapsed"
            sql = """SELECT count(*) AS n, COALESCE(SUM(size), 0) AS bytes FROM job_artifacts
                WHERE job_id = ? AND name != ?"""
            held = next(iter(db.query(sql, (lease.job_id, name))))
            if int(held["n"]) + 1 > max_count:
                return "artifact_count"
            if int(held["bytes"]) + size > max_bytes:
                return "artifact_bytes"
            db.table("job_artifacts").insert(row | {"created_at": self._conn.now()}, replace=True)
            return "stored"

    def remove_artifact(self, job_id: int, name: str, sha256: str) -> None:
        """Forget an artifact record whose bytes could not be stored (only if it still names those bytes)."""
        with self._conn.write() as db:
            sql = "DELETE FROM job_artifacts WHERE job_id = ? AND name = ? AND sha256 = ?"
            db.execute(sql, (job_id, name, sha256))

    @property
    def shares_blobs(self) -> bool:
        """True when artifact bytes must be kept in the store (machines share it, not a filesystem)."""
        return self._conn.shared_blobs

    def put_blob(self, sha256: str, data: bytes) -> None:
        """Keep an artifact's bytes in the store (content-addressed: the same bytes are written once)."""
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO artifact_blobs (sha256, data, created_at) VALUES (?, ?, ?)
                ON CONFLICT (sha256) DO NOTHING""",
                (sha256, data, self._conn.now()),
            )

    def get_blob(self, sha256: str) -> bytes | None:
        """An artifact's bytes kept in the store, if any."""
        rows = self._conn.rows("SELECT data FROM artifact_blobs WHERE sha256 = ?", (sha256,))
        return bytes(rows[0]["data"]) if rows else None

    def artifacts(self, job_id: int) -> list[JobArtifact]:
        """The job's artifacts, by name."""
        sql = "SELECT * FROM job_artifacts WHERE job_id = ? ORDER BY name"
        return self._conn.all(JobArtifact, sql, (job_id,))

    def artifact_known(self, sha256: str) -> bool:
        """True when some job recorded an artifact with this content hash."""
        rows = self._conn.rows("SELECT 1 AS x FROM job_artifacts WHERE sha256 = ? LIMIT 1", (sha256,))
        return bool(cast(list[Any], rows))

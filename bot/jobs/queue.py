"""Durable job queue on the store: enqueue, claim with a lease, heartbeat, finish, retry, dead-letter."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from bot.store import JobRow, Store

__all__ = ["LeaseLost", "Queue", "default_jitter"]


class LeaseLost(RuntimeError):
    """The worker no longer holds the job: its lease expired and another worker took it, or it was cancelled.

    The worker must stop working on the job and must not publish anything for it.
    """

    def __init__(self, job_id: int, worker_id: str) -> None:
        super().__init__(f"worker {worker_id!r} no longer holds the lease on job {job_id}")
        self.job_id = job_id
        self.worker_id = worker_id


def default_jitter(delay: float) -> float:
    """Up to 10% extra delay, so that jobs failing together do not all retry in the same instant."""
    return random.uniform(0.0, 0.1 * delay)


class Queue:
    """Job state machine on the store.

    queued --claim--> running --finish--> done | failed
                      running --fail----> queued (after a backoff) | dead (attempts used up, or not retryable)
                      running --lease expires, claim--> running (another attempt) | dead (attempts used up)
    queued | running --cancel--> cancelled

    A job whose lease expires was not heartbeated in time (its worker died or hung); the next claim takes it
    over, and from then on the old worker's heartbeat, finish and fail raise LeaseLost.
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float] | None = None,
        backoff_base: float = 30.0,
        backoff_cap: float = 3600.0,
        jitter: Callable[[float], float] = default_jitter,
    ) -> None:
        """`clock` (epoch seconds) defaults to the store's; `jitter(delay)` returns extra seconds to add."""
        self.store = store
        self.clock = clock if clock is not None else store.clock
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.jitter = jitter

    def enqueue(
        self,
        kind: str,
        issue_id: int | None,
        payload: Mapping[str, Any],
        *,
        concurrency_key: str | None,
        max_attempts: int = 3,
        dedupe_key: str | None = None,
        delay: float = 0.0,
        labels: list[str] | None = None,
        tenant: str | None = None,
    ) -> int:
        """Queue a job and return its id.

        concurrency_key: at most one job per key runs at a time (e.g. "github:owner/repo#12"); None: no limit.
        dedupe_key: enqueueing the same key again returns the existing job (whatever its status) instead.
        delay: seconds before the job may first be claimed.
        labels: a job for a self-hosted runner that has all these labels (bot/selfhosted/api.py); never a worker's.
        tenant: whose runner job it is (bot/store/tenants.py): only runners with it in their scope take it;
            None: the deployment's own job, for runners registered for the whole deployment.
        """
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        now = self.clock()
        job_id, _created = self.store.jobs.insert_job(
            kind,
            issue_id,
            payload,
            concurrency_key=concurrency_key,
            max_attempts=max_attempts,
            dedupe_key=dedupe_key,
            now=now,
            run_after=now + delay,
            labels=labels,
            tenant=tenant,
        )
        return job_id

    def claim(self, worker_id: str, lease_seconds: float = 60.0) -> JobRow | None:
        """Lease the oldest runnable job to `worker_id` for `lease_seconds`, or return None if there is none.

        Also takes over running jobs whose lease expired; that counts as another attempt. Webhook deliveries
        waiting in the inbox are promoted to jobs first, so a claim always sees what was acknowledged.
        """
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, not {lease_seconds}")
        self.promote()
        return self.store.jobs.claim_job(worker_id, now=self.clock(), lease_seconds=lease_seconds)

    def promote(self) -> list[int]:
        """Queue the jobs planned by acknowledged webhook deliveries (see `Store.deliveries.promote_deliveries`)."""
        return self.store.deliveries.promote_deliveries()

    def start_inline(
        self, kind: str, issue_id: int | None, payload: Mapping[str, Any], worker_id: str, lease_seconds: float
    ) -> JobRow:
        """Enqueue a job and lease it at once to `worker_id`: the CLI and the eval harness run jobs inline,
        yet they go through the same state machine (and leave the same record) as a worker's jobs."""
        job_id = self.enqueue(kind, issue_id, payload, concurrency_key=None, max_attempts=1)
        job = self.store.jobs.claim_job_by_id(job_id, worker_id, now=self.clock(), lease_seconds=lease_seconds)
        assert job is not None  # the job was queued a moment ago and nobody else knows its id
        return job

    def heartbeat(self, job_id: int, worker_id: str, lease_seconds: float = 60.0) -> None:
        """Extend the lease to now + lease_seconds; raises LeaseLost if the worker no longer holds the job."""
        if not self.store.jobs.extend_lease(job_id, worker_id, now=self.clock(), lease_seconds=lease_seconds):
            raise LeaseLost(job_id, worker_id)

    def finish(self, job_id: int, worker_id: str, result: Any = None, *, failed: bool = False) -> None:
        """Record the job's result: 'done', or 'failed' when the work completed without a usable outcome.

        Raises LeaseLost if the worker no longer holds the job; its result is then discarded.
        """
        status = "failed" if failed else "done"
        if not self.store.jobs.release_job(job_id, worker_id, status=status, now=self.clock(), result=result):
            raise LeaseLost(job_id, worker_id)

    def fail(self, job_id: int, worker_id: str, error: str, retryable: bool = True) -> JobRow:
        """Record an error: requeue with exponential backoff, or dead-letter the job (keeping the error)
        when it is not retryable or has used all its attempts. Returns the job as it now stands.

        Raises LeaseLost if the worker no longer holds the job.
        """
        job = self.store.jobs.get_job(job_id)
        if job is None or job.status != "running" or job.lease_owner != worker_id:
            raise LeaseLost(job_id, worker_id)
        now = self.clock()
        if retryable and job.attempts < job.max_attempts:
            run_after = now + self.backoff_delay(job.attempts)
            ok = self.store.jobs.release_job(
                job_id, worker_id, status="queued", now=now, error=error, run_after=run_after
            )
        else:
            ok = self.store.jobs.release_job(job_id, worker_id, status="dead", now=now, error=error)
        # The lease can still be lost between the read above and the write: the write checks it again.
        if not ok:
            raise LeaseLost(job_id, worker_id)
        updated = self.store.jobs.get_job(job_id)
        assert updated is not None  # jobs are never deleted
        return updated

    def backoff_delay(self, attempts: int) -> float:
        """Seconds to wait after failed attempt number `attempts`: base * 2^(attempts-1), capped, + jitter."""
        delay = min(self.backoff_cap, self.backoff_base * 2 ** max(0, attempts - 1))
        return delay + self.jitter(delay)

    def cancel(self, job_id: int) -> bool:
        """Cancel a queued or running job (its worker then gets LeaseLost); False if already finished."""
        return self.store.jobs.cancel_job(job_id, now=self.clock())

    def count_running(self) -> int:
        """Jobs running under a live lease, for a worker pool that enforces a global limit."""
        return self.store.jobs.count_running(now=self.clock())

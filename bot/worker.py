"""The worker: claims jobs with a lease, heartbeats them, runs GitHub jobs, never dies on one bad job."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
from gidgethub import BadRequest

from bot import metrics
from bot.forges.base import Forge, PermanentJobError
from bot.forges.github import create_trigger_labels, forge_for_job
from bot.forges.github_client import InstallationTokens
from bot.forges.jira import jira_forge_for_job
from bot.jobs.publish import JobDeps, run_forge_job
from bot.jobs.queue import LeaseLost, Queue
from bot.mojira.poller import poll_periodically
from bot.settings.config import Settings
from bot.store import JobRow, Store, forbid_store_calls_on_loop
from sandboxes import cache_prune
from sandboxes.reaper import reap_periodically

log = logging.getLogger(__name__)

#: Seconds between two prunings of old delivery bodies by one worker.
PRUNE_INTERVAL = 3600.0


@dataclass
class WorkerDeps:
    """What the worker's jobs share: settings, store, one HTTP session and the installation-token cache."""

    settings: Settings
    store: Store
    session: aiohttp.ClientSession
    tokens: InstallationTokens


async def _run_on_its_forge(job: JobRow, deps: WorkerDeps) -> dict[str, Any]:
    """Make the job's forge from its payload, then run it through the forge-neutral publish module."""
    forge: Forge
    if job.kind.startswith("jira."):
        jira = await jira_forge_for_job(job.id, job.payload, deps.settings, deps.session, deps.tokens)
        if job.kind == "jira.merged":  # no pipeline: only the mapping's `pr_merged` transition
            return await jira.after_merge()
        forge = jira
    elif job.kind == "github.labels":  # an installation's repository: its trigger labels, no issue, no pipeline
        return await create_trigger_labels(job.id, job.payload, deps.settings, deps.session, deps.tokens)
    elif job.kind.startswith("github."):
        forge = await forge_for_job(job.id, job.payload, deps.settings, deps.session, deps.tokens)
    else:
        raise PermanentJobError(f"unknown job kind {job.kind!r}")
    return await run_forge_job(job, forge, JobDeps(deps.settings, deps.store))


class Worker:
    """Runs up to `concurrency` jobs at once from the store's queue (one per issue, by concurrency key)."""

    def __init__(self, settings: Settings, store: Store, *, concurrency: int | None = None) -> None:
        self.settings = settings
        self.store = store
        self.queue = Queue(store, backoff_base=settings.github_retry_base * 5)
        self.concurrency = max(1, concurrency or settings.workers)
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._running: set[asyncio.Task[None]] = set()
        self._next_prune = 0.0  # the first poll prunes
        #: The cache prune in progress: it walks every environment, so it runs beside the jobs, not before them.
        self.cache_pruning: asyncio.Task[None] | None = None
        #: Polls that failed (and were retried); a healthy store keeps this at 0.
        self.poll_errors = 0

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Claim and run jobs until `stop` is set (or the task is cancelled)."""
        # The loop may also answer webhooks (`serve --workers N`): the store is reached only via a thread.
        with forbid_store_calls_on_loop():
            await self._run(stop or asyncio.Event())

    async def _run(self, stop: asyncio.Event) -> None:
        tokens = InstallationTokens(self.settings)
        async with aiohttp.ClientSession() as session:
            deps = WorkerDeps(self.settings, self.store, session, tokens)
            # Sandboxes of workers killed with SIGKILL (docker containers, quota mounts) go at start and periodically.
            reaper = asyncio.create_task(reap_periodically(self.settings.sandbox_reap_interval))
            # The Mojira poller (issue 15) runs beside the jobs when REPROBOT_MOJIRA_POLL_INTERVAL is set.
            mojira = (
                asyncio.create_task(poll_periodically(self.settings, self.store, stop))
                if self.settings.mojira_poll_interval > 0
                else None
            )
            # PostgreSQL: LISTEN wakes the loop as soon as work arrives; the poll interval stays the fallback.
            wake = asyncio.Event()
            loop = asyncio.get_running_loop()
            listener = self.store.conn.wakeups()
            if listener is not None:
                listener.start(lambda: loop.call_soon_threadsafe(wake.set))
            try:
                while not stop.is_set():
                    try:
                        job = await self._poll()
                    except Exception:  # e.g. a store error: the worker never dies on it; the next poll retries
                        self.poll_errors += 1
                        log.exception(
                            "worker %s: poll failed; retrying after %gs", self.worker_id, self.settings.worker_poll
                        )
                        job = None
                    if job is None:
                        await self._idle(stop, wake)
                        continue
                    task = asyncio.create_task(self.run_one(job, deps))
                    self._running.add(task)
                    task.add_done_callback(self._running.discard)
            finally:
                if listener is not None:
                    await asyncio.to_thread(listener.stop)
                reaper.cancel()
                if mojira is not None:
                    mojira.cancel()
                if self.cache_pruning is not None:
                    self.cache_pruning.cancel()
                for task in list(self._running):
                    task.cancel()
                await asyncio.gather(*self._running, return_exceptions=True)

    async def _idle(self, stop: asyncio.Event, wake: asyncio.Event) -> None:
        """Wait for the poll interval, or less when stopped or woken by a notification."""
        waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())]
        try:
            await asyncio.wait(waiters, timeout=self.settings.worker_poll, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            wake.clear()

    async def _poll(self) -> JobRow | None:
        """Prune if due, then claim a job (promoting the inbox first), or only promote when at capacity."""
        await self._prune_if_due()
        # On a thread: promoting a burst of deliveries, or waiting for another process's write
        # lock, must not stall the loop (`serve --workers N` answers webhooks on it).
        if await self._may_claim():
            return await asyncio.to_thread(self.queue.claim, self.worker_id, self.settings.worker_lease)
        # Still turn acknowledged deliveries into jobs, so status and cancel can see them.
        await asyncio.to_thread(self.queue.promote)
        return None

    async def _prune_if_due(self) -> None:
        """Hourly: drop old delivery bodies, and start keeping the cache folder within its limits."""
        now = self.queue.clock()
        if now < self._next_prune:
            return
        self._next_prune = now + PRUNE_INTERVAL
        days = self.settings.delivery_body_days
        if days > 0:
            dropped = await asyncio.to_thread(self.store.deliveries.prune_delivery_bodies, now - days * 86400)
            if dropped:
                log.info("dropped the bodies of %d deliveries older than %g days", dropped, days)
        if self.cache_pruning is None or self.cache_pruning.done():
            self.cache_pruning = asyncio.create_task(self._prune_caches())

    async def _prune_caches(self) -> None:
        """Remove unused environments and baselines past REPROBOT_CACHE_MAX_DAYS / _MAX_SIZE (on a thread)."""
        settings = self.settings
        if settings.cache_max_size <= 0 and settings.cache_max_days <= 0:
            return
        try:
            report = await asyncio.to_thread(
                cache_prune.prune,
                settings.cache_dir,
                max_bytes=settings.cache_max_size,
                max_days=settings.cache_max_days,
            )
        except OSError as exc:  # a cache folder it cannot read: jobs still run, the next round tries again
            log.warning("cache prune failed: %s", exc)
            return
        if report.removed:
            log.info(
                "cache prune removed %d entries (%d MB); %d MB kept",
                len(report.removed),
                report.freed_bytes // 2**20,
                report.kept_bytes // 2**20,
            )

    async def _may_claim(self) -> bool:
        """Below this process's concurrency and the deployment-wide limit on running jobs."""
        if len(self._running) >= self.concurrency:
            return False
        limit = self.settings.max_running_jobs
        return limit <= 0 or await asyncio.to_thread(self.queue.count_running) < limit

    async def _heartbeat(self, job: JobRow, work: asyncio.Task[dict[str, object]]) -> None:
        while True:
            await asyncio.sleep(self.settings.worker_lease / 3)
            try:
                await asyncio.to_thread(self.queue.heartbeat, job.id, self.worker_id, self.settings.worker_lease)
            except LeaseLost:
                log.warning("job %s: lease lost (expired or cancelled); stopping it", job.id)
                work.cancel()
                return

    async def run_one(self, job: JobRow, deps: WorkerDeps) -> None:
        """Run one claimed job to a recorded end: done, retry later, or dead-lettered with its error."""
        with forbid_store_calls_on_loop():  # its tasks inherit the mark
            await self._run_one(job, deps)

    async def _run_one(self, job: JobRow, deps: WorkerDeps) -> None:
        log.info("job %s (%s, attempt %s) started by %s", job.id, job.kind, job.attempts, self.worker_id)
        started = time.monotonic()
        outcome = "lease_lost"
        work = asyncio.create_task(_run_on_its_forge(job, deps))
        beat = asyncio.create_task(self._heartbeat(job, work))
        try:
            result = await work
        except asyncio.CancelledError:
            if work.cancelled() and beat.done():
                return  # lease lost: another worker owns the job now, and publishes for it
            raise
        except (PermanentJobError, BadRequest) as exc:  # bad payload or a final 4xx: retrying cannot help
            outcome = await self._fail(job, f"{type(exc).__name__}: {exc}", retryable=False)
        except Exception as exc:  # the worker never dies on one bad job: record it and move on
            outcome = await self._fail(
                job, "".join(traceback.format_exception_only(exc)).strip() + "\n" + traceback.format_exc(-3)
            )
        else:
            try:
                await asyncio.to_thread(self.queue.finish, job.id, self.worker_id, result)
                outcome = str(result.get("status") or "done")
                log.info("job %s finished: %s", job.id, result.get("status"))
            except LeaseLost:
                log.warning("job %s: finished after its lease was lost; result dropped", job.id)
        finally:
            beat.cancel()
            metrics.observe_job(job.kind, outcome, time.monotonic() - started)

    async def _fail(self, job: JobRow, error: str, retryable: bool = True) -> str:
        """Record the failure; returns the outcome for the metrics: retry, failed, dead or lease_lost."""
        try:
            after = await asyncio.to_thread(self.queue.fail, job.id, self.worker_id, error[-4000:], retryable=retryable)
            log.warning("job %s failed (%s): %s", job.id, after.status, error.splitlines()[0] if error else "")
        except LeaseLost:
            log.warning("job %s failed after its lease was lost", job.id)
            return "lease_lost"
        return "retry" if after.status == "queued" else str(after.status)


async def run_worker(settings: Settings, concurrency: int | None = None) -> None:
    """`reprobot worker`: open the store and run a worker until interrupted."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await asyncio.to_thread(Store.open, settings.store_target)
    stop = asyncio.Event()
    # SIGTERM (a deploy, `kill`) stops claiming; running jobs are cancelled and taken over when their lease ends.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    if settings.metrics_port:
        # Per-process endpoint for workers on other hosts (pods): see bot/metrics.py.
        metrics.serve_worker_metrics(settings.metrics_port)
        log.info("worker /metrics and /healthz on :%d", settings.metrics_port)
    try:
        await Worker(settings, store, concurrency=concurrency).run(stop)
    finally:
        await asyncio.to_thread(store.close)

"""The worker's limits and its resilience: global running-job limit, one bad job never kills the worker."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from bot.settings.config import Settings
from bot.store import Store
from bot.worker import Worker
from tests.fakes.github_manifest import throwaway_pem


def _settings(settings: Settings, **kw: object) -> Settings:
    return replace(settings, github_app_id="1", github_private_key=throwaway_pem(), worker_poll=0.05, **kw)  # type: ignore[arg-type]


async def _run_briefly(worker: Worker, seconds: float = 0.5) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(seconds)
    stop.set()
    await task


async def test_global_limit_counts_other_workers_jobs(tmp_path: Path, settings: Settings) -> None:
    store = Store.open(tmp_path / "s.db")
    worker = Worker(_settings(settings, max_running_jobs=1), store)
    busy = worker.queue.enqueue("github.reply", None, {}, concurrency_key=None)
    assert worker.queue.claim("someone-else", 60) is not None and busy
    waiting = worker.queue.enqueue("github.reply", None, {}, concurrency_key=None)
    await _run_briefly(worker)
    job = store.jobs.get_job(waiting)
    assert job is not None and job.status == "queued" and job.attempts == 0


async def test_bad_jobs_are_dead_lettered_and_the_worker_goes_on(tmp_path: Path, settings: Settings) -> None:
    store = Store.open(tmp_path / "s.db")
    worker = Worker(_settings(settings), store)
    bad = [
        worker.queue.enqueue("github.fix", None, {"repo": "o/r"}, concurrency_key=None),  # no installation
        worker.queue.enqueue("github.fix", None, {"installation_id": "x"}, concurrency_key=None),
    ]
    await _run_briefly(worker)
    for job_id in bad:
        job = store.jobs.get_job(job_id)
        assert job is not None and job.status == "dead" and "payload" in (job.last_error or "")


async def test_the_worker_drops_old_delivery_bodies_and_promotes_the_inbox(tmp_path: Path, settings: Settings) -> None:
    from bot.store import PlannedJob

    path = tmp_path / "s.db"
    long_ago = Store.open(path, clock=lambda: 1_000_000.0)
    # No installation in the payload: the job is dead-lettered before it could call any API.
    job = PlannedJob("github.reply", "github", "o/r", "1", {"text": "hi"}, None, None)
    long_ago.deliveries.accept_delivery("old", "github", "issue_comment", [job], b'{"big": "body"}')
    long_ago.close()
    store = Store.open(path)
    store.deliveries.accept_delivery("recent", "github", "issue_comment", [], b'{"kept": true}')
    worker = Worker(_settings(settings, delivery_body_days=7, github_api_url="http://127.0.0.1:9"), store)
    await _run_briefly(worker, 0.3)
    old, recent = store.deliveries.get_delivery("old"), store.deliveries.get_delivery("recent")
    assert old is not None and old.payload is None and old.promoted_at is not None and old.job_id is not None
    assert recent is not None and recent.payload == '{"kept": true}'

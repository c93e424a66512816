"""store.views: the dashboard's and /metrics' queries (filters, queue ages, runners and their leases)."""

from __future__ import annotations

import pytest

from bot.jobs.queue import Queue
from bot.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_list_jobs_filters_and_queue_stats() -> None:
    clock = Clock()
    store = Store.memory(clock=clock)
    a = store.publications.upsert_issue("github", "octo/a", "1", title="a")
    b = store.publications.upsert_issue("github", "octo/b", "2", title="b")
    queue = Queue(store, clock=clock)
    first = queue.enqueue("github.issue", a.id, {}, concurrency_key="a1")
    clock.now += 30
    queue.enqueue("github.command", b.id, {}, concurrency_key="b2")
    queue.enqueue("github.issue", b.id, {}, concurrency_key="b3", delay=600)  # not runnable yet: not counted in age
    clock.now += 10
    listing = store.views.list_jobs(repo="octo/a")
    assert [(r.job.id, r.issue.repo if r.issue else None) for r in listing] == [(first, "octo/a")]
    assert {r.job.kind for r in store.views.list_jobs(kind="github.issue")} == {"github.issue"}
    assert len(store.views.list_jobs(status="queued")) == 3 and store.views.list_jobs(status="done") == []
    assert store.views.filter_choices() == {
        "repo": ["octo/a", "octo/b"],
        "kind": ["github.command", "github.issue"],
        "status": ["queued"],
    }
    stats = {(s.kind, s.status): s for s in store.views.queue_stats(now=clock.now)}
    assert stats[("github.issue", "queued")].count == 2
    assert stats[("github.issue", "queued")].oldest_age == pytest.approx(40.0)
    assert stats[("github.command", "queued")].oldest_age == pytest.approx(10.0)
    job = queue.claim("w", 60)
    assert job is not None and job.id == first
    queue.finish(job.id, "w", {"status": "fixed"})
    stats = {(s.kind, s.status): s.count for s in store.views.queue_stats(now=clock.now)}
    assert stats[("github.issue", "done")] == 1 and stats[("github.issue", "queued")] == 1


def test_runners_with_their_leases() -> None:
    clock = Clock()
    store = Store.memory(clock=clock)
    if not hasattr(store, "runners"):
        assert store.views.runners(now=clock.now) == []  # no runners table in this store: nothing, no error
        pytest.skip("this store has no runners (the runner branch adds them); checked that the view is empty")
    online = store.runners.add_runner("phone-1", "tok-1", ["android"], "1.0", ephemeral=False, scope=["deployment"])
    clock.now += 3600
    stale = store.runners.add_runner("pc-2", "tok-2", ["minecraft"], "1.0", ephemeral=False, scope=["deployment"])
    store.runners.touch(online)
    queue = Queue(store, clock=clock)
    queue.enqueue("runner.reproduce", None, {}, concurrency_key="r1")
    job = queue.claim(f"runner:{online}", 120)
    assert job is not None
    views = {r.id: r for r in store.views.runners(now=clock.now)}
    assert views[online].online and views[online].leases == 1 and views[online].labels == ["android"]
    assert views[stale].leases == 0
    assert not store.views.runners(now=clock.now + 7200)[0].online

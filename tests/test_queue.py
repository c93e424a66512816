"""Queue tests on real SQLite files: leases, reclaim, backoff, dead-letter, concurrency keys, races."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.jobs.queue import LeaseLost, Queue
from bot.store import JobRow, Store, iso

# Every test runs on both engines (tests/conftest.py `engine`): SQLite, and a real PostgreSQL server.
pytestmark = pytest.mark.usefixtures("engine")
StoreTarget = Callable[[Path], "Path | str"]

REPO_ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000.0


class FakeClock:
    """Time that moves only when the test says so."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    with Store.open(tmp_path / "queue.db", clock=clock) as s:
        yield s


@pytest.fixture
def queue(store: Store) -> Queue:
    return Queue(store, backoff_base=10.0, backoff_cap=100.0, jitter=lambda delay: 0.0)


def _job(store: Store, job_id: int) -> JobRow:
    job = store.jobs.get_job(job_id)
    assert job is not None
    return job


def test_enqueue_claim_finish(queue: Queue, store: Store) -> None:
    job_id = queue.enqueue("fix", None, {"n": 1}, concurrency_key="github:o/r#1")
    job = queue.claim("w1", lease_seconds=30)
    assert job is not None and job.id == job_id
    assert (job.status, job.attempts, job.lease_owner, job.payload) == ("running", 1, "w1", {"n": 1})
    assert job.lease_expires_at == iso(T0 + 30)
    assert queue.claim("w2") is None
    assert queue.count_running() == 1
    queue.finish(job_id, "w1", {"pr": 41})
    done = _job(store, job_id)
    assert (done.status, done.result, done.terminal) == ("done", {"pr": 41}, True)
    assert queue.count_running() == 0


def test_finish_can_record_a_failed_outcome(queue: Queue, store: Store) -> None:
    job_id = queue.enqueue("reproduce", None, {}, concurrency_key=None)
    assert queue.claim("w1") is not None
    queue.finish(job_id, "w1", {"reproduced": False}, failed=True)
    assert _job(store, job_id).status == "failed"


def test_oldest_runnable_first_and_delay_respected(queue: Queue, clock: FakeClock) -> None:
    later = queue.enqueue("fix", None, {}, concurrency_key=None, delay=60)
    now = queue.enqueue("fix", None, {}, concurrency_key=None)
    newest = queue.enqueue("fix", None, {}, concurrency_key=None)
    assert [j.id for j in (queue.claim("w"), queue.claim("w")) if j] == [now, newest]
    assert queue.claim("w") is None
    clock.advance(60)
    job = queue.claim("w")
    assert job is not None and job.id == later


def test_dedupe_key_makes_enqueue_idempotent(queue: Queue, store: Store) -> None:
    first = queue.enqueue("fix", None, {"a": 1}, concurrency_key="k", dedupe_key="github:delivery-1")
    again = queue.enqueue("fix", None, {"a": 2}, concurrency_key="k", dedupe_key="github:delivery-1")
    assert again == first
    assert queue.claim("w") is not None
    queue.finish(first, "w")
    assert queue.enqueue("fix", None, {}, concurrency_key="k", dedupe_key="github:delivery-1") == first
    other = queue.enqueue("fix", None, {}, concurrency_key="k", dedupe_key="github:delivery-2")
    assert other != first
    assert len(store.jobs.list_jobs()) == 2
    assert _job(store, first).payload == {"a": 1}


def test_expired_lease_is_reclaimed_as_another_attempt(queue: Queue, store: Store, clock: FakeClock) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key="k")
    assert queue.claim("w1", lease_seconds=30) is not None
    clock.advance(29)
    assert queue.claim("w2", lease_seconds=30) is None  # lease still live
    clock.advance(2)
    assert queue.count_running() == 0  # expired: awaiting reclaim
    job = queue.claim("w2", lease_seconds=30)
    assert job is not None and job.id == job_id
    assert (job.attempts, job.lease_owner) == (2, "w2")
    assert job.last_error is not None and "expired" in job.last_error
    for stale in (
        lambda: queue.heartbeat(job_id, "w1"),
        lambda: queue.finish(job_id, "w1", {"stale": True}),
        lambda: queue.fail(job_id, "w1", "stale"),
    ):
        with pytest.raises(LeaseLost) as info:
            stale()
        assert (info.value.job_id, info.value.worker_id) == (job_id, "w1")
    queue.finish(job_id, "w2", {"ok": True})
    assert _job(store, job_id).result == {"ok": True}


def test_heartbeat_keeps_the_job(queue: Queue, store: Store, clock: FakeClock) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key=None)
    assert queue.claim("w1", lease_seconds=30) is not None
    for _ in range(5):
        clock.advance(20)
        queue.heartbeat(job_id, "w1", lease_seconds=30)
        assert queue.claim("w2", lease_seconds=30) is None
    job = _job(store, job_id)
    assert (job.lease_owner, job.attempts, job.lease_expires_at) == ("w1", 1, iso(clock.t + 30))


def test_late_heartbeat_wins_when_nobody_took_the_job(queue: Queue, store: Store, clock: FakeClock) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key=None)
    assert queue.claim("w1", lease_seconds=30) is not None
    clock.advance(45)
    queue.heartbeat(job_id, "w1", lease_seconds=30)
    assert queue.claim("w2") is None
    assert _job(store, job_id).attempts == 1


def test_retry_with_exponential_backoff_then_dead_letter(queue: Queue, store: Store, clock: FakeClock) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key="k", max_attempts=3)
    for attempt, backoff in ((1, 10.0), (2, 20.0)):
        job = queue.claim("w")
        assert job is not None and job.attempts == attempt
        requeued = queue.fail(job_id, "w", f"boom {attempt}")
        assert (requeued.status, requeued.last_error) == ("queued", f"boom {attempt}")
        assert requeued.run_after == iso(clock.t + backoff)
        clock.advance(backoff - 0.5)
        assert queue.claim("w") is None
        clock.advance(0.5)
    job = queue.claim("w")
    assert job is not None and job.attempts == 3
    dead = queue.fail(job_id, "w", "boom 3")
    assert (dead.status, dead.last_error, dead.attempts) == ("dead", "boom 3", 3)
    clock.advance(10_000)
    assert queue.claim("w") is None


def test_non_retryable_error_dead_letters_at_once(queue: Queue) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key=None, max_attempts=5)
    assert queue.claim("w") is not None
    dead = queue.fail(job_id, "w", "invalid policy: unknown key 'trajectorys'", retryable=False)
    assert (dead.status, dead.attempts) == ("dead", 1)
    assert dead.last_error == "invalid policy: unknown key 'trajectorys'"


def test_backoff_is_capped_and_jitter_is_injectable(store: Store, clock: FakeClock) -> None:
    queue = Queue(store, backoff_base=10.0, backoff_cap=100.0, jitter=lambda delay: delay / 2)
    assert [queue.backoff_delay(n) for n in (1, 2, 3, 4, 5, 9)] == [15.0, 30.0, 60.0, 120.0, 150.0, 150.0]
    job_id = queue.enqueue("fix", None, {}, concurrency_key=None)
    assert queue.claim("w") is not None
    assert queue.fail(job_id, "w", "x").run_after == iso(clock.t + 15.0)
    default = Queue(store, backoff_base=10.0, backoff_cap=100.0)
    assert all(10.0 <= default.backoff_delay(1) <= 11.0 for _ in range(50))


def test_worker_lost_on_the_last_attempt_dead_letters(queue: Queue, store: Store, clock: FakeClock) -> None:
    job_id = queue.enqueue("fix", None, {}, concurrency_key=None, max_attempts=2)
    assert queue.claim("w1", lease_seconds=10) is not None
    clock.advance(11)
    job = queue.claim("w2", lease_seconds=10)
    assert job is not None and job.attempts == 2
    clock.advance(11)
    assert queue.claim("w3") is None
    dead = _job(store, job_id)
    assert dead.status == "dead"
    assert dead.last_error is not None and "worker lost" in dead.last_error


def test_one_running_job_per_concurrency_key(queue: Queue, clock: FakeClock) -> None:
    a = queue.enqueue("fix", None, {}, concurrency_key="github:o/r#1")
    b = queue.enqueue("reproduce", None, {}, concurrency_key="github:o/r#1")
    c = queue.enqueue("fix", None, {}, concurrency_key="github:o/r#2")
    free = queue.enqueue("fix", None, {}, concurrency_key=None)
    claimed = [queue.claim(f"w{i}", lease_seconds=30) for i in range(4)]
    assert [j.id if j else None for j in claimed] == [a, c, free, None]
    # a's worker dies while the others heartbeat: a's expired lease is reclaimed before b may start.
    clock.advance(31)
    queue.heartbeat(c, "w1")
    queue.heartbeat(free, "w2")
    job = queue.claim("w5", lease_seconds=30)
    assert job is not None and (job.id, job.attempts) == (a, 2)
    assert queue.claim("w6") is None
    queue.finish(a, "w5")
    job = queue.claim("w6")
    assert job is not None and job.id == b


def test_cancel_stops_queued_and_running_jobs(queue: Queue, store: Store) -> None:
    queued = queue.enqueue("fix", None, {}, concurrency_key=None, delay=5)
    running = queue.enqueue("fix", None, {}, concurrency_key=None)
    assert queue.claim("w") is not None
    assert queue.cancel(queued) and queue.cancel(running)
    with pytest.raises(LeaseLost):
        queue.heartbeat(running, "w")
    assert {_job(store, j).status for j in (queued, running)} == {"cancelled"}
    assert queue.cancel(running) is False and queue.cancel(9999) is False
    assert queue.claim("w") is None


def test_invalid_arguments_are_rejected(queue: Queue) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        queue.enqueue("fix", None, {}, concurrency_key=None, max_attempts=0)
    with pytest.raises(ValueError, match="lease_seconds"):
        queue.claim("w", lease_seconds=0)


def test_jobs_survive_a_restart_and_a_dead_worker(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "restart.db"
    with Store.open(path, clock=clock) as store:
        queue = Queue(store)
        job_id = queue.enqueue("fix", None, {"issue": 12}, concurrency_key="k")
        assert queue.claim("old-process", lease_seconds=60) is not None
    # The process died without finishing; a new one starts on the same file.
    clock.advance(61)
    with Store.open(path, clock=clock) as store:
        job = Queue(store).claim("new-process")
        assert job is not None and (job.id, job.attempts, job.payload) == (job_id, 2, {"issue": 12})


def test_two_connections_racing_never_double_claim(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    n_jobs = 120
    with Store.open(path) as store:
        queue = Queue(store)
        ids = [queue.enqueue("fix", None, {"i": i}, concurrency_key=None) for i in range(n_jobs)]
    claimed: list[list[int]] = [[], []]
    barrier = threading.Barrier(2)

    def work(slot: int) -> None:
        with Store.open(path) as own_store:  # a separate connection, as a separate process would have
            own_queue = Queue(own_store)
            barrier.wait()
            while (job := own_queue.claim(f"w{slot}", lease_seconds=300)) is not None:
                claimed[slot].append(job.id)
                own_queue.finish(job.id, f"w{slot}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = claimed[0] + claimed[1]
    assert sorted(everything) == ids  # each job exactly once
    with Store.open(path) as store:
        assert {(j.status, j.attempts) for j in store.jobs.list_jobs(limit=n_jobs)} == {("done", 1)}


_CLAIMER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bot.jobs.queue import Queue
    from bot.store import Store

    db, worker, ready, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    store = Store.open(db if "://" in db else Path(db))
    queue = Queue(store)
    ready.touch()
    while not go.exists():
        time.sleep(0.005)
    while (job := queue.claim(worker, lease_seconds=300)) is not None:
        print(job.id, flush=True)
        queue.finish(job.id, worker)
    store.close()
    """
)


def test_separate_processes_racing_never_double_claim(tmp_path: Path, store_target: StoreTarget) -> None:
    path = tmp_path / "procs.db"
    n_jobs, n_procs = 150, 3
    with Store.open(path) as store:
        queue = Queue(store)
        ids = [queue.enqueue("fix", None, {}, concurrency_key=None) for _ in range(n_jobs)]
    script = tmp_path / "claimer.py"
    script.write_text(_CLAIMER)
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(n_procs)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(store_target(path)), f"proc-{i}", str(ready[i]), str(go)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n_procs)
    ]
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready):
            assert time.monotonic() < deadline, "claimer processes did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()  # release all claimers at once
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * n_procs, [err for _, err in outputs]
    claimed = [int(line) for out, _ in outputs for line in out.split()]
    assert sorted(claimed) == ids  # each job exactly once across processes
    with Store.open(path) as store:
        assert {(j.status, j.attempts) for j in store.jobs.list_jobs(limit=n_jobs)} == {("done", 1)}

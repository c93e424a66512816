"""The runner protocol with real processes on 127.0.0.1: `reprobot serve` and `reprobot runner` subprocesses."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.jobs.queue import Queue
from bot.store import JobRow, Store, iso
from bot.store.runners import runner_owner
from tests.runner_procs import ADMIN, REGISTRATION, REPROBOT, Runners, serve, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[tuple[str, Store, Runners]]:
    """The bot's server (a subprocess), its store opened beside it, and a runner launcher."""
    data = tmp_path / "data"
    with serve(data, tmp_path / "serve.log") as url:
        store = Store.open(data / "reprobot.db")
        runners = Runners(url, tmp_path / "runners")
        try:
            yield url, store, runners
        finally:
            runners.stop_all()
            store.close()


def _job(store: Store, job_id: int) -> JobRow:
    job = store.jobs.get_job(job_id)
    assert job is not None
    return job


def _runner_id(store: Store, name: str) -> int:
    ids = [r.id for r in store.runners.list_runners() if r.name == name]
    assert len(ids) == 1, store.runners.list_runners()
    return ids[0]


def _probe(store: Store, labels: list[str], seconds: float = 0.0) -> int:
    return Queue(store).enqueue(
        "runner.probe", None, {"task": {"seconds": seconds}}, concurrency_key=None, labels=labels
    )


def test_runners_get_only_jobs_whose_labels_they_all_have(bot: tuple[str, Store, Runners]) -> None:
    url, store, runners = bot
    web, android, web_gpu = _probe(store, ["web"]), _probe(store, ["android"]), _probe(store, ["web", "gpu"])
    runners.start("browser", "web,chromium")
    runners.start("phone", "android,api-34")
    wait_until(lambda: _job(store, web).status == "done" and _job(store, android).status == "done", "both jobs")

    assert _job(store, web).lease_owner == runner_owner(_runner_id(store, "browser"))
    assert _job(store, android).lease_owner == runner_owner(_runner_id(store, "phone"))
    # Nobody has both web and gpu: the job waits, and no worker would take it either.
    assert _job(store, web_gpu).status == "queued"
    assert Queue(store).claim("a-worker") is None
    # The probe's result, its log (sent in numbered chunks) and its artifacts reached the server.
    result = _job(store, web).result
    assert result["status"] == "ok" and result["python"]
    assert "probe: done" in store.runners.job_log(web)
    names = {a.name for a in store.runners.artifacts(web)}
    assert {"probe.json", "runner.log"} <= names
    art = next(a for a in store.runners.artifacts(web) if a.name == "probe.json")
    served = httpx.get(f"{url}/artifacts/{art.sha256}/probe.json")
    assert served.status_code == 200 and served.json()["python"] == result["python"]

    listing = httpx.get(f"{url}/api/runners", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    assert sorted((r["name"], tuple(r["labels"])) for r in listing["runners"]) == [
        ("browser", ("chromium", "web")),
        ("phone", ("android", "api-34")),
    ]
    assert all(r["last_seen_at"] and r["jobs_taken"] == 1 for r in listing["runners"])
    # An ephemeral runner takes one job, exits 0, and is removed.
    solo = [_probe(store, ["solo"]), _probe(store, ["solo"])]
    eph = runners.start("once", "solo", "--ephemeral")
    assert eph.wait(60) == 0
    assert [_job(store, j).status for j in solo] == ["done", "queued"]
    assert "once" not in {r.name for r in store.runners.list_runners()}
    # The runner's token is stored hashed only.
    state = (runners.root / "browser" / "state.json").read_text()
    assert "rbr_" in state and "rbr_" not in str(list(store.db.query("SELECT * FROM runners")))


def test_cancel_reaches_a_running_job_sigterm_then_sigkill(bot: tuple[str, Store, Runners], tmp_path: Path) -> None:
    _url, store, runners = bot
    # An executor that ignores SIGTERM, so only the SIGKILL after the grace period can stop it.
    script = 'echo $$ > "$1/../pid"; trap "" TERM; echo started; while :; do sleep 0.2; done'
    job_id = _probe(store, ["web"])
    runners.start("r1", "web", "--exec", f"runner.probe=sh -c '{script}'")
    pid_file = wait_until(lambda: next((runners.root / "r1" / "work").glob("job-*/pid"), None), "the job to start")
    pid = int(wait_until(lambda: pid_file.read_text().strip(), "the pid"))
    wait_until(lambda: "started" in store.runners.job_log(job_id), "the job's first log chunk")

    assert Queue(store).cancel(job_id)  # what `/reprobot cancel` does
    wait_until(lambda: not _alive(pid), "the cancelled job's process to be killed", timeout=20)
    wait_until(lambda: "cancelled by the server" in runners.log("r1"), "the runner to log the cancellation")
    assert "still running after SIGTERM and 1s of grace: SIGKILL" in runners.log("r1")
    assert _job(store, job_id).status == "cancelled"
    # The runner goes on taking jobs.
    after = _probe(store, ["web"])
    Queue(store).cancel(after)
    assert runners.procs["r1"].poll() is None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie (dead, not yet reaped) counts as dead
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _register(url: str, token: str, labels: list[str], **extra: object) -> httpx.Response:
    body = {"name": "t", "labels": labels, "version": "test", "scope": "deployment", **extra}
    return httpx.post(f"{url}/api/runners/register", json=body, headers={"Authorization": f"Bearer {token}"})


def test_tokens_a_runner_touches_only_its_own_jobs(bot: tuple[str, Store, Runners], tmp_path: Path) -> None:
    url, store, _ = bot
    assert _register(url, "wrong", ["web"]).status_code == 401
    refused = subprocess.run(
        [*REPROBOT, "runner", "--server", url, "--token", "wrong", "--labels", "web", "--state", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "registration refused: HTTP 401: bad registration token" in refused.stderr
    a, b = _register(url, REGISTRATION, ["web"]), _register(url, REGISTRATION, ["web"])
    assert a.status_code == b.status_code == 201
    assert a.json()["intervals"]["lease"] == 2 and a.json()["intervals"]["claim_wait"] == 1
    ha = {"Authorization": f"Bearer {a.json()['token']}"}
    hb = {"Authorization": f"Bearer {b.json()['token']}"}

    for headers in ({}, {"Authorization": "Bearer rbr_not-a-token"}, {"Authorization": f"Bearer {REGISTRATION}"}):
        assert httpx.post(f"{url}/api/runner/claim", headers=headers).status_code == 401
    assert httpx.get(f"{url}/api/runners", headers=ha).status_code == 401  # the list is the admin's

    job_id = _probe(store, ["web"])
    claimed = httpx.post(f"{url}/api/runner/claim", headers=ha, params={"wait": "1"}, timeout=10)
    assert claimed.status_code == 200
    assert claimed.json()["job"]["id"] == job_id and claimed.json()["lease"]["locked_until"]
    assert httpx.post(f"{url}/api/runner/claim", headers=hb, params={"wait": "0.3"}, timeout=10).status_code == 204

    base = f"{url}/api/runner/jobs/{job_id}"
    assert httpx.get(base, headers=hb).status_code == 404
    assert httpx.post(f"{base}/renew", headers=hb).status_code == 404
    assert httpx.post(f"{base}/logs", headers=hb, json={"seq": 0, "text": "x"}).status_code == 404
    assert httpx.put(f"{base}/artifacts/x.png", headers=hb, content=b"x").status_code == 404
    assert httpx.post(f"{base}/finish", headers=hb, json={"status": "done", "result": {}}).status_code == 404
    assert httpx.get(base, headers={}).status_code == 401
    assert _job(store, job_id).status == "running"

    assert httpx.get(base, headers=ha).json()["job"]["task"] == {"seconds": 0.0}
    renewed = httpx.post(f"{base}/renew", headers=ha).json()
    assert renewed["cancel"] is False and renewed["locked_until"]
    first = {"attempt": 1}  # writes name the attempt of the claim
    for seq in (0, 1, 1):  # a resent chunk is stored once
        chunk = {"seq": seq, "text": f"line {seq}\n"}
        assert httpx.post(f"{base}/logs", headers=ha, params=first, json=chunk).status_code == 200
    assert store.runners.job_log(job_id) == "line 0\nline 1\n"
    too_big = httpx.put(f"{base}/artifacts/big.png", headers=ha, params=first, content=b"x" * (10 * 1024 * 1024 + 1))
    assert too_big.status_code == 413
    assert httpx.put(f"{base}/artifacts/..%2Fescape", headers=ha, params=first, content=b"x").status_code in (400, 404)
    for _ in range(2):  # finish is idempotent
        done = httpx.post(f"{base}/finish", headers=ha, params=first, json={"status": "done", "result": {"n": 1}})
        assert done.status_code == 200 and done.json()["job_status"] == "done"
    assert _job(store, job_id).result == {"n": 1}


def test_ephemeral_runner_takes_one_job_and_a_lapsed_job_dies_after_max_attempts(
    bot: tuple[str, Store, Runners],
) -> None:
    url, store, _ = bot
    eph = _register(url, REGISTRATION, ["web"], ephemeral=True).json()
    he = {"Authorization": f"Bearer {eph['token']}"}
    first, second = _probe(store, ["web"]), _probe(store, ["web"])
    assert (
        httpx.post(f"{url}/api/runner/claim", headers=he, params={"wait": "1"}, timeout=10).json()["job"]["id"] == first
    )
    assert httpx.post(f"{url}/api/runner/claim", headers=he, params={"wait": "0"}).status_code == 409
    finished = httpx.post(
        f"{url}/api/runner/jobs/{first}/finish", headers=he, params={"attempt": 1}, json={"status": "done"}
    )
    assert finished.status_code == 200
    assert httpx.post(f"{url}/api/runner/heartbeat", headers=he).status_code == 401  # removed after its job

    # A job whose runners all vanish is requeued each time its lease lapses, then dead-lettered.
    store.db.execute("UPDATE jobs SET max_attempts = 2 WHERE id = ?", (second,))
    other = _register(url, REGISTRATION, ["web"]).json()
    ho = {"Authorization": f"Bearer {other['token']}"}
    for attempt in (1, 2):
        answer = httpx.post(f"{url}/api/runner/claim", headers=ho, params={"wait": "1"}, timeout=10)
        assert answer.status_code == 200 and answer.json()["job"] == answer.json()["job"] | {"id": second}
        assert answer.json()["job"]["attempt"] == attempt
        wait_until(lambda: _lapsed(store, second), f"the lease of attempt {attempt} to lapse")
    assert httpx.post(f"{url}/api/runner/claim", headers=ho, params={"wait": "0"}).status_code == 204
    job = _job(store, second)
    assert job.status == "dead" and "runner lost" in (job.last_error or "")


def _lapsed(store: Store, job_id: int) -> bool:
    job = _job(store, job_id)
    return job.lease_expires_at is not None and job.lease_expires_at < iso(store.clock())


def test_large_artifacts_and_log_chunks_arrive_whole(bot: tuple[str, Store, Runners]) -> None:
    """A body is read to its end: one read of the stream gives what has arrived so far, often 64 KB of it."""
    url, store, _ = bot
    runner = _register(url, REGISTRATION, ["web"]).json()
    headers = {"Authorization": f"Bearer {runner['token']}"}
    job_id = _probe(store, ["web"])
    assert httpx.post(f"{url}/api/runner/claim", headers=headers, params={"wait": "1"}, timeout=10).status_code == 200
    base, first = f"{url}/api/runner/jobs/{job_id}", {"attempt": 1}
    data = os.urandom(3 * 1024 * 1024)
    stored = httpx.put(f"{base}/artifacts/big.bin", headers=headers, params=first, content=data, timeout=30).json()
    assert stored["size"] == len(data) and stored["sha256"] == hashlib.sha256(data).hexdigest()
    assert httpx.get(f"{url}{stored['url']}", timeout=30).content == data
    text = "x" * 900_000
    chunk = httpx.post(f"{base}/logs", headers=headers, params=first, json={"seq": 0, "text": text}, timeout=30)
    assert chunk.status_code == 200 and store.runners.job_log(job_id) == text

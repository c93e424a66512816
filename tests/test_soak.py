"""The soak suite: fuzzed signed deliveries against `reprobot serve --workers 1`, and kill -9 of `reprobot serve`
and `reprobot worker` under load with redeliveries, against the GitHub double. 127.0.0.1 only, bounded loops.

`make test` runs a short form. `make soak` runs it long: REPROBOT_SOAK_SECONDS (default there 600) is shared
between the fuzz (40%) and the kill (60%) soaks. Each test prints its figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.settings.config import Settings
from bot.store import Store
from tests import netns
from tests.gh_env import GitHubEnv, bot_comments, load_payload
from tests.pg_server import PgServer
from tests.pg_server import running as pg_running
from tests.soak_fuzz import draw_batch
from tests.test_github_crash import _worker_env

pytestmark = [pytest.mark.shared]

#: Seconds of soak in all (0: the short form of `make test`).
SOAK_SECONDS = float(os.environ.get("REPROBOT_SOAK_SECONDS") or 0)
REPO = "octo/app"


def _duration(short: float, share: float) -> float:
    return SOAK_SECONDS * share if SOAK_SECONDS > 0 else short


def _machine_dir(tmp: Path, i: int) -> Path:
    """A worker's own data dir (its "machine"): nothing in it is shared with the other workers."""
    path = tmp / f"machine-{i}"
    path.mkdir(exist_ok=True)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """A bot process (serve or worker) in its own session, so kill -9 takes its whole group."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.argv, self.env, self.log = argv, env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.kills += 1

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _serve(env: GitHubEnv, tmp: Path, port: int, workers: int = 0) -> Proc:
    argv = [sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if workers:
        argv += ["--workers", str(workers)]
    return Proc(argv, _worker_env(env), tmp / f"serve-{port}.log")


def _soak_worker(env: GitHubEnv, tmp: Path, *, name: str = "worker", **extra: str) -> Proc:
    environ = _worker_env(env) | {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "REPROBOT_WORKERS": "4"}
    environ |= {"SOAK_FLAG_DIR": str(tmp)} | extra
    return Proc([sys.executable, "-m", "tests.soak_worker"], environ, tmp / f"{name}.log")


async def _wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.1)
    return predicate()


async def _ready(session: aiohttp.ClientSession, url: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            async with session.get(url + "/readyz") as resp:
                if resp.status == 200:
                    return dict(await resp.json())
        except aiohttp.ClientError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} not ready after {timeout}s")
        await asyncio.sleep(0.1)


def _headers(env: GitHubEnv, event: str, delivery: str, body: bytes) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/soak"}
    return headers | {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery} | env.double.sign(body)


def _figures(name: str, figures: dict[str, Any]) -> None:
    print(f"\nsoak {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def _bases(env: GitHubEnv, issue: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The recorded payloads, as GitHub sent them and rewritten to name the hosted repo and installation."""
    bases: list[tuple[str, dict[str, Any]]] = []
    for event, name in (
        ("issues", "opened"),
        ("issues", "labeled"),
        ("issue_comment", "created"),
        ("installation", "created"),
        ("installation", "deleted"),
        ("pull_request", "closed"),
        ("ping", "payload"),
    ):
        with contextlib.suppress(FileNotFoundError):
            recorded = load_payload(event, name)
            bases.append((event, recorded))
            if "repository" in recorded and "issue" in recorded:
                bases.append((event, env.payload(event, name, REPO, issue)))
    comment = {"id": 4242, "body": "/reprobot help", "author_association": "OWNER"}
    comment["user"] = {"login": "owner", "id": 7, "type": "User"}
    bases.append(("issue_comment", env.payload("issue_comment", "created", REPO, issue, comment=comment)))
    return bases


async def test_soak_fuzzed_signed_deliveries_with_a_worker_running(tmp_path: Path, settings: Settings) -> None:
    duration = _duration(12.0, 0.4)
    async with GitHubEnv(tmp_path, settings) as env:
        env.small_repo_issue()
        issue = env.double.repos[REPO].issues[1]
        bases = _bases(env, issue)
        port = _free_port()
        server = _serve(env, tmp_path, port, workers=1)
        url = f"http://127.0.0.1:{port}"
        server.start()
        statuses: Counter[int] = Counter()
        five_xx: list[tuple[str, int, bytes]] = []
        sent: list[tuple[str, str, bytes]] = []
        try:
            timeout = aiohttp.ClientTimeout(total=30)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                await _ready(session, url)
                limit = asyncio.Semaphore(8)

                async def send(event: str, delivery: str, body: bytes) -> None:
                    async with limit, session.post(url + "/webhooks/github", data=body,
                                                   headers=_headers(env, event, delivery, body)) as resp:  # fmt: skip
                        await resp.read()
                        statuses[resp.status] += 1
                        if resp.status >= 500:
                            five_xx.append((event, resp.status, body[:300]))

                deadline = time.monotonic() + duration
                batch_no = 0
                while time.monotonic() < deadline:
                    batch = await asyncio.to_thread(draw_batch, bases, 40, batch_no)
                    batch_no += 1
                    todo = [(event, str(uuid.uuid4()), body) for event, body in batch]
                    if sent:  # GitHub redelivers: the same id and body again
                        todo += random.sample(sent, min(5, len(sent)))
                    sent += todo
                    await asyncio.gather(*(send(*d) for d in todo))
                    assert server.alive(), "the server process died"
                readyz = await _ready(session, url)
            with Store.open(env.settings.store_path) as store:
                drained = await _wait_for(lambda: store.deliveries.pending_deliveries() == 0, 60)
                unpromoted = store.deliveries.pending_deliveries()
                errors = store.db.conn.execute(
                    "SELECT count(*) FROM deliveries WHERE promote_error IS NOT NULL"
                ).fetchone()[0]
                recorded = store.db.conn.execute("SELECT count(*) FROM deliveries").fetchone()[0]
        finally:
            server.stop()
        log = server.log.read_text(errors="replace")
        figures = {
            "seconds": round(duration),
            "deliveries": len(sent),
            "recorded": recorded,
            "statuses": dict(sorted(statuses.items())),
            "5xx": len(five_xx),
            "worker_deaths": readyz.get("worker_deaths"),
            "poll_errors": log.count("poll failed"),
            "unpromoted": unpromoted,
            "promote_errors": errors,
        }
        _figures("fuzz", figures)
        assert five_xx == [], five_xx[:5]
        assert readyz.get("worker_deaths") == 0 and "died (" not in log, log[-3000:]
        assert "poll failed" not in log, log[-3000:]
        assert drained and unpromoted == 0
        assert statuses[400] > 0 and statuses[202] > 0  # the fuzz reached both sides


async def test_soak_kill9_of_server_and_worker_under_load_loses_and_duplicates_nothing(
    tmp_path: Path, settings: Settings
) -> None:
    await _kill9_soak(tmp_path, settings, machines=1, duration=_duration(20.0, 0.6))


async def test_soak_kill9_of_workers_on_separate_machines_sharing_only_postgresql(
    tmp_path: Path, settings: Settings, pg_server: PgServer
) -> None:
    """Two workers, each with its own data dir (no shared files), reaching each other only through PostgreSQL
    over TCP, killed with -9 again and again under load: nothing lost, nothing run twice, no duplicate reply.

    Where root can make network namespaces, each worker runs in its own, linked to the host by a veth pair only:
    it reaches PostgreSQL and the GitHub double over that link, and nothing else of the host."""
    why = netns.available()
    if why is not None:
        print(f"soak: separate network namespaces unavailable ({why}); the machines are plain processes")
        pg_settings = replace(settings, database_url=pg_server.new_database())
        await _kill9_soak(tmp_path, pg_settings, machines=2, duration=_duration(20.0, 0.3))
        return
    spaces = []
    try:
        spaces = [netns.create(i) for i in range(2)]
        # Its own server, listening on the veth links too (the session's listens on 127.0.0.1 only).
        with pg_running(listen="0.0.0.0", allow="10.231.0.0/16") as server:
            pg_settings = replace(settings, database_url=server.new_database())
            await _kill9_soak(tmp_path, pg_settings, machines=2, duration=_duration(20.0, 0.3), spaces=spaces)
    finally:
        for space in spaces:
            netns.destroy(space)


async def _kill9_soak(
    tmp_path: Path, settings: Settings, *, machines: int, duration: float, spaces: list[netns.Machine] | None = None
) -> None:
    """Deliveries under load while the server and the workers are killed with -9; prints and checks the figures.

    machines > 1: each worker gets its own data dir (its own "machine"); the store must then be PostgreSQL.
    spaces: the network namespace of each worker machine (it dials the host's end of its veth link).
    """
    assert machines == 1 or settings.database_url, "separate machines share nothing but a PostgreSQL store"
    async with GitHubEnv(tmp_path, settings) as env:
        linked = ""
        if spaces:
            # The double also answers on every address, so that machines behind their veth links reach it.
            site = web.TCPSite(env.double._runner, "0.0.0.0", 0)
            await site.start()
            linked = str(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        env.small_repo_issue()
        # Comments go to a rolling set of issues, as on a real tracker: a reply looks for its own tag among the
        # issue's comments, and one issue with thousands of bot comments is not what is measured here.
        issues = [env.double.repos[REPO].issues[1]] + [env.double.add_issue(REPO, f"bug {i}", "b") for i in range(4)]
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = _serve(env, tmp_path, port)
        workers = []
        for i in range(machines):
            own = {} if machines == 1 else {"REPROBOT_DATA_DIR": str(_machine_dir(tmp_path, i))}
            space = spaces[i] if spaces else None
            if space is not None:
                host = f"http://{space.host_ip}:{linked}"
                own |= {"REPROBOT_DATABASE_URL": str(settings.database_url).replace("127.0.0.1", space.host_ip)}
                own |= {"REPROBOT_GITHUB_API_URL": host, "REPROBOT_GITHUB_GIT_URL": f"{host}/git"}
            worker = _soak_worker(env, tmp_path, name=f"worker-{i}", SOAK_KILL_REPLY_P="0.02", **own)
            if space is not None:
                worker.argv = space.argv(worker.argv)
            workers.append(worker)
        procs = [server, *workers]
        for proc in procs:
            proc.start()
        bodies: dict[str, bytes] = {}
        acked: set[str] = set()
        counts: Counter[str] = Counter()
        comment_ids = iter(range(10_000, 10**9))
        try:
            timeout = aiohttp.ClientTimeout(total=15)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                await _ready(session, url)
                deadline = time.monotonic() + duration

                async def deliver(delivery: str, until: float) -> None:
                    """Send until acknowledged (GitHub's redelivery), or until `until`."""
                    body = bodies[delivery]
                    while time.monotonic() < until:
                        counts["sends"] += 1
                        try:
                            headers = _headers(env, "issue_comment", delivery, body)
                            async with session.post(url + "/webhooks/github", data=body, headers=headers) as resp:
                                await resp.read()
                                if resp.status < 300:
                                    acked.add(delivery)
                                    return
                                counts[f"http_{resp.status}"] += 1
                                if resp.status >= 500:
                                    counts["5xx"] += 1
                        except (aiohttp.ClientError, TimeoutError):
                            counts["connection_errors"] += 1
                        await asyncio.sleep(0.2)

                async def sender() -> None:
                    while time.monotonic() < deadline:
                        if acked and random.random() < 0.25:  # a redelivery of an acknowledged delivery
                            counts["redeliveries"] += 1
                            await deliver(random.choice(sorted(acked)), deadline)
                            continue
                        if random.random() < 0.1:
                            issues.append(env.double.add_issue(REPO, f"bug {len(issues)}", "b"))
                        issue = random.choice(issues[-5:])
                        text = random.choice(["/reprobot help", "/reprobot status"])
                        comment: dict[str, Any] = {"id": next(comment_ids), "body": text}
                        comment |= {"author_association": "OWNER", "user": {"login": "owner", "id": 7, "type": "User"}}
                        payload = env.payload("issue_comment", "created", REPO, issue, comment=comment)
                        delivery = str(uuid.uuid4())
                        bodies[delivery] = json.dumps(payload).encode()
                        await deliver(delivery, deadline)
                        await asyncio.sleep(random.uniform(0.2, 0.6))  # about 10 new deliveries a second in all

                async def killer() -> None:
                    while time.monotonic() < deadline - 1:
                        await asyncio.sleep(random.uniform(1.0, 4.0))
                        victims = random.choice([[server], *([w] for w in workers), procs])
                        for proc in victims:
                            proc.kill9()
                        await asyncio.sleep(random.uniform(0.0, 0.5))
                        for proc in victims:
                            if not proc.alive():
                                proc.start()

                async def watchdog() -> None:
                    """Restart a process that died on its own (the worker's kill points), as systemd would."""
                    while not done.is_set():
                        for proc in procs:
                            if not proc.alive():
                                proc.start()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(done.wait(), 0.5)

                done = asyncio.Event()
                guard = asyncio.create_task(watchdog())
                try:
                    await asyncio.gather(killer(), *(sender() for _ in range(4)))
                    await _ready(session, url)
                    # GitHub keeps redelivering what was never acknowledged (bounded); those were never acked, so
                    # they cannot count as lost, but they must not be lost or doubled either.
                    unacked = [d for d in bodies if d not in acked]
                    await asyncio.gather(*(deliver(d, time.monotonic() + 30) for d in unacked))
                    with Store.open(env.settings.store_target) as store:

                        def settled() -> bool:
                            return store.deliveries.pending_deliveries() == 0 and not [
                                j for j in store.jobs.list_jobs(limit=100_000) if j.status in ("queued", "running")
                            ]

                        await _wait_for(settled, 120 + len(bodies) / 5)
                finally:
                    done.set()
                    await guard
            with Store.open(env.settings.store_target) as store:
                jobs = store.jobs.list_jobs(limit=100_000)
                by_delivery = Counter(str(j.payload.get("delivery_id")) for j in jobs)
                deliveries = {d: store.deliveries.get_delivery(d) for d in acked}
        finally:
            for proc in procs:
                proc.stop()
        tags: Counter[str] = Counter()
        for issue in issues:
            for c in bot_comments(env.double, REPO, issue["number"]):
                tags[str(c["body"]).split("\n", 1)[0]] += 1
        job_tag = {j.id: f"<!-- reprobot:reply:job-{j.id} -->" for j in jobs}
        done_ids = {j.id for j in jobs if j.status == "done"}
        dead = {j.id: j for j in jobs if j.status == "dead"}
        unsettled = [j for j in jobs if j.status in ("queued", "running")]
        # Lost: acknowledged, yet not stored, never queued, or its job ended without its reply on the issue.
        lost = [
            d
            for d, seen in deliveries.items()
            if seen is None
            or seen.job_id is None
            or (seen.job_id not in dead and tags[job_tag.get(seen.job_id, "")] == 0 and seen.job_id in done_ids)
        ]
        figures = {
            "seconds": round(duration),
            "deliveries": len(bodies),
            "acked": len(acked),
            "sends": counts["sends"],
            "redeliveries": counts["redeliveries"],
            "connection_errors": counts["connection_errors"],
            "engine": "postgresql" if settings.database_url else "sqlite",
            "machines": machines,
            "network_namespaces": len(spaces or []),
            "kills_server": server.kills,
            "kills_worker": sum(w.kills for w in workers),
            "kills_in_reply": sum(w.log.read_text(errors="replace").count("after posting reply") for w in workers),
            "5xx": counts["5xx"],
            "lost": len(lost),
            "unsettled": len(unsettled),
            "duplicate_jobs": sum(n - 1 for n in by_delivery.values() if n > 1),
            "duplicate_comments": sum(n - 1 for n in tags.values() if n > 1),
            # A job whose worker was killed under it on all 3 attempts is dead-lettered by design (it may be
            # what kills workers): kept with its error, not lost; counted here, and its reply if it got out.
            "dead_lettered_by_kills": len(dead),
            "dead_without_reply": sum(1 for i in dead if tags[job_tag[i]] == 0),
            "pulls": len(env.double.repos[REPO].pulls),
        }
        if machines > 1:
            # Which machines ran jobs: each worker's lease owner names its host and pid.
            figures["lease_owners"] = len({j.lease_owner for j in jobs if j.lease_owner})
        _figures(f"kill9-{figures['engine']}-{machines}", figures)
        assert server.kills + sum(w.kills for w in workers) > 0
        assert figures["duplicate_jobs"] == 0 and figures["duplicate_comments"] == 0
        assert counts["5xx"] == 0
        assert lost == [], lost[:5]
        assert unsettled == [], Counter(j.status for j in jobs)
        assert all("worker lost" in (j.last_error or "") for j in dead.values()), [j.last_error for j in dead.values()]
        assert env.double.violations == []


@pytest.mark.slow
async def test_soak_kill_between_publishing_and_recording_gives_one_pr_and_one_comment(
    tmp_path: Path, engine_settings: Settings
) -> None:
    from tests.test_github_app import REPO as CASE_REPO
    from tests.test_github_app import _host_case

    async with GitHubEnv(tmp_path, engine_settings) as env:
        issue = _host_case(env)
        payload = env.payload("issues", "labeled", CASE_REPO, issue, label={"name": "reprobot:fix"})
        assert (await env.send("issues", payload, delivery_id="fix-1"))[0] == 202
        # Killed right after posting its first status comment, then right after opening the PR: both before
        # the store recorded them. The third attempt must find both and update them.
        worker = _soak_worker(env, tmp_path, SOAK_KILL_AT="status-fix,pr")
        worker.start()

        def finished() -> bool:
            jobs = env.jobs()
            return bool(jobs) and jobs[0].status in ("done", "dead", "failed")

        try:
            for _ in range(4):
                await _wait_for(lambda: finished() or not worker.alive(), 600)
                if finished():
                    break
                # It killed itself at a kill point: GitHub redelivers (answered 200, nothing new), and the
                # worker is started again, as its process supervisor would.
                assert (await env.send("issues", payload, delivery_id="fix-1"))[0] == 200
                worker.start()
        finally:
            worker.stop()
        log = worker.log.read_text(errors="replace")
        kills = log.count("soak_worker: SIGKILL")
        [job] = env.jobs()
        pulls = env.double.repos[CASE_REPO].pulls
        comments = bot_comments(env.double, CASE_REPO, issue["number"])
        calls = [c[0] for c in env.double.calls]
        figures = {"kills": kills, "attempts": job.attempts, "status": job.status}
        _figures("publish-kill", figures | {"pulls": len(pulls), "comments": len(comments)})
        assert kills == 2 and (tmp_path / "killed-at-pr").exists(), log[-3000:]
        assert job.status == "done", (job.last_error, log[-3000:])
        assert len(pulls) == 1 and calls.count("pulls/create") == 1 and calls.count("pulls/update") == 1
        assert len(comments) == 1 and f"#{pulls[0]['number']}" in comments[0]["body"]
        assert env.double.violations == []

"""/metrics: parses with prometheus_client's parser, moves when a delivery is acknowledged and a job runs, adds
up several processes in multiprocess mode, and is read only with its token or on its own port when so configured."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics import StoreSnapshot, exposition
from bot.settings.config import Settings
from bot.store.views import QueueStat, RunnerView
from tests.gh_env import GitHubEnv
from tests.runner_procs import free_port, serve


async def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, keyed by (name, sorted labels), parsed by prometheus_client."""
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = await resp.text()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_move_when_a_delivery_is_acked_and_a_job_runs(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        before = await scrape(env.url)
        status, _ = await env.send("issues", env.small_repo_issue())
        assert status == 202
        acked = await scrape(env.url)
        key = {"source": "github", "event": "issues", "status": "202"}
        assert value(acked, "reprobot_deliveries_total", **key) == value(before, "reprobot_deliveries_total", **key) + 1
        count = "reprobot_webhook_ack_seconds_count"
        assert value(acked, count, source="github") == value(before, count, source="github") + 1
        await asyncio.to_thread(env.jobs)  # promote the delivery into its job, as a worker's poll does
        queued = await scrape(env.url)
        assert value(queued, "reprobot_queue_depth", kind="github.issue") == 1
        assert value(queued, "reprobot_jobs", kind="github.issue", status="queued") == 1
        assert value(queued, "reprobot_queue_oldest_age_seconds", kind="github.issue") >= 0

        ran = await env.drain()
        assert len(ran) == 1
        job = await asyncio.to_thread(env.store.jobs.get_job, ran[0])
        assert job is not None and job.status == "done"
        outcome = str(job.result["status"])
        after = await scrape(env.url)
        finished = "reprobot_jobs_finished_total"
        labels = {"kind": "github.issue", "outcome": outcome}
        assert value(after, finished, **labels) == value(before, finished, **labels) + 1
        assert (
            value(after, "reprobot_job_seconds_count", **labels)
            == value(before, "reprobot_job_seconds_count", **labels) + 1
        )
        assert value(after, "reprobot_queue_depth", kind="github.issue") == 0
        assert value(after, "reprobot_jobs", kind="github.issue", status="done") == 1
        assert value(after, "reprobot_runners_online") == 0


def test_store_snapshot_families() -> None:
    snapshot = StoreSnapshot(
        [QueueStat("github.issue", "queued", 3, 42.0), QueueStat("github.issue", "done", 5, 0.0)],
        [RunnerView(1, "r1", ["android"], "1", "now", True, 2), RunnerView(2, "r2", [], "1", "then", False, 0)],
    )
    body, _ = exposition(snapshot)
    got = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
    }
    assert got[("reprobot_queue_depth", (("kind", "github.issue"),))] == 3
    assert got[("reprobot_queue_oldest_age_seconds", (("kind", "github.issue"),))] == 42
    assert got[("reprobot_jobs", (("kind", "github.issue"), ("status", "done")))] == 5
    assert got[("reprobot_runners_online", ())] == 1
    assert got[("reprobot_runners_registered", ())] == 2
    assert got[("reprobot_runner_leases", ())] == 2


COUNT = """
import sys
from bot import metrics
metrics.observe_job("github.issue", "fixed", 1.5)
metrics.observe_llm_call("trajectory", 100, 20, 0.01)
"""
EXPOSE = """
import sys
from bot.metrics import exposition
sys.stdout.write(exposition()[0].decode())
"""


def test_multiprocess_mode_adds_up_every_process(tmp_path: Path) -> None:
    """Two worker processes count into PROMETHEUS_MULTIPROC_DIR; a third (the web) exposes their sum."""
    folder = tmp_path / "prom"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", COUNT], env=env, check=True, timeout=60)
    out = subprocess.run(
        [sys.executable, "-c", EXPOSE], env=env, check=True, timeout=60, capture_output=True, text=True
    )
    got = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(out.stdout)
        for s in f.samples
    }
    assert got[("reprobot_jobs_finished_total", (("kind", "github.issue"), ("outcome", "fixed")))] == 2
    assert got[("reprobot_llm_tokens_total", (("direction", "prompt"), ("purpose", "trajectory")))] == 200
    assert abs(got[("reprobot_llm_cost_usd_total", (("purpose", "trajectory"),))] - 0.02) < 1e-9


async def test_sandbox_executions_and_timeouts_are_counted(tmp_path: Path) -> None:
    from prometheus_client import REGISTRY

    from sandboxes.base import SandboxSpec
    from sandboxes.factory import available_backends, make_sandbox

    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap unavailable: {problem}")

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = {
        "ok": sample("reprobot_sandbox_executions_total", backend="bwrap", result="ok"),
        "failed": sample("reprobot_sandbox_executions_total", backend="bwrap", result="failed"),
        "timeout": sample("reprobot_sandbox_executions_total", backend="bwrap", result="timeout"),
        "timeouts": sample("reprobot_sandbox_timeouts_total", backend="bwrap"),
    }
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with make_sandbox("bwrap", SandboxSpec(workspace=workspace)) as sb:
        assert (await sb.run(["true"])).exit_code == 0
        assert (await sb.run(["false"])).exit_code != 0
        assert (await sb.run(["sleep", "30"], timeout=0.5)).timed_out
    assert sample("reprobot_sandbox_executions_total", backend="bwrap", result="ok") == before["ok"] + 1
    assert sample("reprobot_sandbox_executions_total", backend="bwrap", result="failed") == before["failed"] + 1
    assert sample("reprobot_sandbox_executions_total", backend="bwrap", result="timeout") == before["timeout"] + 1
    assert sample("reprobot_sandbox_timeouts_total", backend="bwrap") == before["timeouts"] + 1


async def test_unsigned_deliveries_do_not_name_series(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        headers = {"X-GitHub-Event": "madeupevent", "X-GitHub-Delivery": "d-x", "X-Hub-Signature-256": "sha256=00"}
        async with aiohttp.ClientSession() as http:
            for _ in range(2):
                async with http.post(env.hook_url, data=b"{}", headers=headers) as resp:
                    assert resp.status == 401
        samples = await scrape(env.url)
        assert not any(dict(labels).get("event") == "madeupevent" for _, labels in samples)
        assert value(samples, "reprobot_deliveries_total", source="github", event="unverified", status="401") >= 2


# -- who may read /metrics (issue 28, finding 7): a real `reprobot serve` --------------------------------------------
METRICS_TOKEN = "metrics-token-for-tests"


def test_serve_asks_for_the_metrics_token(tmp_path: Path) -> None:
    with serve(tmp_path / "data", tmp_path / "serve.log", REPROBOT_METRICS_TOKEN=METRICS_TOKEN) as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": METRICS_TOKEN}):
            resp = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
            assert resp.status_code == 401, headers
            assert "reprobot_" not in resp.text and resp.headers["WWW-Authenticate"] == "Bearer"
        resp = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10)
        assert resp.status_code == 200
        names = {f.name for f in text_string_to_metric_families(resp.text)}
        assert {"reprobot_queue_depth", "reprobot_runners_registered"} <= names
    assert METRICS_TOKEN not in (tmp_path / "serve.log").read_text()


def test_serve_puts_metrics_on_their_own_port_only(tmp_path: Path) -> None:
    port = free_port()
    with serve(tmp_path / "data", tmp_path / "serve.log", REPROBOT_METRICS_PORT=str(port)) as url:
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 404  # the port an Ingress routes
        own = f"http://127.0.0.1:{port}"
        resp = httpx.get(f"{own}/metrics", timeout=10)
        assert resp.status_code == 200
        names = {f.name for f in text_string_to_metric_families(resp.text)}
        assert {"reprobot_queue_depth", "reprobot_runners_registered"} <= names
        # The metrics port serves /metrics and nothing else: no dashboard, no webhooks, no runner API.
        for path in ("/dashboard/login", "/healthz", "/api/runners"):
            assert httpx.get(f"{own}{path}", timeout=10).status_code == 404, path


# -- the inbox, build info and the worker's /healthz (issue 29, operations) -----------------------------------------
async def test_queue_depth_counts_the_inbox_while_no_worker_runs(tmp_path: Path, settings: Settings) -> None:
    """Deliveries acknowledged with no worker polling stay in the inbox: the depth says so, so an alert can fire."""
    async with GitHubEnv(tmp_path, settings) as env:
        payload = env.small_repo_issue()
        for delivery in ("d-1", "d-2"):
            status, _ = await env.send("issues", payload, delivery_id=delivery)
            assert status == 202
        waiting = await scrape(env.url)
        assert value(waiting, "reprobot_queue_depth", kind="inbox") == 2
        assert value(waiting, "reprobot_queue_oldest_age_seconds", kind="inbox") >= 0
        assert value(waiting, "reprobot_queue_depth", kind="github.issue") == 0  # no job exists yet
        await asyncio.to_thread(env.jobs)  # a worker's poll turns the inbox into jobs
        promoted = await scrape(env.url)
        assert value(promoted, "reprobot_queue_depth", kind="inbox") == 0
        assert value(promoted, "reprobot_queue_depth", kind="github.issue") >= 1


def test_build_info_names_the_version_python_and_commit() -> None:
    from importlib import metadata

    samples = [s for f in text_string_to_metric_families(exposition()[0].decode()) for s in f.samples]
    (info,) = [s for s in samples if s.name == "reprobot_build_info"]
    assert info.value == 1
    assert info.labels["version"] == metadata.version("reprobot")
    assert info.labels["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(info.labels) == {"version", "python", "git_sha"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_git_sha_reads_checkouts_worktrees_and_packed_refs(tmp_path: Path) -> None:
    from bot.metrics import git_sha

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "pkg" / "m.py").write_text("X = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    head = git(repo, "rev-parse", "HEAD")
    assert git_sha(repo / "pkg") == head
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"))
    (tmp_path / "wt" / "n.py").write_text("Y = 2\n")
    git(tmp_path / "wt", "add", "-A")
    git(tmp_path / "wt", "commit", "-qm", "two")
    assert git_sha(tmp_path / "wt") == git(tmp_path / "wt", "rev-parse", "HEAD") != head
    git(repo, "pack-refs", "--all")
    assert git_sha(repo / "pkg") == head
    assert git_sha(tmp_path / "wt") == git(tmp_path / "wt", "rev-parse", "HEAD")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_sha(outside) == ""


def test_worker_metrics_port_answers_healthz_and_metrics() -> None:
    from bot.metrics import serve_worker_metrics

    server = serve_worker_metrics(free_port(), "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        health = httpx.get(f"{url}/healthz", timeout=10)
        assert health.status_code == 200 and health.text == "ok\n"
        scraped = httpx.get(f"{url}/metrics", timeout=10)
        assert scraped.status_code == 200
        names = {s.name for f in text_string_to_metric_families(scraped.text) for s in f.samples}
        assert "reprobot_build_info" in names
    finally:
        server.shutdown()
        server.server_close()

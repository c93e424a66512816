"""Prometheus metrics: what the processes count, and the /metrics exposition that adds the store's numbers.

Several processes: with `PROMETHEUS_MULTIPROC_DIR` set (prometheus_client's multiprocess mode) every process
of one host — `serve` and the `worker`s started beside it — writes its counters there, and the web process's
/metrics adds them all up. Workers on other hosts (other pods) do not share that folder: each serves its own
`/metrics` on `REPROBOT_METRICS_PORT` instead (per-process endpoints, scraped one by one). Numbers read from
the store (queue depth, oldest job, jobs by status, runners) come only from the web's /metrics, once per
scrape, so they are never counted twice.

Every metric has labels, so no multiprocess file is written before something is counted.
"""

from __future__ import annotations

import functools
import os
import platform
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    make_wsgi_app,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

DELIVERIES = Counter(
    "reprobot_deliveries",
    "Webhook deliveries answered, by source, event and HTTP status.",
    ["source", "event", "status"],
)
ACK_SECONDS = Histogram(
    "reprobot_webhook_ack_seconds",
    "Seconds from a webhook request's start to its answer (the durable acknowledgement).",
    ["source"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
)
JOBS_FINISHED = Counter(
    "reprobot_jobs_finished",
    "Jobs a worker ran to an end, by kind and outcome (the result's status, or failed/dead/retry).",
    ["kind", "outcome"],
)
JOB_SECONDS = Histogram(
    "reprobot_job_seconds",
    "Wall seconds of one job attempt, by kind and outcome.",
    ["kind", "outcome"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200),
)
TRAJECTORY_SECONDS = Histogram(
    "reprobot_trajectory_seconds",
    "Wall seconds of one trajectory, by agent and how it ended.",
    ["agent", "status"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600),
)
LLM_TOKENS = Counter(
    "reprobot_llm_tokens",
    "Model tokens used, by purpose (trajectory, review, ...) and direction (prompt or completion).",
    ["purpose", "direction"],
)
LLM_COST = Counter("reprobot_llm_cost_usd", "USD spent on model calls, by purpose.", ["purpose"])


def observe_job(kind: str, outcome: str, seconds: float) -> None:
    """Count one job attempt that ended with `outcome`."""
    JOBS_FINISHED.labels(kind, outcome).inc()
    JOB_SECONDS.labels(kind, outcome).observe(max(seconds, 0.0))


def observe_llm_call(purpose: str, prompt_tokens: int, completion_tokens: int, cost: float) -> None:
    """Count one model call's tokens and cost."""
    key = purpose.split(":")[0] or "other"  # "review:spec" and "review:relevance" are one series
    LLM_TOKENS.labels(key, "prompt").inc(max(prompt_tokens, 0))
    LLM_TOKENS.labels(key, "completion").inc(max(completion_tokens, 0))
    LLM_COST.labels(key).inc(max(cost, 0.0))


class StoreSnapshot:
    """The store's numbers at one scrape, as gauge families (a prometheus_client custom collector)."""

    def __init__(self, stats: Sequence[Any], runners: Sequence[Any], inbox: Any = None) -> None:
        """Keep the rows read (on a thread) for this scrape: `store.views.queue_stats()`, `.runners()` and
        `.inbox_stat()` (accepted deliveries no worker has turned into jobs yet; None leaves it out).

        Typed loosely on purpose: this module sits below the store in the layers, so every service may count.
        """
        self.stats = list(stats)
        self.runners = list(runners)
        self.inbox = inbox

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """Queue depth and oldest age by kind, jobs by kind and status, runners online and their leases."""
        depth = GaugeMetricFamily(
            "reprobot_queue_depth",
            'Queued jobs, by kind; kind="inbox" counts accepted deliveries no worker has turned into jobs yet.',
            labels=["kind"],
        )
        oldest = GaugeMetricFamily(
            "reprobot_queue_oldest_age_seconds",
            'Age of the oldest runnable queued job, by kind; kind="inbox": of the oldest delivery waiting there.',
            labels=["kind"],
        )
        jobs = GaugeMetricFamily("reprobot_jobs", "Jobs in the store, by kind and status.", labels=["kind", "status"])
        kinds = sorted({s.kind for s in self.stats})
        for kind in kinds:
            queued = [s for s in self.stats if s.kind == kind and s.status == "queued"]
            depth.add_metric([kind], sum(s.count for s in queued))
            oldest.add_metric([kind], max((s.oldest_age for s in queued), default=0.0))
        if self.inbox is not None:
            # The inbox is emptied only by a worker's poll: with every worker down it grows (an alert's signal).
            depth.add_metric([self.inbox.kind], self.inbox.count)
            oldest.add_metric([self.inbox.kind], self.inbox.oldest_age)
        for s in self.stats:
            jobs.add_metric([s.kind, s.status], s.count)
        online = GaugeMetricFamily("reprobot_runners_online", "Runners seen within the last two minutes.")
        online.add_metric([], sum(1 for r in self.runners if r.online))
        registered = GaugeMetricFamily("reprobot_runners_registered", "Runners registered with this server.")
        registered.add_metric([], len(self.runners))
        leases = GaugeMetricFamily("reprobot_runner_leases", "Jobs leased to runners now.")
        leases.add_metric([], sum(r.leases for r in self.runners))
        yield from (depth, oldest, jobs, online, registered, leases)


@functools.cache
def build_labels() -> dict[str, str]:
    """What this process runs: reprobot's version, Python's, and the git commit when run from a checkout."""
    from importlib import metadata

    try:
        version = metadata.version("reprobot")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"version": version, "python": platform.python_version(), "git_sha": git_sha(Path(__file__).parent)}


def git_sha(start: Path) -> str:
    """The commit checked out in the git work tree holding `start`, read from its files ("" outside one).

    Read rather than asked of `git`: no process is started for a scrape, and an image without git still answers.
    """
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            gitdir = dot
        elif dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            gitdir = (folder / dot.read_text().partition("gitdir:")[2].strip()).resolve()
        else:
            continue
        try:
            head = (gitdir / "HEAD").read_text().strip()
            if not head.startswith("ref:"):
                return head  # a detached HEAD is the commit itself
            ref = head.partition(":")[2].strip()
            common = gitdir / (gitdir / "commondir").read_text().strip() if (gitdir / "commondir").is_file() else gitdir
            for base in (gitdir, common):
                if (base / ref).is_file():
                    return (base / ref).read_text().strip()
            packed = (common / "packed-refs").read_text() if (common / "packed-refs").is_file() else ""
        except OSError:
            return ""
        return next((line.split()[0] for line in packed.splitlines() if line.endswith(" " + ref)), "")
    return ""


class BuildInfo:
    """`reprobot_build_info{version, python, git_sha} 1`: which build every scraped process runs."""

    def collect(self) -> Iterator[InfoMetricFamily]:
        """The one info sample."""
        yield InfoMetricFamily("reprobot_build", "The reprobot build this process runs.", value=build_labels())


class _Joined:
    """Collects several collectors as one, so the per-scrape snapshot never enters the global registry."""

    def __init__(self, parts: Iterable[Collector | StoreSnapshot | BuildInfo]) -> None:
        self.parts = list(parts)

    def collect(self) -> Iterator[object]:
        for part in self.parts:
            yield from part.collect()


def process_registry() -> CollectorRegistry:
    """This host's counters: every process's in multiprocess mode, else this process's own."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def exposition(snapshot: StoreSnapshot | None = None) -> tuple[bytes, str]:
    """The text exposition of this host's counters plus the store's snapshot; returns (body, content type)."""
    registry = CollectorRegistry(auto_describe=False)
    parts: list[Collector | StoreSnapshot | BuildInfo] = [process_registry(), BuildInfo()]
    if snapshot is not None:
        parts.append(snapshot)
    registry.register(_Joined(parts))  # type: ignore[arg-type]
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape or probe."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def worker_metrics_app() -> Callable[..., Iterable[bytes]]:
    """The worker's metrics endpoint (WSGI): `/healthz` (liveness: the process answers) and the metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Joined([process_registry(), BuildInfo()]))  # type: ignore[arg-type]
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n"]
        return metrics_app(environ, start_response)

    return app


def serve_worker_metrics(port: int, addr: str = "0.0.0.0") -> ThreadingWSGIServer:
    """Serve `/metrics` (this host's counters) and `/healthz` on `port` from a daemon thread.

    `reprobot worker` with REPROBOT_METRICS_PORT: Prometheus scrapes it, and the liveness probe of a worker
    container or pod asks it. Returns the server (tests shut it down).
    """
    server = make_server(addr, port, worker_metrics_app(), ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    return server

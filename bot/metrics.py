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

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
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

    def __init__(self, stats: Sequence[Any], runners: Sequence[Any]) -> None:
        """Keep the rows read (on a thread) for this scrape: `store.views.queue_stats()` and `.runners()`.

        Typed loosely on purpose: this module sits below the store in the layers, so every service may count.
        """
        self.stats = list(stats)
        self.runners = list(runners)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """Queue depth and oldest age by kind, jobs by kind and status, runners online and their leases."""
        depth = GaugeMetricFamily("reprobot_queue_depth", "Queued jobs, by kind.", labels=["kind"])
        oldest = GaugeMetricFamily(
            "reprobot_queue_oldest_age_seconds", "Age of the oldest runnable queued job, by kind.", labels=["kind"]
        )
        jobs = GaugeMetricFamily("reprobot_jobs", "Jobs in the store, by kind and status.", labels=["kind", "status"])
        kinds = sorted({s.kind for s in self.stats})
        for kind in kinds:
            queued = [s for s in self.stats if s.kind == kind and s.status == "queued"]
            depth.add_metric([kind], sum(s.count for s in queued))
            oldest.add_metric([kind], max((s.oldest_age for s in queued), default=0.0))
        for s in self.stats:
            jobs.add_metric([s.kind, s.status], s.count)
        online = GaugeMetricFamily("reprobot_runners_online", "Runners seen within the last two minutes.")
        online.add_metric([], sum(1 for r in self.runners if r.online))
        registered = GaugeMetricFamily("reprobot_runners_registered", "Runners registered with this server.")
        registered.add_metric([], len(self.runners))
        leases = GaugeMetricFamily("reprobot_runner_leases", "Jobs leased to runners now.")
        leases.add_metric([], sum(r.leases for r in self.runners))
        yield from (depth, oldest, jobs, online, registered, leases)


class _Joined:
    """Collects several collectors as one, so the per-scrape snapshot never enters the global registry."""

    def __init__(self, parts: Iterable[Collector | StoreSnapshot]) -> None:
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
    parts: list[Collector | StoreSnapshot] = [process_registry()]
    if snapshot is not None:
        parts.append(snapshot)
    registry.register(_Joined(parts))  # type: ignore[arg-type]
    return generate_latest(registry), CONTENT_TYPE_LATEST


def serve_worker_metrics(port: int, addr: str = "0.0.0.0") -> None:
    """Serve this host's counters on `port` from a daemon thread (`reprobot worker` with REPROBOT_METRICS_PORT)."""
    start_http_server(port, addr=addr, registry=process_registry())

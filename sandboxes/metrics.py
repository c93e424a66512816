"""Prometheus counters of sandbox executions (exported by the bot's /metrics; defined here, below the bot).

prometheus_client is imported on first use, and optional: the sandboxes also run under a bare system interpreter
(a worker's helper processes, tests), where counting is simply skipped. Every metric has labels, so in
prometheus_client's multiprocess mode no file is written until a command runs.
"""

from __future__ import annotations

import functools
from typing import Any

from sandboxes.base import ExecResult


@functools.cache
def _metrics() -> tuple[Any, Any, Any] | None:
    try:
        from prometheus_client import Counter, Histogram
    except ImportError:
        return None
    executions = Counter(
        "reprobot_sandbox_executions",
        "Commands run in a sandbox, by backend and how they ended (ok, failed, timeout, oom).",
        ["backend", "result"],
    )
    timeouts = Counter("reprobot_sandbox_timeouts", "Sandbox commands killed at their wall-clock limit.", ["backend"])
    seconds = Histogram(
        "reprobot_sandbox_execution_seconds",
        "Wall time of one sandbox command, by backend.",
        ["backend"],
        buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 1200, 3600),
    )
    return executions, timeouts, seconds


def count_execution(backend: str, result: ExecResult) -> ExecResult:
    """Count one finished command (returned unchanged, so a backend can `return count_execution(...)`)."""
    metrics = _metrics()
    if metrics is None:
        return result
    executions, timeouts, seconds = metrics
    if result.timed_out:
        outcome = "timeout"
        timeouts.labels(backend).inc()
    elif result.oom_killed:
        outcome = "oom"
    else:
        outcome = "ok" if result.exit_code == 0 else "failed"
    executions.labels(backend, outcome).inc()
    seconds.labels(backend).observe(max(result.duration, 0.0))
    return result

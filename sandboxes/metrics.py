"""Prometheus counters of sandbox executions (exported by the bot's /metrics; defined here, below the bot).

Every metric has labels, so in prometheus_client's multiprocess mode no file is written until a command runs.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from sandboxes.base import ExecResult

SANDBOX_EXECUTIONS = Counter(
    "reprobot_sandbox_executions",
    "Commands run in a sandbox, by backend and how they ended (ok, failed, timeout, oom).",
    ["backend", "result"],
)
SANDBOX_TIMEOUTS = Counter(
    "reprobot_sandbox_timeouts",
    "Sandbox commands killed at their wall-clock limit, by backend.",
    ["backend"],
)
SANDBOX_SECONDS = Histogram(
    "reprobot_sandbox_execution_seconds",
    "Wall time of one sandbox command, by backend.",
    ["backend"],
    buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 1200, 3600),
)


def count_execution(backend: str, result: ExecResult) -> ExecResult:
    """Count one finished command (returned unchanged, so a backend can `return count_execution(...)`)."""
    if result.timed_out:
        outcome = "timeout"
        SANDBOX_TIMEOUTS.labels(backend).inc()
    elif result.oom_killed:
        outcome = "oom"
    else:
        outcome = "ok" if result.exit_code == 0 else "failed"
    SANDBOX_EXECUTIONS.labels(backend, outcome).inc()
    SANDBOX_SECONDS.labels(backend).observe(max(result.duration, 0.0))
    return result

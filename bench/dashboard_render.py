"""Time the dashboard's job page for a synthetic job: 8 trajectories, 2,000 steps, 8 patches (goal: < 200 ms).

The page is fetched through the real web app (store reads, record, charts, template) from an in-memory store;
the median of REPEATS fetches is reported, with the page's size.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

TRAJECTORIES = 8
STEPS = 2000
REPEATS = 15
GOAL_MS = 200.0
TOKEN = "bench-token"

DIFF = """diff --git a/shop/discounts.py b/shop/discounts.py
--- a/shop/discounts.py
+++ b/shop/discounts.py
@@ -8,5 +8,5 @@ def bulk_rate(quantity):
     for minimum, rate in BULK_TIERS:
-        if quantity > minimum:
+        if quantity >= minimum:
             return rate
     return 0.0
"""


def _candidate(n: int, selected: bool) -> dict[str, Any]:
    return {
        "id": f"1-t{n}",
        "trajectory": f"1-t{n}",
        "agent": "classic",
        "diff": DIFF.replace(">= minimum", f">= minimum + {n % 3}"),
        "fix_hash": f"h{n % 3}",
        "has_test": True,
        "fix_lines": 2,
        "total_lines": 19,
        "files": ["shop/discounts.py", "tests/test_reprobot_issue.py"],
        "accepted": True,
        "reviews": [{"reviewer": "brt", "accepted": True, "reason": "fails before, passes after"}],
        "assessment": {"verdict": "confident", "reasons": ["same behaviour"], "semantic_size": 1},
        "votes": ["ranked"] if selected else [],
        "selected": selected,
        "lost": "" if selected else "its fix was found 2 time(s), the selected fix 3 time(s)",
    }


def seed(store: Any) -> int:
    """A finished job with TRAJECTORIES trajectories sharing STEPS steps and its full record; returns its id."""
    from bot.jobs.queue import Queue

    rng = random.Random(31)
    issue = store.publications.upsert_issue("local", "/tmp/shop", "bench", title="Bulk discount not applied")
    queue = Queue(store)
    job = queue.start_inline("fix", issue.id, {}, "bench", 600)
    trajectories = []
    for t in range(TRAJECTORIES):
        db_id = store.runs.start_trajectory(job.id, "classic", "freeform", seed=t)
        for i in range(STEPS // TRAJECTORIES):
            passed = rng.random() < 0.02
            content = {"file": "shop/discounts.py", "line": 5 + i % 20, "operator": "cmpop", "brt_passed": passed}
            store.runs.add_step(db_id, "try_candidate", content | {"description": f"line {i % 20}: `>` -> `>=`"})
        store.runs.finish_trajectory(db_id, "fixed", seconds=12.0, tokens=0, cost=0.0)
        trajectories.append({"id": f"1-t{t}", "db_id": db_id, "agent": "classic", "start": 3.0, "end": 15.0 + t})
    record = {
        "status": "fixed",
        "abstention": {"act": True, "score": 0.95, "threshold": 0.5, "reasons": ["has a reproduction"]},
        "baseline": {"passed": 5, "failed": 0, "error": 0},
        "reproduction": {"path": "tests/test_r.py", "fails_before": True, "passes_after": True, "symptom": "x"}
        | {"before_output": "1 failed\n" * 40, "after_output": "1 passed\n"},
        "localization": [{"file": "shop/cart.py", "line": n, "score": 1 / (n + 1)} for n in range(12)],
        "candidates": [_candidate(n, n == 0) for n in range(TRAJECTORIES)],
        "selected": "1-t0",
        "assessment": {"verdict": "confident", "reasons": ["same behaviour"], "tests_compared": 5},
        "stages": [{"name": "baseline", "start": 0.0, "end": 2.0}, {"name": "search", "start": 3.0, "end": 23.0}],
        "stage_seconds": {"baseline": 2.0, "search": 20.0},
        "trajectories": trajectories,
        "publication": {"branch": "reprobot/issue-bench"},
    }
    queue.finish(job.id, "bench", {"status": "fixed", "reasons": [], "record": record})
    return int(job.id)


async def measure(data_dir: Path) -> tuple[list[float], list[float], int]:
    """Fetch the page REPEATS times; (wall ms per fetch, CPU ms per fetch, bytes of the page).

    The CPU time is the process's (the server and its store thread run in it): on a machine shared with other
    work the wall time grows with the load, the CPU time much less.
    """
    from aiohttp.test_utils import TestClient, TestServer

    from bot.intake.server import make_app
    from bot.settings.config import Settings
    from bot.store import Store

    settings = replace(Settings(), data_dir=data_dir, dashboard_token=TOKEN)
    store = Store.open(settings.store_target)
    job_id = seed(store)
    client = TestClient(TestServer(make_app(settings, store=store)))
    await client.start_server()
    times, cpu, size = [], [], 0
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for _ in range(REPEATS + 1):
            started, cpu_started = time.perf_counter(), time.process_time()
            resp = await client.get(f"/dashboard/jobs/{job_id}", headers=headers)
            body = await resp.read()
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
            assert resp.status == 200, resp.status
            size = len(body)
    finally:
        await client.close()
        store.close()
    return times[1:], cpu[1:], size  # the first fetch loads the templates


def main() -> None:
    """Print the median render time against the goal."""
    with TemporaryDirectory() as tmp:
        times, cpu, size = asyncio.run(measure(Path(tmp)))
    median = statistics.median(times)
    verdict = "meets" if median < GOAL_MS else "misses"
    load = os.getloadavg()[0]
    print(
        f"job page, {TRAJECTORIES} trajectories x {STEPS // TRAJECTORIES} steps: median {median:.0f} ms wall "
        f"(min {min(times):.0f}, max {max(times):.0f}), median {statistics.median(cpu):.0f} ms CPU, over {REPEATS} "
        f"fetches, {size / 1024:.0f} KiB; {verdict} the {GOAL_MS:.0f} ms goal (load average {load:.1f} "
        f"on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()

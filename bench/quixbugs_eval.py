"""QuixBugs with the classic agent, M=8: plausible fixes, plausible BRTs and median seconds per case."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console

from bot.evaluate.run import load_cases, parse_ks, run_eval
from bot.settings.config import Settings

QUIXBUGS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "quixbugs"
TRAJECTORIES = 8


#: The two methods run side by side: the previous one (a sandbox per command, full suite per candidate) and
#: the current one. REPROBOT_BENCH_COMPARE=0 runs the current method only.
METHODS: dict[str, dict[str, Any]] = {
    "previous": {
        "sandbox_session": "cold",
        "test_impact": False,
        "pytest_server": False,
        "candidate_timeout_factor": 0,
    },
    "current": {"sandbox_session": "warm", "test_impact": True, "pytest_server": True, "candidate_timeout_factor": 5.0},
}


def _run(bench: Path, settings: Settings, out: Path, jobs: int, only: set[str] | None) -> dict[str, Any]:
    return asyncio.run(_run_async(bench, settings, out, jobs, only))


async def _run_async(bench: Path, settings: Settings, out: Path, jobs: int, only: set[str] | None) -> dict[str, Any]:
    return await run_eval(
        bench,
        settings,
        trajectories=TRAJECTORIES,
        ks=parse_ks("1,5,M", TRAJECTORIES),
        out=out,
        jobs=jobs,
        only=only,
        sandbox=settings.sandbox,
        console=Console(stderr=True, quiet=True),
    )


def _print(name: str, doc: dict[str, Any], pace: str, out: Path) -> None:
    s = doc["summary"]
    counts = s["selected_counts"]["ranked"]
    both = sum(
        1
        for c in doc["cases"]
        if c["selections"]["ranked"]["plausible_fix"] and c["selections"]["ranked"]["plausible_brt"]
    )
    print(f"quixbugs [{name}] (classic agent, M={TRAJECTORIES}, {s['cases']} cases, {pace}):")
    print(f"  selected patch is a plausible fix (passes the oracle BRT): {counts['plausible_fix']}/{s['cases']}")
    brt_line = f"{counts['plausible_brt']}/{s['cases']}"
    print(f"  selected patch carries a plausible BRT (fails buggy, passes oracle fix): {brt_line}")
    print(f"  both: {both}/{s['cases']}")
    job = s["median_job_seconds_per_case"]
    print(f"  median seconds per case: {s['median_seconds_per_case']:.1f} (the job alone: {job:.1f})")
    print("  median seconds per stage: " + json.dumps(s["median_stage_seconds"]))
    print("  success@k: " + json.dumps(s["success_at_k"]))
    print(f"  report: {out / 'report.md'}")


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


def _combine(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One method's per-case documents (one case each) as one: the cases, the counts and the medians."""
    cases = [c for d in docs for c in d["cases"]]
    counts = {
        k: sum(d["summary"]["selected_counts"]["ranked"][k] for d in docs) for k in ("plausible_fix", "plausible_brt")
    }
    stages = sorted({k for c in cases for k in c["stage_seconds"]})
    return {
        "cases": cases,
        "summary": {
            "cases": len(cases),
            "selected_counts": {"ranked": counts},
            "median_seconds_per_case": _median([c["seconds"] for c in cases]),
            "median_job_seconds_per_case": _median([c["job_seconds"] for c in cases]),
            "median_stage_seconds": {k: _median([c["stage_seconds"].get(k, 0.0) for c in cases]) for k in stages},
            "success_at_k": {"per case": "see each case's results.json"},
        },
    }


#: How the two methods share the machine (REPROBOT_BENCH_PAIRING): "alternate" runs each case with one method
#: and then the other, each alone, the first method alternating from case to case; "together" runs both at once.
PAIRINGS = ("alternate", "together")


async def _paired(
    bench: Path, settings: dict[str, Settings], root: Path, only: set[str] | None, pairing: str
) -> dict[str, dict[str, Any]]:
    """Every case run by every method, one case after another, so that both meet the same machine.

    Run one whole method after the other, the second meets other load than the first (work on the machine
    comes and goes over half an hour). "alternate" puts a case's two runs next to each other in time, each
    with the machine to itself, and swaps which goes first from one case to the next, so neither always
    meets the other's leftovers (page cache, a busy disk): the usual A/B design. "together" runs both at
    once; it is biased towards the slower method, which then has the machine to itself for its last part
    while the faster one's runs had to share it.
    """
    per_method: dict[str, list[dict[str, Any]]] = {name: [] for name in settings}
    for index, case in enumerate(load_cases(bench, only)):
        runs = list(settings.items())
        if pairing == "together":
            docs = await asyncio.gather(
                *(_run_async(bench, method, root / name / case.name, 1, {case.name}) for name, method in runs)
            )
            for name, doc in zip(settings, docs, strict=True):
                per_method[name].append(doc)
            continue
        for name, method in runs if index % 2 == 0 else runs[::-1]:
            per_method[name].append(await _run_async(bench, method, root / name / case.name, 1, {case.name}))
    return {name: _combine(docs) for name, docs in per_method.items()}


def main() -> None:
    """Run `reprobot eval` on the shared QuixBugs cases with the previous and the current method, side by side."""
    bench = Path(os.environ.get("REPROBOT_BENCH_QUIXBUGS", QUIXBUGS))
    if not bench.is_dir():
        print(f"skipped: {bench} is absent (the shared bench folder beside the checkout)")
        return
    settings = Settings.from_env()
    root = (
        Path(tempfile.mkdtemp(prefix="quixbugs-eval-"))
        if "REPROBOT_BENCH_OUT" not in os.environ
        else Path(os.environ["REPROBOT_BENCH_OUT"])
    )
    only = {c.strip() for c in os.environ.get("REPROBOT_BENCH_CASES", "").split(",") if c.strip()} or None
    jobs = max(1, (os.cpu_count() or 1))
    methods = METHODS if os.environ.get("REPROBOT_BENCH_COMPARE", "1") != "0" else {"current": METHODS["current"]}
    # Each method builds its environments in its own data folder: neither profits from the other's cache.
    per_method = {
        name: dataclasses.replace(settings, data_dir=settings.data_dir / f"bench-{name}", **overrides)
        for name, overrides in methods.items()
    }
    docs: dict[str, dict[str, Any]]
    pairing = os.environ.get("REPROBOT_BENCH_PAIRING", "alternate")
    if pairing not in PAIRINGS:
        raise SystemExit(f"REPROBOT_BENCH_PAIRING={pairing!r}: expected one of {', '.join(PAIRINGS)}")
    if len(per_method) == 2:
        docs = asyncio.run(_paired(bench, per_method, root, only, pairing))
        pace = {
            "alternate": "each case run by one method, then alone by the other, the first alternating",
            "together": "each case beside the other method's run of it",
        }[pairing]
        for name, doc in docs.items():
            _print(name, doc, pace, root / name)
    else:
        docs = {name: _run(bench, method, root / name, jobs, only) for name, method in per_method.items()}
        for name, doc in docs.items():
            _print(name, doc, f"{jobs} at a time", root / name)
    if len(docs) == 2:
        before, after = (docs[n]["summary"] for n in ("previous", "current"))
        speedup = before["median_seconds_per_case"] / max(after["median_seconds_per_case"], 1e-9)
        same = all(
            before["selected_counts"]["ranked"][k] == after["selected_counts"]["ranked"][k]
            for k in ("plausible_fix", "plausible_brt")
        )
        print(
            f"median per case: previous {before['median_seconds_per_case']:.1f}s, current "
            f"{after['median_seconds_per_case']:.1f}s ({speedup:.2f}x); same plausible counts: {same}"
        )
        # The job alone (issue to verified patch), without the benchmark's own oracle scoring of each patch.
        job_before, job_after = before["median_job_seconds_per_case"], after["median_job_seconds_per_case"]
        print(
            f"median job seconds (without the oracle scoring): previous {job_before:.1f}s, current "
            f"{job_after:.1f}s ({job_before / max(job_after, 1e-9):.2f}x)"
        )
        # Same counts could hide a swap; a case published by one method and only suggested by the other is
        # a change in what maintainers would see.
        statuses = {name: {c["name"]: c["status"] for c in doc["cases"]} for name, doc in docs.items()}
        changed = [
            f"{case} ({status} -> {statuses['current'].get(case)})"
            for case, status in statuses["previous"].items()
            if statuses["current"].get(case) != status
        ]
        print("cases whose outcome changed: " + (", ".join(changed) or "none"))
        rows = [
            f"  {k:12} {before['median_stage_seconds'].get(k, 0.0):8.1f} {v:8.1f}"
            for k, v in after["median_stage_seconds"].items()
        ]
        print("  stage        previous  current\n" + "\n".join(rows))


if __name__ == "__main__":
    main()

"""Real-bug latency: seconds per case and per stage at M=4, this checkout against another, side by side in one run.

    python bench/realbugs_latency.py --baseline /path/to/older/checkout [--cases a,b] [--bench DIR] [-M 4]

Each case runs `reprobot eval` once with each checkout's code (a subprocess with that checkout on PYTHONPATH),
one after the other, each alone on the machine, the first alternating from case to case (the design of
`bench/quixbugs_eval.py`'s "alternate" pairing). Each checkout keeps its own data folder across the cases, the way
a deployment keeps its environment cache: neither profits from the other's. Without --baseline only this checkout
runs. Prints, per case and per checkout, the outcome, the plausible flags and the seconds, then the medians, the
median per stage, and whether the plausible counts are the same.

The default bench is ../shared/bench/realbugs (the development real bugs); `make bench-data MIRRORS=DIR` builds
the mined ones into bench/data/realbugs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
REALBUGS = HERE.parent / "shared" / "bench" / "realbugs"


def _cases(bench: Path, only: str) -> list[str]:
    names = sorted(p.name for p in bench.iterdir() if (p / "case.toml").is_file())
    wanted = [c.strip() for c in only.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise SystemExit(f"no such case in {bench}: {', '.join(unknown)}")
    return wanted or names


def _run_case(checkout: Path, bench: Path, case: str, out: Path, data: Path, trajectories: int) -> dict[str, Any]:
    """One case with one checkout's code; its results.json case row plus the wall seconds of the whole run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    env |= {"PYTHONPATH": str(checkout), "REPROBOT_DATA_DIR": str(data)}
    argv = [sys.executable, "-m", "bot.cli", "eval", "--bench", str(bench), "--cases", case]
    argv += ["-M", str(trajectories), "--jobs", "1", "--out", str(out), "-q"]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    results = out / "results.json"
    if not results.is_file():
        return {"name": case, "status": f"eval failed (exit {proc.returncode})", "wall": wall, "row": None}
    row = json.loads(results.read_text())["cases"][0]
    return {"name": case, "status": row["status"], "wall": wall, "row": row}


def _flags(row: dict[str, Any] | None) -> tuple[bool, bool]:
    if row is None:
        return False, False
    ranked = row["selections"].get("ranked", {})
    return bool(ranked.get("plausible_fix")), bool(ranked.get("plausible_brt"))


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r["row"] for r in runs if r["row"] is not None]
    stages = sorted({k for row in rows for k in row["stage_seconds"]})
    return {
        "cases": len(runs),
        "plausible_fix": sum(_flags(r["row"])[0] for r in runs),
        "plausible_brt": sum(_flags(r["row"])[1] for r in runs),
        "median_seconds": _median([r["row"]["seconds"] for r in runs if r["row"] is not None]),
        "median_wall": _median([r["wall"] for r in runs]),
        "median_stage_seconds": {k: _median([row["stage_seconds"].get(k, 0.0) for row in rows]) for k in stages},
    }


def main(argv: list[str] | None = None) -> None:
    """Run the chosen cases with both checkouts, alternating, and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=REALBUGS)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: every case)")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with (its own code)")
    parser.add_argument("-M", "--trajectories", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.bench.is_dir():
        print(f"skipped: {args.bench} is absent (the shared bench folder beside the checkout)")
        return
    root = args.out or Path(tempfile.mkdtemp(prefix="realbugs-latency-"))
    targets = {"current": HERE} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    for index, case in enumerate(_cases(args.bench, args.cases)):
        order = list(targets.items())
        for name, checkout in order if index % 2 == 0 else order[::-1]:
            run = _run_case(checkout, args.bench, case, root / name / case, root / f"data-{name}", args.trajectories)
            runs[name].append(run)
            fix, brt = _flags(run["row"])
            print(f"{case:28} {name:8} {run['status']:12} fix={fix!s:5} brt={brt!s:5} {run['wall']:7.1f} s", flush=True)
    summaries = {name: _summary(r) for name, r in runs.items()}
    (root / "summary.json").write_text(json.dumps({"summaries": summaries, "runs": runs}, indent=2, default=str))
    for name, s in summaries.items():
        print(
            f"{name}: {s['cases']} cases, plausible fix {s['plausible_fix']}, plausible BRT {s['plausible_brt']}, "
            f"median {s['median_seconds']} s per case (wall with start-up {s['median_wall']} s)"
        )
        print("  median per stage: " + json.dumps(s["median_stage_seconds"]))
    if len(summaries) == 2:
        before, after = summaries["baseline"], summaries["current"]
        same = all(before[k] == after[k] for k in ("plausible_fix", "plausible_brt"))
        ratio = before["median_seconds"] / max(after["median_seconds"], 1e-9)
        print(f"median per case: baseline {before['median_seconds']} s, current {after['median_seconds']} s ", end="")
        print(f"({ratio:.2f}x); same plausible counts: {same}")
    print(f"results: {root}")


if __name__ == "__main__":
    main()

"""QuixBugs with the classic agent, M=8: plausible fixes, plausible BRTs and median seconds per case."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console

from bot.config import Settings
from bot.evaluate import parse_ks, run_eval

QUIXBUGS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "quixbugs"
TRAJECTORIES = 8


def main() -> None:
    """Run `reprobot eval` on the shared QuixBugs cases and print the headline numbers."""
    bench = Path(os.environ.get("REPROBOT_BENCH_QUIXBUGS", QUIXBUGS))
    if not bench.is_dir():
        print(f"skipped: {bench} is absent (the shared bench folder beside the checkout)")
        return
    settings = Settings.from_env()
    out = (
        Path(tempfile.mkdtemp(prefix="quixbugs-eval-"))
        if "REPROBOT_BENCH_OUT" not in os.environ
        else Path(os.environ["REPROBOT_BENCH_OUT"])
    )
    jobs = max(1, (os.cpu_count() or 1))
    doc = asyncio.run(
        run_eval(
            bench,
            settings,
            trajectories=TRAJECTORIES,
            ks=parse_ks("1,5,M", TRAJECTORIES),
            out=out,
            jobs=jobs,
            sandbox=settings.sandbox,
            console=Console(stderr=True, quiet=True),
        )
    )
    s = doc["summary"]
    counts = s["selected_counts"]["ranked"]
    both = sum(
        1
        for c in doc["cases"]
        if c["selections"]["ranked"]["plausible_fix"] and c["selections"]["ranked"]["plausible_brt"]
    )
    print(f"quixbugs (classic agent, M={TRAJECTORIES}, {s['cases']} cases, {jobs} at a time):")
    print(f"  selected patch is a plausible fix (passes the oracle BRT): {counts['plausible_fix']}/{s['cases']}")
    brt_line = f"{counts['plausible_brt']}/{s['cases']}"
    print(f"  selected patch carries a plausible BRT (fails buggy, passes oracle fix): {brt_line}")
    print(f"  both: {both}/{s['cases']}")
    print(f"  median seconds per case: {s['median_seconds_per_case']:.1f}")
    print("  success@k: " + json.dumps(s["success_at_k"]))
    print(f"  report: {out / 'report.md'}")


if __name__ == "__main__":
    main()

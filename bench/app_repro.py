"""The app reproduction agent on the sample web apps: S2R extraction accuracy, reproduction rate, time.

Each case runs three times on one chromium: the buggy app (reproduce), the action log (replay) and the fixed app
(reproduce, must not fire). Time is reported per reproduction and as ratios side by side: reports that skip a
step (the UTG explores) against reports that do not. Then each buggy app is reproduced again from a second report
worded differently (bench/data/webapp_alt_reports.json: terse, key: value credentials, arrows, subject-first
sentences), which the rules were not written against first. Last, made-up reports that move through the
multi-page shop of the tests (tests/samples/multipage: navigation, where the user is, repetition, menus inside a
page, an off-origin link) are reproduced on its buggy and its fixed version (bench/data/multipage_reports.json).

Then the real-app set (bench/apps: real bugs of PyPI web apps, pinned buggy and fixed releases; `make bench-apps`
builds their venvs): per case, the steps extracted against the ground truth, whether the buggy release is
reproduced with the case's oracle, whether the fixed release raises a false alarm, and the time per case, with
the medians. `--set samples` or `--set apps` runs one set only; `--only NAME...` picks real-app cases.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WEBAPPS = ROOT / "tests" / "samples" / "webapps"
APPS = ROOT / "bench" / "apps"
#: The agent's time budget per reproduction on a real app (its pages are slower than the samples').
APP_BUDGET_SECONDS = 90.0
#: The driver's timeout per page load and action on a real app: a Flask development server on a loaded machine
#: takes more than the default 5 s to serve its first page with its fonts, which is no bug of the app.
APP_DRIVER_TIMEOUT_MS = 15000


def main() -> None:
    """Run the sample set and the real-app set (or one of them) and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("all", "samples", "apps"), default="all")
    parser.add_argument("--only", nargs="*", help="real-app case names (bench/apps/<name>)")
    parser.add_argument("--json", type=Path, help="also write the real-app records to this file")
    parser.add_argument("--out", type=Path, help="keep each real-app run's action log, screenshots and log here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.set in ("all", "samples"):
        samples()
    if args.set in ("all", "apps"):
        records = asyncio.run(real_apps(set(args.only) if args.only else None, args.out))
        print(render_apps(records))
        if args.json:
            args.json.write_text(json.dumps(records, indent=2) + "\n")


def samples() -> None:
    """Run the web eval on the sample apps and print the figures (the sample set's output, unchanged)."""
    from agents.app import render_web_report, run_web_eval

    with tempfile.TemporaryDirectory(prefix="app-repro-bench-") as tmp:
        doc = asyncio.run(run_web_eval(WEBAPPS, Path(tmp)))
    print(render_web_report(doc))
    cases = doc["cases"]
    utg = [c["seconds"] for c in cases if c.get("used_utg")]
    direct = [c["seconds"] for c in cases if not c.get("used_utg")]
    if utg and direct:
        ratio = statistics.median(utg) / statistics.median(direct)
        print(
            f"median seconds: direct {statistics.median(direct):.2f}, with UTG exploration "
            f"{statistics.median(utg):.2f} (x{ratio:.1f})"
        )
    print(json.dumps(doc["summary"]))
    alt = asyncio.run(_alternative_wordings())
    print(f"second wording: reproduced {alt['reproduced']}/{alt['cases']}, steps {alt['found']}/{alt['total']}")
    shop = asyncio.run(_multipage())
    print(
        f"multi-page shop: reproduced {shop['reproduced']}/{shop['cases']}, false alarms on the fixed version "
        f"{shop['false_alarms']}/{shop['cases']}, median seconds {shop['median_seconds']:.2f}"
    )


async def _alternative_wordings() -> dict[str, int]:
    """Reproduce each buggy app from its second report; count reproductions and ground-truth steps found."""
    from agents.app import WebDriver, extraction_score, load_web_cases, reproduce_app, serve_app, shared_browser

    reports = json.loads((Path(__file__).parent / "data" / "webapp_alt_reports.json").read_text())
    counts = {"cases": 0, "reproduced": 0, "found": 0, "total": 0}
    async with shared_browser() as browser:
        with tempfile.TemporaryDirectory(prefix="app-repro-alt-") as tmp:
            for case in load_web_cases(WEBAPPS):
                if case.name not in reports:
                    continue
                async with serve_app(case) as url:
                    res = await reproduce_app(
                        reports[case.name], url, out_dir=Path(tmp) / case.name, driver=WebDriver(url, browser=browser)
                    )
                found, total = extraction_score(res.steps, case.truth_steps)
                fired = res.oracle["fired"] if res.oracle else None
                counts["cases"] += 1
                counts["reproduced"] += int(res.status == "reproduced" and fired == case.oracle_kind)
                counts["found"] += found
                counts["total"] += total
    return counts


async def _multipage() -> dict[str, float]:
    """Each made-up multi-page report on the buggy shop (the right oracle must fire) and the fixed one (none)."""
    from agents.app import WebDriver, reproduce_app, serve_app, shared_browser
    from agents.app.webcases import WebCase

    shop = WebCase("multipage", ROOT / "tests" / "samples" / "multipage", {"start": "server"})
    reports = json.loads((Path(__file__).parent / "data" / "multipage_reports.json").read_text())
    reproduced = false_alarms = 0
    seconds: list[float] = []
    async with shared_browser() as browser:
        with tempfile.TemporaryDirectory(prefix="app-repro-shop-") as tmp:
            for i, case in enumerate(reports):
                for fixed in (False, True):
                    async with serve_app(shop, fixed=fixed) as url:
                        res = await reproduce_app(
                            case["report"],
                            url,
                            out_dir=Path(tmp) / f"{i}-{fixed}",
                            driver=WebDriver(url, browser=browser),
                        )
                    fired = res.oracle["fired"] if res.oracle else None
                    if fixed:
                        false_alarms += int(res.status == "reproduced")
                    else:
                        reproduced += int(res.status == "reproduced" and fired == case["oracle"])
                        seconds.append(res.seconds)
    return {
        "cases": len(reports),
        "reproduced": reproduced,
        "false_alarms": false_alarms,
        "median_seconds": statistics.median(seconds) if seconds else 0.0,
    }


async def real_apps(only: set[str] | None = None, out: Path | None = None) -> list[dict[str, Any]]:
    """Each real-app case on its buggy release (must reproduce) and its fixed release (must not).

    `out` keeps every run's artifacts (out/<case>/buggy|fixed, and the servers' logs); else a temporary folder.
    """
    from agents.app import shared_browser

    sys.path.insert(0, str(APPS))
    from cases import load_app_cases

    records = []
    async with shared_browser() as browser:
        with tempfile.TemporaryDirectory(prefix="app-repro-real-") as tmp:
            for case in load_app_cases(APPS, only):
                records.append(await _real_case(case, browser, (out or Path(tmp)) / case.name))
                print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    return records


async def _real_case(case: Any, browser: Any, out: Path) -> dict[str, Any]:
    """One real-app case: reproduce on the buggy release, then on the fixed one; the record of both."""
    from appenv import venv_dir
    from cases import serve_case

    from agents.app import extraction_score
    from agents.app.s2r import Step

    truth = [Step.from_json(s) for s in case.truth["steps"]]
    record: dict[str, Any] = {"name": case.name, "app": case.meta["app"], "style": case.meta["style"]}
    record.update(oracle=case.oracle_kind, steps_total=len(truth))
    missing = [
        v
        for v in (case.meta["buggy"], case.meta["fixed"])
        if not (venv_dir(case.meta["package"], v) / ".installed").exists()
    ]
    if missing:
        # Installing here would time the install and reach PyPI in the middle of a measurement.
        reason = f"{case.meta['package']} {', '.join(missing)} not built: run `make bench-apps` first"
        return {**record, "status": "not built", "reasons": [reason], "seconds": 0.0, "steps_found": 0}
    started = time.monotonic()
    try:
        async with serve_case(case, log=out / "buggy-server.log") as url:
            res = await _reproduce(case.report, url, browser, out / "buggy")
        async with serve_case(case, fixed=True, log=out / "fixed-server.log") as url:
            fixed = await _reproduce(case.report, url, browser, out / "fixed")
    except (RuntimeError, OSError) as exc:
        return {**record, "status": "not started", "reasons": [str(exc)], "seconds": 0.0, "steps_found": 0}
    fired = str(res.oracle["fired"]) if res.oracle else None
    record.update(
        status=res.status,
        fired=fired,
        reproduced=res.status == "reproduced" and fired == case.oracle_kind,
        steps_found=extraction_score(res.steps, truth)[0],
        steps_extracted=len(res.steps),
        fixed_status=fixed.status,
        fixed_fired=str(fixed.oracle["fired"]) if fixed.oracle else None,
        false_alarm=fixed.status == "reproduced",
        seconds=round(res.seconds, 2),
        fixed_seconds=round(fixed.seconds, 2),
        wall_seconds=round(time.monotonic() - started, 1),
        reasons=res.reasons,
    )
    return record


async def _reproduce(report: str, url: str, browser: Any, out: Path) -> Any:
    """The agent on one release, with the real apps' budget and driver timeout."""
    from agents.app import WebDriver, reproduce_app

    driver = WebDriver(url, browser=browser, timeout_ms=APP_DRIVER_TIMEOUT_MS)
    return await reproduce_app(report, url, out_dir=out, driver=driver, budget_seconds=APP_BUDGET_SECONDS)


def render_apps(records: list[dict[str, Any]]) -> str:
    """The real-app set as markdown: one row per case, then the totals and medians."""
    lines = [
        "# Real web apps (bench/apps)",
        "",
        "| case | app | style | oracle | steps found | status | fired | reproduced | fixed: false alarm | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['name']} | {r['app']} | {r['style']} | {r['oracle']} | {r.get('steps_found', 0)}/{r['steps_total']} "
            f"| {r['status']} | {r.get('fired') or '-'} | {'yes' if r.get('reproduced') else 'no'} "
            f"| {'yes' if r.get('false_alarm') else 'no'} | {r.get('seconds', 0.0)} |"
        )
    # "error" is the agent's own outcome (a driver error): it ran; a release that never started did not.
    done = [r for r in records if r["status"] not in ("not started", "not built")]
    found, total = sum(r.get("steps_found", 0) for r in records), sum(r["steps_total"] for r in records)
    lines += [
        "",
        f"- cases: {len(records)} ({len(records) - len(done)} did not run: not built or did not start)",
        f"- steps extracted correctly: {found}/{total}" + (f" ({found / total:.1%})" if total else ""),
        f"- reproduced with the case's oracle: {sum(bool(r.get('reproduced')) for r in records)}/{len(records)}",
        f"- false alarms on the fixed release: {sum(bool(r.get('false_alarm')) for r in records)}/{len(done)}",
        "- median seconds per reproduction (buggy release): "
        + (f"{statistics.median(r['seconds'] for r in done):.2f}" if done else "-"),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

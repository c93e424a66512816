"""The app reproduction agent on the sample web apps: S2R extraction accuracy, reproduction rate, time.

Each case runs three times on one chromium: the buggy app (reproduce), the action log (replay) and the fixed app
(reproduce, must not fire). Time is reported per reproduction and as ratios side by side: reports that skip a
step (the UTG explores) against reports that do not. Then each buggy app is reproduced again from a second report
worded differently (bench/data/webapp_alt_reports.json: terse, key: value credentials, arrows, subject-first
sentences), which the rules were not written against first. Last, made-up reports that move through the
multi-page shop of the tests (tests/samples/multipage: navigation, where the user is, repetition, menus inside a
page, an off-origin link) are reproduced on its buggy and its fixed version (bench/data/multipage_reports.json).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEBAPPS = ROOT / "tests" / "samples" / "webapps"


def main() -> None:
    """Run the web eval on the sample apps and print the figures."""
    sys.path.insert(0, str(ROOT))
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


if __name__ == "__main__":
    main()

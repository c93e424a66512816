"""The app reproduction agent on the six sample web apps: S2R extraction accuracy, reproduction rate, time.

Each case runs three times on one chromium: the buggy app (reproduce), the action log (replay) and the fixed app
(reproduce, must not fire). Time is reported per reproduction and as ratios side by side: reports that skip a
step (the UTG explores) against reports that do not.
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
    from sandboxes.runners.webcases import render_web_report, run_web_eval

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


if __name__ == "__main__":
    main()

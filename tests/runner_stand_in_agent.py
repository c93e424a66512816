"""A small runner executor command in the app agent's result shape, for `reprobot runner --exec` tests.

`python tests/runner_stand_in_agent.py [--delay S] JOB_JSON OUT_DIR`, run by a real `reprobot runner --exec`.
It does a small, honest part of the real agent's work and writes the same result shape: it loads the app's page,
takes a real screenshot with Debian's chromium, and lets the HTTP 5xx oracle decide. Steps are the report's
numbered lines. It exercises the `--exec` path (a runner's own executor) and, with `--delay`, gives the
protocol tests a job that outlives a killed runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def main(argv: list[str]) -> int:
    delay = 0.0
    if argv[:1] == ["--delay"]:
        delay, argv = float(argv[1]), argv[2:]
    job = json.loads(Path(argv[0]).read_text())
    out = Path(argv[1])
    (out.parent / "agent.pid").write_text(str(os.getpid()))
    started = time.monotonic()
    print(f"agent: attempt {job['attempt']}, waiting {delay:g}s", flush=True)
    time.sleep(delay)
    task = job["task"]
    url = task["app_url"]
    steps = [
        {"action": "follow", "target": line.split(".", 1)[1].strip(), "input": None}
        for line in task["issue_text"].splitlines()
        if line[:1].isdigit() and "." in line[:4]
    ]
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            status, body = response.status, response.read(300).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(300).decode(errors="replace")
    print(f"agent: GET {url} -> {status}", flush=True)
    shot = out / "step-1.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=640,480",
            url,
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    actions = [{"action": "goto", "url": url}]
    (out / "actions.json").write_text(json.dumps(actions))
    fired = status >= 500
    result = {
        "status": "reproduced" if fired else "not_reproduced",
        "steps": steps,
        "actions": actions,
        "oracle": {"kind": "http_5xx", "evidence": {"url": url, "status": status, "body": body}} if fired else None,
        "screenshots": [str(shot)] if shot.exists() else [],
        "replay": f"reprobot replay --app-url {url} --actions actions.json --json",
        "seconds": round(time.monotonic() - started, 3),
        "reasons": [],
    }
    (out / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

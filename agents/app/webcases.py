"""Web reproduction cases: a folder with an app to start, issue.md and a ground-truth oracle (case.toml).

case.toml says how to start the app (`start = "static"` serves app/, or fixed/ for the fixed version;
`start = "server"` runs server.py --port N, with --fixed for the fixed version), the oracle kind that must fire,
and the ground-truth steps the extraction is scored against. The apps are the benchmark's own test programs,
started on 127.0.0.1 with a scrubbed environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.app.driver import Driver
from agents.app.reproduce import AppReproResult, replay_actions, reproduce_app
from agents.app.s2r import Step, step_matches


@dataclass(frozen=True)
class WebCase:
    """One case folder."""

    name: str
    root: Path
    meta: dict[str, Any]

    @property
    def issue_text(self) -> str:
        """The report the agent sees."""
        return (self.root / "issue.md").read_text()

    @property
    def truth_steps(self) -> list[Step]:
        """The ground-truth steps (what a careful reader extracts), for scoring the extraction."""
        return [Step.from_json(s) for s in self.meta.get("steps", [])]

    @property
    def oracle_kind(self) -> str:
        """The oracle that must fire on the buggy app."""
        return str(self.meta.get("oracle", ""))


def is_web_case(case_toml: Path) -> bool:
    """Whether a case.toml describes a web case (it says how to start an app)."""
    try:
        return "start" in tomllib.loads(case_toml.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False


def load_web_cases(bench: Path, only: set[str] | None = None) -> list[WebCase]:
    """Every web case under `bench`, sorted by name; a case.toml that is not a web case is skipped."""
    cases = []
    for toml in sorted(bench.glob("**/case.toml")):
        if only and toml.parent.name not in only:
            continue
        meta = tomllib.loads(toml.read_text())
        if "start" in meta:
            cases.append(WebCase(toml.parent.name, toml.parent, meta))
    return cases


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def app_command(case: WebCase, port: int, *, fixed: bool) -> list[str]:
    """The command that serves the case's app (buggy, or the fixed version) on 127.0.0.1:port."""
    start = case.meta.get("start")
    if start == "static":
        folder = case.root / ("fixed" if fixed else "app")
        return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port), "--directory", str(folder)]
    if start == "server":
        return [sys.executable, str(case.root / "server.py"), "--port", str(port), *(["--fixed"] if fixed else [])]
    raise ValueError(f'{case.name}: case.toml `start` must be "static" or "server", not {start!r}')


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, even if not with 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.asynccontextmanager
async def serve_app(case: WebCase, *, fixed: bool = False, timeout: float = 10.0) -> AsyncIterator[str]:
    """Start the case's app and yield its URL once it answers; it is stopped on the way out."""
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = await asyncio.create_subprocess_exec(
        *app_command(case, port, fixed=fixed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        end = time.monotonic() + timeout
        while not await asyncio.to_thread(_answers, url):
            if proc.returncode is not None or time.monotonic() > end:
                raise RuntimeError(f"{case.name}: the app did not start on {url}")
            await asyncio.sleep(0.05)
        yield url
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def extraction_score(extracted: list[dict[str, object]], truth: list[Step]) -> tuple[int, int]:
    """(ground-truth steps found in order, ground-truth steps): an extracted step counts once, in order."""
    got = [Step.from_json(s) for s in extracted]
    found, j = 0, 0
    for t in truth:
        k = j
        while k < len(got) and not step_matches(got[k], t):
            k += 1
        if k < len(got):
            found, j = found + 1, k + 1
    return found, len(truth)


async def run_case(
    case: WebCase, out: Path, *, driver_factory: Any = None, budget_seconds: float = 120.0
) -> dict[str, Any]:
    """Reproduce on the buggy app, replay the log, and reproduce on the fixed app; score all three."""

    def driver(url: str) -> str | Driver:
        return driver_factory(url) if driver_factory else "web"

    record: dict[str, Any] = {"name": case.name, "style": case.meta.get("style", ""), "oracle": case.oracle_kind}
    async with serve_app(case) as url:
        res = await reproduce_app(
            case.issue_text, url, out_dir=out / case.name / "buggy", driver=driver(url), budget_seconds=budget_seconds
        )
        replay = await replay_actions(
            out / case.name / "buggy" / "actions.json", url, out_dir=out / case.name / "replay", driver=driver(url)
        )
    async with serve_app(case, fixed=True) as url:
        fixed = await reproduce_app(
            case.issue_text, url, out_dir=out / case.name / "fixed", driver=driver(url), budget_seconds=budget_seconds
        )
    found, total = extraction_score(res.steps, case.truth_steps)
    fired = _fired(res)
    record.update(
        status=res.status,
        fired=fired,
        reproduced=res.status == "reproduced" and fired == case.oracle_kind,
        replay_fired=_fired(replay),
        replay_same=replay.status == "reproduced" and _fired(replay) == fired,
        fixed_status=fixed.status,
        used_utg=any(a.get("via") == "utg" for a in res.actions),
        steps_found=found,
        steps_total=total,
        seconds=round(res.seconds, 2),
        reasons=res.reasons,
    )
    return record


def _fired(res: AppReproResult) -> str | None:
    return str(res.oracle["fired"]) if res.oracle else None


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The seed's two headline figures (extraction accuracy, reproduction rate), and time per reproduction."""
    n = len(records)
    found = sum(r.get("steps_found", 0) for r in records)
    total = sum(r.get("steps_total", 0) for r in records)
    return {
        "cases": n,
        "s2r_extraction_accuracy": round(found / total, 3) if total else 0.0,
        "reproduction_rate": round(sum(bool(r.get("reproduced")) for r in records) / n, 3) if n else 0.0,
        "replay_same_oracle": sum(bool(r.get("replay_same")) for r in records),
        "fixed_not_reproduced": sum(r.get("fixed_status") == "not_reproduced" for r in records),
        "used_utg": sum(bool(r.get("used_utg")) for r in records),
        "median_seconds": statistics.median(r["seconds"] for r in records) if records else 0.0,
    }


async def run_web_eval(bench: Path, out: Path, only: set[str] | None = None) -> dict[str, Any]:
    """Run every web case under `bench` one after another; the document has a summary and one record per case."""
    from agents.app.web import WebDriver, shared_browser

    records = []
    out.mkdir(parents=True, exist_ok=True)
    async with shared_browser() as browser:
        for case in load_web_cases(bench, only):
            try:
                records.append(await run_case(case, out, driver_factory=lambda u: WebDriver(u, browser=browser)))
            except (RuntimeError, ValueError) as exc:
                records.append({"name": case.name, "status": "error", "reasons": [str(exc)], "seconds": 0.0})
    return {"summary": summarize(records), "cases": records}


def render_web_report(document: dict[str, Any]) -> str:
    """The web eval as markdown: the headline figures, then one row per case."""
    s = document["summary"]
    lines = [
        "# Web app reproduction",
        "",
        f"- cases: {s['cases']}",
        f"- S2R extraction accuracy: {s['s2r_extraction_accuracy']:.1%}",
        f"- reproduction rate: {s['reproduction_rate']:.1%}",
        f"- replay reaches the same oracle: {s['replay_same_oracle']}/{s['cases']}",
        f"- fixed version not reproduced: {s['fixed_not_reproduced']}/{s['cases']}",
        f"- needed the UTG: {s['used_utg']}",
        f"- median seconds per reproduction: {s['median_seconds']:.2f}",
        "",
        "| case | style | oracle | status | fired | steps | replay | fixed | UTG | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in document["cases"]:
        lines.append(
            f"| {r['name']} | {r.get('style', '')} | {r.get('oracle', '')} | {r['status']} | {r.get('fired') or '-'} "
            f"| {r.get('steps_found', 0)}/{r.get('steps_total', 0)} | {'same' if r.get('replay_same') else 'differs'} "
            f"| {r.get('fixed_status', '-')} | {'yes' if r.get('used_utg') else 'no'} | {r['seconds']} |"
        )
    return "\n".join(lines) + "\n"

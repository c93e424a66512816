"""The app reproduction agent on real chromium: six buggy web apps, their replays and their fixed versions.

One browser for the module; each case's app is a real process on 127.0.0.1 (a static server or a tiny
http.server app), started for the buggy and then the fixed version.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents.app.reproduce import reproduce_app
from agents.app.web import CHROMIUM, WebDriver, shared_browser
from agents.app.webcases import WebCase, load_web_cases, render_web_report, run_case, serve_app, summarize

WEBAPPS = Path(__file__).parent / "samples" / "webapps"
CASES = load_web_cases(WEBAPPS)

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)"),
    pytest.mark.asyncio(loop_scope="module"),
    # One xdist worker runs the whole module, in order: the summary reads the per-case RECORDS, and the
    # browser is started once.
    pytest.mark.xdist_group("app_repro"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with shared_browser() as b:
        yield b


RECORDS: dict[str, dict[str, Any]] = {}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_case_reproduces_replays_and_the_fix_does_not(
    case: WebCase, browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp(case.name)
    record = await run_case(case, out, driver_factory=lambda url: WebDriver(url, browser=browser), budget_seconds=60)
    RECORDS[case.name] = record
    assert record["status"] == "reproduced", record["reasons"]
    assert record["fired"] == case.oracle_kind
    assert record["replay_same"], "the action log replays to the same oracle"
    assert record["fixed_status"] == "not_reproduced", "the oracle is not trivially true"
    assert record["used_utg"] == case.meta["utg"], "exploration exactly where the report skips a step"
    assert record["steps_found"] == record["steps_total"]
    shots = sorted(p.name for p in (out / case.name / "buggy").glob("*.png"))
    assert "start.png" in shots and any(s.startswith("step-") for s in shots)
    log = json.loads((out / case.name / "buggy" / "actions.json").read_text())
    assert log["actions"] and log["oracle_spec"]


async def test_summary_of_the_cases() -> None:
    if len(RECORDS) != len(CASES):
        pytest.skip("runs after the per-case test")
    summary = summarize(list(RECORDS.values()))
    assert summary["cases"] >= 6 and summary["reproduction_rate"] == 1.0
    assert summary["used_utg"] >= 2 and summary["fixed_not_reproduced"] == summary["cases"]
    assert "reproduction rate: 100.0%" in render_web_report({"summary": summary, "cases": list(RECORDS.values())})


async def test_utg_is_cached_per_app_version(browser: Any, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "settings")
    cache = tmp_path / "utg"
    async with serve_app(case) as url:
        first = await reproduce_app(
            case.issue_text, url, out_dir=tmp_path / "1", driver=WebDriver(url, browser=browser), cache_dir=cache
        )
        second = await reproduce_app(
            case.issue_text, url, out_dir=tmp_path / "2", driver=WebDriver(url, browser=browser), cache_dir=cache
        )
    assert first.status == second.status == "reproduced"
    assert len(list(cache.glob("utg-*.json"))) == 1
    assert "(exploration)" in Path(first.log).read_text()
    assert "(cached UTG)" in Path(second.log).read_text()
    assert first.actions == second.actions


async def test_a_report_without_steps_abstains(browser: Any, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "cart")
    async with serve_app(case) as url:
        res = await reproduce_app(
            "# It is broken\n\nPlease fix it asap!!", url, out_dir=tmp_path, driver=WebDriver(url, browser=browser)
        )
    assert res.status == "abstained" and res.steps == []


async def test_an_unreachable_app_is_an_error_not_a_crash(browser: Any, tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/"
    res = await reproduce_app("1. Click Save", url, out_dir=tmp_path, driver=WebDriver(url, browser=browser))
    assert res.status == "error" and res.reasons[0].startswith(f"cannot open {url}")


async def test_local_mode_cli_and_replay(tmp_path: Path) -> None:
    """`reprobot reproduce --app-url --json`, then `reprobot replay` of its log: real processes, own chromium."""
    case = next(c for c in CASES if c.name == "login")
    env_cli = [sys.executable, "-m", "bot.cli"]
    out_run, out_rep = ["--out", str(tmp_path / "run")], ["--out", str(tmp_path / "replay")]
    async with serve_app(case) as url:
        rep = subprocess.run(
            [*env_cli, "reproduce", "--app-url", url, "--issue", str(case.root / "issue.md"), "--json", *out_run],
            capture_output=True,
            text=True,
            timeout=180,
            env=_env(tmp_path),
        )
        doc = json.loads(rep.stdout)
        assert rep.returncode == 0, rep.stderr
        assert set(doc) >= {"status", "steps", "actions", "oracle", "screenshots", "replay", "seconds"}
        assert doc["status"] == "reproduced" and doc["oracle"]["fired"] == "http_5xx"
        assert doc["replay"].startswith("reprobot replay --app-url")
        replay = subprocess.run(
            [
                *env_cli,
                "replay",
                "--app-url",
                url,
                "--actions",
                str(tmp_path / "run" / "actions.json"),
                "--json",
                *out_rep,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=_env(tmp_path),
        )
        again = json.loads(replay.stdout)
        assert again["status"] == "reproduced" and again["oracle"]["fired"] == "http_5xx"
        assert again["actions"] == [{k: v for k, v in a.items() if k != "via"} for a in doc["actions"]]


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    env["REPROBOT_DATA_DIR"] = str(tmp_path / "data")
    return env


async def test_eval_command_reports_the_headline_figures(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(WEBAPPS / "quantity", bench / "quantity")
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bot.cli", "eval", "--bench", str(bench), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "S2R extraction accuracy: 100.0%" in proc.stdout and "reproduction rate: 100.0%" in proc.stdout
    results = json.loads((tmp_path / "out" / "web" / "results.json").read_text())
    assert results["cases"][0]["fixed_status"] == "not_reproduced"


async def test_a_model_proposes_the_step_no_element_matches(browser: Any, tmp_path: Path) -> None:
    """Exploration off: the step "the gear icon" names nothing on screen; the model picks the Settings tab."""
    case = next(c for c in CASES if c.name == "settings")

    def complete(messages: list[dict[str, str]]) -> str:
        if "Elements:" not in messages[-1]["content"]:
            return "not JSON"  # the S2R request: the rules extract instead
        line = next(ln for ln in messages[-1]["content"].splitlines() if "'Settings'" in ln)
        return json.dumps({"action": "click", "element": int(line.split(":")[0])})

    report = "1. Click the gear icon\n2. Turn on Dark mode\n3. Press Save"
    async with serve_app(case) as url:
        res = await reproduce_app(
            report, url, out_dir=tmp_path, driver=WebDriver(url, browser=browser), model=complete, explore_depth=0
        )
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "console_error"
    assert res.actions[0]["via"] == "model" and res.actions[0]["locator"] == "#tab-settings"

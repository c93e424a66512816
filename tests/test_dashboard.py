"""The read-only dashboard in a real headless Chromium: login (deployment token, GitHub OAuth on the double),
the jobs list with filters, a job page, deliveries and runners; unauthenticated requests get 401, never data."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.intake.server import make_app
from bot.jobs.queue import Queue
from bot.settings.config import Settings
from bot.store import Store
from tests.conftest import FIXTURES, require_shared
from tests.fakes.github import GitHubDouble
from tests.runner_procs import free_port

CHROMIUM = "/usr/bin/chromium"
TOKEN = "dashboard-token-for-tests"
SECRET_TITLE = "secret-looking issue title"
SHOTS = Path(os.environ.get("REPROBOT_SCREENSHOTS", "/tmp/reprobot-dashboard-shots"))

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")

DIFF = """--- a/m.py
+++ b/m.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x - 1
+    return x + 1
"""


def seed(store: Store, data_dir: Path) -> dict[str, int]:
    """A finished job with everything the job page shows, a job on another repo, a delivery and an installation."""
    issue = store.publications.upsert_issue(
        "github", "octo/app", "7", title=SECRET_TITLE, url="https://github.com/octo/app/issues/7"
    )
    other = store.publications.upsert_issue("github", "octo/other", "3", title="other repo's issue")
    queue = Queue(store)
    job_id = queue.enqueue("github.issue", issue.id, {"n": 7}, concurrency_key="octo/app#7")
    other_id = queue.enqueue("github.issue", other.id, {"n": 3}, concurrency_key="octo/other#3")
    job = queue.claim("w1", 60)
    assert job is not None and job.id == job_id
    traj = store.runs.start_trajectory(job_id, "llm", "tdd", seed=3)
    store.runs.add_step(traj, "tool", {"name": "run_tests", "observation": "1 failed, 4 passed\nAssertionError"})
    store.runs.add_step(traj, "edit", {"name": "edit_file", "thought": "off by one in f", "path": "m.py"})
    store.runs.finish_trajectory(traj, "fixed", seconds=12.5, tokens=1234, cost=0.0123)
    (data_dir / "trajectories").mkdir(parents=True, exist_ok=True)
    messages = [
        {"role": "system", "content": "You repair bugs."},
        {"role": "assistant", "content": "Let me run the tests."},
    ]
    (data_dir / "trajectories" / "t-abc.json").write_text(json.dumps({"messages": messages}))
    patch = store.runs.add_patch(job_id, traj, DIFF, fix_hash="h1", has_test=True, fix_lines=1, total_lines=8)
    store.runs.add_review(patch, "brt", True, "fails before, passes after")
    store.runs.add_review(patch, "smell", False, "touches a denied path")
    store.runs.add_selection(job_id, "default", patch, "largest group: 2 of 2 identical fixes", [["h1", 2]])
    record = {
        "abstention": {"act": True, "score": 0.82, "threshold": 0.5, "reasons": ["has a traceback"]},
        "environment": {"python": "3.11", "installer": "pip"},
        "baseline": {"passed": 4, "failed": 1, "error": 0},
        "selector": "default",
        "selection_explanation": "largest group",
        "cost": "40 steps and 400,000 tokens per trajectory, no cost cap",
        "llm_usage": {"prompt_tokens": 1000, "completion_tokens": 234, "cost_usd": 0.0123},
        "trajectories": [{"id": "t-abc", "db_id": traj, "agent": "llm", "start": 0.5, "end": 13.0, "status": "fixed"}],
        "stages": [{"name": "search", "start": 0.5, "end": 13.0}],
        "localization": [{"file": "m.py", "line": 2, "score": 0.9}],
        "reproduction": {
            "path": "tests/test_r.py",
            "fails_before": True,
            "passes_after": True,
            "before_output": "1 failed",
            "after_output": "1 passed",
            "symptom": "wrong_value",
        },
        "selected": "t-abc",
        "candidates": [
            {
                "id": "t-abc",
                "trajectory": "t-abc",
                "diff": DIFF,
                "fix_hash": "h1",
                "has_test": True,
                "fix_lines": 1,
                "total_lines": 8,
                "files": ["m.py"],
                "selected": True,
                "votes": ["default"],
                "lost": "",
                "assessment": None,
                "reviews": [
                    {"reviewer": "brt", "accepted": True, "reason": "fails before, passes after"},
                    {"reviewer": "smell", "accepted": False, "reason": "touches a denied path"},
                ],
            }
        ],
    }
    queue.finish(job_id, "w1", {"status": "fixed", "reasons": [], "pr": 12, "record": record})
    store.publications.upsert_publication(issue.id, "status-fix", "4242", job_id=job_id)
    store.publications.upsert_publication(issue.id, "pr", "12", job_id=job_id)
    store.publications.upsert_installation(1, "octo", ["octo/app", "octo/other"])
    store.deliveries.record_delivery("d-0001", "github", "issues", job_id)
    store.runners.add_runner(
        "pixel-7", "runner-token", ["android", "api-34"], "0.1.0", ephemeral=False, scope=["deployment"]
    )
    return {"job": job_id, "other": other_id}


@pytest.fixture
async def site(tmp_path: Path, settings: Settings) -> AsyncIterator[dict[str, Any]]:
    spec = require_shared(FIXTURES / "github" / "rest-openapi-subset.json")
    double = GitHubDouble(tmp_path / "github", spec, "hook-secret")
    await double.start()
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("X = 1\n")
    double.add_repo("octo/app", src)
    double.add_repo("octo/other", src)
    double.oauth.add_user("alice", {"octo/app": "admin", "octo/other": "read"})
    double.oauth.add_user("bob", {"octo/app": "write"})
    port = free_port()
    s = replace(
        settings,
        public_url=f"http://127.0.0.1:{port}",  # GitHub login's callback is built from it
        dashboard_token=TOKEN,
        github_client_id=double.oauth.client_id,
        github_client_secret=double.oauth.client_secret,
        github_web_url=double.url,
        github_api_url=double.url,
        github_retry_base=0.01,
    )
    store = Store.open(s.store_path)
    ids = await asyncio.to_thread(seed, store, s.data_dir)
    runner = web.AppRunner(make_app(s, store=store), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield {"url": f"http://127.0.0.1:{port}", "ids": ids, "double": double}
    finally:
        await runner.cleanup()
        await double.stop()
        store.close()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            await b.close()


async def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000
    return path


async def test_unauthenticated_gets_the_login_page_never_data(site: dict[str, Any], browser: Any) -> None:
    base, job = site["url"], site["ids"]["job"]
    async with aiohttp.ClientSession() as http:
        for path in ("/dashboard/jobs", f"/dashboard/jobs/{job}", "/dashboard/deliveries", "/dashboard/runners"):
            async with http.get(base + path, allow_redirects=False) as resp:
                text = await resp.text()
                assert resp.status == 401, path
                assert SECRET_TITLE not in text and "d-0001" not in text and "return x + 1" not in text
                assert "Log in" in text
        # A forged session cookie and a wrong bearer token are no better.
        async with http.get(
            base + "/dashboard/jobs", headers={"Cookie": "reprobot_session=eyJ4IjoxfQ.00", "Authorization": "Bearer x"}
        ) as resp:
            assert resp.status == 401 and SECRET_TITLE not in await resp.text()
    page = await browser.new_page()
    resp = await page.goto(f"{base}/dashboard/jobs/{job}")
    assert resp.status == 401
    assert await page.locator("#token-login").count() == 1
    assert await page.locator("#github-login").count() == 1
    assert await page.locator("#jobs, .trajectory").count() == 0
    await page.fill("input[name=token]", "wrong")
    await page.click("#token-login button")
    assert (await page.inner_text("#login-error")).startswith("That token is not")
    await shot(page, "login")


async def test_token_login_jobs_job_deliveries_runners(site: dict[str, Any], browser: Any) -> None:
    base, job = site["url"], site["ids"]["job"]
    page = await browser.new_page()
    await page.goto(f"{base}/dashboard/login")
    await page.fill("input[name=token]", TOKEN)
    await page.click("#token-login button")
    await page.wait_for_url(f"{base}/dashboard/jobs")
    rows = page.locator("#jobs tr.job")
    assert await rows.count() == 2
    assert SECRET_TITLE in await page.inner_text("#jobs")
    await shot(page, "jobs")
    # Filters: by status (done) and by repo.
    await page.select_option("select[name=status]", "done")
    await page.click("form.filters button")
    await page.wait_for_url("**status=done**")
    assert await rows.count() == 1 and "octo/app" in await rows.first.inner_text()
    await page.select_option("select[name=status]", "")
    await page.select_option("select[name=repo]", "octo/other")
    await page.click("form.filters button")
    await page.wait_for_url("**repo=octo%2Fother**")
    assert await rows.count() == 1 and "octo/other" in await rows.first.inner_text()
    await page.select_option("select[name=repo]", "")
    await page.select_option("select[name=kind]", "github.issue")
    await page.click("form.filters button")
    await page.wait_for_url("**kind=github.issue**")
    assert await rows.count() == 2

    await page.click(f"a[href='/dashboard/jobs/{job}']")
    await page.wait_for_url(f"{base}/dashboard/jobs/{job}")
    assert await page.inner_text("#abstention-score") == "0.82"
    assert "has a traceback" in await page.inner_text("#abstention")
    assert "4 passed" in await page.inner_text("#baseline") and "1 failed" in await page.inner_text("#baseline")
    assert "installer" in (await page.text_content("#environment") or "")
    steps = page.locator(".trajectory .timeline li.step")
    assert await steps.count() == 2
    first = await steps.nth(0).text_content() or ""
    assert "run_tests" in first and "AssertionError" in first
    assert "off by one" in (await steps.nth(1).text_content() or "")
    assert "Let me run the tests." in (await page.locator(".conversation").text_content() or "")
    # The diff is highlighted by pygments: inserted and deleted lines are their own spans.
    assert (
        await page.locator("#selected .diff .gi").count() >= 1
        and await page.locator("#selected .diff .gd").count() >= 1
    )
    assert await page.locator(".review.accepted").count() == 1 and await page.locator(".review.rejected").count() == 1
    assert "largest group" in await page.inner_text("#why")
    assert "$0.0123" in await page.inner_text("#cost")
    hrefs = await page.locator("#links a").evaluate_all("els => els.map(e => e.href)")
    assert "https://github.com/octo/app/pull/12" in hrefs
    assert "https://github.com/octo/app/issues/7#issuecomment-4242" in hrefs
    await shot(page, "job")

    await page.click("nav >> text=Deliveries")
    await page.wait_for_url(f"{base}/dashboard/deliveries")
    assert "d-0001" in await page.inner_text("#deliveries")
    await shot(page, "deliveries")
    await page.click("nav >> text=Runners")
    await page.wait_for_url(f"{base}/dashboard/runners")
    runner = page.locator("#runners tr.runner")
    assert await runner.count() == 1
    text = await runner.inner_text()
    assert "pixel-7" in text and "android, api-34" in text and "online" in text
    await shot(page, "runners")
    await page.click("text=Log out")
    await page.wait_for_url(f"{base}/dashboard/login")
    resp = await page.goto(f"{base}/dashboard/jobs")
    assert resp.status == 401


async def test_github_login_admins_only_and_only_their_repos(site: dict[str, Any], browser: Any) -> None:
    base, double = site["url"], site["double"]
    context = await browser.new_context()
    page = await context.new_page()
    double.oauth.signed_in = "alice"
    await page.goto(f"{base}/dashboard/login")
    await page.click("#github-login")
    await page.wait_for_url(f"{base}/dashboard/jobs")
    assert "alice (github)" in await page.inner_text("header")
    text = await page.inner_text("#jobs")
    assert SECRET_TITLE in text and "octo/other" not in text  # alice administers octo/app only
    resp = await page.goto(f"{base}/dashboard/jobs/{site['ids']['other']}")
    assert resp.status == 404
    await shot(page, "github-login-jobs")
    await context.close()

    context = await browser.new_context()
    page = await context.new_page()
    double.oauth.signed_in = "bob"  # write access is not enough
    await page.goto(f"{base}/dashboard/login")
    await page.click("#github-login")
    await page.wait_for_selector("#login-error")
    assert "administers no repository" in await page.inner_text("#login-error")
    resp = await page.goto(f"{base}/dashboard/jobs")
    assert resp.status == 401
    # A callback with a state that did not start in this browser is refused before any code is traded.
    exchanges = double.oauth.exchanges
    resp = await page.goto(f"{base}/dashboard/auth/github/callback?code=x&state=forged")
    assert resp.status == 401 and double.oauth.exchanges == exchanges
    await context.close()

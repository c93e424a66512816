"""Acceptance of the job page (issue 31) in a real headless Chromium: a real `reprobot fix` of a copy of
examples/shopcart and a GitHub `/fix` job on the double, each page explaining its job (outcome sentence, selected
diff, the BRT before and after, the assessment, three labelled charts, patch names the same as in the PR body and
result.json); a running job's page follows its stage without a manual reload; PR bodies and comments link the job
page only under a public URL.

Full-page screenshots go to $REPROBOT_TEST_ARTIFACTS (else the test's tmp_path); their paths are printed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.intake.server import make_app
from bot.jobs.queue import Queue
from bot.settings.config import Settings
from bot.store import Store
from tests.conftest import QUIXBUGS, make_git_repo, require_shared
from tests.gh_env import GitHubEnv, bot_comments

CHROMIUM = "/usr/bin/chromium"
TOKEN = "dashboard-token-for-tests"
PUBLIC = "https://reprobot.example"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REPROBOT = str(Path(sys.executable).with_name("reprobot"))
VIEWPORT = {"width": 1280, "height": 900}

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: REPROBOT_TEST_ARTIFACTS when set, else the test's own tmp_path."""
    folder = Path(os.environ.get("REPROBOT_TEST_ARTIFACTS") or tmp_path / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            await b.close()


async def serve(settings: Settings, store: Store) -> tuple[web.AppRunner, str]:
    """The bot's web app (dashboard included) on a free port of 127.0.0.1."""
    runner = web.AppRunner(make_app(settings, store=store), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def open_job(browser: Any, base: str, job_id: int) -> Any:
    page = await browser.new_page(viewport=VIEWPORT, extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
    resp = await page.goto(f"{base}/dashboard/jobs/{job_id}")
    assert resp.status == 200
    return page


async def check_job_page(page: Any, record: dict[str, Any], shots: Path, name: str) -> int:
    """The page explains the job; returns its height in px. Every answer is in the first screen or one link away."""
    sentence = page.locator("#outcome-sentence")
    box = await sentence.bounding_box()
    assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], "the outcome is in the first screen"
    text = await sentence.inner_text()
    selected = record["selected"]
    assert text.startswith("Fixed") and f"patch {selected}" in text and "the correctness assessment is" in text
    toc = await page.locator("nav.toc a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert {"#selected", "#assessment", "#why", "#pictures"} <= set(toc), "one link away"
    # The selected patch, named as in result.json, its diff in full (no height cap), the BRT before and after.
    assert await page.inner_text("#selected h2") == f"Selected patch {selected}"
    diff = page.locator("#selected-diff pre")
    assert await diff.evaluate("e => getComputedStyle(e).maxHeight") == "none"
    chosen = next(c for c in record["candidates"] if c["id"] == selected)
    for line in chosen["diff"].splitlines():
        if line.startswith("+") and not line.startswith("+++") and line.strip("+ "):
            assert line[1:].strip() in await diff.inner_text()
            break
    brt = record["reproduction"]
    assert brt["before_output"].strip().splitlines()[-1] in await page.inner_text("#brt-before")
    assert brt["after_output"].strip().splitlines()[-1] in await page.inner_text("#brt-after")
    verdict = record["assessment"]["verdict"]
    assert await page.inner_text("#assessment-verdict") == verdict
    # Why this patch: the selected one first, every other distinct patch says why it lost.
    patches = page.locator("#why article.patch")
    assert await patches.count() >= 1
    assert await patches.first.get_attribute("id") == f"patch-{selected}"
    for i in range(1, await patches.count()):
        assert await patches.nth(i).locator(".lost-reason").count() == 1
    # Three charts, each with a text alternative and labelled data points.
    for chart in ("timeline", "ranking", "candidates"):
        svg = page.locator(f"svg#chart-{chart}")
        assert await svg.count() == 1, chart
        assert await svg.get_attribute("role") == "img"
        assert (await svg.locator("title").first.text_content() or "").strip()
        assert (await svg.locator("desc").text_content() or "").strip()
        labels = await svg.locator("g.point").evaluate_all("els => els.map(e => e.getAttribute('data-label'))")
        assert labels and all(labels), chart
    assert await page.locator("svg#chart-candidates g.point.validated").count() >= 1
    # Trajectories are collapsed; a candidate step's title carries its edit and whether the BRT passed.
    assert await page.locator("details.trajectory[open]").count() == 0
    titles = await page.locator("li.step summary").all_text_contents()
    assert any(re.search(r"try_candidate — \S+:\d+ .* → BRT (passed|failed)", t) for t in titles)
    height = int(await page.evaluate("document.documentElement.scrollHeight"))
    path = shots / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot: {path} ({height} px high)")
    return height


def shopcart_repo(path: Path) -> Path:
    """A git copy of examples/shopcart, as `make demo` makes it."""
    shutil.copytree(EXAMPLES / "shopcart", path)
    files = {str(p.relative_to(path)): p.read_text() for p in path.rglob("*") if p.is_file()}
    shutil.rmtree(path)
    return make_git_repo(path, files)


async def test_a_cli_fix_job_page_explains_the_job(
    tmp_path: Path, settings: Settings, browser: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = shopcart_repo(tmp_path / "shopcart")
    out = tmp_path / "out"
    env = {**os.environ, "REPROBOT_DATA_DIR": str(settings.data_dir)}
    env.pop("REPROBOT_PUBLIC_URL", None)
    args = [REPROBOT, "fix", "--repo", str(repo), "--issue", str(EXAMPLES / "shopcart-issue.md"), "--json"]
    proc = await asyncio.to_thread(
        subprocess.run, [*args, "--out", str(out)], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((out / "result.json").read_text())
    record = result["record"]
    assert result["status"] == "fixed" and record["abstention"]["score"] > 0.5 and record["baseline"]["passed"] > 0
    selected = record["selected"]
    pr = (out / "pr.md").read_text()
    assert f"Selected patch: `{selected}`" in pr, "the PR body names the patch as result.json does"
    assert "/dashboard/jobs/" not in pr, "no job link without REPROBOT_PUBLIC_URL"
    s = replace(settings, dashboard_token=TOKEN)
    store = await asyncio.to_thread(Store.open, s.store_target)
    runner, base = await serve(s, store)
    try:
        page = await open_job(browser, base, result["job_id"])
        height = await check_job_page(page, record, artifacts(tmp_path), "cli-fix-job")
        # The no-JS step filter: only the candidates whose BRT passed.
        await page.goto(f"{base}/dashboard/jobs/{result['job_id']}?steps=passed")
        titles = await page.locator("li.step summary").all_text_contents()
        assert titles and all("BRT passed" in t for t in titles)
    finally:
        await runner.cleanup()
        await asyncio.to_thread(store.close)
    with capsys.disabled():
        print(f"\nshopcart job page height: {height} px")


def _host_gcd(env: GitHubEnv) -> dict[str, Any]:
    src = require_shared(QUIXBUGS) / "gcd"
    env.double.add_repo("octo/gcd", src / "repo")
    title, _, body = (src / "issue.md").read_text().partition("\n")
    return env.double.add_issue("octo/gcd", title.lstrip("# ").strip(), body.strip())


def _command(env: GitHubEnv, issue: dict[str, Any], body: str) -> dict[str, Any]:
    comment = {"id": 556000 + len(body), "body": body, "author_association": "OWNER"}
    comment["user"] = {"login": "owner", "id": 77, "type": "User"}
    return env.payload("issue_comment", "created", "octo/gcd", issue, comment=comment, sender=comment["user"])


@pytest.mark.slow
@pytest.mark.shared
async def test_a_github_fix_job_page_and_its_links(tmp_path: Path, settings: Settings, browser: Any) -> None:
    async with GitHubEnv(tmp_path, replace(settings, public_url=PUBLIC, dashboard_token=TOKEN)) as env:
        issue = _host_gcd(env)
        assert (await env.send("issue_comment", _command(env, issue, "/fix")))[0] == 202
        await env.drain()
        jobs = [j for j in env.jobs() if isinstance(j.result, dict) and "record" in j.result]
        assert len(jobs) == 1, [(j.kind, j.status, j.last_error) for j in env.jobs()]
        job = jobs[0]
        link = f"{PUBLIC}/dashboard/jobs/{job.id}"
        pulls = env.double.repos["octo/gcd"].pulls
        assert len(pulls) == 1 and link in pulls[0]["body"]
        assert f"Selected patch: `{job.result['record']['selected']}`" in pulls[0]["body"]
        comments = bot_comments(env.double, "octo/gcd", issue["number"])
        assert comments and all(link in c["body"] for c in comments)
        page = await open_job(browser, env.url, job.id)
        await check_job_page(page, job.result["record"], artifacts(tmp_path), "github-fix-job")
        # A visitor who is not logged in goes through the usual login.
        anonymous = await browser.new_page()
        resp = await anonymous.goto(f"{env.url}/dashboard/jobs/{job.id}")
        assert resp.status == 401 and await anonymous.locator("#token-login").count() == 1


@pytest.mark.parametrize("public_url", [PUBLIC, None])
async def test_status_comments_link_the_job_only_with_a_public_url(
    tmp_path: Path, settings: Settings, public_url: str | None
) -> None:
    async with GitHubEnv(tmp_path, replace(settings, public_url=public_url)) as env:
        small = tmp_path / "small"
        small.mkdir()
        (small / "m.py").write_text("X = 1\n")
        env.double.add_repo("octo/gcd", small)
        issue = env.double.add_issue("octo/gcd", "Please add dark mode", "It would be nice to have a dark theme.")
        assert (await env.send("issue_comment", _command(env, issue, "/fix")))[0] == 202
        await env.drain()
        comments = bot_comments(env.double, "octo/gcd", issue["number"])
        assert len(comments) == 1 and "not acting" in comments[0]["body"]
        job = next(j for j in env.jobs() if isinstance(j.result, dict) and "record" in j.result)
        if public_url:
            assert f"{PUBLIC}/dashboard/jobs/{job.id}" in comments[0]["body"]
        else:
            assert "/dashboard/jobs/" not in comments[0]["body"]


async def test_a_running_jobs_page_follows_its_stage_without_a_reload(
    tmp_path: Path, settings: Settings, browser: Any
) -> None:
    from playwright.async_api import expect

    s = replace(settings, dashboard_token=TOKEN)
    store = await asyncio.to_thread(Store.open, s.store_target)
    issue = store.publications.upsert_issue("local", "/tmp/repo", "slug", title="a running job")
    queue = Queue(store)
    job = queue.start_inline("fix", issue.id, {}, "w1", 600)
    now = time.time()
    assert store.jobs.set_progress(job.id, "environment", "installing", since=now - 12, now=now)
    runner, base = await serve(s, store)
    try:
        page = await open_job(browser, base, job.id)
        assert await page.inner_text("#current-stage") == "environment"
        assert await page.locator("meta[http-equiv=refresh]").count() == 1
        jobs_page = await browser.new_page(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        await jobs_page.goto(f"{base}/dashboard/jobs")
        assert "running: environment" in await jobs_page.inner_text("#jobs")
        later = time.time()
        await asyncio.to_thread(store.jobs.set_progress, job.id, "search", "4 trajectories", since=later, now=later)
        # No reload from the test: the page refreshes itself while the job runs.
        await expect(page.locator("#current-stage")).to_have_text("search", timeout=20_000)
        await page.screenshot(path=str(artifacts(tmp_path) / "running-job.png"), full_page=True)
        # A visitor who follows a link to the page logs in as usual and lands on it.
        visitor = await browser.new_page()
        assert (await visitor.goto(f"{base}/dashboard/jobs/{job.id}")).status == 401
        await visitor.fill("input[name=token]", TOKEN)
        await visitor.click("#token-login button")
        await visitor.wait_for_url(f"{base}/dashboard/jobs/{job.id}")
        assert await visitor.inner_text("#current-stage") == "search"
        queue.finish(job.id, "w1", {"status": "not_fixed", "reasons": ["no candidate passed"]})
        await expect(page.locator("#outcome-sentence")).to_have_text("Not fixed: no candidate passed.", timeout=20_000)
        assert await page.locator("meta[http-equiv=refresh]").count() == 0, "a finished job's page stays put"
    finally:
        await runner.cleanup()
        await asyncio.to_thread(store.close)

"""The dashboard across tenants and sites (issue 28, finding 6), against a real `reprobot serve` process.

Security headers on every page, no cross-origin POST (logout included), the OAuth redirect_uri from
REPROBOT_PUBLIC_URL whatever the Host header says, and /dashboard/runners in the viewer's scope: a GitHub
viewer sees the runners that served their installations, never every runner of the deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from aiohttp import web

from bot.jobs.queue import Queue
from bot.store import Store
from bot.store.runners import runner_owner
from tests.conftest import FIXTURES, require_shared
from tests.fakes.github import GitHubDouble
from tests.runner_procs import free_port, serve_with

TOKEN = "dashboard-token-for-security-tests"
CHROMIUM = "/usr/bin/chromium"
CALLBACK = "/dashboard/auth/github/callback"


def seed(store: Store) -> None:
    """Two installations; a runner holding a job of installation 1, one that ran a job of installation 2, one idle."""
    store.publications.upsert_installation(1, "octo", ["octo/app", "octo/other"])
    store.publications.upsert_installation(2, "acme", ["acme/lib"])
    queue = Queue(store)
    for name, labels, installation, repo, finish in (
        ("runner-octo", ["android"], 1, "octo/app", False),
        ("runner-acme", ["minetest"], 2, "acme/lib", True),
    ):
        issue = store.publications.upsert_issue("github", repo, "1", title=f"{repo} issue")
        publish = {"installation_id": installation, "repo": repo, "number": 1}
        job_id = queue.enqueue(
            "reproduce.app",
            issue.id,
            {"task": {}, "publish": publish},
            concurrency_key=None,
            labels=labels,
            tenant=f"github:{installation}",
        )
        runner_id = store.runners.add_runner(
            name, f"{name}-token", labels, "0.1.0", ephemeral=False, scope=[f"github:{installation}"]
        )
        runner = store.runners.get_runner(runner_id)
        assert runner is not None
        job = store.runners.claim_for_runner(runner, now=time.time(), lease_seconds=3600)
        assert job is not None and job.id == job_id
        if finish:
            store.jobs.release_job(job_id, runner_owner(runner_id), status="done", now=time.time(), result={})
    store.runners.add_runner(
        "runner-idle", "runner-idle-token", ["linux"], "0.1.0", ephemeral=False, scope=["deployment"]
    )


@contextlib.contextmanager
def reprobot_serve(data_dir: Path, port: int, log: Path, settings: dict[str, str]) -> Iterator[str]:
    """`reprobot serve` on `port` with `settings` in its environment; yields its URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    with serve_with(env | {"REPROBOT_DATA_DIR": str(data_dir)} | settings, port, log) as url:
        yield url


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """A seeded store, the GitHub double (OAuth users alice and carol) and `reprobot serve` over both."""
    double = GitHubDouble(tmp_path / "github", require_shared(FIXTURES / "github" / "rest-openapi-subset.json"), "h")
    await double.start()
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("X = 1\n")
    for repo, installation in (("octo/app", 1), ("octo/other", 1), ("acme/lib", 2)):
        double.add_repo(repo, src, installation)
    double.oauth.add_user("alice", {"octo/app": "admin"})
    double.oauth.add_user("carol", {"acme/lib": "admin"})
    data = tmp_path / "data"
    data.mkdir()
    store = await asyncio.to_thread(Store.open, data / "reprobot.db")
    await asyncio.to_thread(seed, store)
    await asyncio.to_thread(store.close)
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    settings = {
        "REPROBOT_DASHBOARD_TOKEN": TOKEN,
        "REPROBOT_GITHUB_CLIENT_ID": double.oauth.client_id,
        "REPROBOT_GITHUB_CLIENT_SECRET": double.oauth.client_secret,
        "REPROBOT_GITHUB_WEB_URL": double.url,
        "REPROBOT_GITHUB_API_URL": double.url,
        "REPROBOT_GITHUB_RETRY_BASE": "0.01",
        "REPROBOT_PUBLIC_URL": public,
    }
    try:
        with reprobot_serve(data, port, tmp_path / "serve.log", settings) as url:
            yield {"url": url, "double": double, "log": tmp_path / "serve.log"}
    finally:
        await double.stop()


def http(url: str) -> aiohttp.ClientSession:
    """A client that keeps the dashboard's cookies (which are set for 127.0.0.1, an IP address)."""
    return aiohttp.ClientSession(base_url=url, cookie_jar=aiohttp.CookieJar(unsafe=True))


async def token_login(client: aiohttp.ClientSession, origin: str) -> None:
    """Log `client` in with the deployment token through the login form, as the dashboard's own page posts it."""
    async with client.post("/dashboard/login", data={"token": TOKEN}, headers={"Origin": origin}) as resp:
        assert resp.status == 200 and resp.url.path == "/dashboard/jobs", await resp.text()


async def github_login(client: aiohttp.ClientSession, double: GitHubDouble, who: str) -> None:
    """Log `client` in as GitHub user `who` through the OAuth flow on the double."""
    double.oauth.signed_in = who
    async with client.get("/dashboard/auth/github") as resp:
        assert resp.status == 200 and resp.url.path == "/dashboard/jobs", await resp.text()


async def test_dashboard_pages_send_csp_frame_and_referrer_headers(served: dict[str, Any]) -> None:
    url = served["url"]
    async with http(url) as client:
        answers = []
        for path in ("/dashboard/login", "/dashboard/jobs", "/dashboard"):
            async with client.get(path, allow_redirects=False) as resp:
                answers.append((path, resp.status, resp.headers))
        await token_login(client, url)
        for path in ("/dashboard/jobs", "/dashboard/runners", "/dashboard/jobs/999999", "/dashboard/style.css"):
            async with client.get(path, allow_redirects=False) as resp:
                answers.append((path, resp.status, resp.headers))
    for path, _, headers in answers:
        csp = {d.split()[0]: d.split()[1:] for d in headers.get("Content-Security-Policy", "").split(";") if d.strip()}
        assert csp.get("frame-ancestors") == ["'none'"], (path, csp)
        # No script from anywhere: default-src 'none' and no script-src to widen it, nothing inline.
        assert csp.get("default-src") == ["'none'"] and "script-src" not in csp, (path, csp)
        assert csp.get("style-src") == ["'self'"] and "'unsafe-inline'" not in str(csp), (path, csp)
        assert csp.get("form-action") == ["'self'"] and csp.get("base-uri") == ["'none'"], (path, csp)
        assert headers.get("X-Frame-Options") == "DENY", path
        assert headers.get("Referrer-Policy") == "same-origin", path
        assert headers.get("X-Content-Type-Options") == "nosniff", path
    # Login page, 401 page, redirect, pages, a 404, and the stylesheet that replaced the inline <style>.
    assert [status for _, status, _ in answers] == [200, 401, 302, 200, 200, 404, 200]


async def test_cross_origin_posts_are_refused_logout_included(served: dict[str, Any]) -> None:
    url = served["url"]
    async with http(url) as client:
        # Login CSRF: the right token, posted from another origin, opens no session.
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {}):
            async with client.post("/dashboard/login", data={"token": TOKEN}, headers=headers) as resp:
                assert resp.status == 403, headers
            assert not [c for c in client.cookie_jar if c.key == "reprobot_session"]
        await token_login(client, url)
        forged = (
            {"Origin": "http://evil.example"},
            {"Origin": "http://127.0.0.1:1"},  # same site, other origin
            {"Origin": "null"},
            {"Referer": "http://evil.example/page"},
            {},  # neither Origin nor Referer
        )
        for headers in forged:
            async with client.post("/dashboard/logout", headers=headers, allow_redirects=False) as resp:
                assert resp.status == 403, headers
                assert "reprobot_session" not in resp.cookies, headers
            async with client.get("/dashboard/jobs") as resp:
                assert resp.status == 200, headers  # still logged in
        # The dashboard's own form (its Origin, or an old browser's Referer) logs out.
        async with client.post("/dashboard/logout", headers={"Referer": f"{url}/dashboard/jobs"}) as resp:
            assert resp.status == 200 and resp.url.path == "/dashboard/login"
        async with client.get("/dashboard/jobs") as resp:
            assert resp.status == 401


async def test_oauth_redirect_uri_comes_from_the_public_url_never_host(served: dict[str, Any]) -> None:
    url, double = served["url"], served["double"]
    async with http(url) as client:
        for host in ("evil.example", "evil.example:8443", "127.0.0.1:1"):
            async with client.get("/dashboard/auth/github", headers={"Host": host}, allow_redirects=False) as resp:
                assert resp.status == 302, host
                query = parse_qs(urlsplit(resp.headers["Location"]).query)
                assert query["redirect_uri"] == [url + CALLBACK], (host, query)
        # The flow still completes, with the code bound to that redirect_uri.
        await github_login(client, double, "alice")
        async with client.get("/dashboard/jobs") as resp:
            assert "alice (github)" in await resp.text()


async def test_runners_page_shows_a_github_viewer_only_their_installations_runners(served: dict[str, Any]) -> None:
    url, double = served["url"], served["double"]

    async def runners(client: aiohttp.ClientSession) -> str:
        async with client.get("/dashboard/runners") as resp:
            assert resp.status == 200
            return await resp.text()

    async with http(url) as client:
        await token_login(client, url)
        everyone = await runners(client)
    assert all(name in everyone for name in ("runner-octo", "runner-acme", "runner-idle"))
    async with http(url) as client:
        await github_login(client, double, "alice")  # admin of octo/app, in installation 1
        alice = await runners(client)
    assert "runner-octo" in alice and "runner-acme" not in alice and "runner-idle" not in alice
    assert "<td>1</td>" in alice  # runner-octo's lease of installation 1's job
    async with http(url) as client:
        await github_login(client, double, "carol")  # admin of acme/lib, in installation 2
        carol = await runners(client)
    assert "runner-acme" in carol and "runner-octo" not in carol and "runner-idle" not in carol
    assert "<td>0</td>" in carol  # runner-acme holds no job now; runner-octo's lease is not carol's to count


@pytest.fixture
async def attacker() -> AsyncIterator[str]:
    """A page on another origin (same site: 127.0.0.1, another port) that posts the logout form on load."""

    async def page(request: web.Request) -> web.Response:
        target = request.query["target"]
        body = f"""<!doctype html><form id="f" method="post" action="{target}/dashboard/logout"></form>
            <script>document.getElementById("f").submit()</script>"""
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")
async def test_a_cross_site_form_cannot_log_the_viewer_out_in_chromium(served: dict[str, Any], attacker: str) -> None:
    from playwright.async_api import async_playwright

    url = served["url"]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            violations: list[str] = []
            page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
            await page.goto(f"{url}/dashboard/login")
            await page.fill("input[name=token]", TOKEN)
            await page.click("#token-login button")
            await page.wait_for_url(f"{url}/dashboard/jobs")
            # The stylesheet applies under the CSP (no inline style is needed), and nothing was blocked.
            background = await page.eval_on_selector("header", "e => getComputedStyle(e).backgroundColor")
            assert background == "rgb(36, 41, 47)" and not violations, violations
            async with page.expect_response(f"{url}/dashboard/logout") as posted:
                await page.goto(f"{attacker}/?target={url}")
            assert (await posted.value).status == 403
            resp = await page.goto(f"{url}/dashboard/jobs")
            assert resp is not None and resp.status == 200  # the viewer is still logged in
            await page.click("text=Log out")  # the dashboard's own button still works
            await page.wait_for_url(f"{url}/dashboard/login")
            resp = await page.goto(f"{url}/dashboard/jobs")
            assert resp is not None and resp.status == 401
        finally:
            await browser.close()

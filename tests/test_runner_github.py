"""End to end: `/reproduce` on a GitHub-double repo whose policy names a web runner, run by a real `reprobot runner`."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.settings.config import Settings
from bot.store import JobRow
from tests.gh_env import INSTALLATION, GitHubEnv, bot_comments
from tests.runner_procs import REGISTRATION, Runners

pytestmark = [pytest.mark.slow, pytest.mark.shared]
REPO = "octo/shop"
STAND_IN = Path(__file__).with_name("runner_stand_in_agent.py")
SAMPLES = Path(__file__).with_name("samples") / "webapps"
#: The app reproduction agent runs as the runner's built-in executor of `reproduce.app`.
HAVE_AGENT = importlib.util.find_spec("agents.app") is not None and (
    importlib.util.find_spec("agents.app.reproduce") is not None
)


def _agent(*extra: str) -> list[str]:
    return ["--exec", f"reproduce.app={sys.executable} {STAND_IN} {' '.join(extra)}".strip()]


ISSUE = """The checkout page crashes

1. Open the shop
2. Add the blue mug to the cart
3. Open the cart

Expected: the cart lists the mug. Actual: a server error page."""


async def _buggy_app() -> tuple[web.AppRunner, str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(
            status=500,
            text="<h1>Internal Server Error</h1><p>TypeError: cart is undefined</p>",
            content_type="text/html",
        )

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/"


def _fast(settings: Settings) -> Settings:
    return replace(
        settings,
        runner_registration_token=REGISTRATION,
        runner_lease=2.0,
        runner_heartbeat=1.0,
        runner_claim_wait=1.0,
        runner_claim_poll=0.1,
    )


def _host(env: GitHubEnv, tmp_path: Path, app_url: str, report: str) -> dict[str, Any]:
    src = tmp_path / "shop"
    (src / ".github").mkdir(parents=True)
    (src / "app.js").write_text("export const cart = undefined;\n")
    policy = f"reproduce:\n  runner:\n    labels: [web]\n    app_url: {app_url}\n"
    (src / ".github" / "reprobot.yml").write_text(policy)
    env.double.add_repo(REPO, src)
    title, _, body = report.partition("\n")
    title = title.lstrip("# ")
    return env.double.add_issue(REPO, title, body.strip())


def _command(env: GitHubEnv, issue: dict[str, Any]) -> dict[str, Any]:
    comment = {"id": 991, "body": "/reproduce", "author_association": "OWNER"}
    comment["user"] = {"login": "owner", "id": 7, "type": "User"}
    return env.payload("issue_comment", "created", REPO, issue, comment=comment, sender=comment["user"])


async def _wait(probe: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := await asyncio.to_thread(probe)):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)
    return value


def _app_job(env: GitHubEnv) -> JobRow:
    jobs = env.store.jobs.list_jobs(kind="reproduce.app")
    assert len(jobs) == 1, jobs
    return jobs[0]


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    if shutil.which("chromium") is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium) for the screenshots")


async def _queue_for_runner(env: GitHubEnv, tmp_path: Path, app_url: str, report: str = ISSUE) -> dict[str, Any]:
    issue = _host(env, tmp_path, app_url, report)
    status, _ = await env.send("issue_comment", _command(env, issue))
    assert status == 202
    await env.drain()  # the command's job reads the policy and queues the runner job
    job = await asyncio.to_thread(_app_job, env)
    assert job.labels == ["web"] and job.status == "queued" and set(job.payload["task"]) >= {"issue_text", "app_url"}
    assert job.tenant == f"github:{INSTALLATION}"  # only runners registered for this installation take it
    comments = bot_comments(env.double, REPO, issue["number"])
    assert len(comments) == 1 and "waiting for a runner with labels web" in comments[0]["body"]
    return issue


async def _check_comment(
    env: GitHubEnv,
    issue: dict[str, Any],
    steps: tuple[str, ...] | list[str] = ("Add the blue mug to the cart",),
    evidence: tuple[str, ...] | list[str] = ("500", "cart is undefined"),
) -> str:
    await env.drain()  # the finished runner job's result is published by a worker job
    comments = bot_comments(env.double, REPO, issue["number"])
    assert len(comments) == 1, [c["body"][:100] for c in comments]
    body = str(comments[0]["body"])
    assert "Reproduced on a runner" in body
    assert all(step in body for step in steps), body  # the steps
    assert "**Evidence**" in body and all(e in body for e in evidence), body  # the oracle's evidence
    assert "reprobot replay --app-url" in body
    shots = [line for line in body.splitlines() if line.startswith("![")]
    assert shots, body
    link = shots[0].split("](", 1)[1].rstrip(")")
    async with httpx.AsyncClient() as http:
        png = await http.get(env.url + link)
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    reactions = [r["content"] for r in env.double.repos[REPO].reactions if r["target"] == ("comment", 991)]
    assert reactions == ["eyes", "rocket"]
    return body


@pytest.mark.skipif(not HAVE_AGENT, reason="needs the app reproduction agent (agents/app/reproduce.py)")
async def test_reproduce_goes_to_a_web_runner_and_comes_back_as_one_comment(tmp_path: Path, settings: Settings) -> None:
    """The real agent (Playwright on chromium) as the runner's built-in executor, on one of the sample apps."""
    from agents.app.webcases import load_web_cases, serve_app

    (case,) = load_web_cases(SAMPLES, {"cart"})
    runners: Runners | None = None
    async with serve_app(case) as app_url, GitHubEnv(tmp_path, _fast(settings)) as env:
        try:
            issue = await _queue_for_runner(env, tmp_path, app_url, case.issue_text)
            runners = Runners(env.url, tmp_path / "runners")
            runners.start("browser", "web,chromium")
            await _wait(lambda: _app_job(env).status == "done", "the runner to finish the job", timeout=180)
            job = await asyncio.to_thread(_app_job, env)
            assert job.result["status"] == "reproduced" and job.result["oracle"], job.result
            body = await _check_comment(env, issue, steps=["Add to cart", "Checkout"], evidence=[])
            (tmp_path / "comment.md").write_text(body)  # kept for a human look when the test fails
            assert "--actions actions.json" in body
        finally:
            if runners is not None:
                runners.stop_all()


async def test_reproduce_with_an_executor_command_comes_back_as_one_comment(tmp_path: Path, settings: Settings) -> None:
    """The same round trip with `--exec reproduce.app=COMMAND`: a runner's own executor, a real subprocess."""
    app, app_url = await _buggy_app()
    runners: Runners | None = None
    try:
        async with GitHubEnv(tmp_path, _fast(settings)) as env:
            issue = await _queue_for_runner(env, tmp_path, app_url)
            runners = Runners(env.url, tmp_path / "runners")
            runners.start("browser", "web,chromium", *_agent(), scope=f"github:{INSTALLATION}")
            await _wait(lambda: _app_job(env).status == "done", "the runner to finish the job")
            job = await asyncio.to_thread(_app_job, env)
            assert job.result["status"] == "reproduced" and job.result["oracle"]
            await _check_comment(env, issue)
    finally:
        if runners is not None:
            runners.stop_all()
        await app.cleanup()


async def test_a_runner_killed_mid_job_is_replaced_and_the_job_finished_once(
    tmp_path: Path, settings: Settings
) -> None:
    app, app_url = await _buggy_app()
    runners: Runners | None = None
    try:
        async with GitHubEnv(tmp_path, _fast(settings)) as env:
            issue = await _queue_for_runner(env, tmp_path, app_url)
            runners = Runners(env.url, tmp_path / "runners")
            doomed = runners.start("doomed", "web", *_agent("--delay", "60"))  # a job that outlives its runner
            pid_file = await _wait(
                lambda: next((runners.root / "doomed" / "work").glob("job-*/agent.pid"), None), "the agent to start"
            )
            agent_pid = int(await _wait(lambda: pid_file.read_text().strip(), "the agent's pid"))
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait()
            # The runner's child dies with it (it would otherwise go on working for a job it no longer holds).
            await _wait(lambda: not _alive(agent_pid), "the orphaned agent to die")

            runners.start("spare", "web,chromium", *_agent("--delay", "0"))
            await _wait(lambda: _app_job(env).status == "done", "the spare runner to finish the job")
            job = await asyncio.to_thread(_app_job, env)
            assert job.attempts == 2 and "lapsed" in (job.last_error or "")
            spare = [r.id for r in env.store.runners.list_runners() if r.name == "spare"]
            assert job.lease_owner == f"runner:{spare[0]}"
            await _check_comment(env, issue)
            # A late second publish (a repeated finish) changes nothing: the result job is queued once.
            assert len(await asyncio.to_thread(env.store.jobs.list_jobs, kind="github.app_result")) == 1
    finally:
        if runners is not None:
            runners.stop_all()
        await app.cleanup()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z")

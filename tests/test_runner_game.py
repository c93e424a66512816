"""End to end: `/reproduce` on a GitHub-double Minetest mod whose policy names a game runner; a real
`reprobot runner --labels minetest` takes the `reproduce.game` job, plays it in the real game and the bot posts
one comment with steps, evidence and screenshots."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agents.game.minetest import missing_tools
from bot.settings.config import Settings
from bot.store import JobRow
from tests.gh_env import GitHubEnv, bot_comments
from tests.runner_procs import REGISTRATION, Runners

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason=f"needs Minetest, Xvfb and xdotool (missing {', '.join(missing_tools())})"
    ),
]
REPO = "octo/warp-mod"
SAMPLE = Path(__file__).with_name("samples") / "minetest" / "warp_cmds"


def _fast(settings: Settings) -> Settings:
    return replace(
        settings,
        runner_registration_token=REGISTRATION,
        runner_lease=5.0,
        runner_heartbeat=1.0,
        runner_claim_wait=1.0,
        runner_claim_poll=0.1,
    )


def _game_job(env: GitHubEnv) -> JobRow:
    jobs = env.store.jobs.list_jobs(kind="reproduce.game")
    assert len(jobs) == 1, jobs
    return jobs[0]


async def _wait_done(env: GitHubEnv, timeout: float = 180.0) -> JobRow:
    deadline = asyncio.get_running_loop().time() + timeout
    while (job := await asyncio.to_thread(_game_job, env)).status != "done":
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the runner did not finish the game job: {job.status} {job.last_error}")
        await asyncio.sleep(0.2)
    return job


async def test_a_minetest_runner_reproduces_a_mod_issue_and_posts_one_comment(
    tmp_path: Path, settings: Settings
) -> None:
    src = tmp_path / "warp-mod"
    shutil.copytree(SAMPLE / "buggy", src)
    (src / ".github").mkdir()
    (src / ".github" / "reprobot.yml").write_text("reproduce:\n  runner:\n    labels: [minetest]\n    game: minetest\n")
    title, _, body = (SAMPLE / "report.md").read_text().partition("\n")
    runners: Runners | None = None
    async with GitHubEnv(tmp_path, _fast(settings)) as env:
        try:
            env.double.add_repo(REPO, src)
            issue: dict[str, Any] = env.double.add_issue(REPO, title.lstrip("# "), body.strip())
            comment = {"id": 991, "body": "/reproduce", "author_association": "OWNER"}
            comment["user"] = {"login": "owner", "id": 7, "type": "User"}
            payload = env.payload("issue_comment", "created", REPO, issue, comment=comment, sender=comment["user"])
            status, _ = await env.send("issue_comment", payload)
            assert status == 202
            await env.drain()
            job = await asyncio.to_thread(_game_job, env)
            assert job.labels == ["minetest"] and job.payload["task"]["game"] == "minetest"
            assert "token" not in str(job.payload["task"]).lower()

            runners = Runners(env.url, tmp_path / "runners")
            runners.start("game", "minetest")
            job = await _wait_done(env)
            assert job.result["status"] == "reproduced", job.result
            await env.drain()
            comments = bot_comments(env.double, REPO, issue["number"])
            assert len(comments) == 1, [c["body"][:100] for c in comments]
            text = str(comments[0]["body"])
            (tmp_path / "comment.md").write_text(text)
            assert "/warp ~ 20 ~" in text  # the step
            assert "**Evidence**" in text and "attempt to perform arithmetic on a nil value" in text
            assert "reprobot replay --game minetest" in text
            shots = [line for line in text.splitlines() if line.startswith("![")]
            assert shots, text
            async with httpx.AsyncClient() as http:
                png = await http.get(env.url + shots[0].split("](", 1)[1].rstrip(")"))
            assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
        finally:
            if runners is not None:
                runners.stop_all()

"""At-least-once delivery and a worker killed with SIGKILL mid-job still give exactly one PR and one comment."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.settings.config import Settings
from tests.gh_env import GitHubEnv, bot_comments
from tests.test_github_app import REPO, _host_case

pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _worker_env(env: GitHubEnv) -> dict[str, str]:
    s = env.settings
    assert s.github_private_key and s.github_webhook_secret and s.github_app_id
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "REPROBOT_DATA_DIR": str(s.data_dir),
        "REPROBOT_GITHUB_WEBHOOK_SECRET": s.github_webhook_secret,
        "REPROBOT_GITHUB_APP_ID": s.github_app_id,
        "REPROBOT_GITHUB_PRIVATE_KEY": s.github_private_key,
        "REPROBOT_GITHUB_API_URL": s.github_api_url,
        "REPROBOT_GITHUB_GIT_URL": s.github_git_url,
        "REPROBOT_GITHUB_RETRY_BASE": "0.05",
        "REPROBOT_WORKER_LEASE": "3",
        "REPROBOT_WORKER_POLL": "0.1",
        "REPROBOT_TRAJECTORIES": str(s.trajectories),
        "REPROBOT_LOG_LEVEL": "INFO",
        "REPROBOT_PUBLISH_UNSURE": "1" if s.publish_unsure else "0",
    } | ({"REPROBOT_DATABASE_URL": s.database_url} if s.database_url else {})


def _start_worker(env: GitHubEnv, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "bot.cli", "worker"]
    return subprocess.Popen(
        cmd, env=_worker_env(env), stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
    )


async def _wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def test_redeliveries_and_sigkilled_worker_give_one_pr(tmp_path: Path, engine_settings: Settings) -> None:
    async with GitHubEnv(tmp_path, engine_settings) as env:
        issue = _host_case(env)
        payload = env.payload("issues", "labeled", REPO, issue, label={"name": "reprobot:fix"})
        codes = [(await env.send("issues", payload, delivery_id="delivery-1"))[0] for _ in range(3)]
        assert codes == [202, 200, 200]
        log = tmp_path / "worker.log"
        first = _start_worker(env, log)
        try:
            progress = lambda: any("generate" in c["body"] for c in bot_comments(env.double, REPO, issue["number"]))  # noqa: E731
            await _wait_for(progress, 120, "the first worker to reach the generate stage")
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        assert env.double.repos[REPO].pulls == []
        assert env.store.deliveries.pending_deliveries() == 0  # the worker process promoted the inbox itself
        assert (await env.send("issues", payload, delivery_id="delivery-1"))[0] == 200
        second = _start_worker(env, log)
        try:
            done = lambda: env.store.jobs.list_jobs()[0].status in ("done", "dead", "failed")  # noqa: E731
            await _wait_for(done, 180, "the second worker to finish the job")
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait()
        job = env.store.jobs.list_jobs()[0]
        assert job.status == "done", (job.last_error, log.read_text()[-3000:])
        assert job.attempts == 2 and "expired" in (job.last_error or "")
        assert len(env.store.jobs.list_jobs()) == 1
        assert len(env.double.repos[REPO].pulls) == 1
        assert len(bot_comments(env.double, REPO, issue["number"])) == 1
        assert env.double.violations == []
        # The installation token never lands in the worker's log.
        text = log.read_text()
        assert all(token not in text for token in env.double.tokens)

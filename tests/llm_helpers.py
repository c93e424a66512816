"""Helpers for LLM tests: a bench case as a git repo, settings pointing at the scripted server, a job run."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.evaluate.run import _git_repo_from
from bot.jobs.queue import Queue
from bot.pipeline.run import run_job
from bot.pipeline.types import JobOutcome, JobRequest
from bot.settings.config import Settings
from bot.store import Store
from tests.conftest import QUIXBUGS, require_shared
from tests.fakes.llm_server import ScriptedLLM, load_script

#: Illustrative prices (USD per million tokens) so cost lines carry real numbers.
PRICE_IN, PRICE_OUT = 2.5, 10.0


def llm_settings(settings: Settings, base_url: str, **overrides: Any) -> Settings:
    """Settings aimed at the scripted server, with prices.

    The scripted runs fix the gcd case, whose fix the correctness assessment cannot confirm (no passing test
    reaches the changed line); they test the model path, so they publish as a deployment with
    REPROBOT_PUBLISH_UNSURE would (overridable).
    """
    overrides.setdefault("publish_unsure", True)
    return dataclasses.replace(
        settings,
        llm_base_url=base_url,
        llm_model="scripted-model",
        llm_api_key="sk-test-secret",
        llm_price_input=PRICE_IN,
        llm_price_output=PRICE_OUT,
        **overrides,
    )


@dataclass
class LlmRun:
    """What a scripted job run leaves behind."""

    outcome: JobOutcome
    server: ScriptedLLM
    settings: Settings
    store: Store


async def run_scripted_job(
    tmp_path: Path,
    settings: Settings,
    case: str,
    script: str,
    *,
    overrides: dict[str, Any] | None = None,
    issue: Path | None = None,
    **req: Any,
) -> LlmRun:
    """Run the whole pipeline on a bench case with llm trajectories driven by a script file."""
    case_dir = require_shared(QUIXBUGS / case)
    repo = _git_repo_from(case_dir / "repo", tmp_path / "repo")
    issue_text = (issue or case_dir / "issue.md").read_text()
    async with ScriptedLLM(load_script(script)) as srv:
        s = llm_settings(settings, srv.base_url, **(overrides or {}))
        s.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store.open(s.store_path)
        issue = store.publications.upsert_issue("local", str(repo), case, title=issue_text.splitlines()[0])
        job_id = Queue(store).enqueue("fix", issue.id, {"case": case}, concurrency_key=f"t:{case}")
        request = JobRequest(
            repo=repo,
            issue_text=issue_text,
            issue_ref=f"#{case}",
            trajectories=req.pop("trajectories", 1),
            agent=req.pop("agent", "llm"),
            test_timeout=60.0,
            **req,
        )
        outcome = await run_job(request, s, store, job_id)
    return LlmRun(outcome, srv, s, store)


@contextmanager
def scripted_server_thread(steps: list[dict[str, Any]]) -> Iterator[ScriptedLLM]:
    """The scripted server on its own event loop in a thread, for code under test that runs asyncio.run itself."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = ScriptedLLM(steps)
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(timeout=30)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()

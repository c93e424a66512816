"""The model client over real HTTP against the scripted server: retries, 400s, ledger, budgets, fail-fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.trajectory import LimitsExceeded
from bot.jobs.queue import Queue
from bot.llm import Budget, Ledger, LLMError, PriceTable, check_endpoint, client_from_settings, ledger_from_settings
from bot.settings.config import Settings
from bot.store import Store
from tests.fakes.llm_server import ScriptedLLM

HELLO = [{"role": "user", "content": "hello"}]


def _settings(tmp_path: Path, url: str, **kw: object) -> Settings:
    return Settings(data_dir=tmp_path, llm_base_url=url, llm_model="scripted-model", llm_api_key="sk-test", **kw)  # type: ignore[arg-type]


class Sleeps:
    """Records the waits the retry policy asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_429_storm_is_retried_honouring_retry_after(tmp_path: Path) -> None:
    storm = [{"error": 429, "retry_after": "7"}, {"error": 429, "retry_after": "3"}, {"error": 503}]
    async with ScriptedLLM([*storm, {"text": "ok"}]) as srv:
        sleeps = Sleeps()
        ledger = Ledger(prices=PriceTable(1.0, 2.0))
        client = client_from_settings(_settings(tmp_path, srv.base_url), ledger, sleep=sleeps)
        reply = await client.complete(HELLO, trajectory="t0")
    assert reply.content == "ok"
    assert len(srv.requests) == 4
    assert sleeps.waits[:2] == [7.0, 3.0]  # Retry-After honoured
    assert sleeps.waits[2] > 0  # 503 without a hint: backoff
    assert ledger.calls[-1].attempts == 4
    assert srv.headers[0]["authorization"] == "Bearer sk-test"


async def test_400_is_not_retried_and_error_recorded(tmp_path: Path) -> None:
    async with ScriptedLLM([{"error": 400, "message": "bad tool schema"}, {"text": "never"}]) as srv:
        ledger = Ledger()
        client = client_from_settings(_settings(tmp_path, srv.base_url), ledger, sleep=Sleeps())
        with pytest.raises(LLMError, match="HTTP 400: bad tool schema"):
            await client.complete(HELLO, trajectory="t0")
    assert len(srv.requests) == 1
    assert ledger.calls[0].error.startswith("HTTP 400")


async def test_hang_past_timeout_is_retried(tmp_path: Path) -> None:
    async with ScriptedLLM([{"hang": 3}, {"text": "after the hang"}]) as srv:
        client = client_from_settings(_settings(tmp_path, srv.base_url, llm_timeout=0.3), Ledger(), sleep=Sleeps())
        reply = await client.complete(HELLO)
    assert reply.content == "after the hang"
    assert len(srv.requests) == 2


async def test_ledger_costs_and_job_cost_budget(tmp_path: Path) -> None:
    async with ScriptedLLM([{"text": "a"}, {"text": "b"}, {"text": "c"}]) as srv:
        ledger = Ledger(prices=PriceTable(1_000_000.0, 0.0), budget=Budget(max_cost=0.5))
        client = client_from_settings(_settings(tmp_path, srv.base_url), ledger, sleep=Sleeps())
        reply = await client.complete(HELLO, trajectory="t0")
        assert reply.cost == pytest.approx(reply.prompt_tokens * 1.0)
        with pytest.raises(LimitsExceeded, match="job cost budget"):
            await client.complete(HELLO, trajectory="t1")
    assert len(srv.requests) == 1  # the budget stops before spending
    assert ledger.usage("t0").calls == 1 and ledger.usage("t1").calls == 0
    assert ledger.stopped and "t1" in ledger.stopped[0]
    assert "cost: $" in ledger.describe()


async def test_check_endpoint(tmp_path: Path) -> None:
    assert "needs REPROBOT_LLM_BASE_URL" in (await check_endpoint(Settings(data_dir=tmp_path)) or "")
    async with ScriptedLLM() as srv:
        assert await check_endpoint(_settings(tmp_path, srv.base_url)) is None
        dead = srv.base_url
    reason = await check_endpoint(_settings(tmp_path, dead), timeout=2)
    assert reason and "cannot be reached" in reason


def test_issue_and_day_caps_shrink_the_job_budget(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    issue = store.publications.upsert_issue("local", "/r", "a", title="t")
    other = store.publications.upsert_issue("local", "/r", "b", title="t")
    queue = Queue(store)
    for iss, cost in ((issue, 0.75), (other, 2.0)):
        job = queue.enqueue("fix", iss.id, {}, concurrency_key=f"k{iss.id}")
        traj = store.runs.start_trajectory(job, "llm", "freeform")
        store.runs.finish_trajectory(traj, "fixed", cost=cost)
    assert store.runs.llm_cost_since("", issue_id=issue.id) == 0.75
    assert store.runs.llm_cost_since("2000-01-01") == 2.75
    s = Settings(data_dir=tmp_path, llm_max_cost=5.0, llm_max_cost_issue=1.0, llm_max_cost_day=10.0)
    budget = ledger_from_settings(s, spent_issue=0.75, spent_day=2.75).budget
    assert (budget.cost_scope, budget.max_cost) == ("issue", 0.25)
    budget = ledger_from_settings(Settings(data_dir=tmp_path, llm_max_cost_day=3.0), 0.0, 2.75).budget
    assert (budget.cost_scope, budget.max_cost) == ("day", 0.25)
    assert ledger_from_settings(Settings(data_dir=tmp_path)).budget.max_cost is None
    store.close()


def test_repo_policy_only_tightens_the_deployment_budget(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, llm_max_cost=2.0, llm_max_steps=40)
    tighter = ledger_from_settings(s, max_steps=10, max_cost=0.5).budget
    assert (tighter.max_steps, tighter.max_cost) == (10, 0.5)
    looser = ledger_from_settings(s, max_steps=400, max_cost=50.0).budget
    assert (looser.max_steps, looser.max_cost) == (40, 2.0)
    uncapped = ledger_from_settings(Settings(data_dir=tmp_path), max_cost=1.0).budget
    assert uncapped.max_cost == 1.0

"""Runner pieces without processes: the label-matched claim, settings, the comment renderer, the child's env."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bot.jobs.queue import Queue
from bot.render.app_report import render_app_reproduction
from bot.selfhosted import execute
from bot.selfhosted.execute import CACHE_ENV
from bot.selfhosted.runner import RunnerAgent, RunnerConfig, scrubbed_env
from bot.settings.config import Settings, SettingsError
from bot.store import Store
from bot.store.runners import runner_owner, token_hash


def test_claim_matches_label_subsets_and_workers_never_take_runner_jobs() -> None:
    now = [1000.0]
    store = Store.memory(clock=lambda: now[0])
    queue = Queue(store, clock=lambda: now[0])
    needs_ab = queue.enqueue("k", None, {}, concurrency_key=None, labels=["a", "b"])
    needs_a = queue.enqueue("k", None, {}, concurrency_key=None, labels=["a"])
    worker_job = queue.enqueue("k", None, {}, concurrency_key=None)
    only_a = store.runners.get_runner(
        store.runners.add_runner("r1", "t1", ["a"], "1", ephemeral=False, scope=["deployment"])
    )
    both = store.runners.get_runner(
        store.runners.add_runner("r2", "t2", ["b", "a", "c"], "1", ephemeral=False, scope=["deployment"])
    )
    assert only_a is not None and both is not None

    first = store.runners.claim_for_runner(only_a, now=now[0], lease_seconds=10)
    assert first is not None and first.id == needs_a and first.lease_owner == runner_owner(only_a.id)
    assert store.runners.claim_for_runner(only_a, now=now[0], lease_seconds=10) is None
    second = store.runners.claim_for_runner(both, now=now[0], lease_seconds=10)
    assert second is not None and second.id == needs_ab
    claimed = queue.claim("worker")
    assert claimed is not None and claimed.id == worker_job  # the worker only ever sees the unlabelled job
    assert queue.claim("worker") is None

    queue.heartbeat(needs_a, runner_owner(only_a.id), 30)  # r1 renews its lease
    now[0] += 11  # r2 died: its lease lapses and r1 cannot take it (no label b), but another runner can
    assert store.runners.claim_for_runner(only_a, now=now[0], lease_seconds=10) is None
    again = store.runners.claim_for_runner(both, now=now[0], lease_seconds=10)
    assert again is not None and again.id == needs_ab and again.attempts == 2
    assert store.runners.get_runner(both.id).jobs_taken == 2  # type: ignore[union-attr]


def test_tokens_are_stored_hashed_and_stale_runners_pruned() -> None:
    now = [1000.0]
    store = Store.memory(clock=lambda: now[0])
    rid = store.runners.add_runner("r", "rbr_secret", ["web"], "1", ephemeral=False, scope=["deployment"])
    row = next(iter(store.db.query("SELECT * FROM runners")))
    assert row["token_hash"] == token_hash("rbr_secret") and "rbr_secret" not in str(row)
    assert store.runners.runner_for_token("rbr_secret").id == rid  # type: ignore[union-attr]
    assert store.runners.runner_for_token("rbr_other") is None
    now[0] += 100
    fresh = store.runners.add_runner("fresh", "rbr_fresh", ["web"], "1", ephemeral=False, scope=["deployment"])
    assert store.runners.prune_stale(now[0] - 50) == [rid]
    assert [r.id for r in store.runners.list_runners()] == [fresh]


def test_runner_settings_are_read_and_checked() -> None:
    env = {
        "REPROBOT_RUNNER_LEASE": "5",
        "REPROBOT_RUNNER_REGISTRATION_TOKEN": "reg",
        "REPROBOT_PUBLIC_URL": "https://b",
    }
    settings = Settings.from_env(env)
    assert settings.runner_lease == 5 and settings.public_url == "https://b"
    assert "reg" in settings.secret_values() and "reg" not in repr(settings)
    with pytest.raises(SettingsError, match="REPROBOT_RUNNER_CLAIM_WAIT"):
        Settings.from_env({"REPROBOT_RUNNER_CLAIM_WAIT": "51"})
    with pytest.raises(SettingsError, match="REPROBOT_RUNNER_LEASE"):
        Settings.from_env({"REPROBOT_RUNNER_LEASE": "0"})


def test_the_job_child_gets_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROBOT_GITHUB_PRIVATE_KEY", "key")
    monkeypatch.setenv("REPROBOT_RUNNER_TOKEN", "reg")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws")
    env = scrubbed_env({"REPROBOT_RUNNER_OUT": "/o"})
    assert env["PATH"] == os.environ["PATH"] and env["REPROBOT_RUNNER_OUT"] == "/o"
    assert not {"REPROBOT_GITHUB_PRIVATE_KEY", "REPROBOT_RUNNER_TOKEN", "AWS_SECRET_ACCESS_KEY"} & set(env)


def test_reproduction_comment_neutralizes_report_text_and_orders_screenshots() -> None:
    result = {
        "status": "reproduced",
        "steps": [{"action": "click", "target": "Buy ```now``` @admin [x](http://evil)", "input": None}],
        "actions": [{"action": "click"}],
        "oracle": {"kind": "console_error", "evidence": "Uncaught TypeError\n```\nbreakout"},
        "screenshots": ["/w/out/step-2.png", "/w/out/step-1.png"],
        "replay": "reprobot replay --app-url http://a --actions actions.json --json",
        "seconds": 1.5,
        "reasons": [],
    }
    urls = {"step-1.png": "/artifacts/1/step-1.png", "step-2.png": "/artifacts/2/step-2.png", "actions.json": "/a"}
    body = render_app_reproduction(result, urls)
    assert "`Buy '''now''' @admin [x](http://evil)`" in body  # inline code: no mention, no link, no fence
    assert body.index("step-2.png") < body.index("step-1.png")  # the agent's order
    assert "````" in body  # the evidence's own fence cannot close the block
    assert "[actions.json](/a)" in body and "1.5 s" in body

    failed = render_app_reproduction({"status": "error", "reasons": ["lease of runner:3 lapsed"]}, {})
    assert "failed" in failed and "lease of runner:3 lapsed" in failed
    assert "No oracle fired" in render_app_reproduction({"status": "not_reproduced"}, {})


async def test_app_jobs_on_one_runner_share_the_utg_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.app as app_repro  # the family's entry point, which the runner's executor imports from

    agent = RunnerAgent(RunnerConfig("http://127.0.0.1:1", "reg", [], "r1", tmp_path / "work"))
    env = scrubbed_env(agent._child_env(tmp_path / "work" / "job-1-1" / "job.json", tmp_path / "out"))
    assert env[CACHE_ENV] == str(tmp_path / "work" / "cache")
    seen: list[Path | None] = []

    async def agent_run(issue_text: str, app_url: str, **kwargs: Any) -> app_repro.AppReproResult:
        seen.append(kwargs["cache_dir"])
        kwargs["out_dir"].mkdir(parents=True)  # as the agent does
        return app_repro.AppReproResult("abstained")

    monkeypatch.setattr(app_repro, "reproduce_app", agent_run)
    job = {"kind": "reproduce.app", "task": {"issue_text": "Clicking Save crashes", "app_url": "http://127.0.0.1:9/"}}
    monkeypatch.setenv(CACHE_ENV, env[CACHE_ENV])
    await execute.reproduce_app(job, tmp_path / "job-1")
    await execute.reproduce_app(job, tmp_path / "job-2")  # the next job on this runner: the same cache folder
    monkeypatch.delenv(CACHE_ENV)
    await execute.reproduce_app(job, tmp_path / "job-3")  # started by hand without a runner: no cache
    assert seen == [tmp_path / "work" / "cache" / "utg"] * 2 + [None]


def test_scopes_parse_strictly_and_the_claim_keeps_to_them() -> None:
    from bot.store.tenants import in_scope, parse_scope, scope_within, tenant_of

    assert parse_scope(["jira:HTTPS://Acme.atlassian.net/", "github:7"]) == [
        "github:7",
        "jira:https://acme.atlassian.net",
    ]
    assert parse_scope("deployment") == parse_scope(["github:1", "deployment"]) == ["deployment"]
    for bad in ([], "github:x", ["github:0"], [f"github:{2**63}"], ["gitlab:1"], ["jira:ftp://x"], [1], None):
        with pytest.raises(ValueError):
            parse_scope(bad)
    assert tenant_of({"installation_id": 7, "repo": "o/r"}) == "github:7"
    assert tenant_of({"site": "https://acme.atlassian.net", "key": "A-1"}) == "jira:https://acme.atlassian.net"
    assert tenant_of({"installation_id": True}) is tenant_of({}) is None  # the deployment's own
    assert in_scope(["deployment"], None) and in_scope(["github:7"], "github:7")
    assert (
        not in_scope(["github:7"], "github:8") and not in_scope(["github:7"], None) and not in_scope(None, "github:7")
    )
    assert scope_within(["github:7"], ["github:7", "github:8"]) and not scope_within(["deployment"], ["github:7"])

    store = Store.memory()
    queue = Queue(store)
    mine = queue.enqueue("k", None, {}, concurrency_key=None, labels=["web"], tenant="github:7")
    theirs = queue.enqueue("k", None, {}, concurrency_key=None, labels=["web"], tenant="github:8")
    own = queue.enqueue("k", None, {}, concurrency_key=None, labels=["web"])
    scoped = store.runners.get_runner(
        store.runners.add_runner("s", "t1", ["web"], "1", ephemeral=False, scope=["github:7"])
    )
    wide = store.runners.get_runner(
        store.runners.add_runner("w", "t2", ["web"], "1", ephemeral=False, scope=["deployment"])
    )
    assert scoped is not None and wide is not None
    claimed = [store.runners.claim_for_runner(scoped, now=store.clock(), lease_seconds=10) for _ in range(2)]
    assert [j.id if j else None for j in claimed] == [mine, None]
    taken = [store.runners.claim_for_runner(wide, now=store.clock(), lease_seconds=10) for _ in range(2)]
    assert [j.id if j else None for j in taken] == [theirs, own]


def test_the_admin_token_must_differ_from_the_registration_token() -> None:
    env = {"REPROBOT_RUNNER_REGISTRATION_TOKEN": "same", "REPROBOT_RUNNER_ADMIN_TOKEN": "same"}
    with pytest.raises(SettingsError, match="REPROBOT_RUNNER_ADMIN_TOKEN must differ"):
        Settings.from_env(env)
    settings = Settings.from_env(env | {"REPROBOT_RUNNER_ADMIN_TOKEN": "admin"})
    assert "admin" in settings.secret_values() and "admin" not in repr(settings)
    assert settings.runner_job_artifacts == 64 and settings.runner_job_artifact_bytes == 64 * 1024**2
    with pytest.raises(SettingsError, match="REPROBOT_RUNNER_JOB_ARTIFACTS"):
        Settings.from_env({"REPROBOT_RUNNER_JOB_ARTIFACTS": "0"})

"""The Mojira poller against its double: paging, resume after kill -9, 429 with Retry-After, ADF, triage."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bot.mojira.client import MojiraClient, MojiraError
from bot.mojira.fields import MojiraFormatError, cursor_jql, parse_report
from bot.mojira.poller import Poller
from bot.mojira.sinks import StoreSink
from bot.mojira.triage import GAME_JOB_KIND, triage_report
from bot.settings.config import Settings
from bot.store import Store
from tests.fakes.github_manifest import throwaway_pem
from tests.fakes.mojira import MojiraDouble, adf_doc

REPROBOT = str(Path(sys.executable).with_name("reprobot"))
NOW = datetime.now(UTC).replace(second=0, microsecond=0)

CRASH = """---- Minecraft Crash Report ----
Description: Ticking block entity

java.lang.NullPointerException: null
\tat net.minecraft.world.level.block.entity.HopperBlockEntity.tryMoveItems(HopperBlockEntity.java:{line})
\tat net.minecraft.world.level.Level.tickBlockEntities(Level.java:500)
\tat net.minecraft.server.MinecraftServer.tickChildren(MinecraftServer.java:900)

-- System Details --
Details:
\tMinecraft Version: 1.20.4
\tIs Modded: Probably not. Jar signature remains and client brand is untouched.
\tType: Client (map_client.txt)
"""
STEPS = "Steps to Reproduce:\n1. Place a hopper\n2. Break the chest under it"


@pytest.fixture
async def double() -> AsyncIterator[MojiraDouble]:
    d = MojiraDouble()
    await d.start()
    yield d
    await d.stop()


def _settings(tmp_path: Path, api: str, **kw: object) -> Settings:
    return replace(Settings(data_dir=tmp_path / "data"), mojira_api_url=api, mojira_retry_base=0.01, **kw)  # type: ignore[arg-type]


def _fill(double: MojiraDouble, count: int) -> list[str]:
    keys = []
    for n in range(1, count + 1):
        key = f"MC-{1000 + n}"
        double.add(key, f"Report {n}", NOW - timedelta(minutes=count - n), versions=("1.20.4",), description=STEPS)
        keys.append(key)
    return keys


async def _poller(tmp_path: Path, double: MojiraDouble, store: Store, **kw: object) -> tuple[Poller, MojiraClient]:
    settings = _settings(tmp_path, f"{double.url}/api", **kw)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    client = MojiraClient(httpx.AsyncClient(), settings.mojira_api_url, retry_base=0.01, sleep=sleep)
    client.sleeps = sleeps  # type: ignore[attr-defined]
    return Poller(store, client, StoreSink(), "MC", "project = MC", settings), client


async def test_paging_by_start_at_and_nothing_twice(tmp_path: Path, double: MojiraDouble) -> None:
    keys = _fill(double, 7)
    store = Store.memory()
    poller, client = await _poller(tmp_path, double, store, mojira_page_size=3)
    first = await poller.poll_once()
    assert first.pages == 3 and first.new == keys
    assert [r["startAt"] for r in double.requests] == [0, 3, 6]
    assert all(r["maxResults"] == 3 and r["project"] == "MC" and r["advanced"] is True for r in double.requests)
    assert "updated >= -1d" in double.requests[0]["search"]
    assert first.routed == keys  # version + steps: each goes to a game reproduction

    # Unchanged reports are not handed on again; a changed one is refreshed in the store, not redelivered.
    double.add("MC-1003", "Report 3, edited", NOW + timedelta(minutes=1), versions=("1.20.4",))
    double.requests.clear()
    second = await poller.poll_once()
    assert second.new == [] and second.refreshed == ["MC-1003"]
    assert 'updated >= "' in double.requests[0]["search"]  # resumed from the cursor, not from the start
    record = await asyncio.to_thread(store.mojira.get, "MC-1003")
    assert record is not None and record.summary == "Report 3, edited"
    assert await asyncio.to_thread(store.mojira.keys) == keys
    await client.http.aclose()


async def test_429_with_retry_after_is_waited_out(tmp_path: Path, double: MojiraDouble) -> None:
    keys = _fill(double, 2)
    double.throttle(times=2, retry_after="7")
    store = Store.memory()
    poller, client = await _poller(tmp_path, double, store)
    result = await poller.poll_once()
    assert result.new == keys
    assert client.throttled == 2
    assert client.sleeps == [7.0, 7.0]  # type: ignore[attr-defined]  # what the server asked, not the 0.01 backoff
    assert len(double.requests) == 3

    # Past the attempts, the poll fails with a clear error and the cursor stays where it was.
    double.throttle(times=10, retry_after="1")
    before = await asyncio.to_thread(store.mojira.cursor, poller.name)
    with pytest.raises(MojiraError, match="429"):
        await poller.poll_once()
    assert await asyncio.to_thread(store.mojira.cursor, poller.name) == before
    await client.http.aclose()


async def test_adf_descriptions_become_markdown_and_their_crashes_count(tmp_path: Path, double: MojiraDouble) -> None:
    double.add(
        "MC-2001",
        "Hopper crash",
        NOW,
        description=adf_doc("The game crashes when a hopper ticks.", code=CRASH.format(line=300)),
        customfield_10055=[{"value": "Crash"}],
        customfield_10049={"value": "Important"},
        customfield_10070=12,
    )
    double.add("MC-2002", "Same crash", NOW, description=adf_doc("Again:", code=CRASH.format(line=310)))
    double.add("MC-2003", "Looks odd", NOW, description=adf_doc("Something looks odd."))
    store = Store.memory()
    poller, client = await _poller(tmp_path, double, store)
    result = await poller.poll_once()
    assert result.new == ["MC-2001", "MC-2002", "MC-2003"]
    first = await asyncio.to_thread(store.mojira.get, "MC-2001")
    assert first is not None
    assert first.report["description"].startswith("The game crashes when a hopper ticks.")
    assert "```" in first.report["description"] and "HopperBlockEntity" in first.report["description"]
    assert first.report["categories"] == ["Crash"] and first.report["votes"] == 12
    assert first.report["mojang_priority"] == "Important"
    assert first.route == GAME_JOB_KIND and first.triage["features"]["crash_attached"] is True
    second = await asyncio.to_thread(store.mojira.get, "MC-2002")
    assert second is not None and second.signature == first.signature  # another line, same crash
    assert second.triage["duplicates"] == ["MC-2001"]
    third = await asyncio.to_thread(store.mojira.get, "MC-2003")
    assert third is not None and third.route is None
    assert "names no game version" in third.triage["reasons"]
    await client.http.aclose()


async def test_crash_attachments_are_fetched_and_parsed(tmp_path: Path, double: MojiraDouble) -> None:
    double.add(
        "MC-3001",
        "Crash on load",
        NOW,
        description="It crashed, see attached.",
        attachments={"crash-2024-01-01_10.00.00-client.txt": CRASH.format(line=1).encode(), "screenshot.png": b"x"},
    )
    store = Store.memory()
    poller, client = await _poller(tmp_path, double, store)
    await poller.poll_once()
    record = await asyncio.to_thread(store.mojira.get, "MC-3001")
    assert record is not None and record.signature is not None
    assert record.triage["features"]["version_named"] is True  # from the crash report's System Details
    assert record.route == GAME_JOB_KIND
    await client.http.aclose()


async def test_a_malformed_issue_is_skipped_with_a_reason(tmp_path: Path, double: MojiraDouble) -> None:
    _fill(double, 1)
    double.issues["MC-9"] = {"key": "MC-9", "fields": {"summary": "bad", "updated": "yesterday"}}
    double.issues["MC-10"] = {"key": "MC-10", "fields": {"summary": "no updated"}}
    store = Store.memory()
    poller, client = await _poller(tmp_path, double, store)
    result = await poller.poll_once()
    assert result.new == ["MC-1001"]
    assert sorted(result.malformed) == [
        "MC-10: fields.updated is missing",
        "MC-9: fields.updated 'yesterday' is not a Jira timestamp",
    ]
    assert await asyncio.to_thread(store.mojira.keys) == ["MC-1001"]
    await client.http.aclose()


async def test_resume_after_kill_9_without_duplicates(tmp_path: Path, double: MojiraDouble) -> None:
    keys = _fill(double, 10)
    double.page_delay = 0.3
    env = {
        **os.environ,
        "REPROBOT_DATA_DIR": str(tmp_path / "data"),
        "REPROBOT_MOJIRA_API_URL": f"{double.url}/api",
        "REPROBOT_MOJIRA_PAGE_SIZE": "2",
        "REPROBOT_MOJIRA_RETRY_BASE": "0.01",
    }
    proc = await asyncio.create_subprocess_exec(
        REPROBOT, "mojira", "poll", "--once", "--json", env=env, stdout=asyncio.subprocess.PIPE
    )
    # Kill it while the third page is in flight: two pages (four reports) are handed on by then.
    for _ in range(600):
        if len(double.requests) >= 3:
            break
        await asyncio.sleep(0.05)
    assert len(double.requests) >= 3, "the poller never reached its third page"
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    with Store.open(tmp_path / "data" / "reprobot.db") as store:
        before = store.mojira.keys()
    assert before and len(before) < len(keys)

    double.page_delay = 0.0
    double.requests.clear()
    proc = await asyncio.create_subprocess_exec(
        REPROBOT, "mojira", "poll", "--once", "--json", env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    result = json.loads(out)
    assert 'updated >= "' in double.requests[0]["search"]  # resumed from the stored cursor
    assert not set(result["new"]) & set(before)
    assert sorted(before + result["new"]) == keys
    with Store.open(tmp_path / "data" / "reprobot.db") as store:
        assert store.mojira.keys() == keys


# --- pure parts --------------------------------------------------------------------------------------------


def test_custom_fields_are_typed() -> None:
    report = parse_report(
        {
            "key": "MC-5",
            "fields": {
                "summary": "s",
                "updated": "2024-05-01T12:34:56.789+0000",
                "status": {"name": "Open"},
                "customfield_10054": {"value": "Confirmed"},
                "customfield_10051": {"value": "Platform"},
                "customfield_10055": [{"value": "Crash"}, {"value": "Performance"}],
                "customfield_10049": {"value": "Very Important"},
                "customfield_10050": "12345",
                "customfield_10063": {"value": "Windows"},
                "customfield_10061": "Windows 11",
                "customfield_10056": {"value": "Java"},
                "customfield_10070": 3,
                "issuelinks": [{"type": {"name": "Duplicate"}, "outwardIssue": {"key": "MC-4"}}],
            },
        }
    )
    assert (report.confirmation_status, report.area, report.categories) == (
        "Confirmed",
        "Platform",
        ("Crash", "Performance"),
    )
    assert (report.mojang_priority, report.ado, report.platform) == ("Very Important", "12345", "Windows")
    assert (report.os_version, report.realms_platform, report.votes) == ("Windows 11", "Java", 3)
    assert report.links == ("Duplicate:MC-4",) and report.status == "Open"
    with pytest.raises(MojiraFormatError, match=r"MC-6: fields\.updated is missing"):
        parse_report({"key": "MC-6", "fields": {}})
    with pytest.raises(MojiraFormatError, match="not a Jira key"):
        parse_report({"key": "nope", "fields": {}})


def test_cursor_jql_floors_to_the_minute_and_orders_by_updated() -> None:
    jql = cursor_jql(
        "project = MC ORDER BY created DESC", "2024-05-01T12:34:56.789+0200", start="-1d", overlap_minutes=5
    )
    assert jql == '(project = MC) AND updated >= "2024-05-01 10:29" ORDER BY updated ASC, key ASC'
    assert cursor_jql("", None, start="-4h", overlap_minutes=5) == "updated >= -4h ORDER BY updated ASC, key ASC"


def test_triage_abstains_with_reasons() -> None:
    def report(**fields: object) -> object:
        base = {"summary": "s", "updated": "2024-05-01T12:00:00.000+0000"}
        return parse_report({"key": "MC-7", "fields": base | fields})

    thin = triage_report(report(description="it is broken"))  # type: ignore[arg-type]
    assert thin.route is None and not thin.decision.act
    assert {"names no game version", "no steps to reproduce", "no crash report attached"} <= set(thin.decision.reasons)
    ready = triage_report(report(description="In 24w14a:\n# open the world\n# walk north"))  # type: ignore[arg-type]
    assert ready.route == GAME_JOB_KIND and ready.decision.features["version_named"]
    resolved = triage_report(report(description=STEPS, versions=[{"name": "1.20"}], resolution={"name": "Fixed"}))  # type: ignore[arg-type]
    assert resolved.route is None and "already resolved (Fixed)" in resolved.decision.reasons
    modded = triage_report(
        report(description="```\n" + CRASH.format(line=1).replace("Probably not.", "Definitely;") + "```")  # type: ignore[arg-type]
    )
    assert modded.route is None and "the crash comes from a modded game" in modded.decision.reasons


async def test_the_worker_polls_mojira_periodically(tmp_path: Path, double: MojiraDouble, settings: Settings) -> None:
    from bot.worker import Worker

    keys = _fill(double, 3)
    worker_settings = replace(
        settings,
        github_app_id="1",
        github_private_key=throwaway_pem(),
        worker_poll=0.05,
        mojira_api_url=f"{double.url}/api",
        mojira_poll_interval=0.1,
    )
    store = Store.open(worker_settings.store_path)
    stop = asyncio.Event()
    task = asyncio.create_task(Worker(worker_settings, store).run(stop))
    for _ in range(200):
        if len(double.requests) >= 2:
            break
        await asyncio.sleep(0.05)
    stop.set()
    await task
    assert len(double.requests) >= 2  # it polls again after the interval
    assert await asyncio.to_thread(store.mojira.keys) == keys
    await asyncio.to_thread(store.close)


def test_comments_are_searched_for_crashes_too() -> None:
    report = parse_report(
        {
            "key": "MC-8",
            "fields": {
                "summary": "s",
                "updated": "2024-05-01T12:00:00.000+0000",
                "description": "It crashed.",
                "comment": {"comments": [{"body": adf_doc("Here is the log:", code=CRASH.format(line=5))}]},
            },
        }
    )
    triage = triage_report(report)
    assert triage.decision.features["crash_parsed"] is True and len(triage.signatures) == 1


async def test_routed_reports_become_game_jobs_for_labelled_runners(tmp_path: Path, double: MojiraDouble) -> None:
    """Issue 19: with REPROBOT_MOJIRA_RUNNER_LABELS, a routed report is queued once as a `reproduce.game` job."""
    keys = _fill(double, 2)
    store = Store.memory()
    poller, _ = await _poller(tmp_path, double, store, mojira_runner_labels=("minecraft", "1.21"))
    assert (await poller.poll_once()).routed == keys
    jobs = store.jobs.list_jobs(kind="reproduce.game")
    assert sorted(j.payload["task"]["issue_ref"] for j in jobs) == keys
    assert all(j.labels == ["1.21", "minecraft"] and j.payload["task"]["game"] == "minecraft" for j in jobs)
    double.add(keys[0], "Report 1, edited", NOW + timedelta(minutes=5), versions=("1.20.4",))
    await poller.poll_once()
    assert len(store.jobs.list_jobs(kind="reproduce.game")) == 2  # a refreshed report is not queued again
    unlabelled, _ = await _poller(tmp_path, double, Store.memory())
    assert unlabelled.settings.mojira_runner_labels == ()


def test_seen_keys_come_in_the_order_first_seen_on_both_engines(engine: str, tmp_path: Path) -> None:
    """Both engines answer keys() in first-seen order (PostgreSQL has no rowid); a tie goes by key."""
    times = iter([100.0, 101.0, 102.0, 103.0, 103.0])
    store = Store.open(tmp_path / "order.db", clock=lambda: next(times))
    try:
        for key in ("MC-9", "MC-10", "MC-2", "MC-7", "MC-5"):
            assert store.mojira.record(
                key,
                "2026-01-01T00:00:00.000+0000",
                summary=key,
                report={},
                triage={},
                route=None,
                signature=None,
                sink="store",
                sink_ref=None,
            )
        assert store.mojira.keys() == ["MC-9", "MC-10", "MC-2", "MC-5", "MC-7"]
    finally:
        store.close()

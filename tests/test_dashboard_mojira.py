"""The dashboard's Mojira page in a real headless Chromium: reports polled from the Mojira double, with their
triage, crash signature, grouping (likely duplicates) and route, and no-JS filters (query parameters)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.mojira.client import MojiraClient
from bot.mojira.poller import Poller
from bot.mojira.sinks import StoreSink
from bot.settings.config import Settings
from bot.store import Store
from tests.fakes.mojira import MojiraDouble, adf_doc
from tests.test_dashboard_jobs import CHROMIUM, TOKEN, artifacts, browser, serve
from tests.test_mojira import CRASH, NOW, STEPS

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")
__all__ = ["browser"]  # the fixture, imported for this module's tests


@pytest.fixture
async def double() -> AsyncIterator[MojiraDouble]:
    d = MojiraDouble()
    await d.start()
    yield d
    await d.stop()


async def test_the_mojira_page_lists_polled_reports_with_filters(
    tmp_path: Path, settings: Settings, double: MojiraDouble, browser: Any
) -> None:
    double.add("MC-2001", "Hopper crash", NOW, description=adf_doc("It crashes.", code=CRASH.format(line=300)))
    double.add("MC-2002", "Same <b>crash</b>", NOW, description=adf_doc("Again:", code=CRASH.format(line=310)))
    double.add("MC-2003", "Looks odd", NOW, description=adf_doc("Something looks odd."))
    double.add("MC-2004", "Chest loses items", NOW, versions=("1.20.4",), description=STEPS)
    s = replace(settings, dashboard_token=TOKEN, mojira_api_url=f"{double.url}/api", mojira_retry_base=0.01)
    store = await asyncio.to_thread(Store.open, s.store_target)
    client = MojiraClient(httpx.AsyncClient(), s.mojira_api_url, retry_base=0.01)
    poller = Poller(store, client, StoreSink(), "MC", "project = MC", s)
    assert (await poller.poll_once()).new == ["MC-2001", "MC-2002", "MC-2003", "MC-2004"]
    await client.http.aclose()
    runner, base = await serve(s, store)
    try:
        page = await browser.new_page(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        await page.goto(f"{base}/dashboard/mojira")
        rows = page.locator("#mojira tr.report")
        assert await rows.count() == 4
        crash = await page.inner_text("#report-MC-2001")
        assert "Hopper crash" in crash and "2 reports" in crash
        assert "Same <b>crash</b>" in await page.inner_text("#report-MC-2002"), "a summary is shown as text"
        assert await page.locator("#report-MC-2002 b").count() == 0
        assert "abstain" in await page.inner_text("#report-MC-2003")
        await page.screenshot(path=str(artifacts(tmp_path) / "mojira.png"), full_page=True)
        # Filters: likely duplicates only, a signature (one link away), triage and text.
        await page.check("input[name=grouped]")
        await page.click("form.filters button")
        await page.wait_for_url("**grouped=yes**")
        assert sorted(await rows.locator("td:first-child").all_inner_texts()) == ["MC-2001", "MC-2002"]
        await page.click("#report-MC-2001 td:nth-child(5) a")
        await page.wait_for_url("**signature=**")
        assert await rows.count() == 2
        await page.goto(f"{base}/dashboard/mojira?triage=abstain")
        assert "MC-2003" in await page.inner_text("#mojira") and "MC-2004" not in await page.inner_text("#mojira")
        await page.goto(f"{base}/dashboard/mojira?q=chest")
        assert await rows.locator("td:first-child").all_inner_texts() == ["MC-2004"]
        anonymous = await browser.new_page()
        assert (await anonymous.goto(f"{base}/dashboard/mojira")).status == 401
    finally:
        await runner.cleanup()
        await asyncio.to_thread(store.close)

"""The Mojira poller: pages through what changed since the cursor, triages new reports, hands them to the sink.

Idempotent across restarts: a report is handed to the sink once (its record in the store is the proof), and
the cursor only moves past reports that are recorded, so a poller killed at any point resumes without loss
and without handing a report over twice (a sink that publishes may see one repeat if the kill falls between
its publishing and the record; the store sink never does, its record is the delivery).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sys
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx

from agents.reading import crash_signature
from bot.forges.github_client import GitHubConfigError
from bot.jobs.queue import Queue
from bot.mojira.client import MojiraClient, MojiraError, MojiraSearch
from bot.mojira.fields import (
    MojiraFormatError,
    MojiraReport,
    cursor_jql,
    parse_report,
    parse_search_response,
    parse_updated,
)
from bot.mojira.sinks import Sink, SinkRejected, build_sink
from bot.mojira.triage import is_crash_attachment, triage_report
from bot.settings.config import Settings, SettingsError
from bot.store import Store

log = logging.getLogger(__name__)

#: `reprobot mojira poll` without --once and without REPROBOT_MOJIRA_POLL_INTERVAL polls this often (seconds).
DEFAULT_INTERVAL = 300.0


@dataclass
class PollResult:
    """What one poll did: pages read, reports new / refreshed / already seen / malformed, the cursor after."""

    pages: int = 0
    new: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    unchanged: int = 0
    malformed: list[str] = field(default_factory=list)
    routed: list[str] = field(default_factory=list)
    cursor: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The result as JSON."""
        return self.__dict__.copy()


def cursor_name(project: str, jql: str) -> str:
    """A stable name for a followed query, so another --jql keeps its own cursor."""
    return f"{project}:" + hashlib.sha256(jql.strip().encode()).hexdigest()[:12]


def _later(a: str | None, b: str) -> bool:
    return a is None or parse_updated(b) > parse_updated(a)


@dataclass
class Poller:
    """Polls one JQL query of one project into a sink, with its cursor in the store."""

    store: Store
    mojira: MojiraSearch
    sink: Sink
    project: str
    jql: str
    settings: Settings

    @property
    def name(self) -> str:
        """The cursor's name."""
        return cursor_name(self.project, self.jql)

    async def poll_once(self) -> PollResult:
        """Read up to REPROBOT_MOJIRA_MAX_PAGES pages from the cursor; each report is handed on at most once."""
        result = PollResult()
        cursor = await asyncio.to_thread(self.store.mojira.cursor, self.name)
        since = cursor.updated if cursor else None
        jql = cursor_jql(
            self.jql, since, start=self.settings.mojira_start, overlap_minutes=self.settings.mojira_overlap_minutes
        )
        size = self.settings.mojira_page_size
        start_at = 0
        newest = since
        for _ in range(self.settings.mojira_max_pages):
            page = await self.mojira.search(self.project, jql, start_at, size)
            issues, total = parse_search_response(page)
            result.pages += 1
            for raw in issues:
                updated = await self._handle(raw, result)
                if updated is not None and _later(newest, updated):
                    newest = updated
            # The cursor moves after every page, so a kill loses at most the page in flight (then seen again).
            await asyncio.to_thread(
                self.store.mojira.advance_cursor, self.name, self.jql, newest, newer=newest != since
            )
            start_at += len(issues)
            if not issues or len(issues) < size or (total is not None and start_at >= total):
                break
        result.cursor = newest
        log.info(
            "mojira %s: %d pages, %d new, %d refreshed, %d seen, %d malformed; cursor %s",
            self.name,
            result.pages,
            len(result.new),
            len(result.refreshed),
            result.unchanged,
            len(result.malformed),
            newest,
        )
        return result

    async def _handle(self, raw: Any, result: PollResult) -> str | None:
        """Handle one raw issue; its `updated` when it counts for the cursor (None: malformed)."""
        try:
            report = parse_report(raw)
        except MojiraFormatError as exc:
            log.warning("mojira %s: skipping a malformed issue: %s", self.name, exc)
            result.malformed.append(str(exc))
            return None
        seen = await asyncio.to_thread(self.store.mojira.get, report.key)
        if seen is not None:
            if _later(seen.updated, report.updated):
                await asyncio.to_thread(
                    self.store.mojira.refresh,
                    report.key,
                    report.updated,
                    summary=report.summary,
                    report=report.to_json(),
                )
                result.refreshed.append(report.key)
            else:
                result.unchanged += 1
            return report.updated
        await self._deliver(report, result)
        return report.updated

    async def _deliver(self, report: MojiraReport, result: PollResult) -> None:
        attachments = await self._crash_attachments(report)
        triage = triage_report(report, attachments, threshold=self.settings.abstain_threshold)
        signature = crash_signature(triage.crashes[0]).key if triage.crashes else None
        duplicates = (
            await asyncio.to_thread(self.store.mojira.with_signature, signature) if signature is not None else []
        )
        extra: dict[str, Any] = {"duplicates": duplicates}
        try:
            ref = await self.sink.deliver(report, triage, duplicates)
        except SinkRejected as exc:
            log.warning("mojira %s: %s; recorded without a sink reference", self.name, exc)
            ref, extra["sink_error"] = None, str(exc)
        recorded = await asyncio.to_thread(
            self.store.mojira.record,
            report.key,
            report.updated,
            summary=report.summary,
            report=report.to_json(),
            triage=triage.to_json() | extra,
            route=triage.route,
            signature=signature,
            sink=self.sink.name,
            sink_ref=ref,
        )
        if recorded:
            result.new.append(report.key)
            if triage.route:
                result.routed.append(report.key)
                await self._queue_for_runner(report, triage.route)
            log.info("mojira %s: %s -> %s (%s)", self.name, report.key, self.sink.name, triage.decision.reasons[0])

    async def _queue_for_runner(self, report: MojiraReport, kind: str) -> None:
        """A routed report becomes a game job for runners with REPROBOT_MOJIRA_RUNNER_LABELS (once per report)."""
        labels = sorted(self.settings.mojira_runner_labels)
        if not labels:
            return
        text = f"# {report.summary}\n\n{report.description}"
        task = {"issue_text": text, "game": "minecraft", "issue_ref": report.key}
        job_id = await asyncio.to_thread(
            Queue(self.store).enqueue,
            kind,
            None,
            {"task": task},
            concurrency_key=None,
            max_attempts=self.settings.runner_max_attempts,
            dedupe_key=f"mojira-game:{report.key}",
            labels=labels,
            # No tenant: the deployment follows Mojira itself, so only a runner registered for the whole
            # deployment takes these reports.
            tenant=None,
        )
        log.info("mojira %s: %s queued as %s job %s for runners with %s", self.name, report.key, kind, job_id, labels)

    async def _crash_attachments(self, report: MojiraReport) -> dict[str, str]:
        limit = self.settings.mojira_crash_attachment_bytes
        texts: dict[str, str] = {}
        for attachment in report.attachments:
            if limit and is_crash_attachment(attachment.filename):
                text = await self.mojira.attachment_text(attachment, limit)
                if text is not None:
                    texts[attachment.filename] = text
        return texts


async def poll_periodically(settings: Settings, store: Store, stop: asyncio.Event, *, jql: str | None = None) -> None:
    """Poll every REPROBOT_MOJIRA_POLL_INTERVAL seconds until `stop`; one failed poll never ends the loop."""
    interval = settings.mojira_poll_interval or DEFAULT_INTERVAL
    async with httpx.AsyncClient(timeout=60.0) as http, aiohttp.ClientSession() as session:
        try:
            sink = build_sink(settings, session)
        except (SettingsError, GitHubConfigError) as exc:
            log.error("mojira poller not started: %s", exc)
            return
        mojira = MojiraClient(http, settings.mojira_api_url, retry_base=settings.mojira_retry_base)
        poller = Poller(store, mojira, sink, settings.mojira_project, jql or settings.mojira_jql, settings)
        while not stop.is_set():
            try:
                await poller.poll_once()
            except (MojiraError, MojiraFormatError, aiohttp.ClientError, httpx.HTTPError) as exc:
                log.warning("mojira poll failed (next poll in %gs): %s", interval, exc)
            except Exception:  # broad on purpose: a bug or a store error must not end the worker's polling for good
                log.exception("mojira poll failed unexpectedly (next poll in %gs)", interval)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)


async def run_poll_command(settings: Settings, *, jql: str | None, once: bool, as_json: bool) -> int:
    """`reprobot mojira poll`: exit 0 after a clean --once, 1 when Mojira failed, 2 on bad settings."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await asyncio.to_thread(Store.open, settings.store_target)
    try:
        async with httpx.AsyncClient(timeout=60.0) as http, aiohttp.ClientSession() as session:
            try:
                sink = build_sink(settings, session)
            except (SettingsError, GitHubConfigError) as exc:
                print(f"reprobot: {exc}", file=sys.stderr)
                return 2
            mojira = MojiraClient(http, settings.mojira_api_url, retry_base=settings.mojira_retry_base)
            poller = Poller(store, mojira, sink, settings.mojira_project, jql or settings.mojira_jql, settings)
            interval = settings.mojira_poll_interval or DEFAULT_INTERVAL
            while True:
                try:
                    result = await poller.poll_once()
                except (MojiraError, MojiraFormatError) as exc:
                    print(f"reprobot: mojira poll failed: {exc}", file=sys.stderr)
                    if once:
                        return 1
                else:
                    if as_json:
                        print(json.dumps(result.to_json()), flush=True)
                    else:
                        print(
                            f"{result.pages} pages: {len(result.new)} new, {len(result.refreshed)} refreshed, "
                            f"{result.unchanged} already seen; cursor {result.cursor}",
                            flush=True,
                        )
                    if once:
                        return 0
                await asyncio.sleep(interval)
    finally:
        await asyncio.to_thread(store.close)

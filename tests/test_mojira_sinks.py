"""The Mojira sinks: a GitHub tracking issue on the GitHub double (real App auth), a Jira project, the settings."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import httpx
import pytest

from bot.config import Settings, SettingsError
from bot.mojira.client import MojiraClient
from bot.mojira.fields import parse_report
from bot.mojira.poller import Poller
from bot.mojira.render import report_body, report_title
from bot.mojira.sinks import GitHubIssueSink, JiraProjectSink, StoreSink, build_sink
from bot.mojira.triage import triage_report
from bot.store import Store
from tests.conftest import FIXTURES, require_shared
from tests.fakes.github import GitHubDouble
from tests.fakes.mojira import MojiraDouble, adf_doc

NOW = datetime.now(UTC).replace(microsecond=0)


async def test_reports_go_to_a_github_tracking_issue_through_the_app(tmp_path: Path) -> None:
    spec = require_shared(FIXTURES / "github" / "rest-openapi-subset.json")
    github = GitHubDouble(tmp_path / "github", spec, "secret")
    mojira = MojiraDouble()
    await github.start()
    await mojira.start()
    source = tmp_path / "src"
    source.mkdir()
    (source / "README.md").write_text("triage\n")
    github.add_repo("mojang/triage", source)
    tracking = github.add_issue("mojang/triage", "Mojira reports", "New reports are mirrored here.")
    mojira.add("MC-41", "Refused", NOW, description="GitHub will not take this one")
    mojira.add("MC-42", "Boats sink", NOW, versions=("1.21",), description=adf_doc("Steps to reproduce: place a boat"))
    github.fail("issues/create-comment", 422)  # the first report's comment is refused for good
    settings = replace(
        Settings(data_dir=tmp_path / "data"),
        github_app_id=github.app_id,
        github_private_key=github.private_key_pem,
        github_api_url=github.url,
        github_retry_base=0.01,
        mojira_api_url=f"{mojira.url}/api",
        mojira_sink=f"github:mojang/triage#{tracking['number']}",
    )
    store = Store.memory()
    try:
        async with aiohttp.ClientSession() as session, httpx.AsyncClient() as http:
            sink = build_sink(settings, session)
            assert isinstance(sink, GitHubIssueSink)
            poller = Poller(store, MojiraClient(http, settings.mojira_api_url), sink, "MC", "project = MC", settings)
            assert (await poller.poll_once()).new == ["MC-41", "MC-42"]
            assert (await poller.poll_once()).new == []  # seen: no second comment
    finally:
        await mojira.stop()
        await github.stop()
    comments = github.repos["mojang/triage"].comments
    assert len(comments) == 1
    body = comments[0]["body"]
    assert "[MC-42] Boats sink" in body and "https://bugs.mojang.com/browse/MC-42" in body
    assert "routing to reproduce.game" in body and "| Affects versions | 1.21 |" in body
    assert not github.violations
    record = await asyncio.to_thread(store.mojira.get, "MC-42")
    assert record is not None and record.sink == "github:mojang/triage#1" and record.sink_ref
    refused = await asyncio.to_thread(store.mojira.get, "MC-41")
    assert refused is not None and refused.sink_ref is None and "GitHub refused MC-41" in refused.triage["sink_error"]


class _JiraProject:
    """The Jira sink's side of the JiraIssueCreator protocol, as the Jira forge provides it."""

    def __init__(self) -> None:
        self.created: list[tuple[str, str, str, tuple[str, ...]]] = []

    async def create_issue(self, project: str, summary: str, description: str, labels: Sequence[str]) -> str:
        self.created.append((project, summary, description, tuple(labels)))
        return f"{project}-{len(self.created)}"


async def test_the_jira_sink_creates_one_issue_per_report() -> None:
    creator = _JiraProject()
    sink = JiraProjectSink(creator, "GAME")
    report = parse_report(
        {"key": "MC-7", "fields": {"summary": "Lag", "updated": "2024-05-01T12:00:00.000+0000", "description": "x"}}
    )
    ref = await sink.deliver(report, triage_report(report), ["MC-3"])
    assert ref == "GAME-1" and sink.name == "jira:GAME"
    project, summary, description, labels = creator.created[0]
    assert (project, summary, labels) == ("GAME", "[MC-7] Lag", ("mojira",))
    assert "Likely duplicates (same crash signature):** MC-3" in description


def test_sink_settings_are_checked() -> None:
    for value in ("github:owner/repo", "github:owner/repo#12", "jira:GAME", "store"):
        assert Settings.from_env({"REPROBOT_MOJIRA_SINK": value}).mojira_sink == value
    for bad in ("github:nope", "jira:", "slack:#x"):
        with pytest.raises(SettingsError, match="REPROBOT_MOJIRA_SINK"):
            Settings.from_env({"REPROBOT_MOJIRA_SINK": bad})
    with pytest.raises(SettingsError, match="REPROBOT_MOJIRA_PAGE_SIZE"):
        Settings.from_env({"REPROBOT_MOJIRA_PAGE_SIZE": "500"})


async def test_build_sink_names_what_is_missing() -> None:
    async with aiohttp.ClientSession() as session:
        assert isinstance(build_sink(Settings(), session), StoreSink)
        with pytest.raises(SettingsError, match=r"bot/forges/jira\.py"):
            build_sink(replace(Settings(), mojira_sink="jira:GAME"), session)


def test_rendered_title_is_bounded() -> None:
    report = parse_report({"key": "MC-1", "fields": {"summary": "x" * 500, "updated": "2024-05-01T12:00:00.000+0000"}})
    assert len(report_title(report)) <= 240
    assert report_body(report, triage_report(report)).startswith("<!-- reprobot:mojira MC-1 -->")

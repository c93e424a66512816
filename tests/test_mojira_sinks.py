"""The Mojira sinks: a GitHub tracking issue on the GitHub double (real App auth), a Jira project, the settings."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from asyncio.subprocess import PIPE
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import httpx
import pytest
from jira import JIRAError

from bot.forges.jira import IssueRefused, JiraIssueCreator, jira_client
from bot.mojira.client import MojiraClient
from bot.mojira.fields import parse_report
from bot.mojira.poller import Poller
from bot.mojira.render import report_body, report_title
from bot.mojira.sinks import GitHubIssueSink, JiraProjectSink, StoreSink, build_sink
from bot.mojira.triage import triage_report
from bot.settings.config import Settings, SettingsError
from bot.store import Store
from tests.conftest import FIXTURES, require_shared
from tests.fakes.github import GitHubDouble
from tests.fakes.jira import JiraDouble
from tests.fakes.mojira import MojiraDouble, adf_doc
from tests.inert_checks import invisible, live_markdown, live_wiki, markdown_tokens
from tests.jira_env import JIRA_TOKEN

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
    assert "\\[MC-42\\] Boats sink" in body and "https://bugs.mojang.com/browse/MC-42" in body
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

    async def create_issue(
        self, project: str, summary: str, description: str, labels: Sequence[str], *, anchor: str | None = None
    ) -> str:
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


def _mapping(tmp_path: Path, *entries: tuple[str, str]) -> Path:
    """A Jira mapping file with one (site, project) entry per pair, each on a plain git URL."""
    rows = [
        f"  - {{site: '{site}', project: {project}, git: 'https://git.example.com/{project}.git'}}"
        for site, project in entries
    ]
    path = tmp_path / "mapping.yml"
    path.write_text("projects:\n" + "\n".join(rows) + "\n")
    return path


async def test_build_sink_names_what_is_missing(tmp_path: Path) -> None:
    sink_game = replace(Settings(), mojira_sink="jira:GAME")
    async with aiohttp.ClientSession() as session:
        assert isinstance(build_sink(Settings(), session), StoreSink)
        with pytest.raises(SettingsError, match=r"REPROBOT_MOJIRA_SINK=jira:GAME needs REPROBOT_JIRA_MAPPING"):
            build_sink(sink_game, session)
        bad = tmp_path / "bad.yml"
        bad.write_text("projects: 3\n")
        with pytest.raises(SettingsError, match=r"REPROBOT_MOJIRA_SINK=jira:GAME: REPROBOT_JIRA_MAPPING is invalid"):
            build_sink(replace(sink_game, jira_mapping=bad), session)
        two = _mapping(tmp_path, ("https://a.example.net", "SHOP"), ("https://b.example.net", "OPS"))
        with pytest.raises(SettingsError, match=r"REPROBOT_MOJIRA_SINK=jira:GAME .*map GAME .*2 sites"):
            build_sink(replace(sink_game, jira_mapping=two), session)
        one = _mapping(tmp_path, ("https://a.example.net", "SHOP"))  # the only site: GAME lives there too
        sink = build_sink(replace(sink_game, jira_mapping=one), session)
        assert isinstance(sink, JiraProjectSink) and sink.name == "jira:GAME"
        assert isinstance(sink.creator, JiraIssueCreator) and sink.creator.site == "https://a.example.net"
        named = _mapping(tmp_path, ("https://a.example.net", "SHOP"), ("https://b.example.net/jira", "GAME"))
        sink = build_sink(replace(sink_game, jira_mapping=named), session)
        assert isinstance(sink, JiraProjectSink) and isinstance(sink.creator, JiraIssueCreator)
        assert sink.creator.site == "https://b.example.net/jira"


async def test_a_jira_sink_poll_creates_one_issue_per_new_report(tmp_path: Path) -> None:
    jira = JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=JIRA_TOKEN)
    mojira = MojiraDouble()
    await jira.start()
    await mojira.start()
    jira.add_project("GAME")
    mojira.add("MC-51", "Boats sink", NOW, versions=("1.21",), description=adf_doc("Steps to reproduce: place a boat"))
    mojira.add("MC-52", "Lag spikes", NOW, description="**every** few seconds")
    settings = replace(
        Settings(data_dir=tmp_path / "data"),
        jira_token=JIRA_TOKEN,
        jira_mapping=_mapping(tmp_path, (jira.site, "SHOP")),  # GAME is not mapped: the only site is used
        jira_retry_base=0.01,
        mojira_api_url=f"{mojira.url}/api",
        mojira_sink="jira:GAME",
    )
    store = Store.memory()
    try:
        async with aiohttp.ClientSession() as session, httpx.AsyncClient() as http:
            sink = build_sink(settings, session)
            poller = Poller(store, MojiraClient(http, settings.mojira_api_url), sink, "MC", "project = MC", settings)
            jira.fail("issue/create", 503)  # retried under the forge's policy: still one issue
            assert (await poller.poll_once()).new == ["MC-51", "MC-52"]
            assert (await poller.poll_once()).new == []  # seen: no second issue
    finally:
        await mojira.stop()
        await jira.stop()
    assert jira.created == ["GAME-1", "GAME-2"]
    assert [op for op, _, _ in jira.calls].count("issue/create") == 3
    boats = jira.issues["GAME-1"]
    assert boats.summary == "[MC-51] Boats sink" and boats.labels == ["mojira"]
    assert "[MC-51|https://bugs.mojang.com/browse/MC-51]" in boats.description  # a markdown link in Jira markup
    assert "| Affects versions | 1.21 |" in boats.description and "bq. Steps to reproduce" in boats.description
    assert "*every*" in jira.issues["GAME-2"].description  # markdown bold became Jira wiki bold
    record = await asyncio.to_thread(store.mojira.get, "MC-51")
    assert record is not None and record.sink == "jira:GAME" and record.sink_ref == "GAME-1"


async def test_jira_refusals_content_is_final_configuration_is_not(tmp_path: Path) -> None:
    jira = JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=JIRA_TOKEN)
    await jira.start()
    jira.add_project("GAME")
    creator = JiraIssueCreator(jira_client(Settings(jira_token=JIRA_TOKEN), jira.site), jira.site, retry_base=0.01)
    try:
        with pytest.raises(IssueRefused, match="summary"):
            await creator.create_issue("GAME", "x" * 300, "body", ["mojira"])
        with pytest.raises(JIRAError) as raised:  # a project Jira does not have: the deployment's to fix
            await creator.create_issue("NOPE", "Lag", "body", ["mojira"])
        assert raised.value.status_code == 400
        sink = JiraProjectSink(creator, "GAME")
        report = parse_report({"key": "MC-9", "fields": {"summary": "Lag", "updated": "2024-05-01T12:00:00.000+0000"}})
        jira.fail("issue/create", 400)  # no field errors: not known to be about this report, so not final
        with pytest.raises(JIRAError):
            await sink.deliver(report, triage_report(report), [])
        assert await sink.deliver(report, triage_report(report), []) == "GAME-1"
    finally:
        await jira.stop()
    assert jira.created == ["GAME-1"]


def test_rendered_title_is_bounded() -> None:
    report = parse_report({"key": "MC-1", "fields": {"summary": "x" * 500, "updated": "2024-05-01T12:00:00.000+0000"}})
    assert len(report_title(report)) <= 240
    assert report_body(report, triage_report(report)).startswith("<!-- reprobot:mojira MC-1 -->")


# --- issue 28: a hostile report mirrored by a real `reprobot mojira poll --once` ----------------------------------

HOSTILE_SUMMARY = "Boats sink\n## Pwned by @admin [~admin] \u202eevil\u200b"
HOSTILE_DESCRIPTION = """Ping @admin and @mojang/security, also [~admin] and [~accountid:5b10a2844c20165700ede21g].
<img src="https://evil.example/p.png"> <a href="https://evil.example/a">click</a> !https://evil.example/i.png!
{html}<script>alert(1)</script>{html} [wiki link|https://evil.example/w] [md link](https://evil.example/m)
bare https://evil.example/b and www.evil.example, but https://bugs.mojang.com/browse/MC-1 is Mojira's own
hidden\u202eright-to-left and zero\u200bwidth &#x202E; <!-- reprobot:mojira MC-999 --> reprobot:mojira MC-998
{anchor:reprobot-mojira-MC-997} see #12 and octo/app#3
```
{noformat}
[~admin] @admin
```
{noformat} [~admin] {noformat}
| fake | table |
|---|---|
"""
#: Mojira's own pages: the only links that may stay links.
MOJIRA_LINK = re.compile(r"https://bugs\.mojang\.com/browse/MC-\d+")
REPROBOT = str(Path(sys.executable).with_name("reprobot"))
#: The first words of the fields table's names, as report_body writes them.
FIELD_NAMES = {"Status", "Confirmation", "Area", "Platform", "Affects versions", "Votes", "Affects"}


def _hostile(mojira: MojiraDouble) -> None:
    mojira.add(
        "MC-77",
        HOSTILE_SUMMARY,
        NOW,
        versions=("1.21",),
        description=HOSTILE_DESCRIPTION,
        customfield_10063={"value": "Java\n| injected | row |"},  # platform, a newline and cells of its own
        customfield_10051={"value": "Boats @org/team [~admin]"},  # area
    )


async def _poll(tmp_path: Path, mojira: MojiraDouble, sink: str, **env: str) -> dict[str, object]:
    """Run `reprobot mojira poll --once --json` as a process with `sink`; its JSON answer."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    settings = {
        "REPROBOT_DATA_DIR": str(tmp_path / "data"),
        "REPROBOT_MOJIRA_API_URL": f"{mojira.url}/api",
        "REPROBOT_MOJIRA_RETRY_BASE": "0.01",
        "REPROBOT_MOJIRA_SINK": sink,
    }
    proc = await asyncio.create_subprocess_exec(
        REPROBOT, "mojira", "poll", "--once", "--json", env=base | settings | env, stdout=PIPE, stderr=PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return dict(json.loads(out))


def _fields_table_broken_on_github(body: str) -> list[str]:
    """The fields table, as GitHub reads it: each row a field's name and its whole value, one heading only."""
    tokens = markdown_tokens(body)
    problems = []
    headings = [t.tag for t in tokens if t.type == "heading_open"]
    if headings != ["h3"]:
        problems.append(f"headings {headings}: the summary's newline started one")
    # GFM drops the cells beyond the header's: a value's `|` must stay in its cell.
    cells = [t.content for i, t in enumerate(tokens) if t.type == "inline" and tokens[i - 1].type == "td_open"]
    rows = dict(zip(cells[::2], cells[1::2], strict=True))
    if not set(rows) <= FIELD_NAMES or "injected | row" not in rows.get("Platform", ""):
        problems.append(f"the fields table is broken: {rows}")
    return problems


def _fields_table_broken_on_jira(text: str) -> list[str]:
    rows = [line for line in text.split("\n") if line.startswith("| ")]
    if not rows or any(len(re.findall(r"(?<!\\)\|", row)) != 3 or row.split()[1] not in FIELD_NAMES for row in rows):
        return [f"the fields table is broken: {rows}"]
    return []


async def test_a_hostile_report_is_mirrored_inert_to_github_and_jira(tmp_path: Path) -> None:
    """Mentions, HTML, wiki macros, bidi and zero-width characters, newlines and a planted marker stay text."""
    github = GitHubDouble(tmp_path / "github", require_shared(FIXTURES / "github" / "rest-openapi-subset.json"), "s")
    jira = JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=JIRA_TOKEN)
    mojira = MojiraDouble()
    for double in (github, jira, mojira):
        await double.start()
    try:
        source = tmp_path / "src"
        source.mkdir()
        (source / "README.md").write_text("triage\n")
        github.add_repo("mojang/triage", source)
        tracking = github.add_issue("mojang/triage", "Mojira reports", "New reports are mirrored here.")
        jira.add_project("GAME")
        _hostile(mojira)
        app = {
            "REPROBOT_GITHUB_APP_ID": github.app_id,
            "REPROBOT_GITHUB_PRIVATE_KEY": github.private_key_pem,
            "REPROBOT_GITHUB_API_URL": github.url,
            "REPROBOT_GITHUB_RETRY_BASE": "0.01",
        }
        sink = f"github:mojang/triage#{tracking['number']}"
        assert (await _poll(tmp_path / "tracking", mojira, sink, **app))["new"] == ["MC-77"]
        jira_env = {
            "REPROBOT_JIRA_TOKEN": JIRA_TOKEN,
            "REPROBOT_JIRA_MAPPING": str(_mapping(tmp_path, (jira.site, "SHOP"))),
            "REPROBOT_JIRA_RETRY_BASE": "0.01",
        }
        assert (await _poll(tmp_path / "jira", mojira, "jira:GAME", **jira_env))["new"] == ["MC-77"]
    finally:
        for double in (mojira, jira, github):
            await double.stop()
    (comment,) = github.repos["mojang/triage"].comments
    body = comment["body"]
    assert live_markdown(body, MOJIRA_LINK, ("<!-- reprobot:mojira MC-77 -->",)) == [], body
    assert _fields_table_broken_on_github(body) == []
    assert invisible(body) == [] and body.count("reprobot:mojira") == 1
    assert "`@admin`" in body and "<https://bugs.mojang.com/browse/MC-1>" in body  # shown, and Mojira linked
    issue = jira.issues["GAME-1"]
    assert "\n" not in issue.summary and invisible(issue.summary) == []
    assert live_wiki(issue.description, MOJIRA_LINK) == [], issue.description
    assert _fields_table_broken_on_jira(issue.description) == []
    assert invisible(issue.description) == [] and issue.description.count("reprobot-mojira") == 1
    assert "[https://bugs.mojang.com/browse/MC-1]" in issue.description

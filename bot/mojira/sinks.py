"""Where the poller's new reports go: the store, a GitHub repo (an issue per report), or a Jira project.

Mojira cannot be written to without a login, so a deployment names a sink (REPROBOT_MOJIRA_SINK). A sink is
told about each report once: the poller records the report in the store right after the sink took it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import aiohttp
from gidgethub import BadRequest, apps

from bot.forges.github_client import InstallationTokens, client
from bot.forges.jira import IssueRefused, issue_creator
from bot.mojira.fields import MojiraReport
from bot.mojira.render import JIRA_ANCHOR, report_body, report_heading, report_title
from bot.mojira.triage import GameTriage
from bot.settings.config import Settings

log = logging.getLogger(__name__)

#: Labels a mirrored report gets on GitHub or Jira.
LABELS = ("mojira",)


class SinkRejected(Exception):
    """The sink refused this one report for good (e.g. a 422): it is recorded with the reason, not retried."""


class Sink(Protocol):
    """Takes a new report with its triage; returns a reference to what it made (None: nothing beyond the store)."""

    name: str

    async def deliver(self, report: MojiraReport, triage: GameTriage, duplicates: Sequence[str]) -> str | None:
        """Hand one new report on."""
        ...


class StoreSink:
    """The store is the sink: the poller's record of the report (fields, triage, route, signature) is all."""

    name = "store"

    async def deliver(self, report: MojiraReport, triage: GameTriage, duplicates: Sequence[str]) -> str | None:
        """Nothing to publish: the poller records the report itself."""
        return None


class GitHubIssueSink:
    """One GitHub issue per new report in `repo` or, with `tracking_issue`, one comment per report on that issue.

    Through the GitHub App's installation on the repo (found with the App's JWT, its token cached).
    """

    def __init__(
        self, settings: Settings, session: aiohttp.ClientSession, repo: str, tracking_issue: int | None = None
    ) -> None:
        """Publish to `repo` (owner/name) with the App configured in `settings`."""
        self.settings = settings
        self.session = session
        self.repo = repo
        self.tracking_issue = tracking_issue
        self.name = f"github:{repo}" + (f"#{tracking_issue}" if tracking_issue else "")
        self._tokens = InstallationTokens(settings)
        self._installation: int | None = None

    async def _token(self) -> str:
        if self._installation is None:
            assert self.settings.github_app_id  # InstallationTokens checked it and parsed the key
            jwt = apps.get_jwt(app_id=self.settings.github_app_id, private_key=self._tokens.private_key)
            data = await client(self.session, self.settings).getitem(f"/repos/{self.repo}/installation", jwt=jwt)
            self._installation = int(data["id"])
        return await self._tokens.token(self.session, self._installation)

    async def deliver(self, report: MojiraReport, triage: GameTriage, duplicates: Sequence[str]) -> str | None:
        """Open the issue (or comment on the tracking issue); its URL is the reference."""
        gh = client(self.session, self.settings, await self._token())
        body = report_body(report, triage, duplicates)
        try:
            if self.tracking_issue is not None:
                url = f"/repos/{self.repo}/issues/{self.tracking_issue}/comments"
                made = await gh.post(url, data={"body": f"### {report_heading(report)}\n\n{body}"})
                return str(made.get("html_url") or made.get("id"))
            data = {"title": report_title(report), "body": body, "labels": list(LABELS)}
            made = await gh.post(f"/repos/{self.repo}/issues", data=data)
        except BadRequest as exc:
            # A final 4xx about this report (a body GitHub will not take); 5xx and rate limits were retried
            # already and raise on (failing the poll, so it is tried again), as do auth and a missing repo.
            if exc.status_code.value in (401, 403, 404):
                raise
            raise SinkRejected(f"GitHub refused {report.key}: {exc}") from exc
        return str(made.get("html_url") or made.get("number"))


class JiraIssueCreator(Protocol):
    """What the Jira sink needs of a Jira client (the Jira forge provides it): create an issue, return its key."""

    async def create_issue(
        self, project: str, summary: str, description: str, labels: Sequence[str], *, anchor: str | None = None
    ) -> str:
        """Create an issue in `project` (`description` in markdown, headed by the `anchor` mark); its key."""
        ...


class JiraProjectSink:
    """One issue per new report in a Jira project, through whatever JiraIssueCreator the deployment wires."""

    def __init__(self, creator: JiraIssueCreator, project: str) -> None:
        """Create issues in `project` with `creator`."""
        self.creator = creator
        self.project = project
        self.name = f"jira:{project}"

    async def deliver(self, report: MojiraReport, triage: GameTriage, duplicates: Sequence[str]) -> str | None:
        """Create the issue; its key is the reference."""
        try:
            return await self.creator.create_issue(
                self.project,
                report_title(report),
                report_body(report, triage, duplicates),
                LABELS,
                anchor=JIRA_ANCHOR.format(key=report.key),
            )
        except IssueRefused as exc:
            raise SinkRejected(f"Jira refused {report.key}: {exc}") from exc


def build_sink(settings: Settings, session: aiohttp.ClientSession) -> Sink:
    """The sink REPROBOT_MOJIRA_SINK names; SettingsError when what it needs is not configured."""
    kind, _, target = settings.mojira_sink.partition(":")
    if kind == "github":
        repo, _, number = target.partition("#")
        return GitHubIssueSink(settings, session, repo, int(number) if number else None)
    if kind == "jira":
        # The site comes from the Jira mapping (REPROBOT_JIRA_MAPPING); SettingsError when it does not say.
        return JiraProjectSink(issue_creator(settings, target), target)
    return StoreSink()

"""Test harness for Jira: the Jira double and the GitHub double (real git), the bot's server, a mapping file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from bot.settings.config import Settings
from tests.conftest import FIXTURES, require_shared
from tests.fakes.jira import JiraDouble, JiraIssue
from tests.gh_env import INSTALLATION, GitHubEnv

JIRA_SECRET = "jira-webhook-secret-for-tests"
JIRA_TOKEN = "jira-pat-for-tests"


def jira_webhook(name: str) -> dict[str, Any]:
    """A recorded Jira webhook body from ../shared/fixtures/jira/webhooks (`webhook-issue_created`)."""
    path = require_shared(FIXTURES / "jira" / "webhooks") / f"{name}.json"
    return dict(json.loads(path.read_text()))


class JiraEnv(GitHubEnv):
    """`async with JiraEnv(tmp_path, settings, mapping=[...]) as env:` — both doubles, the bot, and the mapping.

    Each mapping entry is completed with this Jira double's site; `{"github": "octo/app"}` gets our installation.
    """

    def __init__(
        self,
        tmp_path: Path,
        settings: Settings,
        mapping: list[dict[str, Any]] | None = None,
        *,
        secrets: dict[str | None, str] | None = None,
        allow_unsigned: bool = False,
        credentials: dict[str, str] | None = None,
    ) -> None:
        super().__init__(tmp_path, settings)
        #: Webhook secrets by site ("self" stands for this double's site); one secret for every site by default.
        self.secrets = secrets if secrets is not None else {None: JIRA_SECRET}
        self.allow_unsigned = allow_unsigned
        #: REPROBOT_GIT_CREDENTIAL_<NAME> values for mapping entries on a plain git URL.
        self.credentials = credentials or {}
        self.jira = JiraDouble(require_shared(FIXTURES / "jira" / "rest"), token=JIRA_TOKEN)
        self.mapping = mapping if mapping is not None else []

    async def __aenter__(self) -> JiraEnv:
        await self.jira.start()
        projects = []
        for entry in self.mapping:
            entry = {"site": self.jira.site} | entry
            if "github" in entry:
                entry.setdefault("installation", INSTALLATION)
            projects.append(entry)
        self.tmp_path.mkdir(parents=True, exist_ok=True)
        path = self.tmp_path / "jira-mapping.yml"
        path.write_text(yaml.safe_dump({"projects": projects}))
        self.base_settings = replace(
            self.base_settings,
            jira_webhook_secrets=tuple((self.jira.site if k == "self" else k, v) for k, v in self.secrets.items()),
            jira_allow_unsigned=self.allow_unsigned,
            git_credentials=tuple(self.credentials.items()),
            jira_mapping=path,
            jira_token=JIRA_TOKEN,
            jira_retry_base=0.05,
        )
        await super().__aenter__()
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        try:
            await super().__aexit__(exc_type, *exc)
        finally:
            await self.jira.stop()

    @property
    def jira_hook(self) -> str:
        """The bot's Jira webhook endpoint."""
        return f"{self.url}/webhooks/jira"

    async def send_jira(
        self, body: dict[str, Any] | bytes, identifier: str, *, secret: str | None = JIRA_SECRET
    ) -> tuple[int, Any]:
        """Deliver a Jira webhook (signed with our secret unless `secret` says otherwise)."""
        return await self.jira.deliver(self.jira_hook, body, identifier=identifier, secret=secret)

    def issue_created(self, issue: JiraIssue) -> dict[str, Any]:
        """The recorded `jira:issue_created` body carrying `issue`."""
        return self.jira.webhook(jira_webhook("webhook-issue_created"), issue)

    def comment_created(self, issue: JiraIssue, body: Any, author: str) -> dict[str, Any]:
        """The recorded Cloud `comment_created` body for a new comment by `author` on `issue`."""
        comment = self.jira.add_comment(issue.key, body, author)
        return self.jira.webhook(jira_webhook("webhook-cloud_comment_added"), issue, comment=comment)

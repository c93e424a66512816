"""The Jira forge: the issue side on Jira (the `jira` package), the code side on the mapped repository.

Jira holds the issue: status comments per (issue, kind) edited in place, replies, a remote link to the change
request, transitions by name when a PR is opened, labels. The mapped repository holds the code: a GitHub repo
through the App (GitHubForge) or any git URL (GitRemoteForge); clone, push and the change request go there.
`issue_creator` creates issues in a mapped site's project (the Mojira poller's `jira:PROJECT` sink).

Every call of the `jira` client blocks, so each runs in a thread, under the one tenacity policy of bot/retry.py
(5xx, 429 with Retry-After, connection errors). The client's own retries are off so that policy is the only one.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import requests
from jira import JIRA, JIRAError
from tenacity import Retrying

from bot.forges.base import ChangeRequest, CodeForge, PermanentJobError
from bot.forges.git import GitRemoteForge
from bot.forges.github import GitHubForge
from bot.forges.github_client import InstallationTokens, client
from bot.render.adf import adf_to_markdown
from bot.render.jira_wiki import markdown_to_jira
from bot.retry import MAX_WAIT, retry_policy
from bot.settings.config import Settings, SettingsError
from bot.settings.jira_mapping import JiraMapping, MappingError, ProjectMapping, load_mapping

__all__ = [
    "STATUS_MARKER",
    "IssueRefused",
    "JiraForge",
    "JiraIssueCreator",
    "issue_creator",
    "jira_client",
    "jira_forge_for_job",
]

log = logging.getLogger(__name__)

#: A status comment starts with this invisible anchor (Jira wiki markup), so it is found again by kind.
STATUS_MARKER = "{{anchor:reprobot-status-{kind}}}"
#: A reply starts with this one, keyed by the job.
REPLY_MARKER = "{{anchor:reprobot-reply-{key}}}"
#: Seconds one Jira request may take.
TIMEOUT = 30.0

T = TypeVar("T")


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, JIRAError):
        return exc.status_code is not None and (exc.status_code >= 500 or exc.status_code == 429)
    return isinstance(exc, requests.ConnectionError | requests.Timeout)


def _hint(exc: BaseException) -> float | None:
    """The wait Jira asked for (Retry-After seconds), if any."""
    response = getattr(exc, "response", None)
    value = response.headers.get("Retry-After") if response is not None else None
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _retrying(base: float, sleep: Callable[[float], None] | None) -> Retrying:
    extra: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
    policy: Retrying = retry_policy(Retrying, retry_on=_retryable, hint=_hint, base=base, cap=MAX_WAIT, **extra)
    return policy


async def _call(
    fn: Callable[..., T],
    *args: Any,
    retry_base: float = 1.0,
    sleep: Callable[[float], None] | None = None,
    **kwargs: Any,
) -> T:
    """The one I/O point of this module: a blocking `jira` client call in a thread, under the one retry policy."""

    def run() -> T:
        result: T = _retrying(retry_base, sleep)(fn, *args, **kwargs)
        return result

    return await asyncio.to_thread(run)


def jira_client(settings: Settings, site: str) -> JIRA:
    """A `jira` client for `site`: a personal access token, else email + API token, else anonymous.

    No server-info call on creation, and no retries of its own (the caller's tenacity policy retries).
    """
    options: dict[str, Any] = {"server": site, "rest_api_version": "2"}
    common: dict[str, Any] = {"get_server_info": False, "max_retries": 0, "timeout": TIMEOUT}
    if settings.jira_token:
        return JIRA(options=options, token_auth=settings.jira_token, **common)
    if settings.jira_email and settings.jira_api_token:
        return JIRA(options=options, basic_auth=(settings.jira_email, settings.jira_api_token), **common)
    return JIRA(options=options, **common)


class JiraForge:
    """One Jira issue, with the mapped repository's forge for the code side."""

    def __init__(
        self,
        jira: JIRA,
        key: str,
        entry: ProjectMapping,
        code: CodeForge,
        *,
        retry_base: float = 1.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.jira = jira
        self.key = key
        self.entry = entry
        self.code = code
        self._retry_base = retry_base
        self._sleep = sleep

    # -- the one I/O point: a blocking client call in a thread, under the one retry policy ---------------------

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await _call(fn, *args, retry_base=self._retry_base, sleep=self._sleep, **kwargs)

    # -- names ------------------------------------------------------------------------------------------------

    @property
    def ref(self) -> str:
        """The Jira key: PR titles, bodies and comments name the issue by it."""
        return self.key

    @property
    def issue_slug(self) -> str:
        """The key in lower case, as branch names carry it (`reprobot/issue-shop-12`)."""
        return self.key.lower()

    @property
    def repo_name(self) -> str:
        """The mapped repository (the policy is read from it)."""
        return self.code.repo_name

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT: the code side's command."""
        return self.code.rerun_command(branch, brt_path)

    # -- the issue side: Jira -----------------------------------------------------------------------------------

    async def get_issue(self) -> dict[str, Any]:
        """The issue now: summary as title, description (string or ADF) as markdown, labels, status."""
        raw = (await self._call(self.jira.issue, self.key, fields="summary,description,labels,status")).raw
        fields = raw.get("fields") or {}
        return {
            "title": adf_to_markdown(fields.get("summary")),
            "body": adf_to_markdown(fields.get("description")),
            "labels": list(fields.get("labels") or []),
            "status": (fields.get("status") or {}).get("name"),
        }

    async def permission(self, username: str) -> str:
        """`write` for a user in the mapping's allowlist or in one of its project roles, else `none`."""
        if username in self.entry.allow:
            return "write"
        if not self.entry.roles:
            return "none"
        roles = await self._call(self.jira.project_roles, self.entry.project)
        for name in self.entry.roles:
            if name not in roles:
                continue
            role = await self._call(self.jira.project_role, self.entry.project, roles[name]["id"])
            for raw in role.raw.get("actors") or []:
                ids = {raw.get("name"), (raw.get("actorUser") or {}).get("accountId")}
                if username in ids:
                    return "write"
        return "none"

    async def react(self, comment_id: int | None, content: str) -> None:
        """Jira comments have no reactions: the status comment says what happens."""
        log.debug("%s: no reactions on Jira (%s)", self.key, content)

    async def _find_comment(self, marker: str) -> str | None:
        start = 0
        while True:
            page = await self._call(self.jira.comments, self.key, start_at=start, max_results=100)
            for comment in page:
                if str(getattr(comment, "body", "") or "").startswith(marker):
                    return str(comment.id)
            if len(page) < 100:
                return None
            start += len(page)

    async def _upsert(self, marker: str, body: str, known: str | None) -> str:
        text = f"{marker}\n{markdown_to_jira(body)}"
        comment_id = known or await self._find_comment(marker)
        if comment_id is not None:
            try:
                comment = await self._call(self.jira.comment, self.key, comment_id)
                await self._call(comment.update, body=text)
                return str(comment_id)
            except JIRAError as exc:
                if exc.status_code != 404:
                    raise
        made = await self._call(self.jira.add_comment, self.key, text)
        return str(made.id)

    async def upsert_status(self, kind: str, body: str, known: str | None = None) -> str:
        """Edit the status comment of `kind` in place, or post it (found by its anchor when the store lost it)."""
        return await self._upsert(STATUS_MARKER.format(kind=kind), body, known)

    async def reply_once(self, key: str, body: str) -> int:
        """Post a reply tagged with `key` unless a retry of the same job already did; returns its id."""
        marker = REPLY_MARKER.format(key=key)
        found = await self._find_comment(marker)
        if found is not None:
            return int(found)
        made = await self._call(self.jira.add_comment, self.key, f"{marker}\n{markdown_to_jira(body)}")
        return int(made.id)

    async def link(self, url: str, title: str) -> None:
        """A remote link from the issue to `url`, once (an existing link to the same URL is kept)."""
        links = await self._call(self.jira.remote_links, self.key)
        for existing in links:
            obj = existing.raw.get("object") or {}
            if obj.get("url") == url:
                return
        await self._call(self.jira.add_simple_link, self.key, {"url": url, "title": title})

    async def transition(self, name: str) -> bool:
        """Move the issue through the transition called `name` (or to the status called so); False when none fits.

        Workflows differ per project, so a name that is not offered from the current status is logged, not fatal.
        """
        offered = await self._call(self.jira.transitions, self.key)
        wanted = name.strip().lower()
        for transition in offered:
            target = str((transition.get("to") or {}).get("name", ""))
            if str(transition.get("name", "")).lower() == wanted or target.lower() == wanted:
                await self._call(self.jira.transition_issue, self.key, str(transition["id"]))
                return True
        status = (await self.get_issue()).get("status")
        if str(status or "").lower() != wanted:
            names = ", ".join(str(t.get("name")) for t in offered) or "none"
            log.warning("%s: no transition %r from status %r (offered: %s)", self.key, name, status, names)
        return False

    async def add_labels(self, labels: list[str]) -> None:
        """Add Jira labels the issue does not have yet."""
        have = set((await self.get_issue()).get("labels") or [])
        missing = [label for label in labels if label not in have]
        if missing:
            issue = await self._call(self.jira.issue, self.key, fields="labels")
            await self._call(issue.update, update={"labels": [{"add": label} for label in missing]})

    async def after_merge(self) -> dict[str, Any]:
        """The PR for this issue was merged: the mapping's `pr_merged` transition, when it names one."""
        name = self.entry.transitions.get("pr_merged")
        if not name:
            return {"status": "nothing_to_do"}
        moved = await self.transition(name)
        return {"status": "transitioned" if moved else "no_transition", "transition": name}

    # -- the code side: the mapped repository ------------------------------------------------------------------

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file of the mapped repository's default branch (the policy file)."""
        return await self.code.fetch_file(repo, path)

    async def default_branch(self) -> str:
        """The mapped repository's base branch."""
        return await self.code.default_branch()

    async def clone(self, dest: Path, branch: str) -> Path:
        """A checkout of the mapped repository."""
        return await self.code.clone(dest, branch)

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit and push the fix to the mapped repository."""
        return await self.code.push_branch(
            workspace, branch=branch, base_commit=base_commit, diff=diff, message=message
        )

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
        """Open the PR on the code side, then link it from the issue, transition it, and label it."""
        change = await self.code.open_or_update_change_request(
            branch=branch, base=base, title=title, body=body, draft=draft, labels=labels
        )
        if change.number and change.url.startswith(("http://", "https://")):
            await self.link(change.url, f"reprobot: {title}")
        opened = self.entry.transitions.get("pr_opened")
        if opened and change.created:
            await self.transition(opened)
        if self.entry.issue_labels:
            await self.add_labels(list(self.entry.issue_labels))
        return change


async def _code_forge(
    entry: ProjectMapping,
    settings: Settings,
    session: aiohttp.ClientSession,
    tokens: InstallationTokens,
) -> CodeForge:
    if entry.github is not None:
        assert entry.installation is not None  # validated with the mapping
        token = await tokens.token(session, entry.installation)
        # The GitHub side has no issue of its own: number 0 is never used for an issue call by the Jira forge.
        gh = client(session, settings, token)
        return GitHubForge(gh, entry.github, 0, token=token, git_url=settings.github_git_url)
    assert entry.git is not None
    credential = None
    if entry.credential is not None:
        credential = settings.git_credential(entry.credential)
        if credential is None:
            raise PermanentJobError(
                f"the mapping names credential {entry.credential!r}: set REPROBOT_GIT_CREDENTIAL_{entry.credential}"
            )
    return GitRemoteForge(entry.git, branch=entry.branch, credential=credential)


async def jira_forge_for_job(
    job_id: int,
    payload: Mapping[str, Any],
    settings: Settings,
    session: aiohttp.ClientSession,
    tokens: InstallationTokens,
    mapping: JiraMapping | None = None,
) -> JiraForge:
    """The forge a `jira.*` job publishes to: the issue from its payload, the repository from the mapping now."""
    try:
        site, project, key = str(payload["site"]), str(payload["project"]), str(payload["key"])
        components = [str(c) for c in payload.get("components") or []]
    except (KeyError, TypeError) as exc:
        raise PermanentJobError(f"job {job_id} payload is missing {exc}") from None
    if mapping is None:
        try:
            mapping = await asyncio.to_thread(load_mapping, settings.jira_mapping)
        except MappingError as exc:
            raise PermanentJobError(f"job {job_id}: the Jira mapping is invalid: {exc}") from None
    entry = mapping.resolve(site, project, components)
    if entry is None:
        raise PermanentJobError(f"job {job_id}: project {project} on {site} is no longer mapped")
    code = await _code_forge(entry, settings, session, tokens)
    jira = await asyncio.to_thread(jira_client, settings, site)
    return JiraForge(jira, key, entry, code, retry_base=settings.jira_retry_base)


# -- creating issues: the Mojira poller's `jira:PROJECT` sink ---------------------------------------------------

#: The issue type a created issue gets (every Jira software project template has it).
ISSUE_TYPE = "Bug"


#: Fields whose 400 is about this one issue's text, not about the deployment (project, issue type, labels field).
CONTENT_FIELDS = frozenset({"summary", "description"})


class IssueRefused(Exception):
    """Jira refused this issue's own content for good (a 400 on its summary or description)."""


def _field_errors(exc: JIRAError) -> dict[str, str]:
    """The per-field messages of a Jira 400 (`{"errors": {"summary": "..."}}`), empty when there are none."""
    response = getattr(exc, "response", None)
    try:
        errors = response.json().get("errors") if response is not None else None
    except (ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in errors.items()} if isinstance(errors, dict) else {}


class JiraIssueCreator:
    """Creates issues in a project of one Jira site (the real `jira` client, under the forge's retry policy)."""

    def __init__(
        self,
        jira: JIRA,
        site: str,
        *,
        retry_base: float = 1.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.jira = jira
        self.site = site
        self._retry_base = retry_base
        self._sleep = sleep

    async def create_issue(
        self, project: str, summary: str, description: str, labels: Sequence[str], *, anchor: str | None = None
    ) -> str:
        """Create a `Bug` in `project` with `description` (markdown, converted to Jira wiki markup); its key.

        `anchor` (letters, digits and dashes) heads the description as `{anchor:…}`, the bot's mark on Jira.
        """
        wiki = markdown_to_jira(description)
        if anchor is not None:
            wiki = "{anchor:" + re.sub(r"[^A-Za-z0-9-]", "-", anchor) + "}\n" + wiki
        fields = {
            # By key and by name: the client then sends them as they are, without looking up their ids first.
            "project": {"key": project},
            "summary": summary,
            "description": wiki,
            "issuetype": {"name": ISSUE_TYPE},
            "labels": list(labels),
        }
        # A 5xx is retried like every call here: a create Jira committed but answered with a 5xx is made twice,
        # a rare duplicate issue being the lesser harm than a report that never arrives.
        try:
            made = await _call(
                self.jira.create_issue, fields=fields, prefetch=False, retry_base=self._retry_base, sleep=self._sleep
            )
        except JIRAError as exc:
            errors = _field_errors(exc) if exc.status_code == 400 else {}
            # Only a refusal of this issue's text is final for it; a bad project or issue type is the deployment's
            # and raises on, so the report is offered again once that is fixed.
            if errors and set(errors) <= CONTENT_FIELDS:
                raise IssueRefused(f"Jira refused the issue: {errors}") from exc
            raise
        return str(made.key)


def site_for_project(mapping: JiraMapping, project: str) -> str:
    """The Jira site holding `project`: the one the mapping names for that key, else the mapping's only site.

    SettingsError (naming REPROBOT_MOJIRA_SINK) when no site, or more than one, fits.
    """
    named = sorted({entry.site for entry in mapping.projects if entry.project == project})
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise SettingsError(
            f"REPROBOT_MOJIRA_SINK=jira:{project}: project {project} is mapped on several Jira sites "
            f"({', '.join(named)}) in REPROBOT_JIRA_MAPPING; map it on one site only"
        )
    sites = sorted({entry.site for entry in mapping.projects})
    if len(sites) == 1:
        return sites[0]
    found = f"it maps {len(sites)} sites ({', '.join(sites)})" if sites else "it maps no site"
    raise SettingsError(
        f"REPROBOT_MOJIRA_SINK=jira:{project} needs the Jira site of project {project}: "
        f"map {project} in REPROBOT_JIRA_MAPPING ({found})"
    )


def issue_creator(settings: Settings, project: str) -> JiraIssueCreator:
    """The creator for the Mojira sink `jira:PROJECT`, on the site the deployment's mapping names for `project`.

    Read once when the sink is built (a small local file, like the settings); SettingsError when the mapping is
    missing, invalid, or does not say which site holds `project`.
    """
    if settings.jira_mapping is None:
        raise SettingsError(
            f"REPROBOT_MOJIRA_SINK=jira:{project} needs REPROBOT_JIRA_MAPPING (the mapping names the Jira site)"
        )
    try:
        mapping = load_mapping(settings.jira_mapping)
    except MappingError as exc:
        raise SettingsError(f"REPROBOT_MOJIRA_SINK=jira:{project}: REPROBOT_JIRA_MAPPING is invalid: {exc}") from None
    site = site_for_project(mapping, project)
    return JiraIssueCreator(jira_client(settings, site), site, retry_base=settings.jira_retry_base)

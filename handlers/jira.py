"""Jira webhooks → jobs: one gidgethub Router per concern, composed into `router` at the bottom.

The server verifies and parses the delivery (handlers/jira_payload.py) and hands the typed event to the routers as
`jira=`. Handlers only plan: they read the deployment's mapping (pure) and never call Jira. A command from someone
outside the mapping's allowlist is planned as unverified: the job asks Jira for the commenter's project roles.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.jobs.permissions import polite_key
from bot.render.inert import md_inline
from bot.settings.jira_mapping import JiraMapping, ProjectMapping
from bot.store import PlannedAction, PlannedJob
from handlers.commands import CommandError, clean_text, parse_command
from handlers.jira_payload import JiraEvent

__all__ = ["BOT_MARKER", "JiraIntake", "merged_transition_job", "router"]

log = logging.getLogger(__name__)

#: Every comment reprobot writes on Jira starts with an anchor carrying this prefix (invisible when rendered):
#: its own comments are never read as commands.
BOT_MARKER = "{anchor:reprobot-"


@dataclass
class JiraIntake:
    """What the Jira handlers need: the mapping, the delivery id, and what they plan."""

    mapping: JiraMapping
    delivery_id: str
    planned: list[PlannedJob] = field(default_factory=list)
    actions: list[PlannedAction] = field(default_factory=list)
    #: Why nothing was planned, for the answer and the log (e.g. the project is not mapped).
    skipped: str | None = None

    def plan(self) -> list[PlannedJob | PlannedAction]:
        """Everything the delivery asks for, to be committed with it."""
        return [*self.planned, *self.actions]

    def entry_for(self, jira: JiraEvent) -> ProjectMapping | None:
        """The mapping entry of the event's issue; None (and the reason recorded) when the project is unmapped."""
        entry = self.mapping.resolve(jira.site, jira.project, jira.components)
        if entry is None:
            self.skipped = f"project {jira.project} on {jira.site} is not mapped to a repository"
            log.info("delivery %s: %s %s: %s", self.delivery_id, jira.event, jira.key, self.skipped)
        return entry

    def enqueue(self, jira: JiraEvent, kind: str, payload: dict[str, Any], *, dedupe: str | None = None) -> None:
        """Plan a `jira.<kind>` job on the event's issue (one per delivery and kind unless `dedupe` says)."""
        payload = {
            "site": jira.site,
            "project": jira.project,
            "components": list(jira.components),
            "key": jira.key,
            "delivery_id": self.delivery_id,
            **payload,
        }
        self.planned.append(
            PlannedJob(
                kind=f"jira.{kind}",
                forge="jira",
                repo=jira.site,
                number_or_key=jira.key,
                payload=payload,
                concurrency_key=None if kind == "reply" else f"jira:{jira.site}/{jira.key}",
                dedupe_key=dedupe or f"jira-delivery:{self.delivery_id}:{kind}",
                title=clean_text(jira.summary),
                body=clean_text(jira.description),
                url=jira.url,
            )
        )


# -- issues: created, or updated with a trigger label added ---------------------------------------------------
issues_router = Router()


@issues_router.register("jira:issue_created")
async def on_issue_created(event: Event, gh: object, *, intake: JiraIntake, jira: JiraEvent, **_: Any) -> None:
    """A new issue: its trigger label (fix wins over reproduce), else the mapping's `on_create`."""
    entry = intake.entry_for(jira)
    if entry is None:
        return
    mode = entry.mode_for_labels(jira.labels)
    trigger = "labeled" if mode else "created"
    mode = mode or (entry.on_create if entry.on_create != "none" else None)
    if mode is None:
        return
    intake.enqueue(jira, "issue", {"mode": mode, "trigger": trigger})


@issues_router.register("jira:issue_updated")
async def on_issue_updated(event: Event, gh: object, *, intake: JiraIntake, jira: JiraEvent, **_: Any) -> None:
    """An update that adds a trigger label; Jira Server sends a new comment as an update carrying it, too."""
    if jira.comment is not None and not jira.added_labels:
        await _on_comment(intake, jira)
        return
    if not jira.added_labels:
        return
    entry = intake.entry_for(jira)
    if entry is None:
        return
    mode = entry.mode_for_labels(jira.added_labels)
    if mode is not None:
        intake.enqueue(jira, "issue", {"mode": mode, "trigger": "labeled"})


# -- comments: slash commands ---------------------------------------------------------------------------------
comments_router = Router()


@comments_router.register("comment_created")
async def on_comment_created(event: Event, gh: object, *, intake: JiraIntake, jira: JiraEvent, **_: Any) -> None:
    """A comment that may carry `/reproduce`, `/fix` or `/reprobot ...`."""
    await _on_comment(intake, jira)


async def _on_comment(intake: JiraIntake, jira: JiraEvent) -> None:
    comment = jira.comment
    if comment is None or BOT_MARKER in comment.body:
        return  # no loops on reprobot's own comments
    try:
        command = parse_command(comment.body)
    except CommandError as exc:
        entry = intake.entry_for(jira)
        if entry is not None:
            intake.enqueue(jira, "reply", {"text": f"⚠️ {exc}", "comment_id": comment.id}, dedupe=_key(jira, "reply"))
        return
    if command is None:
        return
    entry = intake.entry_for(jira)
    if entry is None:
        return
    user = comment.author
    allowlisted = user in entry.allow
    if not allowlisted and not entry.roles:
        # No role can grant it and the allowlist does not: the one polite reply, at most once per issue.
        # The display name is the commenter's to choose: quoted inert, it mentions or links nobody.
        name = md_inline(comment.author_display)
        text = f"{name} thanks! Only the project's maintainers can run reprobot commands here."
        intake.enqueue(jira, "reply", {"text": text, "polite": True}, dedupe=polite_key(jira.site, jira.key))
        return
    base: dict[str, Any] = {
        "comment_id": comment.id,
        "actor": user,
        # The allowlist stands for GitHub's member association; anyone else is checked against the roles.
        "association": "MEMBER" if allowlisted else "NONE",
    }
    if not allowlisted:
        base["permission_unverified"] = True
    if command.starts_job:
        intake.enqueue(jira, command.name, base | {"options": command.options}, dedupe=_key(jira, command.name))
    else:
        intake.enqueue(jira, "reply", base | {"command": command.name}, dedupe=_key(jira, command.name))


def _key(jira: JiraEvent, kind: str) -> str:
    """Dedupe by comment: Jira Server may announce one comment twice (issue_updated and comment_created)."""
    comment_id = jira.comment.id if jira.comment else ""
    return f"jira-comment:{jira.site}/{jira.key}:{comment_id}:{kind}"


# -- GitHub pull requests of Jira issues: the `pr_merged` transition -------------------------------------------
#: The Jira key at the end of a reprobot branch (`reprobot/issue-shop-12` → SHOP-12).
_BRANCH_KEY = re.compile(r"([a-z][a-z0-9_]*-[1-9][0-9]*)$")


def merged_transition_job(
    mapping: JiraMapping, repo: str, head_ref: str, pr_number: int, delivery_id: str
) -> PlannedJob | None:
    """The job that moves a Jira issue on when reprobot's PR for it is merged on GitHub, if the mapping asks.

    The branch names the key; the entries mapping a project of that key to this repository give the site.
    """
    match = _BRANCH_KEY.search(head_ref)
    if match is None:
        return None
    key = match.group(1).upper()
    project = key.rsplit("-", 1)[0]
    for entry in mapping.projects:
        transition = entry.transitions.get("pr_merged")
        if entry.github != repo or entry.project != project or not transition:
            continue
        payload = {
            "site": entry.site,
            "project": project,
            "components": [entry.component] if entry.component else [],
            "key": key,
            "pr_number": pr_number,
            "delivery_id": delivery_id,
        }
        return PlannedJob(
            kind="jira.merged",
            forge="jira",
            repo=entry.site,
            number_or_key=key,
            payload=payload,
            concurrency_key=None,
            dedupe_key=f"jira-merged:{entry.site}/{key}:{repo}#{pr_number}",
            url=f"{entry.site}/browse/{key}",
        )
    return None


#: Every concern, composed in one place.
router = Router(issues_router, comments_router)

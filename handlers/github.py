"""GitHub webhooks → jobs: one gidgethub Router per concern, composed into `router` at the bottom."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.jobs.permissions import association_allows, permission_allows, polite_key, polite_text
from bot.settings.jira_mapping import JiraMapping
from bot.settings.policy import effective_policy
from bot.settings.policy_model import CommandsPolicy
from bot.store import PlannedAction, PlannedJob, Store
from handlers.commands import CommandError, clean_text, parse_command
from handlers.jira import merged_transition_job

log = logging.getLogger(__name__)

#: Looks up a user's collaborator permission: (installation_id, "owner/repo", login) → "admin" | "write" | ...
PermissionLookup = Callable[[int, str, str], Awaitable[str]]


@dataclass
class Intake:
    """What handlers need: the store and queue, an optional permission lookup, and what they plan.

    Handlers only plan: jobs (`planned`) and bookkeeping writes (`actions`). The server commits the delivery
    with its plan to the inbox afterwards, the actions in that same transaction. Handlers run on the event
    loop, so the one read they may make (`cached_policy`) goes through a thread.
    """

    store: Store
    permission: PermissionLookup | None = None
    #: Seconds the ack may wait on the permission lookup; past it the job decides (it checks again anyway).
    permission_timeout: float = 1.5
    planned: list[PlannedJob] = field(default_factory=list)
    actions: list[PlannedAction] = field(default_factory=list)
    #: The Jira mapping (issue 15): a merged reprobot PR of a Jira issue moves that issue on.
    jira_mapping: JiraMapping | None = None

    def plan(self) -> list[PlannedJob | PlannedAction]:
        """Everything the delivery asks for, to be committed with it."""
        return [*self.planned, *self.actions]

    def enqueue(self, event: Event, kind: str, payload: dict[str, Any], *, dedupe: str | None = None) -> None:
        """Plan a job for the event's issue (one per delivery and kind); nothing without an installation."""
        data = event.data
        installation = (data.get("installation") or {}).get("id")
        if installation is None:
            log.info("delivery %s: no installation in the payload; nothing to do", event.delivery_id)
            return
        repo = data["repository"]["full_name"]
        issue = data["issue"]
        payload = {
            "installation_id": int(installation),
            "repo": repo,
            "number": int(issue["number"]),
            "default_branch": data["repository"].get("default_branch", "main"),
            "delivery_id": event.delivery_id,
            **payload,
        }
        self.planned.append(
            PlannedJob(
                kind=kind,
                forge="github",
                repo=repo,
                number_or_key=str(issue["number"]),
                payload=payload,
                # Replies (help, status, cancel) must not wait behind the issue's running job.
                concurrency_key=None if kind == "github.reply" else f"github:{repo}#{issue['number']}",
                dedupe_key=dedupe or f"github-delivery:{event.delivery_id}:{kind}",
                title=clean_text(issue.get("title") or ""),
                body=clean_text(issue.get("body") or ""),
                url=issue.get("html_url"),
            )
        )


def _from_bot(event: Event) -> bool:
    sender = event.data.get("sender") or {}
    return sender.get("type") == "Bot" or str(sender.get("login", "")).endswith("[bot]")


# -- issues: opened and labeled run what the policy says (the job reads the policy) --------------------------
issues_router = Router()


@issues_router.register("issues", action="opened")
@issues_router.register("issues", action="labeled")
async def on_issue_event(event: Event, gh: object, *, intake: Intake, **_: Any) -> None:
    """Queue a policy check for an opened or labeled issue; the job decides none / reproduce / fix."""
    if _from_bot(event) or "pull_request" in event.data["issue"]:
        return
    label = (event.data.get("label") or {}).get("name")
    intake.enqueue(event, "github.issue", {"trigger": event.data["action"], "label": label})


# -- comments: slash commands --------------------------------------------------------------------------------
comments_router = Router()


@comments_router.register("issue_comment", action="created")
async def on_comment(event: Event, gh: object, *, intake: Intake, **_: Any) -> None:
    """Parse a command, check who sent it, and queue the job (or a reply)."""
    comment = event.data["comment"]
    if _from_bot(event) or comment.get("user", {}).get("type") == "Bot" or "pull_request" in event.data["issue"]:
        return  # no loops on bots' comments; commands are for issues, not pull requests
    try:
        command = parse_command(comment.get("body") or "")
    except CommandError as exc:
        intake.enqueue(event, "github.reply", {"text": f"⚠️ {exc}", "comment_id": comment["id"]})
        return
    if command is None:
        return
    user = comment["user"]["login"]
    repo = event.data["repository"]["full_name"]
    # The last policy a job loaded for this repo (defaults until then); the job checks again with a fresh one.
    # Read on a thread, never on the loop: an in-process worker may be holding the store's connection.
    cached = await asyncio.to_thread(intake.store.deliveries.cached_policy, repo)
    rules = effective_policy(cached).triggers.commands
    if not rules.enabled:
        return
    allowed = await _may_command(event, intake, user, comment.get("author_association", "NONE"), rules)
    if allowed is False:
        if not rules.reply_to_others:
            return
        number = event.data["issue"]["number"]
        intake.enqueue(
            event, "github.reply", {"text": polite_text(user), "polite": True}, dedupe=polite_key(repo, number)
        )
        return
    base = {"comment_id": comment["id"], "actor": user, "association": comment.get("author_association", "NONE")}
    if allowed is None:  # GitHub did not answer in time: the job asks again before doing anything
        base["permission_unverified"] = True
    if command.starts_job:
        intake.enqueue(event, f"github.{command.name}", base | {"options": command.options})
    else:
        intake.enqueue(event, "github.reply", base | {"command": command.name})


async def _may_command(event: Event, intake: Intake, user: str, association: str, rules: CommandsPolicy) -> bool | None:
    """True or False, or None when GitHub did not answer within the ack's budget (the job then decides)."""
    if association_allows(association, rules.allowed) or rules.permission == "none":
        return True
    if intake.permission is None or not (event.data.get("installation") or {}).get("id"):
        return False
    lookup = intake.permission(int(event.data["installation"]["id"]), event.data["repository"]["full_name"], user)
    try:
        perm = await asyncio.wait_for(lookup, intake.permission_timeout)
    except TimeoutError:
        log.warning("delivery %s: permission lookup for %s timed out; the job checks", event.delivery_id, user)
        return None
    except Exception:  # an API failure must not turn into a granted command or a 500 for GitHub
        log.warning("delivery %s: permission lookup for %s failed", event.delivery_id, user, exc_info=True)
        return False
    return permission_allows(perm, rules.permission)


# -- installations ------------------------------------------------------------------------------------------
installation_router = Router()


@installation_router.register("installation")
async def on_installation(event: Event, gh: object, *, intake: Intake, **_: Any) -> None:
    """Record installs and uninstalls (written with the delivery, in its transaction)."""
    inst = event.data["installation"]
    if event.data["action"] == "deleted":
        intake.actions.append(PlannedAction("installation_removed", {"installation_id": int(inst["id"])}))
        return
    repos = [r["full_name"] for r in event.data.get("repositories") or []]
    args = {"installation_id": int(inst["id"]), "account": inst["account"]["login"], "repos": repos}
    intake.actions.append(PlannedAction("installation", args))
    if event.data["action"] == "created":
        _plan_trigger_labels(intake, event, int(inst["id"]), repos)


@installation_router.register("installation_repositories", action="added")
async def on_repositories_added(event: Event, gh: object, *, intake: Intake, **_: Any) -> None:
    """Repositories added to an installation get the trigger labels too."""
    repos = [r["full_name"] for r in event.data.get("repositories_added") or []]
    _plan_trigger_labels(intake, event, int(event.data["installation"]["id"]), repos)


def _plan_trigger_labels(intake: Intake, event: Event, installation_id: int, repos: list[str]) -> None:
    """One `github.labels` job per repository: its trigger labels, so users find them in the label picker."""
    for repo in repos:
        intake.planned.append(
            PlannedJob(
                kind="github.labels",
                forge="github",
                repo=repo,
                # Not an issue: the job is about the repository (the store keys every job by what it is about).
                number_or_key="labels",
                payload={"installation_id": installation_id, "repo": repo, "delivery_id": event.delivery_id},
                concurrency_key=f"github:{repo}:labels",
                dedupe_key=f"github-delivery:{event.delivery_id}:labels:{repo}",
                title="trigger labels",
            )
        )


# -- pull requests: feedback on our own PRs ----------------------------------------------------------------
pulls_router = Router()


@pulls_router.register("pull_request", action="closed")
async def on_pr_closed(event: Event, gh: object, *, intake: Intake, **_: Any) -> None:
    """Record whether a reprobot PR was merged (written with the delivery, in its transaction)."""
    pr = event.data["pull_request"]
    if not str(pr.get("head", {}).get("ref", "")).startswith("reprobot/"):
        return
    repo = event.data["repository"]["full_name"]
    args = {
        "repo": repo,
        "pr_number": int(pr["number"]),
        "merged": bool(pr.get("merged")),
        "closed_at": pr.get("closed_at"),
    }
    intake.actions.append(PlannedAction("pr_outcome", args))
    if args["merged"] and intake.jira_mapping is not None:
        ref = str(pr["head"]["ref"])
        job = merged_transition_job(intake.jira_mapping, repo, ref, args["pr_number"], event.delivery_id)
        if job is not None:
            intake.planned.append(job)


#: Every concern, composed in one place.
router = Router(issues_router, comments_router, installation_router, pulls_router)

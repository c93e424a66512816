"""Run one forge job and publish its result: the forge-neutral job flow and every publish decision.

The forge (bot/forges/) does the I/O; this module decides what to post and records each publication in the store,
keyed by (issue, kind), so a retried job updates what it already posted instead of posting it again.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bot.forges.base import Forge, PermanentJobError
from bot.jobs.game import queue_game_job
from bot.jobs.handoff import publish_app_result, queue_for_runner
from bot.jobs.permissions import HELP_TEXT, association_allows, permission_allows, polite_key, polite_text
from bot.jobs.queue import Queue
from bot.jobs.recorder import JobDeps, Recorder
from bot.jobs.request import JobOptions, build_request
from bot.pipeline.record import job_record
from bot.pipeline.run import run_job
from bot.pipeline.types import JobOutcome, Mode
from bot.render.report import (
    ReproductionContext,
    job_page_url,
    render_abstention,
    render_final_status,
    render_job_link,
    render_notes,
    render_policy_error,
    render_pr_body,
    render_progress,
    render_reproduction_comment,
    render_suggestion,
)
from bot.settings.policy import PolicyError, load_policy_model
from bot.settings.policy_model import Policy
from bot.store import JobRow, Store
from patch_selectors.paths import diff_path_problems
from sandboxes.text import clean_text, clean_title
from sandboxes.workspace import head_commit

__all__ = ["JobDeps", "PermanentJobError", "Publication", "Recorder", "publish_outcome", "run_forge_job"]

log = logging.getLogger(__name__)

#: Jobs that run the pipeline (the ones `/reprobot cancel` stops), by the action after the source prefix
#: (`github.fix`, `jira.fix`, `reproduce.app`).
_PIPELINE_ACTIONS = ("fix", "reproduce", "issue", "app")  # app: `reproduce.app`, a runner's job
#: Payload keys that belong to one command, not to the issue's address on its forge.
_COMMAND_KEYS = ("comment_id", "options", "command", "permission_unverified", "actor", "association", "text", "mode")


@dataclass(frozen=True)
class Publication:
    """How a job's result is published on its forge: the status kind, the branch and the change request's texts."""

    kind: str
    issue_title: str
    base_branch: str
    base_commit: str
    branch: str
    pr_title: str
    commit_message: str
    closes_issue: bool
    draft: bool = False
    labels: tuple[str, ...] = ()
    denied_paths: tuple[str, ...] = ()
    #: False: render the change request without pushing a branch (the CLI's --no-branch).
    push: bool = True
    #: The job's dashboard page (REPROBOT_PUBLIC_URL set), linked from the PR body and every comment; else None.
    job_url: str | None = None


def with_publication(record: dict[str, Any], published: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The job's record with what publishing did (status, PR, branch) and the publish stage's seconds."""
    publication = {k: published.get(k) for k in ("status", "pr", "branch") if published.get(k) is not None}
    timing = dict(record.get("stage_seconds") or {}) | {"publish": round(seconds, 3)}
    return record | {"publication": publication, "stage_seconds": timing}


async def publish_outcome(
    forge: Forge, rec: Recorder, outcome: JobOutcome, pub: Publication, workspace: Path | None
) -> dict[str, Any]:
    """Post what the outcome earns: a change request, a suggestion, a reproduction, an abstention or no result.

    `workspace` is a checkout at the base commit to commit the fix in (needed when pushing). The result has
    `refused` (the path problems) when the path policy stopped the push.
    """
    result: dict[str, Any] = {"status": outcome.status, "reasons": outcome.reasons}
    ref, brt = forge.ref, outcome.brt
    link = render_job_link(pub.job_url)
    if outcome.status == "fixed" and brt is not None:
        pushed: str | None = None
        if pub.push:
            assert workspace is not None, "pushing needs a workspace"
            # The last gate before anything is pushed (the smell reviewer checked it too): the path policy.
            refused = diff_path_problems(outcome.patch, pub.denied_paths, base=workspace) if outcome.patch else []
            if refused:
                reasons = [f"refused to publish: {r}" for r in refused]
                body = render_final_status(ref, "no pull request", "", reasons) + render_notes(outcome.notes)
                await rec.status(forge, pub.kind, body + link)
                return {"status": "error", "reasons": reasons, "refused": refused}
            await forge.push_branch(
                workspace,
                branch=pub.branch,
                base_commit=pub.base_commit,
                diff=outcome.patch,
                message=pub.commit_message,
            )
            await rec.record("branch", pub.branch)
            pushed = pub.branch
        rerun = forge.rerun_command(pushed, brt.path)
        body = (
            render_pr_body(
                outcome.pr_context(
                    issue_ref=ref, issue_title=pub.issue_title, rerun=rerun, closes_issue=pub.closes_issue
                )
            )
            + link
        )
        change = await forge.open_or_update_change_request(
            branch=pub.branch,
            base=pub.base_branch,
            title=pub.pr_title,
            body=body,
            draft=pub.draft,
            labels=list(pub.labels),
        )
        await rec.record("pr", change.ref)
        summary = f"opened pull request #{change.number}" if change.number else f"prepared branch {change.url}"
        body = render_final_status(ref, summary, change.url, evidence=brt) + render_notes(outcome.notes)
        await rec.status(forge, pub.kind, body + link)
        return result | {"pr": change.number, "branch": pushed}
    if outcome.status == "suggested" and brt is not None:
        rerun = forge.rerun_command(None, brt.path)
        body = render_suggestion(outcome.suggestion_context(issue_ref=ref, rerun=rerun))
    elif outcome.status == "reproduced" and brt is not None:
        rerun = forge.rerun_command(None, brt.path)
        body = render_reproduction_comment(ReproductionContext(ref, brt, rerun, no_tests=outcome.no_tests))
    elif outcome.status == "abstained" and outcome.abstention is not None:
        a = outcome.abstention
        body = render_abstention(ref, outcome.reasons, a.score, a.threshold)
    else:
        body = render_final_status(ref, f"no result ({outcome.status})", "", outcome.reasons)
    # Every final comment says which knobs the deployment's caps changed (the PR body does too).
    await rec.status(forge, pub.kind, body + render_notes(outcome.notes) + link)
    return result


async def run_forge_job(job: JobRow, forge: Forge, deps: JobDeps) -> dict[str, Any]:
    """Dispatch a queued job by kind on its forge (the worker made it); returns the result stored with the job."""
    if job.issue_id is None:
        raise PermanentJobError(f"job {job.id} has no issue")
    rec = Recorder(deps.store, job.issue_id, job.id)
    comment_id = job.payload.get("comment_id")
    action = job.kind.partition(".")[2]
    if action == "reply":
        return await _reply(job, forge, deps)
    if job.kind.endswith(".app_result"):
        return await publish_app_result(job, forge, rec, deps)
    command_mode: Mode | None = "fix" if action == "fix" else "reproduce" if action == "reproduce" else None
    try:
        policy = await load_policy_model(forge.fetch_file, forge.repo_name)
        await asyncio.to_thread(deps.store.deliveries.remember_policy, forge.repo_name, policy.to_dict())
    except PolicyError as exc:
        body = render_policy_error(forge.ref, exc.source, exc.key, exc.problem)
        await rec.status(forge, command_mode or "policy", body)
        if comment_id:
            await forge.react(comment_id, "confused")
        return {"status": "policy_error", "key": exc.key, "problem": exc.problem}
    if action == "issue":
        mode = _mode_for_issue_event(job.payload, policy)
        if mode is None:
            return {"status": "nothing_to_do"}
    elif command_mode is not None:
        mode = command_mode
        if not await _command_allowed(job, forge, policy):
            await _queue_polite_reply(job, forge, deps, policy)
            return {"status": "not_allowed"}
        await forge.react(comment_id, "eyes")
    else:
        raise PermanentJobError(f"unknown job kind {job.kind!r}")
    runner = policy.reproduce.runner
    if mode == "reproduce" and runner.labels:
        queue = queue_game_job if runner.game else queue_for_runner  # games: issue 19
        return await queue(job, forge, rec, deps, runner)
    result = await _run_and_publish(job, forge, rec, deps, policy, mode)
    if comment_id:
        await forge.react(comment_id, "rocket" if result["status"] in ("fixed", "reproduced") else "confused")
    return result


def _mode_for_issue_event(payload: dict[str, Any], policy: Policy) -> Mode | None:
    if payload.get("mode") in ("fix", "reproduce"):
        # The intake decided already (a Jira mapping's trigger label or `on_create`).
        mode: Mode = "fix" if payload["mode"] == "fix" else "reproduce"
        return mode
    triggers = policy.triggers
    if payload.get("trigger") == "opened":
        on_open = triggers.on_open
        return None if on_open == "none" else cast(Mode, on_open)
    label = payload.get("label")
    if label and label == triggers.labels.fix:
        return "fix"
    if label and label == triggers.labels.reproduce:
        return "reproduce"
    return None


async def _command_allowed(job: JobRow, forge: Forge, policy: Policy) -> bool:
    cmd = policy.triggers.commands
    if not cmd.enabled:
        return False
    if association_allows(str(job.payload.get("association", "NONE")), cmd.allowed):
        return True
    return permission_allows(await forge.permission(str(job.payload.get("actor", ""))), cmd.permission)


async def _queue_polite_reply(job: JobRow, forge: Forge, deps: JobDeps, policy: Policy) -> None:
    """A command the webhook could not check in time turned out not allowed: queue the one polite reply."""
    if not job.payload.get("permission_unverified") or not policy.triggers.commands.reply_to_others:
        return
    # The issue's address on its forge (installation/repo/number, or site/project/key) without the command.
    payload: dict[str, Any] = {k: v for k, v in job.payload.items() if k not in _COMMAND_KEYS}
    payload |= {"text": polite_text(str(job.payload.get("actor", ""))), "polite": True}
    key = polite_key(job.payload.get("repo", job.payload.get("site", forge.repo_name)), forge.ref.lstrip("#"))
    queue = Queue(deps.store)
    kind = f"{job.kind.partition('.')[0]}.reply"
    await asyncio.to_thread(queue.enqueue, kind, job.issue_id, payload, concurrency_key=None, dedupe_key=key)


def _cancel_pipeline_jobs(store: Store, issue_id: int | None) -> int:
    queue = Queue(store)
    jobs = store.jobs.list_jobs(issue_id=issue_id)
    return sum(1 for j in jobs if j.kind.partition(".")[2] in _PIPELINE_ACTIONS and queue.cancel(j.id))


async def _reply(job: JobRow, forge: Forge, deps: JobDeps) -> dict[str, Any]:
    p = job.payload
    if p.get("permission_unverified") or p.get("polite"):
        try:
            policy = await load_policy_model(forge.fetch_file, forge.repo_name)
        except PolicyError:
            return {"status": "policy_error"}
        # The webhook's permission lookup timed out: check before answering.
        if p.get("permission_unverified") and not await _command_allowed(job, forge, policy):
            await _queue_polite_reply(job, forge, deps, policy)
            return {"status": "not_allowed"}
        if p.get("polite") and not policy.triggers.commands.reply_to_others:
            return {"status": "silent"}
    text = str(p.get("text", ""))
    if p.get("command") == "help":
        text = HELP_TEXT
    elif p.get("command") == "cancel":
        cancelled = await asyncio.to_thread(_cancel_pipeline_jobs, deps.store, job.issue_id)
        text = f"Cancelled {cancelled} job(s)." if cancelled else "Nothing to cancel."
    elif p.get("command") == "status":
        jobs = await asyncio.to_thread(deps.store.jobs.list_jobs, issue_id=job.issue_id, limit=10)
        lines = [f"- job {j.id} `{j.kind}`: {j.status}" for j in jobs if j.id != job.id]
        text = "reprobot on this issue:\n\n" + ("\n".join(lines) or "- no jobs")
    # Keyed by the job, which keeps its id across retries: a taken-over job finds its own reply.
    comment_id = await forge.reply_once(f"job-{job.id}", text)
    return {"status": "replied", "comment_id": comment_id}


async def _run_and_publish(
    job: JobRow, forge: Forge, rec: Recorder, deps: JobDeps, policy: Policy, mode: Mode
) -> dict[str, Any]:
    settings = deps.settings
    issue = await forge.get_issue()
    title = clean_title(str(issue.get("title") or ""))
    # A title cannot smuggle lines into the body: it is cleaned onto one line first.
    text = clean_text(f"# {clean_title(str(issue.get('title') or ''), 256)}\n\n{issue.get('body') or ''}")
    base_branch = await forge.default_branch()
    done: list[str] = []
    job_url = job_page_url(settings.public_url, job.id)
    link = render_job_link(job_url)
    await rec.status(forge, mode, render_progress(forge.ref, "starting", done) + link)

    async def progress(stage: str, detail: str) -> None:
        done.append(f"{stage} {detail}".strip())
        await rec.status(forge, mode, render_progress(forge.ref, stage, done[:-1]) + link)

    workdir = settings.data_dir / "work" / f"gh-job-{job.id}-{job.attempts}"
    await asyncio.to_thread(shutil.rmtree, workdir, True)
    try:
        src = await forge.clone(workdir / "src", base_branch)
        base_commit = await head_commit(src)
        options = JobOptions.from_command(job.payload.get("options") or {})
        request = build_request(
            settings,
            policy,
            options,
            repo=src,
            issue_text=text,
            issue_ref=forge.ref,
            mode=mode,
            base_commit=base_commit,
        )
        minutes = request.job_minutes or policy.budget.max_minutes
        try:
            outcome = await asyncio.wait_for(
                run_job(request, settings, deps.store, job.id, progress=progress), minutes * 60
            )
        except TimeoutError:
            reason = f"the job ran past its budget of {minutes:g} minutes (policy `budget.max_minutes`)"
            body = render_final_status(forge.ref, "stopped", "", [reason]) + render_notes(request.notes)
            await rec.status(forge, mode, body + link)
            return {"status": "budget_exceeded", "reasons": [reason]}
        publish = policy.publish
        pr_title = clean_title(f"Fix {forge.ref}: {title or 'reported bug'}")
        pub = Publication(
            kind=mode,
            issue_title=title,
            base_branch=base_branch,
            base_commit=base_commit,
            branch=f"{publish.branch_prefix}{forge.issue_slug}",
            pr_title=pr_title,
            commit_message=f"{pr_title}\n\nFixes {forge.ref}",
            closes_issue=publish.closes_issue,
            draft=publish.draft,
            labels=publish.labels,
            denied_paths=request.denied_paths,
            job_url=job_url,
        )
        publish_started = time.monotonic()
        result = await publish_outcome(forge, rec, outcome, pub, src)
        result.pop("refused", None)
        record = with_publication(job_record(outcome), result, time.monotonic() - publish_started)
        return result | {"record": record}
    finally:
        await asyncio.to_thread(shutil.rmtree, workdir, True)

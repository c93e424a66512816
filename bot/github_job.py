"""One GitHub job: load the policy, run the pipeline on a fresh clone, publish a PR or a comment, idempotently."""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bot.config import Settings
from bot.forges.github import GitHubForge
from bot.github_client import InstallationTokens, client
from bot.pipeline import JobOutcome, Mode, run_job
from bot.policy import PolicyError, load_policy
from bot.queue import Queue
from bot.report import (
    ReproductionContext,
    render_abstention,
    render_final_status,
    render_notes,
    render_policy_error,
    render_pr_body,
    render_progress,
    render_reproduction_comment,
    render_suggestion,
)
from bot.request import JobOptions, build_request
from bot.store import Job, Store
from handlers.commands import HELP_TEXT, association_allows, permission_allows, polite_key, polite_text
from patch_selectors.paths import diff_path_problems
from sandboxes.text import clean_text, clean_title
from sandboxes.workspace import head_commit

log = logging.getLogger(__name__)


class PermanentJobError(RuntimeError):
    """The job can never succeed (bad payload, unknown kind): dead-letter it without retrying."""


@dataclass
class JobDeps:
    """What a GitHub job needs from its worker."""

    settings: Settings
    store: Store
    session: aiohttp.ClientSession
    tokens: InstallationTokens


async def _forge(job: Job, deps: JobDeps) -> GitHubForge:
    p = job.payload
    try:
        installation, repo, number = int(p["installation_id"]), str(p["repo"]), int(p["number"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PermanentJobError(f"job {job.id} payload is missing {exc}") from None
    if job.issue_id is None:
        raise PermanentJobError(f"job {job.id} has no issue")
    token = await deps.tokens.token(deps.session, installation)
    gh = client(deps.session, deps.settings, token)
    return GitHubForge(
        gh,
        repo,
        number,
        token=token,
        git_url=deps.settings.github_git_url,
        store=deps.store,
        issue_id=job.issue_id,
        job_id=job.id,
    )


async def run_github_job(job: Job, deps: JobDeps) -> dict[str, Any]:
    """Dispatch a job by kind; returns the result stored with the job."""
    forge = await _forge(job, deps)
    comment_id = job.payload.get("comment_id")
    if job.kind == "github.reply":
        return await _reply(job, forge, deps)
    try:
        policy = await load_policy(forge.fetch_file, forge.repo)
        await asyncio.to_thread(deps.store.deliveries.remember_policy, forge.repo, policy)
    except PolicyError as exc:
        await forge.upsert_comment(render_policy_error(forge.ref, exc.source, exc.key, exc.problem))
        if comment_id:
            await forge.react(comment_id, "confused")
        return {"status": "policy_error", "key": exc.key, "problem": exc.problem}
    if job.kind == "github.issue":
        mode = _mode_for_issue_event(job.payload, policy)
        if mode is None:
            return {"status": "nothing_to_do"}
    elif job.kind in ("github.fix", "github.reproduce"):
        mode = "fix" if job.kind == "github.fix" else "reproduce"
        if not await _command_allowed(job, forge, policy):
            await _queue_polite_reply(job, forge, deps, policy)
            return {"status": "not_allowed"}
        await forge.react(comment_id, "eyes")
    else:
        raise PermanentJobError(f"unknown job kind {job.kind!r}")
    result = await _run_and_publish(job, forge, deps, policy, mode)
    if comment_id:
        await forge.react(comment_id, "rocket" if result["status"] in ("fixed", "reproduced") else "confused")
    return result


def _mode_for_issue_event(payload: dict[str, Any], policy: dict[str, Any]) -> Mode | None:
    triggers = policy["triggers"]
    if payload.get("trigger") == "opened":
        on_open = triggers["on_open"]
        return None if on_open == "none" else on_open
    label = payload.get("label")
    if label and label == triggers["labels"]["fix"]:
        return "fix"
    if label and label == triggers["labels"]["reproduce"]:
        return "reproduce"
    return None


async def _command_allowed(job: Job, forge: GitHubForge, policy: dict[str, Any]) -> bool:
    cmd = policy["triggers"]["commands"]
    if not cmd["enabled"]:
        return False
    if association_allows(str(job.payload.get("association", "NONE")), cmd["allowed"]):
        return True
    return permission_allows(await forge.permission(str(job.payload.get("actor", ""))), cmd["permission"])


async def _queue_polite_reply(job: Job, forge: GitHubForge, deps: JobDeps, policy: dict[str, Any]) -> None:
    """A command the webhook could not check in time turned out not allowed: queue the one polite reply."""
    if not job.payload.get("permission_unverified") or not policy["triggers"]["commands"]["reply_to_others"]:
        return
    payload: dict[str, Any] = {k: job.payload[k] for k in ("installation_id", "repo", "number") if k in job.payload}
    payload |= {"text": polite_text(str(job.payload.get("actor", ""))), "polite": True}
    key = polite_key(forge.repo, forge.number)
    queue = Queue(deps.store)
    await asyncio.to_thread(queue.enqueue, "github.reply", job.issue_id, payload, concurrency_key=None, dedupe_key=key)


async def _reply(job: Job, forge: GitHubForge, deps: JobDeps) -> dict[str, Any]:
    p = job.payload
    if p.get("permission_unverified"):  # the webhook's permission lookup timed out: check before answering
        try:
            policy = await load_policy(forge.fetch_file, forge.repo)
        except PolicyError:
            return {"status": "policy_error"}
        if not await _command_allowed(job, forge, policy):
            await _queue_polite_reply(job, forge, deps, policy)
            return {"status": "not_allowed"}
    if p.get("polite"):
        try:
            policy = await load_policy(forge.fetch_file, forge.repo)
        except PolicyError:
            return {"status": "policy_error"}
        if not policy["triggers"]["commands"]["reply_to_others"]:
            return {"status": "silent"}
    text = str(p.get("text", ""))
    if p.get("command") == "help":
        text = HELP_TEXT
    elif p.get("command") == "cancel":
        cancelled = await asyncio.to_thread(_cancel_issue_jobs, deps.store, job.issue_id)
        text = f"Cancelled {len(cancelled)} job(s)." if cancelled else "Nothing to cancel."
    elif p.get("command") == "status":
        jobs = await asyncio.to_thread(deps.store.jobs.list_jobs, issue_id=job.issue_id, limit=10)
        lines = [f"- job {j.id} `{j.kind}`: {j.status}" for j in jobs if j.id != job.id]
        text = "reprobot on this issue:\n\n" + ("\n".join(lines) or "- no jobs")
    # Keyed by the job, which keeps its id across retries: a taken-over job finds its own reply.
    comment_id = await forge.reply_once(f"job-{job.id}", text)
    return {"status": "replied", "comment_id": comment_id}


def _cancel_issue_jobs(store: Store, issue_id: int | None) -> list[int]:
    """Cancel the issue's fix, reproduce and policy jobs (blocking: run it on a thread); returns their ids."""
    queue = Queue(store)
    jobs = store.jobs.list_jobs(issue_id=issue_id)
    return [j.id for j in jobs if j.kind in ("github.fix", "github.reproduce", "github.issue") and queue.cancel(j.id)]


async def _run_and_publish(
    job: Job, forge: GitHubForge, deps: JobDeps, policy: dict[str, Any], mode: Mode
) -> dict[str, Any]:
    settings = deps.settings
    issue = await forge.get_issue()
    # A title cannot smuggle lines into the body: it is cleaned onto one line first.
    text = clean_text(f"# {clean_title(str(issue.get('title') or ''), 256)}\n\n{issue.get('body') or ''}")
    info = await forge.repo_info()
    base_branch = str(info.get("default_branch") or job.payload.get("default_branch") or "main")
    done: list[str] = []
    await forge.upsert_comment(render_progress(forge.ref, "starting", done))

    async def progress(stage: str, detail: str) -> None:
        done.append(f"{stage} {detail}".strip())
        await forge.upsert_comment(render_progress(forge.ref, stage, done[:-1]))

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
        minutes = request.job_minutes or float(policy["budget"]["max_minutes"])
        try:
            outcome = await asyncio.wait_for(
                run_job(request, settings, deps.store, job.id, progress=progress), minutes * 60
            )
        except TimeoutError:
            reason = f"the job ran past its budget of {minutes:g} minutes (policy `budget.max_minutes`)"
            await forge.upsert_comment(
                render_final_status(forge.ref, "stopped", "", [reason]) + render_notes(request.notes)
            )
            return {"status": "budget_exceeded", "reasons": [reason]}
        return await _publish(job, forge, policy, outcome, src, base_branch, base_commit, issue)
    finally:
        await asyncio.to_thread(shutil.rmtree, workdir, True)


async def _publish(
    job: Job,
    forge: GitHubForge,
    policy: dict[str, Any],
    outcome: JobOutcome,
    src: Path,
    base_branch: str,
    base_commit: str,
    issue: dict[str, Any],
) -> dict[str, Any]:
    result: dict[str, Any] = {"status": outcome.status, "reasons": outcome.reasons}

    async def post(text: str) -> None:
        # Every final comment says which knobs the deployment's caps changed (the PR body does too).
        await forge.upsert_comment(text + render_notes(outcome.notes))

    publish = policy["publish"]
    # The last gate before anything is pushed (the smell reviewer checked it too): the path policy.
    refused = diff_path_problems(outcome.patch, tuple(policy["paths"]["deny"]), base=src) if outcome.patch else []
    if outcome.status == "fixed" and refused:
        reasons = [f"refused to publish: {r}" for r in refused]
        await post(render_final_status(forge.ref, "no pull request", "", reasons))
        return {"status": "error", "reasons": reasons}
    if outcome.status == "fixed" and outcome.brt is not None:
        branch = f"{publish['branch_prefix']}{forge.number}"
        rerun = f"git fetch origin {branch} && git checkout FETCH_HEAD\npython -m pytest -q {outcome.brt.path}"
        title = clean_title(f"Fix #{forge.number}: {clean_title(str(issue.get('title') or '')) or 'reported bug'}")
        await forge.push_branch(
            src, branch=branch, base_commit=base_commit, diff=outcome.patch, message=f"{title}\n\nFixes #{forge.number}"
        )
        body = render_pr_body(
            outcome.pr_context(
                issue_ref=forge.ref,
                issue_title=clean_title(str(issue.get("title") or "")),
                rerun=rerun,
                closes_issue=bool(publish["closes_issue"]),
            )
        )
        pr = await forge.open_or_update_pr(
            branch=branch, base=base_branch, title=title, body=body, draft=publish["draft"], labels=publish["labels"]
        )
        await post(render_final_status(forge.ref, f"opened pull request #{pr.number}", pr.url))
        result |= {"pr": pr.number, "branch": branch}
    elif outcome.status == "suggested" and outcome.brt is not None:
        rerun = f"python -m pytest -q {outcome.brt.path}"
        await post(render_suggestion(outcome.suggestion_context(issue_ref=forge.ref, rerun=rerun)))
    elif outcome.status == "reproduced" and outcome.brt is not None:
        rerun = f"python -m pytest -q {outcome.brt.path}"
        await post(render_reproduction_comment(ReproductionContext(forge.ref, outcome.brt, rerun)))
    elif outcome.status == "abstained" and outcome.abstention is not None:
        a = outcome.abstention
        await post(render_abstention(forge.ref, outcome.reasons, a.score, a.threshold))
    else:
        await post(render_final_status(forge.ref, f"no result ({outcome.status})", "", outcome.reasons))
    return result

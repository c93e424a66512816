"""`reprobot fix` and `reprobot reproduce`: run the pipeline on a local repo and publish to the local forge."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from bot.cli.progress import StageProgress
from bot.forges.local import (
    ForgeError,
    LocalForge,
    LocalIssue,
    PublishError,
    read_issue_file,
    rerun_command,
    run_folder,
)
from bot.jobs.publish import Publication, Recorder, publish_outcome, with_publication
from bot.jobs.queue import Queue
from bot.jobs.request import JobOptions, build_request
from bot.llm import check_endpoint
from bot.pipeline.record import job_record
from bot.pipeline.run import run_job
from bot.pipeline.types import (
    EXIT_ENVIRONMENT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    STATUS_EXIT,
    JobOutcome,
    JobRequest,
    Mode,
)
from bot.render.report import job_page_url
from bot.settings.config import Settings
from bot.store import Store
from sandboxes.factory import SandboxUnavailable
from sandboxes.text import clean_title

__all__ = ["print_text_result", "rerun_command", "run_job_command"]

#: The CLI holds its own job for as long as the run takes; no other worker should take it over.
_CLI_LEASE = 7 * 24 * 3600.0
_COMMIT_BODY = "Adds a bug reproduction test and the fix."


def _emit_error(args: argparse.Namespace, message: str, code: int) -> int:
    if args.json:
        print(json.dumps({"status": "error", "reasons": [message], "exit_code": code}))
    print(f"reprobot: {message}", file=sys.stderr)
    return code


async def _publish(
    forge: LocalForge,
    rec: Recorder,
    outcome: JobOutcome,
    request: JobRequest,
    settings: Settings,
    branch: str,
    push: bool,
) -> dict[str, Any]:
    """Publish through the forge-neutral publish module; a fix is committed in a scratch clone removed afterwards."""
    issue = forge.issue
    assert issue is not None and request.base_commit is not None
    pub = Publication(
        kind=request.mode,
        issue_title=issue.title,
        base_branch=request.base_commit,
        base_commit=request.base_commit,
        branch=branch,
        pr_title=f"Fix {clean_title(issue.title)}",
        commit_message=f"Fix {clean_title(issue.title)}\n\n{_COMMIT_BODY}\n\nFixes {issue.ref}",
        closes_issue=True,
        denied_paths=request.denied_paths,
        push=push,
        job_url=job_page_url(settings.public_url, outcome.job_id),
    )
    if not push:
        return await publish_outcome(forge, rec, outcome, pub, None)
    publish_ws = await forge.clone(settings.data_dir / "work" / f"job-{outcome.job_id}-publish", request.base_commit)
    try:
        published = await publish_outcome(forge, rec, outcome, pub, publish_ws)
    finally:
        await asyncio.to_thread(shutil.rmtree, publish_ws, True)
    if published.get("refused"):
        raise PublishError(f"refused to publish: {'; '.join(published['refused'])}")
    return published


def options_from_args(args: argparse.Namespace) -> JobOptions:
    """What `reprobot fix|reproduce` was asked for on the command line (absent flags: None)."""
    return JobOptions(
        trajectories=getattr(args, "trajectories", None),
        strategy=getattr(args, "strategy", None),
        agent=getattr(args, "agent", None),
        test_timeout=args.timeout,
        sandbox=args.sandbox,
        selector=getattr(args, "selector", None),
        llm_reviewers=bool(getattr(args, "llm_reviewers", False)),
        llm_abstention=bool(getattr(args, "llm_abstention", False)),
        allow_direct_references=bool(getattr(args, "allow_direct_references", False)),
    )


async def run_job_command(args: argparse.Namespace, settings: Settings) -> int:
    """Validate input, run the job with a progress display, publish, print the result."""
    repo: Path = args.repo.expanduser()
    try:
        issue = read_issue_file(args.issue)
        forge = LocalForge(repo, issue)
        base_commit = await forge.check(allow_dirty=args.allow_dirty)
    except ForgeError as exc:
        return _emit_error(args, str(exc), exc.code)
    options, problem = await _model_options(options_from_args(args), settings)
    if problem is not None:
        return _emit_error(args, problem, EXIT_ERROR)
    mode: Mode = "fix" if args.command == "fix" else "reproduce"
    request = build_request(
        settings,
        None,
        options,
        repo=repo,
        issue_text=issue.text,
        issue_ref=issue.ref,
        mode=mode,
        base_commit=base_commit,
    )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # The store is reached on a thread: this runs on an event loop, which a store call may block for long.
    store = await asyncio.to_thread(Store.open, settings.store_target)
    job = await _CliJob.start(args, settings, forge, issue, request, store)
    try:
        outcome, result, pr_body, comment = await _run_and_publish(job)
    except asyncio.CancelledError:
        if job.pushed:
            await forge.delete_branch(job.branch)
        await job.fail("interrupted")
        return _emit_error(args, "interrupted; no branch was left behind", EXIT_INTERRUPTED)
    except SandboxUnavailable as exc:
        await job.fail(str(exc))
        return _emit_error(args, str(exc), EXIT_ENVIRONMENT)
    except ForgeError as exc:
        await job.fail(str(exc))
        return _emit_error(args, str(exc), exc.code)
    else:
        await asyncio.to_thread(job.queue.finish, job.id, job.worker_id, result, failed=result["status"] == "error")
    finally:
        await asyncio.to_thread(store.close)
    if args.json:
        print(json.dumps(result))
    else:
        print_text_result(result, pr_body, comment)
    if outcome.error_kind == "environment":
        return EXIT_ENVIRONMENT
    return STATUS_EXIT.get(outcome.status, EXIT_ERROR)


async def _model_options(options: JobOptions, settings: Settings) -> tuple[JobOptions, str | None]:
    """Fail fast, before any work, when the command wants a model that is not configured or does not answer.

    Returns the options to run with (`--agent auto` alone falls back to the classic agent) and the problem, if any.
    """
    if not options.asks_model(settings.llm_configured):
        return options, None
    reason = await check_endpoint(settings)
    if reason is not None and options.agent == "auto" and not (options.llm_reviewers or options.llm_abstention):
        print(f"reprobot: {reason}; --agent auto uses the classic agent", file=sys.stderr)
        return dataclasses.replace(options, agent="classic"), None
    return options, reason


@dataclass
class _CliJob:
    """One `reprobot fix|reproduce` run: what it runs, where it publishes, its store rows and its branch."""

    args: argparse.Namespace
    settings: Settings
    forge: LocalForge
    issue: LocalIssue
    request: JobRequest
    store: Store
    queue: Queue
    id: int
    issue_id: int
    worker_id: str
    branch: str
    #: The fix's branch is being created: an interrupted run deletes it again.
    pushed: bool = False

    @classmethod
    async def start(
        cls,
        args: argparse.Namespace,
        settings: Settings,
        forge: LocalForge,
        issue: LocalIssue,
        request: JobRequest,
        store: Store,
    ) -> _CliJob:
        """Record the issue and take a job for it inline: the CLI is its own worker."""
        queue = Queue(store)
        worker_id = f"cli-{os.getpid()}"
        stored_issue = await asyncio.to_thread(
            store.publications.upsert_issue,
            "local",
            str(request.repo.resolve()),
            issue.slug,
            title=issue.title,
            body=issue.body,
        )
        payload = {"issue": str(args.issue)}
        job = await asyncio.to_thread(queue.start_inline, request.mode, stored_issue.id, payload, worker_id, _CLI_LEASE)
        branch = f"reprobot/issue-{issue.slug}"
        return cls(args, settings, forge, issue, request, store, queue, job.id, stored_issue.id, worker_id, branch)

    async def fail(self, reason: str) -> None:
        """Finish the job as failed, for `reason`."""
        result = {"status": "error", "reasons": [reason]}
        await asyncio.to_thread(self.queue.finish, self.id, self.worker_id, result, failed=True)


async def _run_and_publish(job: _CliJob) -> tuple[JobOutcome, dict[str, Any], str | None, str | None]:
    """Run the pipeline under a progress display, publish to the local forge, write the run folder.

    Returns the outcome, the result document, and the PR body and comment that were published (or None).
    """
    args, request, forge = job.args, job.request, job.forge
    with StageProgress(quiet=args.json) as progress:
        outcome = await run_job(request, job.settings, job.store, job.id, progress=progress.stage, tick=progress.tick)
        result = outcome.to_json()
        push = outcome.status == "fixed" and outcome.brt is not None and not getattr(args, "no_branch", False)
        if push:
            progress.stage("publish", "creating branch")
            job.pushed = True
        rec = Recorder(job.store, job.issue_id, job.id)
        publish_started = time.monotonic()
        published = await _publish(forge, rec, outcome, request, job.settings, job.branch, push)
        result["stage_seconds"]["publish"] = round(time.monotonic() - publish_started, 3)
        result["branch"] = published.get("branch")
        result["record"] = with_publication(job_record(outcome), published, result["stage_seconds"]["publish"])
        pr_body = forge.changes.get(job.branch)
        comment = None
        # The run folder's comment.md is the reproduction or the suggestion; other statuses stay in the store.
        if outcome.status in ("suggested", "reproduced") and outcome.brt is not None:
            comment = forge.statuses.get(request.mode)
            result["brt"]["source"] = outcome.brt.source
        out_dir = args.out or run_folder(job.settings.data_dir / "runs", job.issue.slug, job.id)
        LocalForge.write_outputs(out_dir, pr_body=pr_body, comment=comment, result=result)
        result["out_dir"] = str(out_dir)
    return outcome, result, pr_body, comment


def print_text_result(
    result: dict[str, Any], pr_body: str | None, comment: str | None, file: TextIO | None = None
) -> None:
    """Print the result as text (stdout by default), never wrapped.

    Sent to a pipe or a file, rich would break lines at 80 columns, which corrupts the markdown of the PR
    body; emoji codes and square brackets in it stay as written too.
    """
    out = Console(file=file, soft_wrap=True, emoji=False, highlight=False)
    out.print(f"[bold]status:[/bold] {result['status']}")
    for reason in result.get("reasons") or []:
        out.print(f"  - {reason}", markup=False)
    for note in result.get("notes") or []:
        out.print(f"  note: {note}", markup=False)
    if result.get("branch"):
        out.print(f"[bold]branch:[/bold] {escape(str(result['branch']))}")
    out.print(f"[bold]output:[/bold] {escape(str(result.get('out_dir')))}")
    if pr_body:
        out.print(pr_body, markup=False)
    if comment:
        out.print(comment, markup=False)

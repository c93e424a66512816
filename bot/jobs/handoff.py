"""Forge jobs that hand a reproduction to a self-hosted runner, and publish what the runner found.

`/reproduce` on a repo whose policy names a runner target queues a labelled `reproduce.app` job; the runner's
finish queues a `<forge>.app_result` job, published here by editing the same status comment.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.forges.base import Forge, PermanentJobError
from bot.jobs.queue import Queue
from bot.jobs.recorder import JobDeps, Recorder
from bot.pipeline.record import RECORD_VERSION
from bot.render.app_report import artifact_url, render_app_reproduction
from bot.render.report import (
    job_page_url,
    render_job_link,
    render_policy_error,
    render_progress,
)
from bot.settings.policy import POLICY_PATH
from bot.settings.policy_model import RunnerTarget
from bot.store import JobRow
from bot.store.tenants import tenant_of
from sandboxes.text import clean_text, clean_title

__all__ = ["FORGE_FIELDS", "publish_app_result", "publish_fields", "queue_for_runner"]

#: The forge job's fields a runner job carries back to publish its result on the issue (bot/selfhosted/api.py):
#: a GitHub issue's (installation, repo, number) and a Jira issue's (site, project, components, key).
FORGE_FIELDS = (
    "installation_id",
    "repo",
    "number",
    "default_branch",
    "comment_id",
    "site",
    "project",
    "components",
    "key",
)


def publish_fields(job: JobRow) -> dict[str, Any]:
    """What the runner job carries back: the issue's fields, the result job's kind and the issue's concurrency key."""
    publish = {k: job.payload[k] for k in FORGE_FIELDS if k in job.payload}
    return publish | {"kind": f"{job.kind.split('.', 1)[0]}.app_result", "concurrency_key": job.concurrency_key}


async def queue_for_runner(
    job: JobRow, forge: Forge, rec: Recorder, deps: JobDeps, runner: RunnerTarget
) -> dict[str, Any]:
    """The policy names a runner target: queue a `reproduce.app` job for a runner with its labels.

    The runner sees only the task (report, app address); its finish queues the `<forge>.app_result` job that
    publishes on this issue with the payload's `FORGE_FIELDS` (bot/selfhosted/api.py)."""
    labels = sorted(runner.labels)
    if not runner.app_url:
        body = render_policy_error(
            forge.ref, POLICY_PATH, "reproduce.runner.app_url", "a runner target needs the app's URL"
        )
        await rec.status(forge, "reproduce", body)
        return {"status": "policy_error", "key": "reproduce.runner.app_url"}
    issue = await forge.get_issue()
    text = clean_text(f"# {clean_title(str(issue.get('title') or ''), 256)}\n\n{issue.get('body') or ''}")
    task = {"issue_text": text, "app_url": runner.app_url, "driver": runner.driver, "issue_ref": forge.ref}
    publish = publish_fields(job)
    runner_job = await asyncio.to_thread(
        Queue(deps.store).enqueue,
        "reproduce.app",
        job.issue_id,
        {"task": task, "publish": publish},
        concurrency_key=None,
        max_attempts=deps.settings.runner_max_attempts,
        # A retried forge job finds the runner job it queued instead of queueing another.
        dedupe_key=f"runner-for-job:{job.id}",
        labels=labels,
        # Only a runner registered for this installation or site (or the whole deployment) takes it.
        tenant=tenant_of(job.payload),
    )
    stage = f"waiting for a runner with labels {', '.join(labels)} (job {runner_job})"
    await rec.status(forge, "reproduce", render_progress(forge.ref, stage, []))
    return {"status": "queued_for_runner", "runner_job": runner_job, "labels": labels}


async def publish_app_result(job: JobRow, forge: Forge, rec: Recorder, deps: JobDeps) -> dict[str, Any]:
    """Post the reproduction comment of a finished runner job (edited in place: one comment per issue)."""
    try:
        runner_job_id = int(job.payload["runner_job"])
    except (KeyError, TypeError, ValueError):
        raise PermanentJobError(f"job {job.id} names no runner job") from None
    runner_job = await asyncio.to_thread(deps.store.jobs.get_job, runner_job_id)
    if runner_job is None:
        raise PermanentJobError(f"runner job {runner_job_id} does not exist")
    if runner_job.status == "done" and isinstance(runner_job.result, dict):
        result: dict[str, Any] = runner_job.result
    else:
        reason = runner_job.last_error or f"the runner job ended {runner_job.status}"
        result = {"status": "error", "reasons": [reason.splitlines()[0][:300]]}
    artifacts = await asyncio.to_thread(deps.store.runners.artifacts, runner_job_id)
    urls = {a.name: artifact_url(deps.settings.public_url, a.sha256, a.name) for a in artifacts}
    link = render_job_link(job_page_url(deps.settings.public_url, job.id))
    await rec.status(forge, "reproduce", render_app_reproduction(result, urls) + link)
    comment_id = job.payload.get("comment_id")
    if comment_id:
        await forge.react(comment_id, "rocket" if result.get("status") == "reproduced" else "confused")
    status = str(result.get("status"))
    return {"status": status, "runner_job": runner_job_id, "record": _runner_record(result, runner_job_id)}


def _runner_record(result: dict[str, Any], runner_job_id: int) -> dict[str, Any]:
    """The job record of a runner's reproduction (the same keys as a pipeline job's where they apply)."""
    seconds = result.get("seconds")
    return {
        "version": RECORD_VERSION,
        "status": str(result.get("status")),
        "reasons": [str(r) for r in result.get("reasons") or []],
        "runner_job": runner_job_id,
        "reproduction": {"steps": len(result.get("steps") or []), "oracle": result.get("oracle")},
        "stage_seconds": {"runner": float(seconds)} if isinstance(seconds, int | float) else {},
        "seconds": float(seconds) if isinstance(seconds, int | float) else 0.0,
        "publication": {"status": str(result.get("status")), "comment": "reproduce"},
    }

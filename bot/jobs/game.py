"""Game repos reproduced on game runners (issue 19): the `reproduce.game` job a game repo's policy asks for.

The runner gets the report and the repository packed by the bot (a tar.gz without `.git`), never a token.
"""

from __future__ import annotations

import asyncio
import base64
import io
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Protocol

from bot.forges.base import Forge, PermanentJobError
from bot.jobs.handoff import publish_fields
from bot.jobs.queue import Queue
from bot.render.report import render_policy_error, render_progress
from bot.settings.config import Settings
from bot.settings.policy import POLICY_PATH
from bot.settings.policy_model import RunnerTarget
from bot.store import JobRow, Store
from bot.store.tenants import tenant_of
from sandboxes.text import clean_text, clean_title

#: The most a game repo may weigh, packed, to travel in a runner task (mods and games are small).
GAME_REPO_MAX_BYTES = 8 * 1024 * 1024
GAMES = ("minetest", "minecraft")


class _Recorder(Protocol):
    async def status(self, forge: Forge, kind: str, body: str) -> Any: ...


class _Deps(Protocol):
    store: Store
    settings: Settings


def pack_repo(folder: Path) -> bytes:
    """A tar.gz of a checkout without its .git and symlinks: what the runner unpacks into a world."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if rel.parts[0] == ".git" or path.is_symlink():
                continue
            tar.add(path, arcname=str(rel), recursive=False)
    return buf.getvalue()


async def queue_game_job(
    job: JobRow, forge: Forge, rec: _Recorder, deps: _Deps, runner: RunnerTarget
) -> dict[str, Any]:
    """Queue a `reproduce.game` job (the report and the packed repo) for a runner with the policy's labels."""
    store, settings = deps.store, deps.settings
    labels = sorted(runner.labels)
    publish = publish_fields(job)

    async def status(body: str) -> None:
        await rec.status(forge, "reproduce", body)

    game = str(runner.game)
    if game not in GAMES:
        await status(render_policy_error(forge.ref, POLICY_PATH, "reproduce.runner.game", f"one of {', '.join(GAMES)}"))
        return {"status": "policy_error", "key": "reproduce.runner.game"}
    issue = await forge.get_issue()
    text = clean_text(f"# {clean_title(str(issue.get('title') or ''), 256)}\n\n{issue.get('body') or ''}")
    with tempfile.TemporaryDirectory(prefix="reprobot-game-") as tmp:
        checkout = await forge.clone(Path(tmp) / "repo", await forge.default_branch())
        packed = await asyncio.to_thread(pack_repo, checkout)
    if len(packed) > GAME_REPO_MAX_BYTES:
        raise PermanentJobError(f"the repo packs to {len(packed)} bytes, over {GAME_REPO_MAX_BYTES} for a game runner")
    task = {
        "issue_text": text,
        "game": game,
        "repo_name": str(job.payload.get("repo") or "repo").rsplit("/", 1)[-1],
        "repo_archive": base64.b64encode(packed).decode(),
        "issue_ref": forge.ref,
    }
    runner_job = await asyncio.to_thread(
        Queue(store).enqueue,
        "reproduce.game",
        job.issue_id,
        {"task": task, "publish": publish},
        concurrency_key=None,
        max_attempts=settings.runner_max_attempts,
        # A retried forge job finds the runner job it queued instead of queueing another.
        dedupe_key=f"runner-for-job:{job.id}",
        labels=labels,
        # Only a runner registered for this installation or site (or the whole deployment) takes it.
        tenant=tenant_of(job.payload),
    )
    await status(
        render_progress(
            forge.ref, f"waiting for a {game} runner with labels {', '.join(labels)} (job {runner_job})", []
        )
    )
    return {"status": "queued_for_runner", "runner_job": runner_job, "labels": labels}

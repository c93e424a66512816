"""The runner protocol's HTTP routes (documented in docs/runners.md, "Runner protocol").

Self-hosted runners connect outbound only. They register with the deployment's registration token and get their
own token (stored hashed), long-poll for a job whose labels they all have, renew its lease, send their log in
numbered chunks and their artifacts by content, and finish it once. A runner sees and touches only the jobs it
holds. This module parses, authenticates and answers; the state lives in bot.store.runners and bot.jobs.queue.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import mimetypes
import random
import re
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.jobs.queue import LeaseLost, Queue
from bot.render.report import artifact_url
from bot.settings.config import Settings
from bot.store import JobRow, Store, forbid_store_calls_on_loop, iso
from bot.store.runners import RunnerRow, runner_owner

__all__ = ["RunnerApi", "add_runner_routes", "artifact_path"]

log = logging.getLogger(__name__)

_LABEL = re.compile(r"^[A-Za-z0-9._:+-]{1,64}$")
_ARTIFACT_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: Content types an artifact may be served with; anything else is a download.
_SERVED_TYPES = ("image/png", "image/jpeg", "image/webp", "application/json", "text/plain")
MAX_LABELS = 32
#: Largest JSON body of a protocol call (finish carries the result; logs carry one chunk).
MAX_JSON_BYTES = 2 * 1024 * 1024


def artifact_path(data_dir: Path, sha256: str) -> Path:
    """Where the bytes with this SHA-256 are stored: content-addressed under the data dir."""
    return data_dir / "artifacts" / sha256[:2] / sha256


def _reply(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"message": message, **extra}, status=status)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    if request.content_length is not None and request.content_length > MAX_JSON_BYTES:
        return _reply(413, f"body larger than {MAX_JSON_BYTES} bytes")
    try:
        raw = await request.content.read(MAX_JSON_BYTES + 1)
        if len(raw) > MAX_JSON_BYTES:
            return _reply(413, f"body larger than {MAX_JSON_BYTES} bytes")
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        return _reply(400, f"malformed JSON body: {exc}"[:300])
    if not isinstance(data, dict):
        return _reply(400, "the body must be a JSON object")
    return data


def _labels(value: Any) -> list[str] | str:
    """The labels of a registration, or the problem with them."""
    if not isinstance(value, list) or not value or len(value) > MAX_LABELS:
        return f"labels: expected a list of 1 to {MAX_LABELS} strings"
    bad = [v for v in value if not isinstance(v, str) or not _LABEL.match(v)]
    if bad:
        return f"labels: {bad[0]!r} is not a label (letters, digits and . _ : + -, at most 64)"
    return sorted(set(value))


def job_view(job: JobRow) -> dict[str, Any]:
    """What a runner is shown of a job it holds: the task, never the forge details of where it came from."""
    return {
        "id": job.id,
        "kind": job.kind,
        "attempt": job.attempts,
        "labels": job.labels or [],
        "status": job.status,
        "task": job.payload.get("task", {}),
        "locked_until": job.lease_expires_at,
    }


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RunnerApi:
    """The protocol's handlers over one store (read per request, since the app opens it at startup)."""

    def __init__(self, settings: Settings, store_of: Callable[[web.Application], Store]) -> None:
        """`store_of(app)` returns the app's open store."""
        self.settings = settings
        self.store_of = store_of

    def intervals(self) -> dict[str, float]:
        """The timings the server sets for its runners (in every register and heartbeat answer)."""
        s = self.settings
        return {
            "heartbeat": s.runner_heartbeat,
            "lease": s.runner_lease,
            "renew": s.runner_lease / 3,
            "claim_wait": s.runner_claim_wait,
            "cancel_grace": s.runner_cancel_grace,
        }

    def routes(self) -> list[web.RouteDef]:
        """Every route of the protocol."""
        return [
            web.post("/api/runners/register", _marked(self.register)),
            web.get("/api/runners", _marked(self.list_runners)),
            web.post("/api/runner/heartbeat", _marked(self.heartbeat)),
            web.delete("/api/runner", _marked(self.deregister)),
            web.post("/api/runner/claim", _marked(self.claim)),
            web.get("/api/runner/jobs/{job_id:\\d+}", _marked(self.show_job)),
            web.post("/api/runner/jobs/{job_id:\\d+}/renew", _marked(self.renew)),
            web.post("/api/runner/jobs/{job_id:\\d+}/logs", _marked(self.logs)),
            web.put("/api/runner/jobs/{job_id:\\d+}/artifacts/{name}", _marked(self.upload)),
            web.post("/api/runner/jobs/{job_id:\\d+}/finish", _marked(self.finish)),
            web.get("/artifacts/{sha256}/{name}", _marked(self.artifact)),
        ]

    # -- authentication -----------------------------------------------------------------------------------

    def _admin(self, request: web.Request) -> bool:
        expected = self.settings.runner_registration_token
        given = _bearer(request)
        return bool(expected and given and hmac.compare_digest(given.encode(), expected.encode()))

    async def _runner(self, request: web.Request) -> RunnerRow | web.Response:
        token = _bearer(request)
        if not token:
            return _reply(401, "missing runner token (Authorization: Bearer ...)")
        runner = await asyncio.to_thread(self.store_of(request.app).runners.runner_for_token, token)
        if runner is None:
            return _reply(401, "unknown runner token (the runner was removed or never registered)")
        return runner

    async def _held(self, request: web.Request) -> tuple[RunnerRow, JobRow] | web.Response:
        """The authenticated runner and the job of the URL, which it must hold (else 404: not even its status)."""
        runner = await self._runner(request)
        if isinstance(runner, web.Response):
            return runner
        job_id = int(request.match_info["job_id"])
        job = await asyncio.to_thread(self.store_of(request.app).jobs.get_job, job_id)
        if job is None or job.lease_owner != runner_owner(runner.id):
            return _reply(404, f"job {job_id} is not held by this runner")
        return runner, job

    # -- registration and liveness ------------------------------------------------------------------------

    async def register(self, request: web.Request) -> web.Response:
        """POST /api/runners/register: registration token (Bearer) → this runner's own token and the intervals."""
        if not self.settings.runner_registration_token:
            return _reply(401, "runner registration is disabled (REPROBOT_RUNNER_REGISTRATION_TOKEN is not set)")
        if not self._admin(request):
            return _reply(401, "bad registration token")
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        labels = _labels(body.get("labels"))
        if isinstance(labels, str):
            return _reply(400, labels)
        name = str(body.get("name") or "runner")[:100]
        version = str(body.get("version") or "")[:50]
        ephemeral = bool(body.get("ephemeral", False))
        token = "rbr_" + secrets.token_urlsafe(32)
        store = self.store_of(request.app)
        runner_id = await asyncio.to_thread(store.runners.add_runner, name, token, labels, version, ephemeral=ephemeral)
        log.info("runner %s (%s) registered with labels %s, version %s", runner_id, name, labels, version)
        runner = {"id": runner_id, "name": name, "labels": labels, "ephemeral": ephemeral}
        return web.json_response({"runner": runner, "token": token, "intervals": self.intervals()}, status=201)

    async def list_runners(self, request: web.Request) -> web.Response:
        """GET /api/runners (registration token): every runner with its last-seen time; stale ones pruned first."""
        if not self._admin(request):
            return _reply(401, "bad registration token")
        store = self.store_of(request.app)
        cutoff = store.clock() - self.settings.runner_stale
        pruned = await asyncio.to_thread(store.runners.prune_stale, cutoff)
        runners = await asyncio.to_thread(store.runners.list_runners)
        rows = [
            {
                "id": r.id,
                "name": r.name,
                "labels": r.labels,
                "version": r.version,
                "ephemeral": r.ephemeral,
                "jobs_taken": r.jobs_taken,
                "last_seen_at": r.last_seen_at,
            }
            for r in runners
        ]
        return web.json_response({"runners": rows, "pruned": pruned})

    async def heartbeat(self, request: web.Request) -> web.Response:
        """POST /api/runner/heartbeat: the runner is alive (jobs' leases are renewed separately)."""
        runner = await self._runner(request)
        if isinstance(runner, web.Response):
            return runner
        await asyncio.to_thread(self.store_of(request.app).runners.touch, runner.id)
        return web.json_response({"intervals": self.intervals()})

    async def deregister(self, request: web.Request) -> web.Response:
        """DELETE /api/runner: forget this runner; its token stops working."""
        runner = await self._runner(request)
        if isinstance(runner, web.Response):
            return runner
        await asyncio.to_thread(self.store_of(request.app).runners.remove_runner, runner.id)
        return _reply(200, "removed")

    # -- jobs -----------------------------------------------------------------------------------------------

    async def claim(self, request: web.Request) -> web.Response:
        """POST /api/runner/claim?wait=S: long poll (at most the server's claim_wait) → 200 with a lease, or 204."""
        runner = await self._runner(request)
        if isinstance(runner, web.Response):
            return runner
        if runner.ephemeral and runner.jobs_taken >= 1:
            return _reply(409, "this ephemeral runner already took its one job")
        try:
            wait = float(request.query.get("wait", self.settings.runner_claim_wait))
        except ValueError:
            return _reply(400, "wait: expected a number of seconds")
        wait = max(0.0, min(wait, self.settings.runner_claim_wait))
        store = self.store_of(request.app)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            job = await asyncio.to_thread(
                store.runners.claim_for_runner, runner, now=store.clock(), lease_seconds=self.settings.runner_lease
            )
            if job is not None:
                log.info("job %s (%s, attempt %s) claimed by runner %s", job.id, job.kind, job.attempts, runner.id)
                lease = {"locked_until": job.lease_expires_at, "seconds": self.settings.runner_lease}
                return web.json_response({"job": job_view(job), "lease": lease})
            remaining = deadline - loop.time()
            if remaining <= 0:
                return web.Response(status=204)
            # Jitter spreads the looks of many waiting runners over the poll interval.
            await asyncio.sleep(min(remaining, self.settings.runner_claim_poll * random.uniform(0.8, 1.2)))

    async def show_job(self, request: web.Request) -> web.Response:
        """GET /api/runner/jobs/{id}: the job, to the runner holding it only."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        return web.json_response({"job": job_view(held[1])})

    async def renew(self, request: web.Request) -> web.Response:
        """POST /api/runner/jobs/{id}/renew: extend the lease; the answer carries cancellation."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        runner, job = held
        store = self.store_of(request.app)
        await asyncio.to_thread(store.runners.touch, runner.id)
        if job.status == "cancelled":
            return web.json_response({"cancel": True, "grace": self.settings.runner_cancel_grace})
        if job.status != "running":
            return _reply(409, f"job {job.id} is already {job.status}")
        queue = Queue(store)
        try:
            await asyncio.to_thread(queue.heartbeat, job.id, runner_owner(runner.id), self.settings.runner_lease)
        except LeaseLost:
            return _reply(404, f"job {job.id} is not held by this runner")
        until = iso(store.clock() + self.settings.runner_lease)
        return web.json_response({"cancel": False, "locked_until": until})

    async def logs(self, request: web.Request) -> web.Response:
        """POST /api/runner/jobs/{id}/logs {"seq": n, "text": ...}: one chunk; a resent chunk is ignored."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        _, job = held
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        seq, text = body.get("seq"), body.get("text")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or not isinstance(text, str):
            return _reply(400, 'expected {"seq": a non-negative integer, "text": a string}')
        stored = await asyncio.to_thread(
            self.store_of(request.app).runners.add_log_chunk,
            job.id,
            job.attempts,
            seq,
            text,
            max_bytes=self.settings.runner_log_max_bytes,
        )
        if not stored:
            return _reply(413, f"the job's log is past {self.settings.runner_log_max_bytes} bytes; chunk dropped")
        return _reply(200, "stored", seq=seq)

    async def upload(self, request: web.Request) -> web.Response:
        """PUT /api/runner/jobs/{id}/artifacts/{name}: the raw bytes, size-capped, stored by their SHA-256."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        _, job = held
        name = request.match_info["name"]
        if not _ARTIFACT_NAME.match(name):
            return _reply(400, "artifact name: letters, digits and . _ -, at most 100, not starting with a dot")
        cap = self.settings.runner_artifact_max_bytes
        if request.content_length is not None and request.content_length > cap:
            return _reply(413, f"artifact larger than {cap} bytes")
        data = await request.content.read(cap + 1)
        if len(data) > cap:
            return _reply(413, f"artifact larger than {cap} bytes")
        sha = hashlib.sha256(data).hexdigest()
        await asyncio.to_thread(_write_blob, artifact_path(self.settings.data_dir, sha), data)
        runners = self.store_of(request.app).runners
        if runners.shares_blobs:  # another machine's web process may serve the download
            await asyncio.to_thread(runners.put_blob, sha, data)
        await asyncio.to_thread(runners.add_artifact, job.id, name, sha, len(data))
        return web.json_response(
            {"name": name, "sha256": sha, "size": len(data), "url": artifact_url(self.settings.public_url, sha, name)}
        )

    async def finish(self, request: web.Request) -> web.Response:
        """POST /api/runner/jobs/{id}/finish {"status": "done"|"failed", "result", "error"}; idempotent."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        runner, job = held
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        status = body.get("status")
        if status not in ("done", "failed"):
            return _reply(400, 'status: expected "done" or "failed"')
        store = self.store_of(request.app)
        if job.status == "cancelled":
            return _reply(409, f"job {job.id} was cancelled; its result is not kept")
        if job.status == "running":
            after = await asyncio.to_thread(self._record_finish, store, runner, job, status, body)
            if after is None:
                return _reply(404, f"job {job.id} is not held by this runner")
            job = after
        # A repeated finish (the answer to the first was lost) lands here too: same answer, nothing twice.
        if job.status in ("done", "dead"):
            await asyncio.to_thread(_queue_follow_up, store, job)
        if runner.ephemeral:
            await asyncio.to_thread(store.runners.remove_runner, runner.id)
        log.info("job %s finished by runner %s: %s", job.id, runner.id, job.status)
        return _reply(200, "finished", job_status=job.status)

    def _record_finish(
        self, store: Store, runner: RunnerRow, job: JobRow, status: str, body: dict[str, Any]
    ) -> JobRow | None:
        queue = Queue(store)
        owner = runner_owner(runner.id)
        try:
            if status == "done":
                queue.finish(job.id, owner, body.get("result"))
            else:
                # The executor crashed without a result: another attempt may do better (another runner, too).
                queue.fail(job.id, owner, str(body.get("error") or "the runner reported a failure")[-4000:])
        except LeaseLost:
            return None
        return store.jobs.get_job(job.id)

    async def artifact(self, request: web.Request) -> web.StreamResponse:
        """GET /artifacts/{sha256}/{name}: an uploaded artifact (content-addressed, so its address is its proof)."""
        sha, name = request.match_info["sha256"], request.match_info["name"]
        if not _SHA256.match(sha) or not _ARTIFACT_NAME.match(name):
            return _reply(404, "no such artifact")
        path = artifact_path(self.settings.data_dir, sha)
        if not await asyncio.to_thread(path.is_file):
            runners = self.store_of(request.app).runners
            # Uploaded through another machine: its bytes are in the shared store; keep a local copy.
            blob = await asyncio.to_thread(runners.get_blob, sha) if runners.shares_blobs else None
            if blob is None or hashlib.sha256(blob).hexdigest() != sha:
                return _reply(404, "no such artifact")
            await asyncio.to_thread(_write_blob, path, blob)
        guessed = mimetypes.guess_type(name)[0] or ""
        if name.endswith(".log"):
            guessed = "text/plain"
        content_type = guessed if guessed in _SERVED_TYPES else "application/octet-stream"
        headers = {"Content-Type": content_type, "X-Content-Type-Options": "nosniff"}
        headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return web.FileResponse(path, headers=headers)


def _write_blob(path: Path, data: bytes) -> None:
    if path.is_file():  # content-addressed: the same bytes are already there
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    tmp.write_bytes(data)
    tmp.replace(path)


def _queue_follow_up(store: Store, job: JobRow) -> None:
    """Queue the job that publishes a runner job's result on its forge (once, whatever the retries)."""
    publish = job.payload.get("publish")
    if not isinstance(publish, dict) or not publish.get("kind"):
        return
    payload = {k: v for k, v in publish.items() if k not in ("kind", "concurrency_key")} | {"runner_job": job.id}
    Queue(store).enqueue(
        str(publish["kind"]),
        job.issue_id,
        payload,
        concurrency_key=publish.get("concurrency_key"),
        dedupe_key=f"runner-result:{job.id}",
    )


def _marked(handler: Handler) -> Handler:
    """Serving code reaches the store only through a thread (the store's loop guard checks it in tests)."""

    async def marked(request: web.Request) -> web.StreamResponse:
        with forbid_store_calls_on_loop():
            return await handler(request)

    return marked


def add_runner_routes(app: web.Application, settings: Settings, store_of: Callable[[web.Application], Store]) -> None:
    """Register the runner protocol on the bot's web app."""
    app.router.add_routes(RunnerApi(settings, store_of).routes())

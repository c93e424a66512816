"""The runner protocol's HTTP routes (documented in docs/runners.md, "Runner protocol").

Self-hosted runners connect outbound only. They register for a scope (tenants, or the whole deployment) with the
operator's registration token or a scoped registration token, and get their own token (stored hashed); they
long-poll for a job in their scope whose labels they all have, renew its lease, send their log in numbered chunks
and their artifacts by content, and finish it once. A runner sees and touches only the jobs it holds, and writes to
one only under the live lease of the attempt it claimed. The admin token (never the registration token) lists and
removes runners and issues scoped registration tokens. This module parses, authenticates and answers; the state
lives in bot.store.runners and bot.jobs.queue.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import math
import mimetypes
import random
import re
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.jobs.queue import LeaseLost, Queue
from bot.render.app_report import artifact_url
from bot.settings.config import Settings
from bot.store import JobRow, Store, forbid_store_calls_on_loop, iso
from bot.store.runners import Lease, RunnerGrant, RunnerRow, WriteOutcome, runner_owner
from bot.store.tenants import DEPLOYMENT, parse_scope, scope_within

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
#: The largest integer the store keeps (SQLite and PostgreSQL BIGINT): ids, attempts and sequence numbers above
#: it are refused with a 400 before they reach a query.
MAX_INT = 2**63 - 1


def artifact_path(data_dir: Path, sha256: str) -> Path:
    """Where the bytes with this SHA-256 are stored: content-addressed under the data dir."""
    return data_dir / "artifacts" / sha256[:2] / sha256


def _reply(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"message": message, **extra}, status=status)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


async def _read_capped(request: web.Request, cap: int) -> bytes | None:
    """The whole body, or None once it passes `cap` bytes.

    `content.read(n)` answers with what has arrived so far (often 64 KB), not with n bytes: reading once would
    keep a truncated artifact, or parse half a JSON body.
    """
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.read(64 * 1024):
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    if request.content_length is not None and request.content_length > MAX_JSON_BYTES:
        return _reply(413, f"body larger than {MAX_JSON_BYTES} bytes")
    try:
        raw = await _read_capped(request, MAX_JSON_BYTES)
        if raw is None:
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


def _whole(value: Any, what: str, low: int = 0) -> int | str:
    """A JSON integer from `low` to MAX_INT, or the problem with it (a bool, a float or a string is not one)."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_INT:
        return value
    return f"{what}: expected an integer from {low} to {MAX_INT}"


def _query_whole(request: web.Request, name: str, low: int = 0) -> int | web.Response | None:
    """An integer query parameter (None when absent), or a 400 saying what is wrong with it."""
    raw = request.query.get(name)
    if raw is None:
        return None
    # isdigit alone takes other scripts' digits; int() of a huge string would be slow: both refused up front.
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not low <= int(raw) <= MAX_INT:
        return _reply(400, f"{name}: expected an integer from {low} to {MAX_INT}")
    return int(raw)


def _path_id(request: web.Request, key: str) -> int | web.Response:
    """A numeric id of the URL (the route admits digits only), or a 400 when no row could have it."""
    raw = request.match_info[key]
    if len(raw) > 19 or int(raw) > MAX_INT:
        return _reply(400, f"{key}: expected an integer up to {MAX_INT}")
    return int(raw)


def _scope(value: Any) -> list[str] | str:
    """The scope of a registration or grant, or the problem with it."""
    if value is None:
        return (
            'scope: required: the tenants this runner serves (["github:<installation id>", "jira:<site URL>"]), '
            'or "deployment" for every job of the deployment (reprobot runner --scope)'
        )
    try:
        return parse_scope(value)
    except ValueError as exc:
        return f"scope: {exc}"


def runner_view(runner: RunnerRow) -> dict[str, Any]:
    """What the admin is shown of a runner (never its token, which is stored hashed only)."""
    fields = ("id", "name", "labels", "scope", "grant_id", "version", "ephemeral", "jobs_taken", "last_seen_at")
    return {f: getattr(runner, f) for f in fields}


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
            web.delete("/api/runners/{runner_id:\\d+}", _marked(self.remove_runner)),
            web.post("/api/runners/grants", _marked(self.add_grant)),
            web.delete("/api/runners/grants/{grant_id:\\d+}", _marked(self.revoke_grant)),
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

    def _admin(self, request: web.Request) -> web.Response | None:
        """None when the request carries the admin token, else the 401 that says why not."""
        expected = self.settings.runner_admin_token
        if not expected:
            return _reply(401, "runner administration is disabled (REPROBOT_RUNNER_ADMIN_TOKEN is not set)")
        given = _bearer(request)
        if given and hmac.compare_digest(given.encode(), expected.encode()):
            return None
        registration = self.settings.runner_registration_token
        if given and registration and hmac.compare_digest(given.encode(), registration.encode()):
            # Runner machines hold the registration token: it registers, it never administers.
            return _reply(401, "the registration token is not the admin token (REPROBOT_RUNNER_ADMIN_TOKEN)")
        return _reply(401, "bad admin token")

    async def _runner(self, request: web.Request) -> RunnerRow | web.Response:
        token = _bearer(request)
        if not token:
            return _reply(401, "missing runner token (Authorization: Bearer ...)")
        runner = await asyncio.to_thread(self.store_of(request.app).runners.runner_for_token, token)
        if runner is None:
            return _reply(401, "unknown runner token (the runner was removed or never registered)")
        if not runner.scope:
            # Registered before runner scopes (schema 10): it takes nothing until the operator names its scope.
            return _reply(401, f"runner {runner.id} was registered without a scope: register it again with one")
        return runner

    async def _held(self, request: web.Request) -> tuple[RunnerRow, JobRow] | web.Response:
        """The authenticated runner and the job of the URL, which it must hold (else 404: not even its status)."""
        runner = await self._runner(request)
        if isinstance(runner, web.Response):
            return runner
        job_id = _path_id(request, "job_id")
        if isinstance(job_id, web.Response):
            return job_id
        job = await asyncio.to_thread(self.store_of(request.app).jobs.get_job, job_id)
        if job is None or job.lease_owner != runner_owner(runner.id):
            return _reply(404, f"job {job_id} is not held by this runner")
        return runner, job

    @staticmethod
    def _attempt(request: web.Request) -> int | web.Response:
        """The attempt a write is for (`?attempt=N`, from the claim's answer): required."""
        attempt = _query_whole(request, "attempt", low=1)
        if attempt is None:
            return _reply(400, "attempt: required (?attempt=N, the job's attempt from the claim)")
        return attempt

    async def _lease(self, request: web.Request) -> tuple[RunnerRow, JobRow, Lease] | web.Response:
        """The runner, the job and the live lease of the attempt a write names; 409 when that lease is over."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        attempt = self._attempt(request)
        if isinstance(attempt, web.Response):
            return attempt
        runner, job = held
        now = self.store_of(request.app).clock()
        problem = _lease_problem(job, attempt, now)
        if problem:
            return _reply(409, problem)
        return runner, job, Lease(job.id, runner_owner(runner.id), attempt, now)

    # -- registration and liveness ------------------------------------------------------------------------

    async def _registrar(self, request: web.Request) -> RunnerGrant | web.Response | None:
        """Who registers: None for the operator's registration token, the grant of a scoped one, else a 401."""
        given = _bearer(request) or ""
        operator = self.settings.runner_registration_token
        if operator and given and hmac.compare_digest(given.encode(), operator.encode()):
            return None
        grant = await asyncio.to_thread(self.store_of(request.app).runners.grant_for_token, given) if given else None
        if grant is not None:
            return grant
        if not operator:
            return _reply(401, "bad registration token (REPROBOT_RUNNER_REGISTRATION_TOKEN is not set)")
        return _reply(401, "bad registration token")

    @staticmethod
    def _granted_scope(grant: RunnerGrant | None, asked: Any) -> list[str] | web.Response:
        """The scope a registration gets, or why not (400, or 403 past a scoped token's scope).

        The operator's token registers for the scope the request names, `deployment` only when named. A scoped
        registration token registers for its own scope, or a part of it the request names; never for more.
        """
        if grant is not None and asked is None:
            return grant.scope
        scope = _scope(asked)
        if isinstance(scope, str):
            return _reply(400, scope)
        if grant is not None and not scope_within(scope, grant.scope):
            return _reply(403, f"scope: this registration token is for {', '.join(grant.scope)} only")
        return scope

    async def register(self, request: web.Request) -> web.Response:
        """POST /api/runners/register: a registration token (Bearer) → this runner's own token and the intervals."""
        grant = await self._registrar(request)  # before the body: a stranger's body is not even read
        if isinstance(grant, web.Response):
            return grant
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        scope = self._granted_scope(grant, body.get("scope"))
        if isinstance(scope, web.Response):
            return scope
        labels = _labels(body.get("labels"))
        if isinstance(labels, str):
            return _reply(400, labels)
        ephemeral = body.get("ephemeral", False)
        if not isinstance(ephemeral, bool):
            return _reply(400, "ephemeral: expected true or false")
        name = str(body.get("name") or "runner")[:100]
        version = str(body.get("version") or "")[:50]
        token = "rbr_" + secrets.token_urlsafe(32)
        runner_id = await asyncio.to_thread(
            self.store_of(request.app).runners.add_runner,
            name,
            token,
            labels,
            version,
            ephemeral=ephemeral,
            scope=scope,
            grant_id=None if grant is None else grant.id,
        )
        log.info("runner %s (%s) registered for %s with labels %s, version %s", runner_id, name, scope, labels, version)
        runner = {"id": runner_id, "name": name, "labels": labels, "scope": scope, "ephemeral": ephemeral}
        return web.json_response({"runner": runner, "token": token, "intervals": self.intervals()}, status=201)

    async def list_runners(self, request: web.Request) -> web.Response:
        """GET /api/runners (admin token): every runner and scoped registration token; stale runners pruned first."""
        refused = self._admin(request)
        if refused is not None:
            return refused
        store = self.store_of(request.app)
        cutoff = store.clock() - self.settings.runner_stale
        pruned = await asyncio.to_thread(store.runners.prune_stale, cutoff)
        runners = await asyncio.to_thread(store.runners.list_runners)
        grants = await asyncio.to_thread(store.runners.list_grants)
        shown = [{"id": g.id, "scope": g.scope, "note": g.note, "created_at": g.created_at} for g in grants]
        return web.json_response({"runners": [runner_view(r) for r in runners], "grants": shown, "pruned": pruned})

    async def remove_runner(self, request: web.Request) -> web.Response:
        """DELETE /api/runners/{id} (admin token): forget a runner; its token stops working, its leases lapse."""
        refused = self._admin(request)
        if refused is not None:
            return refused
        runner_id = _path_id(request, "runner_id")
        if isinstance(runner_id, web.Response):
            return runner_id
        if not await asyncio.to_thread(self.store_of(request.app).runners.remove_runner, runner_id):
            return _reply(404, f"no runner {runner_id}")
        log.info("runner %s removed by the admin", runner_id)
        return _reply(200, "removed", id=runner_id)

    async def add_grant(self, request: web.Request) -> web.Response:
        """POST /api/runners/grants {"scope", "note"} (admin token) → a scoped registration token, shown once."""
        refused = self._admin(request)
        if refused is not None:
            return refused
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        scope = _scope(body.get("scope"))
        if isinstance(scope, str):
            return _reply(400, scope)
        if scope == [DEPLOYMENT]:
            # Whoever registers for the whole deployment is the operator: that is the registration token's role.
            return _reply(400, "scope: a scoped registration token names tenants (use the registration token)")
        note = str(body.get("note") or "")[:200]
        token = "rbg_" + secrets.token_urlsafe(32)
        grant_id = await asyncio.to_thread(self.store_of(request.app).runners.add_grant, token, scope, note)
        log.info("scoped registration token %s issued for %s", grant_id, scope)
        return web.json_response({"grant": {"id": grant_id, "scope": scope, "note": note}, "token": token}, status=201)

    async def revoke_grant(self, request: web.Request) -> web.Response:
        """DELETE /api/runners/grants/{id} (admin token): the token stops registering; its runners are removed."""
        refused = self._admin(request)
        if refused is not None:
            return refused
        grant_id = _path_id(request, "grant_id")
        if isinstance(grant_id, web.Response):
            return grant_id
        removed = await asyncio.to_thread(self.store_of(request.app).runners.revoke_grant, grant_id)
        if removed is None:
            return _reply(404, f"no scoped registration token {grant_id}")
        log.info("scoped registration token %s revoked; runners %s removed", grant_id, removed)
        return _reply(200, "revoked", id=grant_id, removed_runners=removed)

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
            wait = math.nan
        if not math.isfinite(wait) or wait < 0:
            return _reply(400, "wait: expected a number of seconds, 0 or more")
        wait = min(wait, self.settings.runner_claim_wait)
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
        """POST /api/runner/jobs/{id}/renew[?attempt=N]: extend the lease; the answer carries cancellation."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        runner, job = held
        attempt = _query_whole(request, "attempt", low=1)
        if isinstance(attempt, web.Response):
            return attempt
        store = self.store_of(request.app)
        await asyncio.to_thread(store.runners.touch, runner.id)
        if job.status == "cancelled":
            return web.json_response({"cancel": True, "grace": self.settings.runner_cancel_grace})
        if job.status != "running":
            return _reply(409, f"job {job.id} is already {job.status}")
        if attempt is not None and attempt != job.attempts:
            # The runner's attempt is over (it claimed the job again since): it no longer holds that one.
            return _reply(404, f"attempt {attempt} of job {job.id} is not held by this runner")
        queue = Queue(store)
        try:
            await asyncio.to_thread(queue.heartbeat, job.id, runner_owner(runner.id), self.settings.runner_lease)
        except LeaseLost:
            return _reply(404, f"job {job.id} is not held by this runner")
        until = iso(store.clock() + self.settings.runner_lease)
        return web.json_response({"cancel": False, "locked_until": until})

    async def logs(self, request: web.Request) -> web.Response:
        """POST /api/runner/jobs/{id}/logs?attempt=N {"seq": n, "text": ...}: one chunk; a resent one is ignored."""
        leased = await self._lease(request)
        if isinstance(leased, web.Response):
            return leased
        lease = leased[2]
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        seq, text = _whole(body.get("seq"), "seq"), body.get("text")
        if isinstance(seq, str) or not isinstance(text, str):
            return _reply(400, f'expected {{"seq": an integer from 0 to {MAX_INT}, "text": a string}}')
        outcome = await asyncio.to_thread(
            self.store_of(request.app).runners.add_log_chunk,
            lease,
            seq,
            text,
            max_bytes=self.settings.runner_log_max_bytes,
        )
        if outcome != "stored":
            return self._refused(lease, outcome)
        return _reply(200, "stored", seq=seq)

    def _refused(self, lease: Lease, outcome: WriteOutcome) -> web.Response:
        """The answer to a write the store refused: 409 for a lease that ended meanwhile, 413 past a quota."""
        s = self.settings
        if outcome == "log_full":
            return _reply(413, f"the job's log is past {s.runner_log_max_bytes} bytes; chunk dropped")
        if outcome == "artifact_count":
            return _reply(413, f"job {lease.job_id} already holds {s.runner_job_artifacts} artifacts, its quota")
        if outcome == "artifact_bytes":
            return _reply(413, f"job {lease.job_id}'s artifacts would pass {s.runner_job_artifact_bytes} bytes")
        return _reply(409, f"the lease of attempt {lease.attempt} on job {lease.job_id} is over")

    async def upload(self, request: web.Request) -> web.Response:
        """PUT /api/runner/jobs/{id}/artifacts/{name}?attempt=N: the raw bytes, within the job's quota, by SHA-256."""
        leased = await self._lease(request)
        if isinstance(leased, web.Response):
            return leased
        lease = leased[2]
        name = request.match_info["name"]
        if not _ARTIFACT_NAME.match(name):
            return _reply(400, "artifact name: letters, digits and . _ -, at most 100, not starting with a dot")
        cap = self.settings.runner_artifact_max_bytes
        if request.content_length is not None and request.content_length > cap:
            return _reply(413, f"artifact larger than {cap} bytes")
        data = await _read_capped(request, cap)
        if data is None:
            return _reply(413, f"artifact larger than {cap} bytes")
        sha = hashlib.sha256(data).hexdigest()
        runners = self.store_of(request.app).runners
        # Recorded first, under the lease and the quota in one transaction: refused bytes are never written.
        outcome = await asyncio.to_thread(
            runners.add_artifact,
            lease,
            name,
            sha,
            len(data),
            max_count=self.settings.runner_job_artifacts,
            max_bytes=self.settings.runner_job_artifact_bytes,
        )
        if outcome != "stored":
            return self._refused(lease, outcome)
        try:
            await asyncio.to_thread(_write_blob, artifact_path(self.settings.data_dir, sha), data)
        except OSError as exc:
            await asyncio.to_thread(runners.remove_artifact, lease.job_id, name, sha)
            log.error("job %s: artifact %s not stored: %s", lease.job_id, name, exc)
            return _reply(507, "the artifact could not be stored; try again later")
        if runners.shares_blobs:  # another machine's web process may serve the download
            await asyncio.to_thread(runners.put_blob, sha, data)
        return web.json_response(
            {"name": name, "sha256": sha, "size": len(data), "url": artifact_url(self.settings.public_url, sha, name)}
        )

    async def finish(self, request: web.Request) -> web.Response:
        """POST /api/runner/jobs/{id}/finish?attempt=N {"status": "done"|"failed", "result", "error"}; idempotent."""
        held = await self._held(request)
        if isinstance(held, web.Response):
            return held
        runner, job = held
        attempt = self._attempt(request)
        if isinstance(attempt, web.Response):
            return attempt
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        status = body.get("status")
        if status not in ("done", "failed"):
            return _reply(400, 'status: expected "done" or "failed"')
        store = self.store_of(request.app)
        # A repeated finish of the attempt that ended the job (the answer to the first was lost) writes nothing and
        # gets the same answer; anything else after the job's end, or a cancellation, gets 409.
        repeated = job.status in ("done", "dead", "queued") and job.attempts == attempt
        if not repeated:
            problem = _lease_problem(job, attempt, store.clock())
            if problem:
                return _reply(409, problem)
            after = await asyncio.to_thread(self._record_finish, store, runner, job, status, body)
            if after is None:
                return _reply(404, f"job {job.id} is not held by this runner")
            job = after
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


def _lease_problem(job: JobRow, attempt: int, now: float) -> str | None:
    """Why a write for `attempt` may not touch the job now (its answer is a 409), or None while its lease lives."""
    if job.status == "cancelled":
        return f"job {job.id} was cancelled: it takes no more writes"
    if job.status != "running":
        return f"job {job.id} is {job.status}: attempt {attempt} is over"
    if attempt != job.attempts:
        return f"attempt {attempt} of job {job.id} is over (the job is on attempt {job.attempts})"
    if job.lease_expires_at is None or job.lease_expires_at <= iso(now):
        return f"the lease of attempt {attempt} on job {job.id} lapsed; the job goes to another claim"
    return None


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

"""aiohttp app factory: GitHub webhooks (verify, dedupe, store, enqueue), health and readiness."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from gidgethub import BadRequest, ValidationFailure
from gidgethub.sansio import Event, validate_event

from bot.dashboard import setup_dashboard
from bot.intake.group_commit import GroupCommit
from bot.intake.http_metrics import add_metrics_route, counted
from bot.intake.supervisor import Supervisor
from bot.selfhosted.api import add_runner_routes
from bot.settings.config import Settings
from bot.settings.jira_mapping import JiraMapping, load_mapping
from bot.store import DeliveryRecord, DeliveryRejected, PlannedJob, Store, forbid_store_calls_on_loop
from handlers.github import Intake, PermissionLookup, router
from handlers.github_payload import PayloadError, validate_payload
from handlers.jira import JiraIntake
from handlers.jira import router as jira_router
from handlers.jira_payload import JIRA_DELIVERY_PREFIX, DeliveryRefused, precheck_delivery, read_delivery

log = logging.getLogger(__name__)

STORE: web.AppKey[Store] = web.AppKey("store", Store)
SETTINGS: web.AppKey[Settings] = web.AppKey("settings", Settings)
PERMISSION: web.AppKey[Any] = web.AppKey("permission", object)
COMMITS: web.AppKey[Any] = web.AppKey("commits", object)
BUDGET: web.AppKey[Any] = web.AppKey("budget", object)
SUPERVISOR: web.AppKey[Any] = web.AppKey("supervisor", object)
JIRA_MAPPING: web.AppKey[JiraMapping] = web.AppKey("jira_mapping", JiraMapping)


def _reply(status: int, message: str, **extra: Any) -> web.Response:
    # orjson: every acknowledgement has a JSON body, and json_response's json.dumps costs twice as much.
    data = {"message": message, **extra}
    try:
        body = orjson.dumps(data)
    except TypeError:  # a message quoting a lone surrogate (orjson's JSONEncodeError): json escapes it
        return web.json_response(data, status=status)
    return web.Response(body=body, status=status, content_type="application/json")


class BodyBudget:
    """Bytes of webhook bodies being read before their signature is checked, across all requests.

    A body must be read whole before its HMAC can be checked, so unauthenticated senders could otherwise make
    the server hold `connections x max body` bytes. Past the budget a request is refused with 503 at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        """Reserve `n` more bytes; False (nothing reserved) when that would pass the budget."""
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        """Return `n` reserved bytes."""
        self.used -= n


async def _read_body(request: web.Request, settings: Settings) -> bytes | web.Response:
    """The request body read in chunks, refused as soon as it passes the size limit or the shared budget."""
    limit = settings.webhook_max_bytes
    if request.content_length is not None and request.content_length > limit:
        return _reply(413, f"body larger than {limit} bytes")
    budget = request.app[BUDGET]
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > limit:
                return _reply(413, f"body larger than {limit} bytes")
            if not budget.take(len(chunk)):
                size -= len(chunk)
                return _reply(503, "too many webhook bodies are being received at once; retry later")
            chunks.append(chunk)
    finally:
        budget.give(size)  # the body is verified (or refused) right after: it no longer counts
    return b"".join(chunks)


def _decode(headers: Any, body: bytes, secret: str) -> Event:
    """gidgethub's `Event.from_http`, with a faster JSON decoder for what GitHub sends: a UTF-8 JSON body.

    The signature is checked by gidgethub first, whatever the body. A UTF-8 JSON body is then decoded by
    orjson (a third of `json`'s time on a 12 KB delivery, most of what the ack spends past aiohttp). Any other
    content type or charset, and any body orjson refuses (NaN, lone surrogates, nesting past 1024), goes to
    `from_http` unchanged, so every refusal and its message stay gidgethub's and json's.
    """
    content_type = headers.get("content-type", "")
    media, _, params = content_type.partition(";")
    if media.strip().lower() == "application/json" and params.strip().lower() in ("", "charset=utf-8") and body:
        signature = headers.get("x-hub-signature-256", headers.get("x-hub-signature"))
        if signature is None:
            raise ValidationFailure("signature is missing")
        validate_event(body, signature=signature, secret=secret)
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # from_http decodes it again and gives json's own error (or json's value) for it
        else:
            return Event(data, event=headers["x-github-event"], delivery_id=headers["x-github-delivery"])
    return Event.from_http(headers, body, secret=secret)


def _parse(headers: Any, body: bytes, secret: str) -> Event | web.Response:
    """Verify the signature and decode the body; any failure is the sender's: 401 or 400, never 5xx."""
    try:
        event = _decode(headers, body, secret)
    except ValidationFailure as exc:
        log.warning("delivery %s: rejected: %s", headers.get("x-github-delivery"), exc)
        return _reply(401, f"signature check failed: {exc}")
    except BadRequest as exc:  # gidgethub's answer to a bad content type or a body that is not JSON
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        return _reply(400, f"unsupported or malformed body: {exc}{cause}"[:500])
    except RecursionError:  # json's answer to deeply nested arrays or objects
        return _reply(400, "malformed JSON: nested too deeply")
    except (ValueError, LookupError) as exc:  # bytes that are not text in the declared charset, or no such charset
        return _reply(400, f"malformed body: {exc}"[:500])
    try:
        validate_payload(event.event, event.data)
    except PayloadError as exc:
        log.warning("delivery %s: %s payload refused: %s", event.delivery_id, event.event, exc)
        return _reply(400, f"payload of {event.event} refused: {exc}")
    return event


Handler = Callable[[web.Request], Awaitable[web.Response]]


def _off_loop_store(handler: Handler) -> Handler:
    """Mark a request handler as serving code, which reaches the store only via a thread.

    It runs on the loop that answers every other request; the store's loop guard checks it in the test suite.
    """

    @wraps(handler)
    async def marked(request: web.Request) -> web.Response:
        with forbid_store_calls_on_loop():
            return await handler(request)

    return marked


@_off_loop_store
async def webhook(request: web.Request) -> web.Response:
    """POST /webhooks/github: 401 bad signature, 413 too large, 400 malformed, 200 nothing/redelivery, 202 queued."""
    app = request.app  # a property that walks the match info: read once
    settings = app[SETTINGS]
    secret = settings.github_webhook_secret
    # Everything that can be refused without the body is refused before a byte of it is read.
    if not secret:
        return _reply(401, "REPROBOT_GITHUB_WEBHOOK_SECRET is not set: no delivery can be verified")
    headers = request.headers  # case-insensitive, as gidgethub expects of its lowercase lookups
    if not headers.get("x-github-event") or not headers.get("x-github-delivery"):
        return _reply(400, "missing X-GitHub-Event or X-GitHub-Delivery header")
    if not headers.get("x-hub-signature-256", headers.get("x-hub-signature")):
        return _reply(401, "signature check failed: signature is missing")
    body = await _read_body(request, settings)
    if isinstance(body, web.Response):
        return body
    event = _parse(headers, body, secret)
    if isinstance(event, web.Response):
        return event
    if event.event == "ping":
        return _reply(200, "pong", zen=event.data.get("zen"))
    intake = Intake(app[STORE], permission=app[PERMISSION], permission_timeout=settings.permission_timeout)
    intake.jira_mapping = app[JIRA_MAPPING]
    try:
        await router.dispatch(event, None, intake=intake)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a shape validate_payload does not know
        log.warning("delivery %s: %s payload lacks a field: %r", event.delivery_id, event.event, exc)
        return _reply(400, f"payload of {event.event} lacks a field or has a bad one: {exc!r}"[:500])
    return await _commit(request, (event.delivery_id, "github", event.event, intake.plan(), body))


async def _commit(
    request: web.Request, delivery: DeliveryRecord, nothing: str = "accepted; nothing to do"
) -> web.Response:
    """Write the delivery with its plan to the inbox, then answer: 202 queued, 200 nothing or a redelivery."""
    delivery_id, _source, event_name, plan, _body = delivery
    try:
        accepted = await request.app[COMMITS].accept(delivery)
    except DeliveryRejected as exc:
        return _reply(400, str(exc)[:500])
    if not accepted:
        # Handlers only plan, so running them again for a redelivery changed nothing. The read goes to a
        # thread: an in-process worker may hold the store's connection while it waits for a write lock.
        seen = await asyncio.to_thread(request.app[STORE].deliveries.get_delivery, delivery_id)
        if seen is not None and seen.planned and seen.promoted_at is None:
            return _reply(200, "redelivery: already acknowledged; its jobs wait for a worker", job_id=None)
        return _reply(200, "redelivery: already handled", job_id=seen.job_id if seen else None)
    kinds = [job.kind for job in plan if isinstance(job, PlannedJob)]
    if not kinds:
        return _reply(200, nothing)
    log.info("delivery %s: %s queued %s", delivery_id, event_name, kinds)
    return _reply(202, "queued", jobs=kinds)


# -- Jira (issue 15) ---------------------------------------------------------------------------------------------
@_off_loop_store
async def jira_webhook(request: web.Request) -> web.Response:
    """POST /webhooks/jira: 401 bad signature, 413 too large, 400 malformed, 200 nothing/redelivery, 202 queued."""
    settings = request.app[SETTINGS]
    secrets, unsigned = settings.jira_webhook_secrets, settings.jira_allow_unsigned
    try:
        identifier = precheck_delivery(request.headers, secrets, unsigned)  # refused before a byte is read
        body = await _read_body(request, settings)
        if isinstance(body, web.Response):
            return body
        data, jira = read_delivery(request.headers, body, secrets, unsigned)
    except DeliveryRefused as exc:
        log.warning("jira delivery %s: refused: %s", request.headers.get("x-atlassian-webhook-identifier"), exc)
        return _reply(exc.status, str(exc)[:500])
    delivery_id = JIRA_DELIVERY_PREFIX + identifier  # never meets a GitHub delivery id in the inbox
    intake = JiraIntake(request.app[JIRA_MAPPING], delivery_id)
    if jira is not None:
        await jira_router.dispatch(
            Event(data, event=jira.event, delivery_id=delivery_id), None, intake=intake, jira=jira
        )
    nothing = f"accepted; nothing to do ({intake.skipped})" if intake.skipped else "accepted; nothing to do"
    event_name = str(data.get("webhookEvent", ""))
    return await _commit(request, (delivery_id, "jira", event_name, intake.plan(), body), nothing)


async def healthz(request: web.Request) -> web.Response:
    """GET /healthz: the process is up."""
    return _reply(200, "ok")


@_off_loop_store
async def readyz(request: web.Request) -> web.Response:
    """GET /readyz: the store answers and accepts writes, and the in-process worker (if any) is running."""
    supervisor = request.app.get(SUPERVISOR)
    if supervisor is not None and not supervisor.up:
        return _reply(
            503,
            "the in-process worker is down; it is being restarted",
            deaths=supervisor.deaths,
            error=supervisor.last_error,
        )
    try:
        await asyncio.to_thread(request.app[STORE].ping_write)
    except Exception as exc:  # any store failure means not ready; report it rather than crash the probe
        return _reply(503, f"store not writable: {exc}")
    extra = {"worker_deaths": supervisor.deaths} if supervisor is not None else {}
    return _reply(200, "ready", **extra)


def _permission_lookup(settings: Settings) -> PermissionLookup | None:
    if not (settings.github_app_id and settings.github_private_key):
        return None
    from bot.forges.github import collaborator_permission
    from bot.forges.github_client import InstallationTokens, client

    tokens = InstallationTokens(settings)

    async def lookup(installation_id: int, repo: str, user: str) -> str:
        # The ack waits for this lookup: never aiohttp's default 300 s (GitHub gives up on an ack after 10 s).
        timeout = aiohttp.ClientTimeout(total=settings.permission_timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            token = await tokens.token(session, installation_id)
            return await collaborator_permission(client(session, settings, token), repo, user)

    return lookup


def make_app(
    settings: Settings, *, store: Store | None = None, workers: int = 0, host: str = "127.0.0.1"
) -> web.Application:
    """The web app. `workers` > 0 also runs that many job slots in this process (`serve --workers N`).

    `host` is the address the server listens on; /metrics listens there too when it has a port of its own.
    """
    if workers > 0 and not (settings.github_app_id and settings.github_private_key):
        from bot.forges.github_client import GitHubConfigError

        raise GitHubConfigError("--workers needs REPROBOT_GITHUB_APP_ID and REPROBOT_GITHUB_PRIVATE_KEY(_PATH)")
    app = web.Application(client_max_size=settings.webhook_max_bytes)
    own_store = store is None

    async def lifecycle(app: web.Application) -> Any:
        if own_store:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            app[STORE] = await asyncio.to_thread(Store.open, settings.store_target)
        else:
            assert store is not None
            app[STORE] = store
        app[COMMITS] = commits = GroupCommit(app[STORE], settings.ack_connections)
        checkpointer = app[STORE].wal_checkpointer()
        if checkpointer is not None:
            await asyncio.to_thread(checkpointer.start)
        task = None
        if workers > 0:
            from bot.worker import Worker

            worker = Worker(settings, app[STORE], concurrency=workers)
            supervisor = Supervisor("in-process worker", worker.run, delay=settings.worker_poll)
            app[SUPERVISOR] = supervisor
            task = asyncio.create_task(supervisor.run())
        yield
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await commits.close()
        if checkpointer is not None:
            await asyncio.to_thread(checkpointer.stop)
        if own_store:
            await asyncio.to_thread(app[STORE].close)

    app[SETTINGS] = settings
    app[PERMISSION] = _permission_lookup(settings)
    app[BUDGET] = BodyBudget(settings.webhook_inflight_bytes)
    # Read once at start: a bad mapping file stops the server with the key it names, not the first delivery.
    app[JIRA_MAPPING] = load_mapping(settings.jira_mapping)
    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/webhooks/github", counted("github", webhook, event_header="x-github-event"))
    app.router.add_post("/webhooks/jira", counted("jira", jira_webhook))
    add_metrics_route(app, STORE, settings, host)
    setup_dashboard(app, settings, STORE)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    add_runner_routes(app, settings, lambda a: a[STORE])
    return app

"""The web server's metrics: answers counted per webhook source, and `GET /metrics` (bot/metrics.py's exposition).

/metrics is served on the main port or, with REPROBOT_METRICS_PORT, only on a port of its own; with
REPROBOT_METRICS_TOKEN it asks for that token.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import wraps
from typing import Any

from aiohttp import web

from bot import metrics
from bot.settings.config import Settings
from bot.store import Store, forbid_store_calls_on_loop

__all__ = ["add_metrics_route", "counted", "metrics_handler"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.Response]]


def counted(source: str, handler: Handler, *, event_header: str | None = None) -> Handler:
    """Count the handler's answers by event and status, and time each acknowledgement (bot.metrics).

    `event_header` names the header that carries the event (GitHub's X-GitHub-Event); a source without one
    (Jira names the event in the body) counts its deliveries under "delivery".
    """

    # The labelled children, looked up once: labels() checks and formats its arguments on every call. The
    # keys are the series themselves, which the registry keeps anyway (events are bounded as below).
    answers: dict[tuple[str, int], Any] = {}
    ack_seconds = metrics.ACK_SECONDS.labels(source)

    @wraps(handler)
    async def counted_handler(request: web.Request) -> web.Response:
        started = time.perf_counter()
        response = await handler(request)
        # The event name is a label only once the signature was checked (a 2xx): unsigned senders could
        # otherwise grow the series without bound.
        if response.status >= 300:
            event = "unverified"
        elif event_header is None:
            event = "delivery"
        else:
            event = request.headers.get(event_header, "")
        event = event if event.replace("_", "").isalpha() and len(event) <= 40 else "other"
        key = (event, response.status)
        counter = answers.get(key)
        if counter is None:
            counter = answers[key] = metrics.DELIVERIES.labels(source, event, str(response.status))
        counter.inc()
        ack_seconds.observe(time.perf_counter() - started)
        return response

    return counted_handler


def _authorized(request: web.Request, token: str | None) -> bool:
    """True when no metrics token is set, or the request carries it as a bearer token (constant time)."""
    if not token:
        return True
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def metrics_handler(store_of: Callable[[], Store], token: str | None) -> Handler:
    """`GET /metrics`: this host's counters (every process in multiprocess mode) plus the store's gauges.

    With `token` (REPROBOT_METRICS_TOKEN), only a scraper that sends it as a bearer token reads them: the
    gauges name job kinds and count runners, which is not for anyone who can reach the web.
    """

    async def metrics_endpoint(request: web.Request) -> web.Response:
        if not _authorized(request, token):
            return web.Response(
                status=401, text="/metrics needs its bearer token\n", headers={"WWW-Authenticate": "Bearer"}
            )
        with forbid_store_calls_on_loop():
            store = store_of()
            now = time.time()
            stats, runners, inbox = await asyncio.to_thread(
                lambda: (
                    store.views.queue_stats(now=now),
                    store.views.runners(now=now),
                    store.views.inbox_stat(now=now),
                )
            )
            body, content_type = metrics.exposition(metrics.StoreSnapshot(stats, runners, inbox))
            return web.Response(body=body, headers={"Content-Type": content_type})

    return metrics_endpoint


def add_metrics_route(app: web.Application, store_key: web.AppKey[Store], settings: Settings, host: str) -> None:
    """Serve `GET /metrics` on the app's own port, or with REPROBOT_METRICS_PORT only on that port.

    A port of its own keeps /metrics off the port an Ingress or a published port routes to the world; the
    scraper reaches it inside the cluster. Either way REPROBOT_METRICS_TOKEN, when set, is asked for.
    """
    handler = metrics_handler(lambda: app[store_key], settings.metrics_token)
    if not settings.metrics_port:
        app.router.add_get("/metrics", handler)
        return

    async def metrics_site(app: web.Application) -> AsyncIterator[None]:
        # Its own small app and runner, started after the store is open (cleanup_ctx order) and stopped before.
        metrics_app = web.Application()
        metrics_app.router.add_get("/metrics", handler)
        runner = web.AppRunner(metrics_app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, settings.metrics_port).start()
            log.info("/metrics on %s:%d (not on the main port)", host, settings.metrics_port)
            yield
        finally:
            await runner.cleanup()

    app.cleanup_ctx.append(metrics_site)

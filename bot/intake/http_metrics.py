"""The web server's metrics: answers counted per webhook source, and `GET /metrics` (bot/metrics.py's exposition)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from aiohttp import web

from bot import metrics
from bot.store import Store, forbid_store_calls_on_loop

__all__ = ["add_metrics_route", "counted"]

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


def add_metrics_route(app: web.Application, store_key: web.AppKey[Store]) -> None:
    """Serve `GET /metrics`: this host's counters (every process in multiprocess mode) plus the store's gauges."""

    async def metrics_endpoint(request: web.Request) -> web.Response:
        with forbid_store_calls_on_loop():
            store = request.app[store_key]
            now = time.time()
            stats, runners = await asyncio.to_thread(
                lambda: (store.views.queue_stats(now=now), store.views.runners(now=now))
            )
            body, content_type = metrics.exposition(metrics.StoreSnapshot(stats, runners))
            return web.Response(body=body, headers={"Content-Type": content_type})

    app.router.add_get("/metrics", metrics_endpoint)

"""Keeps a long-running coroutine (the in-process worker of `serve --workers N`) alive: restart, log, report."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class Supervisor:
    """Runs `target(stop)` until `stop` is set; when it raises, logs why, waits, and runs it again.

    A task that dies on its own is otherwise silent: asyncio keeps its exception until someone awaits it, and
    the web server around it goes on answering. `up` is what `/readyz` reports; `deaths` counts the restarts.
    The wait before a restart doubles with each death in a row (from `delay` up to `max_delay`), and starts
    again from `delay` once a run has lasted `healthy_after` seconds.
    """

    def __init__(
        self,
        name: str,
        target: Callable[[asyncio.Event], Awaitable[None]],
        *,
        delay: float = 1.0,
        max_delay: float = 30.0,
        healthy_after: float = 60.0,
    ) -> None:
        self.name = name
        self.target = target
        self.delay = delay
        self.max_delay = max_delay
        self.healthy_after = healthy_after
        self.stop = asyncio.Event()
        self.up = False
        self.deaths = 0
        self.last_error: str | None = None

    async def run(self) -> None:
        """Run the target, restarting it after every failure, until `stop` is set or the task is cancelled."""
        in_a_row = 0
        while not self.stop.is_set():
            started = time.monotonic()
            self.up = True
            try:
                await self.target(self.stop)
            except Exception as exc:  # whatever killed it, the worker must come back: that is this class's job
                self.up = False
                self.deaths += 1
                self.last_error = "".join(traceback.format_exception_only(exc)).strip()
                in_a_row = 1 if time.monotonic() - started >= self.healthy_after else in_a_row + 1
                wait = min(self.max_delay, self.delay * 2 ** (in_a_row - 1))
                log.error(
                    "%s died (%d so far): %s; restarting in %gs",
                    self.name,
                    self.deaths,
                    self.last_error,
                    wait,
                    exc_info=exc,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), wait)
            else:
                return  # the target returned: it was asked to stop
            finally:
                self.up = False

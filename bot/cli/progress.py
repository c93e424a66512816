"""The progress of `reprobot fix|reproduce` on stderr, as it happens.

On a terminal: one line per finished stage above a status line whose elapsed time ticks while the stage runs
(rich redraws it from its own thread, so a stage that keeps the event loop busy still shows time passing).
Piped or redirected: one plain line per stage, written and flushed when the stage starts, no colour, no
spinner. With --json nothing is printed here: stdout carries the one document and stderr stays for errors.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.status import Status
from rich.text import Text

__all__ = ["StageProgress"]


class _StatusText:
    """The status line, rendered afresh on every refresh: the elapsed time is read then, not when it was set."""

    def __init__(self, progress: StageProgress) -> None:
        self.progress = progress

    def __rich__(self) -> Text:
        p = self.progress
        detail = f" {escape(p.detail)}" if p.detail else ""
        return Text.from_markup(f"[bold]{escape(p.current)}[/bold]{detail} [{p.elapsed():6.1f}s]")


class StageProgress:
    """Reports stages (`stage`) and in-stage details (`tick`) of one job; use it as a context manager."""

    def __init__(
        self,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`interactive` defaults to whether `stream` (stderr) is a terminal; `clock` is injectable for tests."""
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.clock = clock
        self.started = clock()
        self.current, self.detail = "starting", ""
        self._status: Status | None = None
        self._console: Console | None = None

    def elapsed(self) -> float:
        """Seconds since the job started."""
        return self.clock() - self.started

    def __enter__(self) -> StageProgress:
        if self.interactive and not self.quiet:
            # log_path=False: a stage line is the stage, not the line of this file that printed it.
            self._console = Console(file=self.stream, log_path=False, log_time=False)
            self._status = self._console.status(_StatusText(self))
            self._status.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.stop()

    def stage(self, stage: str, detail: str) -> None:
        """A stage begins (or a milestone within one): one line, printed now."""
        self.current, self.detail = stage, detail
        if self.quiet:
            return
        line = f"[{self.elapsed():6.1f}s] {stage} {detail}".strip()
        if self._console is not None:
            self._console.log(line, markup=False, highlight=False)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def tick(self, stage: str, detail: str) -> None:
        """What the running stage is doing now: shown on the status line only, never printed as a line."""
        self.current, self.detail = stage, detail

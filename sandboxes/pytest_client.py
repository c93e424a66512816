"""Host side of the pytest server (sandboxes/pytest_server.py): start it in a warm session, send runs, fall back.

Shared by the backends with warm sessions (bwrap, none: sandboxes/hostsandbox.py; docker). A run the server
cannot give exactly as an ordinary `python -m pytest` would is declined (None) and the caller runs it the
ordinary way: the server costs speed when it fails, never a result.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from sandboxes.base import TRUNCATION_MARKER, ExecResult, SandboxError
from sandboxes.process import exit_code
from sandboxes.session import SESSION_LOST, WarmSession

log = logging.getLogger(__name__)

#: The server enforces a run's timeout itself; the host waits this much longer before the agent kills it.
GRACE_SECONDS = 10.0
#: After this many servers died under one sandbox, its pytest runs stay ordinary.
MAX_DEATHS = 3

#: What a server was started for: the python, the environment (sorted) and the working directory inside.
ServerKey = tuple[str, tuple[tuple[str, str], ...], str]


@functools.lru_cache(maxsize=1)
def server_source() -> str:
    """The pytest server's code, handed to the environment's python with -c."""
    return Path(__file__).with_name("pytest_server.py").read_text()


class PytestServerClient:
    """One sandbox's pytest servers: at most one at a time in its warm session, restarted when the key changes."""

    def __init__(self, sweep: str) -> None:
        #: "ns": the session has its own pid namespace, leftovers of a run are swept from all of it; "group".
        self.sweep = sweep
        self.failed: set[ServerKey] = set()
        self.deaths = 0
        self._noted: set[str] = set()

    @property
    def usable(self) -> bool:
        """False once servers kept dying here: the remaining runs are ordinary."""
        return self.deaths < MAX_DEATHS

    async def run(
        self,
        session: WarmSession,
        python: str,
        args: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        output_bytes: int,
        oom_kills: Callable[[], int],
    ) -> ExecResult | None:
        """One `python -m pytest ARGS` through the session's server (started when needed); None: run it as usual.

        The caller holds the session (no other command runs in it meanwhile) and counts the result.
        """
        key: ServerKey = (python, tuple(sorted(env.items())), cwd)
        if key in self.failed or not self.usable:
            return None
        resident = session.resident
        if resident is not None and resident.tag != key:
            # Another environment or folder: that server's preload does not fit; start another.
            await resident.close()
            resident = None
        if resident is None:
            try:
                resident = await session.open([python, "-c", server_source(), self.sweep], env=env, cwd=cwd)
            except SandboxError as exc:
                self.failed.add(key)
                self._note("start", "pytest server unavailable, pytest runs start fresh interpreters: %s", exc)
                return None
            resident.tag = key
        oom_before = oom_kills()
        start = time.monotonic()
        request = {"args": args, "timeout": timeout, "output_bytes": output_bytes}
        try:
            reply = await resident.request(request, timeout + GRACE_SECONDS)
        except TimeoutError:
            # The server did not enforce the timeout itself; the agent killed it with the run.
            return ExecResult(
                exit_code=SESSION_LOST,
                stdout="",
                stderr="[reprobot: the test run timed out; the pytest server was killed with it]\n",
                duration=time.monotonic() - start,
                timed_out=True,
            )
        status = reply.get("status") if reply is not None else None
        if reply is None or not isinstance(status, int) or isinstance(status, bool):
            if reply is None or "error" not in reply:
                self.deaths += 1
                await resident.close()
            why = reply.get("error") if reply is not None else "it ended"
            self._note("run", "pytest server could not serve a run (%s); running it the ordinary way", why)
            return None
        return served_result(reply, status, time.monotonic() - start, oom_kills() > oom_before)

    def _note(self, kind: str, message: str, *args: object) -> None:
        """Log a fallback once per sandbox and kind."""
        if kind not in self._noted:
            self._noted.add(kind)
            log.warning(message, *args)


def served_result(reply: dict[str, object], status: int, duration: float, oom: bool) -> ExecResult:
    """The ExecResult of a run the server answered: the run's stdout and stderr arrive merged, as stdout."""
    head, tail, dropped = reply.get("head"), reply.get("tail"), reply.get("dropped")
    text = head if isinstance(head, str) else ""
    cut = isinstance(dropped, int) and dropped > 0
    if cut:
        text += TRUNCATION_MARKER.format(dropped=dropped)
    text += tail if isinstance(tail, str) else ""
    return ExecResult(
        exit_code=exit_code(os.waitstatus_to_exitcode(status)),
        stdout=text,
        stderr="",
        duration=duration,
        timed_out=reply.get("timed_out") is True,
        oom_killed=oom,
        stdout_truncated=cut,
    )

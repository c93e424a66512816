"""The runner's loop: register, heartbeat, long-poll for a job, run it in a child process while renewing its
lease, send the log in numbered chunks, upload the artifacts, finish; stop cleanly on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import random
import re
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.retry import RetryableHTTPError
from bot.selfhosted.client import JobGone, ProtocolError, RunnerClient
from bot.selfhosted.execute import CACHE_ENV

__all__ = ["RunnerAgent", "RunnerConfig", "default_command", "scrubbed_env"]

log = logging.getLogger(__name__)

#: Environment variables a job's child process may see; nothing else of the runner's environment (no tokens).
_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "DISPLAY", "XDG_RUNTIME_DIR", "ANDROID_SERIAL")
#: Send the log when this much is buffered, or after LOG_FLUSH seconds.
LOG_CHUNK = 16 * 1024
LOG_FLUSH = 1.0
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
#: Errors after which the runner waits and tries again instead of stopping (the server may be restarting).
_TRANSIENT = (httpx.TransportError, RetryableHTTPError)


def default_command() -> list[str]:
    """The built-in executors (bot.selfhosted.execute), run by this runner's own interpreter."""
    return [sys.executable, "-m", "bot.selfhosted.execute"]


def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment for a job's child: what a driver needs to find its tools, and no secret."""
    env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env | (extra or {})


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the runner dies, even by kill -9 (Linux prctl)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


@dataclass
class RunnerConfig:
    """How this runner was started (`reprobot runner` options)."""

    server: str
    registration_token: str
    labels: list[str]
    name: str
    work_dir: Path
    state_file: Path | None = None
    ephemeral: bool = False
    version: str = ""
    #: Job kind → command run for it (the job JSON path and the output folder are appended).
    commands: dict[str, list[str]] = field(default_factory=dict)
    #: The tenants asked for at registration (or ["deployment"]); None: a scoped registration token's own.
    scope: list[str] | None = None


@dataclass
class _Intervals:
    heartbeat: float = 30.0
    renew: float = 20.0
    claim_wait: float = 50.0
    cancel_grace: float = 10.0

    def update(self, answer: dict[str, Any]) -> None:
        for key in ("heartbeat", "renew", "claim_wait", "cancel_grace"):
            if isinstance(answer.get(key), int | float):
                setattr(self, key, float(answer[key]))


class RunnerAgent:
    """One runner: takes jobs one at a time until stopped (or after one job, when ephemeral)."""

    def __init__(self, config: RunnerConfig, client: RunnerClient | None = None) -> None:
        """`client` defaults to one for `config.server`."""
        self.config = config
        self.client = client or RunnerClient(config.server)
        self.intervals = _Intervals()
        self.runner_id: int | None = None
        self.jobs_run = 0
        #: What `run` returns: 2 once the server refuses this runner for good (removed, or without a scope).
        self.exit_code = 0

    # -- registration ------------------------------------------------------------------------------------

    def _load_state(self) -> bool:
        path = self.config.state_file
        if self.config.ephemeral or path is None or not path.is_file():
            return False
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            return False
        if state.get("server") != self.config.server or sorted(state.get("labels", [])) != self.config.labels:
            return False
        if state.get("scope") != self.config.scope:  # another scope asked for: register for it
            return False
        self.client.token, self.runner_id = str(state["token"]), int(state["runner_id"])
        return True

    def _save_state(self) -> None:
        path = self.config.state_file
        if self.config.ephemeral or path is None or self.runner_id is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {"server": self.config.server, "runner_id": self.runner_id, "labels": self.config.labels}
        state["scope"] = self.config.scope
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the token is a credential
        with os.fdopen(fd, "w") as f:
            json.dump(state | {"token": self.client.token}, f)

    async def connect(self) -> None:
        """Reuse the saved runner token if the server still knows it, else register."""
        if self._load_state():
            try:
                self.intervals.update((await self.client.heartbeat()).get("intervals", {}))
                log.info("runner %s: reconnected to %s", self.runner_id, self.config.server)
                return
            except ProtocolError as exc:
                if exc.status != 401:
                    raise
                log.info("the saved runner token was refused; registering again")
        answer = await self.client.register(
            self.config.registration_token,
            name=self.config.name,
            labels=self.config.labels,
            version=self.config.version,
            ephemeral=self.config.ephemeral,
            scope=self.config.scope,
        )
        self.runner_id = int(answer["runner"]["id"])
        self.intervals.update(answer.get("intervals", {}))
        self._save_state()
        scope = ", ".join(answer["runner"].get("scope") or [])
        log.info(
            "runner %s registered at %s for %s with labels %s",
            self.runner_id,
            self.config.server,
            scope,
            self.config.labels,
        )

    # -- the loop ----------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        """Take and run jobs until `stop` is set; returns the process exit code."""
        while True:
            try:
                await self.connect()
                break
            except ProtocolError as exc:
                log.error("registration refused: %s", exc)
                await self.client.close()
                return 2
            except _TRANSIENT as exc:  # the server is not up yet: wait for it rather than exit
                log.warning("cannot reach %s (%s); trying again", self.config.server, exc)
                await self._pause(stop, 5.0)
                if stop.is_set():
                    await self.client.close()
                    return 0
        beat = asyncio.create_task(self._heartbeats(stop))
        try:
            while not stop.is_set():
                job = await self._claim(stop)
                if job is None:
                    continue
                await self.run_job(job, stop)
                self.jobs_run += 1
                if self.config.ephemeral:
                    break
        finally:
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            await self.client.close()
        return self.exit_code

    async def _heartbeats(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.intervals.heartbeat)
                return
            try:
                self.intervals.update((await self.client.heartbeat()).get("intervals", {}))
            except (ProtocolError, *_TRANSIENT) as exc:
                log.warning("heartbeat failed: %s", exc)

    async def _claim(self, stop: asyncio.Event) -> dict[str, Any] | None:
        """One long poll, given up at once when the runner is asked to stop."""
        poll = asyncio.create_task(self.client.claim(self.intervals.claim_wait))
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if poll not in done:
            # A job the server leased in that instant is not lost: its lease lapses and it is requeued.
            poll.cancel()
            await asyncio.gather(poll, return_exceptions=True)
            return None
        try:
            answer = poll.result()
        except ProtocolError as exc:
            if exc.status == 409:  # an ephemeral runner that already took its job
                log.info("server: %s", exc.message)
                stop.set()
                return None
            if exc.status == 401:  # removed by the admin, or registered without a scope: asking again is no use
                log.error("the server refuses this runner: %s", exc.message)
                self.exit_code = 2
                stop.set()
                return None
            log.warning("claim refused: %s", exc)
            await self._pause(stop, self.intervals.heartbeat)
            return None
        except _TRANSIENT as exc:
            log.warning("claim failed (%s); trying again", exc)
            await self._pause(stop, 1.0 + random.uniform(0, 2.0))
            return None
        if answer is None:
            # Jitter: many runners released at the end of the same long poll do not all come back at once.
            await self._pause(stop, random.uniform(0, 0.5))
            return None
        return dict(answer["job"])

    @staticmethod
    async def _pause(stop: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    # -- one job -----------------------------------------------------------------------------------------------

    async def run_job(self, job: dict[str, Any], stop: asyncio.Event) -> str:
        """Run one claimed job in a child process to an end; returns how it ended."""
        job_id, attempt = int(job["id"]), int(job["attempt"])
        folder = self.config.work_dir / f"job-{job_id}-{attempt}"
        shutil.rmtree(folder, ignore_errors=True)
        out = folder / "out"
        out.mkdir(parents=True)
        job_file = folder / "job.json"
        job_file.write_text(json.dumps(job))
        command = self.config.commands.get(str(job["kind"]), default_command())
        log.info("job %s (%s, attempt %s): running %s", job_id, job["kind"], attempt, command[0])
        proc = await asyncio.create_subprocess_exec(
            *command,
            str(job_file),
            str(out),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=str(folder),
            env=scrubbed_env(self._child_env(job_file, out)),
            start_new_session=True,  # its own process group: cancellation reaches everything it started
            preexec_fn=_die_with_parent,
        )
        logs = _LogSender(self.client, job_id, attempt)
        pump = asyncio.create_task(logs.pump(proc))
        watch = asyncio.create_task(self._watch(job_id, attempt, proc, stop))
        code = await proc.wait()
        await pump
        ending = watch.result() if watch.done() else "exited"
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await logs.flush()
        if ending in ("cancelled", "lost"):
            log.warning("job %s: %s; nothing is reported", job_id, ending)
            return ending
        try:
            await self._report(job_id, attempt, out, code, logs, stopped=ending == "stopped")
        except JobGone:
            log.warning("job %s: lease lost before finishing; another runner has it", job_id)
            return "lost"
        except (ProtocolError, *_TRANSIENT) as exc:
            log.error("job %s: could not report (%s); its lease will lapse and it will be retried", job_id, exc)
            return "unreported"
        return ending

    def _child_env(self, job_file: Path, out: Path) -> dict[str, str]:
        """What a job's child is told: its job file, its output folder, and the cache kept across this runner's jobs."""
        return {
            "REPROBOT_RUNNER_JOB": str(job_file),
            "REPROBOT_RUNNER_OUT": str(out),
            CACHE_ENV: str(self.config.work_dir / "cache"),
        }

    async def _watch(self, job_id: int, attempt: int, proc: asyncio.subprocess.Process, stop: asyncio.Event) -> str:
        """Renew the lease while the child runs; stop it on cancellation, a lost lease or the runner's SIGTERM."""
        while True:
            stopping = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait_for(asyncio.shield(stopping), self.intervals.renew)
            except TimeoutError:
                pass
            finally:
                stopping.cancel()
            if stop.is_set():
                await self._terminate(proc, self.intervals.cancel_grace)
                return "stopped"
            try:
                answer = await self.client.renew(job_id, attempt)
            except JobGone:
                await self._terminate(proc, 0.0)
                return "lost"
            except (ProtocolError, *_TRANSIENT) as exc:
                log.warning("job %s: renew failed (%s); trying again", job_id, exc)
                continue
            if answer.get("cancel"):
                log.info("job %s: cancelled by the server", job_id)
                await self._terminate(proc, float(answer.get("grace", self.intervals.cancel_grace)))
                return "cancelled"

    @staticmethod
    async def _terminate(proc: asyncio.subprocess.Process, grace: float) -> None:
        """SIGTERM to the child's process group, then SIGKILL after `grace` seconds."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            log.warning("job process %s still running after SIGTERM and %gs of grace: SIGKILL", proc.pid, grace)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        with contextlib.suppress(ProcessLookupError):  # what the child started and left behind
            os.killpg(proc.pid, signal.SIGKILL)

    async def _report(
        self, job_id: int, attempt: int, out: Path, code: int, logs: _LogSender, *, stopped: bool
    ) -> None:
        """Upload the artifacts and the log, then finish the job with its result or its error."""
        for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != "result.json"):
            name = _SAFE_NAME.sub("_", str(path.relative_to(out)).replace("/", "__"))[:100].lstrip(".") or "file"
            try:
                await self.client.upload(job_id, attempt, name, path.read_bytes())
            except ProtocolError as exc:
                if isinstance(exc, JobGone) or exc.status == 409:  # the lease is over: nothing more is taken
                    raise
                log.warning("job %s: artifact %s refused: %s", job_id, name, exc.message)
        if logs.text():
            with contextlib.suppress(ProtocolError):
                await self.client.upload(job_id, attempt, "runner.log", logs.text().encode())
        result_file = out / "result.json"
        if stopped:
            await self.client.finish(job_id, attempt, "failed", error="the runner was stopped (SIGTERM) during the job")
        elif code == 0 and result_file.is_file():
            try:
                result = json.loads(result_file.read_text())
            except ValueError as exc:
                error = f"the executor wrote a bad result.json: {exc}"
                await self.client.finish(job_id, attempt, "failed", error=error)
                return
            await self.client.finish(job_id, attempt, "done", result)
        else:
            tail = "\n".join(logs.text().splitlines()[-20:])
            await self.client.finish(job_id, attempt, "failed", error=f"the executor exited with code {code}\n{tail}")


class _LogSender:
    """Collects the child's output and sends it in numbered chunks; keeps a copy for the log artifact."""

    MAX_KEPT = 1024 * 1024

    def __init__(self, client: RunnerClient, job_id: int, attempt: int) -> None:
        self.client = client
        self.job_id = job_id
        self.attempt = attempt
        self.seq = 0
        self.buffer = ""
        self.kept: list[str] = []
        self.kept_size = 0
        self.refused = False

    def text(self) -> str:
        return "".join(self.kept)

    async def pump(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            try:
                data = await asyncio.wait_for(proc.stdout.read(4096), LOG_FLUSH)
            except TimeoutError:
                data = None
            if data == b"":
                return
            if data:
                text = data.decode(errors="replace")
                self.buffer += text
                if self.kept_size < self.MAX_KEPT:
                    self.kept.append(text)
                    self.kept_size += len(text)
            if len(self.buffer) >= LOG_CHUNK or (self.buffer and loop.time() - last >= LOG_FLUSH):
                await self.flush()
                last = loop.time()

    async def flush(self) -> None:
        if not self.buffer or self.refused:
            self.buffer = ""
            return
        chunk, self.buffer = self.buffer, ""
        try:
            await self.client.log(self.job_id, self.attempt, self.seq, chunk)
            self.seq += 1
        except ProtocolError as exc:
            if exc.status in (409, 413):  # the lease is over, or the log is full: later chunks would be refused too
                self.refused = True
            log.warning("job %s: log chunk %s refused: %s", self.job_id, self.seq, exc.message)
        except _TRANSIENT as exc:
            log.warning("job %s: log chunk %s not sent: %s", self.job_id, self.seq, exc)

"""Test harness for the runner protocol: `reprobot serve` and `reprobot runner` as real processes on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx

REGISTRATION = "registration-token-for-tests"
ADMIN = "runner-admin-token-for-tests"
REPROBOT = [sys.executable, "-m", "bot.cli"]
#: Short intervals so that leases lapse and cancellations land within seconds.
FAST = {
    "REPROBOT_RUNNER_REGISTRATION_TOKEN": REGISTRATION,
    "REPROBOT_RUNNER_ADMIN_TOKEN": ADMIN,
    "REPROBOT_RUNNER_LEASE": "2",
    "REPROBOT_RUNNER_HEARTBEAT": "1",
    "REPROBOT_RUNNER_CLAIM_WAIT": "1",
    "REPROBOT_RUNNER_CLAIM_POLL": "0.1",
    "REPROBOT_RUNNER_CANCEL_GRACE": "1",
}
T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(probe: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    return env | extra


@contextlib.contextmanager
def serve(data_dir: Path, log: Path, **settings: str) -> Iterator[str]:
    """`reprobot serve` on a free port with the fast runner settings; yields its URL."""
    env = _env(FAST | {"REPROBOT_DATA_DIR": str(data_dir)} | settings)
    with serve_with(env, free_port(), log, timeout=30) as url:
        yield url


@contextlib.contextmanager
def serve_with(env: dict[str, str], port: int, log: Path, timeout: float = 60) -> Iterator[str]:
    """`reprobot serve` on `port` with exactly `env`, until it answers /healthz; yields its URL, then stops it."""
    with log.open("wb") as out:
        proc = subprocess.Popen([*REPROBOT, "serve", "--port", str(port)], env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert proc.poll() is None, log.read_text()
            try:
                return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, "reprobot serve to answer", timeout=timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Runners:
    """`reprobot runner` processes, each with its own state file and log; all stopped at the end."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self, name: str, labels: str, *extra: str, scope: str | None = "deployment", token: str = REGISTRATION
    ) -> subprocess.Popen[bytes]:
        """Start runner `name` with `labels`, registered for `scope` (None: no --scope) with `token`."""
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        argv = [*REPROBOT, "runner", "--server", self.url, "--token", token, "--labels", labels]
        argv += ["--name", name, "--state", str(folder / "state.json"), "--work-dir", str(folder / "work"), *extra]
        argv += [] if scope is None else ["--scope", scope]
        with (folder / "log").open("ab") as out:
            proc = subprocess.Popen(argv, env=_env({}), stdout=out, stderr=out)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        """What runner `name` printed."""
        return (self.root / name / "log").read_text()

    def stop_all(self) -> None:
        """SIGTERM every runner still running, then SIGKILL what does not stop."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

"""The real-app cases under bench/apps: loading them, serving a case's release, and their ground truth.

A case folder holds case.toml (the app, its PyPI package, the buggy and fixed releases, the upstream issue, the
oracle the report should fire and the report's style), report.md (what the agent reads), truth.json (the
ground-truth steps the extraction is scored against, and the scripted actions verify.py plays; the agent never
reads it) and `server.py PORT [--fixed]`, which installs the release on first use and serves it seeded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

APPS = Path(__file__).resolve().parent
#: Fields every case.toml carries.
REQUIRED = ("app", "package", "buggy", "fixed", "issue", "oracle", "style")
ORACLES = ("http_5xx", "page_error", "console_error", "wrong_text")
STYLES = ("numbered steps", "prose", "steps missing")
#: How long a release may take to start (the venv exists: `make bench-apps` built it).
START_SECONDS = 180.0


@dataclass(frozen=True)
class AppCase:
    """One case folder under bench/apps."""

    name: str
    root: Path
    meta: dict[str, Any]

    @property
    def report(self) -> str:
        """The report the agent reads."""
        return (self.root / "report.md").read_text()

    @property
    def truth(self) -> dict[str, Any]:
        """truth.json: ground-truth steps, scripted actions and the failure they show on the buggy release."""
        data: dict[str, Any] = json.loads((self.root / "truth.json").read_text())
        return data

    @property
    def oracle_kind(self) -> str:
        """The oracle that must fire on the buggy release."""
        return str(self.meta["oracle"])

    @property
    def start_path(self) -> str:
        """Where the user starts: the app's address plus this path (most cases: "/")."""
        return str(self.meta.get("path", "/"))


def load_app_cases(root: Path = APPS, only: set[str] | None = None) -> list[AppCase]:
    """Every case folder under `root` (one with a case.toml), sorted by name."""
    cases = []
    for toml in sorted(root.glob("*/case.toml")):
        if only and toml.parent.name not in only:
            continue
        cases.append(AppCase(toml.parent.name, toml.parent, tomllib.loads(toml.read_text())))
    return cases


def problems(case: AppCase) -> list[str]:
    """What is wrong with a case folder (empty when it is well-formed); no network, no venv needed."""
    out = [f"case.toml lacks {f}" for f in REQUIRED if not case.meta.get(f)]
    if case.meta.get("oracle") and case.meta["oracle"] not in ORACLES:
        out.append(f"oracle {case.meta['oracle']!r} is not one of {', '.join(ORACLES)}")
    if case.meta.get("style") and case.meta["style"] not in STYLES:
        out.append(f"style {case.meta['style']!r} is not one of {', '.join(STYLES)}")
    if case.meta.get("buggy") == case.meta.get("fixed"):
        out.append("the buggy and fixed releases are the same")
    if not str(case.meta.get("issue", "")).startswith("https://github.com/"):
        out.append("issue must be the upstream tracker's URL")
    for name in ("report.md", "truth.json", "server.py"):
        if not (case.root / name).is_file():
            out.append(f"{name} is missing")
    if (case.root / "truth.json").is_file():
        truth = case.truth
        # A report may leave every step implicit (the bug shows on the first screen): steps may be empty.
        if "steps" not in truth or not truth.get("actions") or not truth.get("failure"):
            out.append("truth.json needs steps, actions and failure")
    server = case.root / "server.py"
    if server.is_file() and "server.py PORT [--fixed]" not in server.read_text():
        out.append("server.py must document its usage: server.py PORT [--fixed]")
    return out


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_command(case: AppCase, port: int, *, fixed: bool) -> list[str]:
    """The command that serves the case's buggy (or fixed) release on 127.0.0.1:port."""
    return [sys.executable, str(case.root / "server.py"), str(port), *(["--fixed"] if fixed else [])]


@contextlib.asynccontextmanager
async def serve_case(case: AppCase, *, fixed: bool = False, log: Path | None = None) -> AsyncIterator[str]:
    """Start the case's release and yield the user's start URL once it is seeded; stopped on the way out."""
    port = free_port()
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
    sink = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed in the finally below
    proc = await asyncio.create_subprocess_exec(
        *server_command(case, port, fixed=fixed),
        stdout=asyncio.subprocess.PIPE,
        stderr=sink,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        await _ready(proc, case, time.monotonic() + START_SECONDS)
        yield f"http://127.0.0.1:{port}{case.start_path}"
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if log:
            sink.close()  # type: ignore[union-attr]


async def _ready(proc: asyncio.subprocess.Process, case: AppCase, deadline: float) -> None:
    """Wait for server.py's "ready on" line: it is printed once the app answers and its data is seeded."""
    assert proc.stdout is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"{case.name}: the app was not ready within {START_SECONDS:.0f}s")
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), left)
        except TimeoutError:
            continue
        if not line:
            raise RuntimeError(f"{case.name}: server.py exited ({await proc.wait()}) before the app was ready")
        if line.startswith(b"ready on "):
            # Keep draining stdout so the app never blocks on a full pipe (the task is kept: not collected).
            _DRAINS.add(asyncio.ensure_future(_drain(proc.stdout)))
            return


_DRAINS: set[asyncio.Future[None]] = set()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass

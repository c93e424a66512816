"""Shared by the cases' server.py: a cached venv per pinned PyPI release, and a port's readiness.

The app's release is installed on first use under $REPROBOT_BENCH_CACHE (default
~/.cache/reprobot-bench-apps)/<package>-<version>, with the case's extra pins (the release's own dependency
ranges are often open-ended, and a newer dependency breaks an old release), so no third-party source is ever
committed: only its name and version are.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import venv
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cache_root() -> Path:
    """Where the app venvs live."""
    env = os.environ.get("REPROBOT_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "reprobot-bench-apps"


def venv_dir(package: str, version: str) -> Path:
    """The venv of one release of one package."""
    return cache_root() / f"{package}-{version}"


def ensure_venv(package: str, version: str, pins: list[str] | tuple[str, ...] = ()) -> Path:
    """The venv with `package==version` (and `pins`) installed, built on first use; returns its bin folder."""
    root = venv_dir(package, version)
    stamp = root / ".installed"
    if stamp.exists():
        return root / "bin"
    root.parent.mkdir(parents=True, exist_ok=True)
    # One builder at a time per release (verify.py and a server.py may both ask for it): the others wait.
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            # A half-built venv (an interrupted install) is rebuilt from scratch: pip would keep its broken state.
            venv.EnvBuilder(clear=True, with_pip=True).create(root)
            pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            subprocess.run([*pip, f"{package}=={version}", *pins], check=True, stdout=sys.stderr)
            stamp.write_text(f"{package}=={version} {' '.join(pins)}\n")
    return root / "bin"


def wait_port(port: int, timeout: float = 60.0) -> bool:
    """Whether something listens on 127.0.0.1:port within `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM from the bench: unwind, so the app process is stopped too


def run_app(
    cmd: list[str],
    port: int,
    seed: Callable[[], None] | None = None,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 90.0,
) -> int:
    """Run the app in the foreground until it exits or we are stopped; `seed` runs once its port answers."""
    signal.signal(signal.SIGTERM, _stop)
    proc = subprocess.Popen(cmd, env=env, cwd=cwd)
    try:
        if not wait_port(port, timeout):
            print(f"the app did not listen on 127.0.0.1:{port} within {timeout:.0f}s", file=sys.stderr)
            return 1
        if seed is not None:
            seed()
        # The bench waits for the app's page, and the page must show the seeded data: signal readiness by
        # printing, after seeding (a reader of stdout may wait for it).
        print(f"ready on http://127.0.0.1:{port}/", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def parse_args(argv: list[str]) -> tuple[int, bool]:
    """`server.py PORT [--fixed]`: the port and whether to serve the fixed release."""
    if not argv or not argv[0].isdigit() or any(a != "--fixed" for a in argv[1:]):
        sys.exit("usage: server.py PORT [--fixed]")
    return int(argv[0]), "--fixed" in argv[1:]


def case_meta(case_dir: Path) -> dict[str, Any]:
    """The case's case.toml: the one place its package, releases and pins are written."""
    return tomllib.loads((case_dir / "case.toml").read_text())


def release(case_dir: Path, fixed: bool) -> tuple[Path, str]:
    """The bin folder of the case's buggy (or fixed) release, installed on first use, and that version."""
    meta = case_meta(case_dir)
    version = str(meta["fixed"] if fixed else meta["buggy"])
    return ensure_venv(str(meta["package"]), version, list(meta.get("pins", []))), version

"""`make demo` on a fresh machine: the system-package check, exercised with a PATH that lacks bwrap.

bwrap stays installed on this machine; each test builds a PATH holding every tool but bwrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "system-packages"
DEMO = ROOT / "examples" / "run_demo.py"
SETPRIV = "/usr/bin/setpriv"


@pytest.fixture
def path_without_bwrap() -> Iterator[str]:
    """A PATH folder with a link to every tool on this machine's PATH except bwrap (world-readable)."""
    folder = Path(tempfile.mkdtemp(prefix="reprobot-nobwrap-"))
    folder.chmod(0o755)
    for entry in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/sbin", "/usr/bin", "/sbin", "/bin"]:
        if not os.path.isdir(entry):
            continue
        for tool in os.listdir(entry):
            link = folder / tool
            if tool != "bwrap" and not link.exists() and not link.is_symlink():
                link.symlink_to(os.path.join(entry, tool))
    yield str(folder)
    shutil.rmtree(folder, ignore_errors=True)


def run(args: list[str], path: str, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command with the given PATH (and, as root, optionally as an unprivileged uid)."""
    argv = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", *args] if user else args
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env={"PATH": path, "LANG": "C.UTF-8"})


def test_the_check_names_bubblewrap_when_bwrap_is_not_on_path(path_without_bwrap: str) -> None:
    proc = run([str(SCRIPT), "--check", "demo"], path_without_bwrap)
    assert proc.returncode == 1
    assert "bubblewrap" in proc.stdout and "git" not in proc.stdout.split(":", 1)[1]


def test_as_root_the_install_plan_is_apt_get(path_without_bwrap: str) -> None:
    proc = run([str(SCRIPT), "--dry-run", "demo"], path_without_bwrap)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["apt-get update", "apt-get install -y --no-install-recommends bubblewrap"]


def test_not_root_it_prints_the_one_command_and_installs_nothing(path_without_bwrap: str) -> None:
    if os.geteuid() != 0 or not os.access(SETPRIV, os.X_OK):
        pytest.skip("needs root and setpriv to run the script as an unprivileged user")
    proc = run([str(SCRIPT), "--install", "demo"], path_without_bwrap, user="nobody")
    assert proc.returncode == 1, proc.stderr
    assert "run:  sudo apt-get install -y --no-install-recommends bubblewrap" in proc.stderr
    assert "installing" not in proc.stdout


def test_the_demo_stops_before_any_work_with_the_command(path_without_bwrap: str, tmp_path: Path) -> None:
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    proc = subprocess.run(
        [sys.executable, str(DEMO)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": path_without_bwrap, "LANG": "C.UTF-8", "TMPDIR": str(env_tmp)},
    )
    assert proc.returncode == 2
    assert "demo: cannot start" in proc.stderr
    assert "sudo apt-get install -y --no-install-recommends bubblewrap" in proc.stderr
    assert "reprobot fix" not in proc.stdout and list(env_tmp.iterdir()) == [], "no demo repo was made"


def test_with_everything_installed_the_check_passes() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed on this machine")
    proc = run([str(SCRIPT), "--check", "test"], os.environ["PATH"])
    assert proc.returncode == 0, proc.stdout


def test_make_demo_sets_up_the_system_before_the_virtualenv() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert plan.index(".ci/system-packages --install demo") < plan.index("venv") < plan.index("run_demo.py")

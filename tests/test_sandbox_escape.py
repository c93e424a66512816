"""Containment suite: each case tries to get out of the sandbox and checks both the result and the host."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sandboxes.base import Limits, PathOutsideWorkspace, Sandbox, SandboxSpec
from sandboxes.factory import available_backends, make_sandbox

#: Backends that claim containment; an unavailable one (docker, until its backend lands) is skipped.
CONTAINED_BACKENDS = ["bwrap", "docker"]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=CONTAINED_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """A contained backend, or a skip that says why it cannot run here."""
    kind: str = request.param
    problem = available_backends().get(kind, "unknown backend")
    if problem is not None:
        pytest.skip(f"{kind} backend unavailable: {problem}")
    return kind


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository with one commit, standing in for a cloned repo."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "module.py").write_text("VALUE = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(ws)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    return ws


@pytest.fixture(params=["warm", "cold"])
def session(request: pytest.FixtureRequest) -> str:
    """The session mode: every case holds with an exec agent per sandbox and with a sandbox (or exec) per command."""
    mode: str = request.param
    return mode


@pytest.fixture
def open_sandbox(backend: str, session: str, workspace: Path) -> Callable[..., Sandbox]:
    """Build a sandbox of the backend under test on the workspace, with optional limits."""

    def build(**limits: float) -> Sandbox:
        spec = SandboxSpec(workspace=workspace, limits=Limits(**limits), session=session)  # type: ignore[arg-type]
        return make_sandbox(backend, spec)

    return build


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains marker (every pid namespace is visible from the host)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def assert_no_stray(marker: str) -> None:
    """Allow the kernel a moment to reap, then require that nothing with the marker is left."""
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


def py(code: str, *args: str) -> list[str]:
    """argv running a Python snippet with the sandbox's interpreter."""
    return ["python3", "-c", code, *args]


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    """A TCP socket listening on the host's 127.0.0.1, to prove the sandbox cannot reach it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    try:
        yield sock, sock.getsockname()[1]
    finally:
        sock.close()


NETWORK_PROBE = """
import socket, sys
port = int(sys.argv[1])
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", port)); print("TCP-CONNECTED")
except OSError as e:
    print("TCP-BLOCKED", e)
try:
    socket.getaddrinfo("example.com", 443); print("DNS-RESOLVED")
except OSError as e:
    print("DNS-BLOCKED", e)
# UDP connect() sends nothing; it only asks for a route to a documentation-only address.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.connect(("192.0.2.1", 9)); print("ROUTE-FOUND")
except OSError as e:
    print("ROUTE-BLOCKED", e)
"""


async def test_network_egress_fails(open_sandbox: Callable[..., Sandbox], listener: tuple[socket.socket, int]) -> None:
    sock, port = listener
    async with open_sandbox() as sb:
        res = await sb.run(py(NETWORK_PROBE, str(port)), timeout=30)
    assert res.exit_code == 0, res.output
    assert "TCP-BLOCKED" in res.stdout and "TCP-CONNECTED" not in res.stdout
    assert "DNS-BLOCKED" in res.stdout and "DNS-RESOLVED" not in res.stdout
    assert "ROUTE-BLOCKED" in res.stdout and "ROUTE-FOUND" not in res.stdout
    with pytest.raises(BlockingIOError):
        sock.accept()  # nobody reached the host listener


WRITE_PROBE = """
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as f:
            f.write("pwned")
        print("WROTE", path)
    except OSError as e:
        print("DENIED", path, e.errno)
"""


async def test_write_outside_workspace_fails(open_sandbox: Callable[..., Sandbox], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("original")
    canary = f"reprobot-canary-{uuid.uuid4().hex}"
    targets = [
        f"/usr/{canary}",
        f"/etc/{canary}",
        f"/{canary}",
        "/workspace/../" + canary,
        str(victim),
        str(outside / canary),
        f"/proc/{canary}",
    ]
    host_paths = [Path("/usr") / canary, Path("/etc") / canary, Path("/") / canary]
    try:
        async with open_sandbox() as sb:
            res = await sb.run(py(WRITE_PROBE, *targets), timeout=30)
        assert res.exit_code == 0, res.output
        assert "WROTE" not in res.stdout
        assert res.stdout.count("DENIED") == len(targets)
        assert victim.read_text() == "original"
        assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
        assert [p for p in host_paths if p.exists()] == []
    finally:
        # Should containment ever break, do not leave canaries in the host's /usr and /etc.
        for path in host_paths:
            path.unlink(missing_ok=True)


async def test_git_metadata_is_read_only_inside(open_sandbox: Callable[..., Sandbox], workspace: Path) -> None:
    config = (workspace / ".git" / "config").read_text()
    async with open_sandbox() as sb:
        res = await sb.run(
            ["sh", "-c", "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config; mkdir .git/hooks/x"]
        )
        assert res.exit_code != 0
        assert "Read-only" in res.stderr
        await sb.diff()  # host git still works on the workspace
    assert (workspace / ".git" / "config").read_text() == config


async def test_secrets_are_invisible(
    open_sandbox: Callable[..., Sandbox], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    data_dir = tmp_path / "bot-data"
    data_dir.mkdir()
    secret = data_dir / "github-app.pem"
    secret.write_text(canary)
    monkeypatch.setenv("REPROBOT_LLM_API_KEY", canary)
    monkeypatch.setenv("REPROBOT_CANARY", canary)
    script = (
        f"cat {secret}; cat /proc/1/environ; cat /proc/self/environ; env; cat /proc/1/cmdline;"
        " ls -la /root /home; grep -rs 'REPROBO[T]' /proc/*/environ; true"
    )
    async with open_sandbox() as sb:
        res = await sb.run(["sh", "-c", script], timeout=30)
    assert canary not in res.stdout and canary not in res.stderr
    assert not [line for line in res.stdout.splitlines() if "REPROBOT_" in line and "REPROBO[T]" not in line]
    assert "No such file or directory" in res.stderr  # the data dir does not exist in there


async def test_symlink_planted_inside_cannot_redirect_host_file_access(
    open_sandbox: Callable[..., Sandbox], tmp_path: Path
) -> None:
    target = tmp_path / "host-secret.txt"
    target.write_text("host only")
    async with open_sandbox() as sb:
        res = await sb.run(["sh", "-c", f"ln -s {target} link.txt && ln -s / rootlink && echo ok"])
        assert res.stdout.strip() == "ok", res.output
        with pytest.raises(PathOutsideWorkspace):
            sb.read_file("link.txt")
        with pytest.raises(PathOutsideWorkspace):
            sb.write_file("link.txt", "overwritten")
        with pytest.raises(PathOutsideWorkspace):
            sb.write_file("rootlink/tmp/x.txt", "x")
    assert target.read_text() == "host only"


FORK_BOMB = """
import errno, os, sys, time
forked = 0
try:
    for _ in range(10000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError as e:
    print("EAGAIN" if e.errno == errno.EAGAIN else f"ERR {e}", forked)
print("FORKED", forked)
"""


async def test_fork_bomb_is_contained(open_sandbox: Callable[..., Sandbox]) -> None:
    marker = f"forkbomb-{uuid.uuid4().hex}"
    async with open_sandbox(max_processes=64) as sb:
        res = await sb.run(py(FORK_BOMB, marker), timeout=60)
    assert "EAGAIN" in res.stdout, res.output
    forked = int(res.stdout.split("FORKED")[1].split()[0])
    assert forked < 64
    assert not res.timed_out
    assert_no_stray(marker)


async def test_memory_hog_is_stopped_and_reported(open_sandbox: Callable[..., Sandbox]) -> None:
    # Touch every page, so the memory is really used and not just reserved.
    code = "chunks = []\nfor _ in range(64):\n    chunks.append(b'x' * (64 * 1024 * 1024))\nprint('SURVIVED')"
    async with open_sandbox(memory_bytes=256 * 1024**2) as sb:
        res = await sb.run(py(code), timeout=60)
    assert "SURVIVED" not in res.stdout
    assert not res.ok
    assert res.oom_killed or "MemoryError" in res.stderr, res


async def test_infinite_loop_is_killed_at_wall_timeout(open_sandbox: Callable[..., Sandbox]) -> None:
    marker = f"spin-{uuid.uuid4().hex}"
    code = "import os\nif os.fork() == 0:\n    while True: pass\nwhile True: pass"
    async with open_sandbox() as sb:
        res = await sb.run(py(code, marker), timeout=2)
    assert res.timed_out
    assert not res.ok
    assert 2 <= res.duration < 10
    assert_no_stray(marker)


async def test_output_flood_is_capped(open_sandbox: Callable[..., Sandbox]) -> None:
    cap = 64 * 1024
    code = "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(b)\n"
    started = time.monotonic()
    async with open_sandbox(output_bytes=cap) as sb:
        res = await sb.run(py(code), timeout=60)
    assert res.exit_code == 0, res.stderr
    assert time.monotonic() - started < 30
    assert res.stdout_truncated and not res.stderr_truncated
    assert cap <= len(res.stdout) < cap + 200
    assert f"{(1 << 30) - cap} bytes dropped" in res.stdout


async def test_file_flood_is_capped(open_sandbox: Callable[..., Sandbox], workspace: Path) -> None:
    code = "b = b'x' * (1 << 20)\nwith open('big.bin', 'wb') as f:\n    for _ in range(64): f.write(b)\n"
    async with open_sandbox(max_file_bytes=4 * 1024**2) as sb:
        res = await sb.run(py(code), timeout=60)
    assert not res.ok
    assert (workspace / "big.bin").stat().st_size <= 4 * 1024**2


async def test_background_processes_do_not_survive(open_sandbox: Callable[..., Sandbox]) -> None:
    marker = f"{time.time_ns() % 10**9}"
    async with open_sandbox() as sb:
        res = await sb.run(["sh", "-c", f"sleep 1000.{marker} & nohup sleep 1001.{marker} & echo started"])
        assert res.stdout.strip() == "started"
        assert res.duration < 10
        assert_no_stray(f"1000.{marker}")
        assert_no_stray(f"1001.{marker}")


async def test_close_kills_running_commands(open_sandbox: Callable[..., Sandbox]) -> None:
    import asyncio

    marker = f"{time.time_ns() % 10**9}"
    sb = open_sandbox()
    async with sb:
        task = asyncio.create_task(sb.run(["sleep", f"500.{marker}"], timeout=300))
        deadline = time.monotonic() + 10
        while not processes_with(f"500.{marker}") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert processes_with(f"500.{marker}")
    res = await asyncio.wait_for(task, 10)
    assert not res.ok
    assert_no_stray(f"500.{marker}")


async def test_detached_processes_die_with_the_command(open_sandbox: Callable[..., Sandbox]) -> None:
    """A command that leaves its session (setsid, double fork) still does not outlive it, warm or cold."""
    marker = f"{time.time_ns() % 10**9}"
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(1002)\n"
    async with open_sandbox() as sb:
        res = await sb.run(py(code, f"1002.{marker}"))
        assert res.ok, res.output
        assert_no_stray(f"1002.{marker}")
        # The next command finds nothing of the previous one, and cannot signal the sandbox's own processes.
        probe = "import os\nfor p in {1, 2} - {os.getpid(), os.getppid()}:\n    try:\n        os.kill(p, 9)\n"
        after = await sb.run(py(probe + "    except OSError as e:\n        print(p, e.errno)\n"))
        later = await sb.run(["true"])
    assert after.ok and later.ok, after.output + later.output
    assert_no_stray(f"1002.{marker}")

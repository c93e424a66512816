"""Sandbox limits on both backends: the workspace disk quota, size-limited /tmp, no user namespaces, and
no docker sandbox outliving its worker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sandboxes.base import Limits, Sandbox, SandboxSpec
from sandboxes.bwrap import bwrap_path, namespace_args
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.quota import STATE_PREFIX, fold, parse_size
from tests.conftest import REPO_ROOT, make_git_repo
from tests.fakes.github_manifest import throwaway_pem

pytestmark = pytest.mark.timeout(180)

MiB = 1024**2
QUOTA = 64 * MiB
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the workspace quota is mounted by the bot as root")


@pytest.fixture(params=["bwrap", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    """A contained backend, or a skip that says why it cannot run here."""
    kind: str = request.param
    problem = available_backends().get(kind, "unknown backend")
    if problem is not None:
        pytest.skip(f"{kind} backend unavailable: {problem}")
    return kind


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A one-commit git repository with a file to edit, one to delete and a folder to replace."""
    return make_git_repo(
        tmp_path / "ws",
        {"keep.txt": "keep\n", "edit.txt": "one\n", "gone.txt": "bye\n", "dir/old.txt": "old\n"},
    )


@pytest.fixture
def open_sandbox(backend: str, workspace: Path) -> Callable[..., Sandbox]:
    """A sandbox of the backend under test on the workspace; keyword arguments go to Limits."""

    def build(**limits: int) -> Sandbox:
        return make_sandbox(backend, SandboxSpec(workspace=workspace, limits=Limits(**limits)))  # type: ignore[arg-type]

    return build


#: Writes 8 MiB chunks into 16 MiB files under argv[1] until a write fails or argv[2] bytes are written.
FILL = textwrap.dedent(
    """
    import os, sys
    folder, goal = sys.argv[1], int(sys.argv[2])
    chunk = b"x" * (8 << 20)
    written, i, err = 0, 0, "none"
    try:
        while written < goal:
            with open(os.path.join(folder, f"fill{i}.bin"), "wb") as f:
                for _ in range(2):
                    f.write(chunk)
                    f.flush()
                    os.fsync(f.fileno())
                    written += len(chunk)
            i += 1
    except OSError as e:
        err = e.errno
    # What really landed: a failed write may have stored part of its chunk.
    stored = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder) if n.startswith("fill"))
    print(err, stored)
    """
)


def _host_free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _images_allocated(parent: Path) -> int:
    """Host bytes taken by the quota images beside a workspace (sparse files: blocks really allocated)."""
    return sum(p.stat().st_blocks * 512 for p in parent.glob(f"{STATE_PREFIX}*/disk.img"))


@ROOT_ONLY
async def test_writing_past_the_disk_quota_fails_and_spares_the_host_disk(
    open_sandbox: Callable[..., Sandbox], workspace: Path
) -> None:
    attempt = 8 * QUOTA
    free_before = _host_free(workspace.parent)
    async with open_sandbox(disk_bytes=QUOTA) as sb:
        res = await sb.run(["python3", "-c", FILL, "/workspace", str(attempt)], timeout=120)
        errno_name, stored = res.stdout.split()
        host_used = free_before - _host_free(workspace.parent)
        allocated = _images_allocated(workspace.parent)
        edit = await sb.run(["sh", "-c", "rm -f fill*.bin && echo two >> edit.txt && echo new > new.txt"])
        assert edit.ok, edit.output
        diff = await sb.diff()
    print(f"{sb.spec.limits.disk_bytes} byte quota: {stored} bytes written before ENOSPC; host disk used {host_used}")
    assert res.exit_code == 0, res.output
    assert errno_name == "28"  # ENOSPC, inside the sandbox
    # Nearly all of the quota is usable (ext4 keeps some for itself), and not a byte more.
    assert QUOTA * 3 // 4 <= int(stored) <= QUOTA
    # The writes went to the quota's image, never past its size, however much was attempted.
    assert allocated <= QUOTA
    assert host_used < attempt // 2  # the host lost no more than the quota (plus other users' noise)
    assert "+two" in diff and "new.txt" in diff and "fill" not in diff
    # Closed: the workspace is a plain folder again and holds what the sandbox left.
    assert not os.path.ismount(workspace)
    assert not list(workspace.parent.glob(f"{STATE_PREFIX}*"))
    assert (workspace / "edit.txt").read_text() == "one\ntwo\n"
    assert (workspace / "new.txt").read_text() == "new\n"
    assert not list(workspace.glob("fill*"))


@ROOT_ONLY
async def test_quota_folds_edits_deletions_and_replacements_back(
    open_sandbox: Callable[..., Sandbox], workspace: Path
) -> None:
    script = (
        "rm gone.txt && rm -r dir && mkdir dir && echo new > dir/new.txt && echo two >> edit.txt"
        " && ln -s keep.txt link && mkdir -p a/b && echo deep > a/b/c.txt && chmod 700 a"
    )
    first, second = open_sandbox(), open_sandbox()
    async with first, second:
        res = await first.run(["sh", "-c", script])
        assert res.ok, res.output
        seen = await second.run(["cat", "dir/new.txt"])  # one quota, shared by both sandboxes
        assert seen.stdout == "new\n"
        await first.close()
        assert os.path.ismount(workspace)  # the other sandbox still uses it
    assert not os.path.ismount(workspace)
    names = sorted(p.name for p in workspace.iterdir() if p.name != ".git")
    assert names == ["a", "dir", "edit.txt", "keep.txt", "link"]
    assert (workspace / "edit.txt").read_text() == "one\ntwo\n"
    assert sorted(os.listdir(workspace / "dir")) == ["new.txt"]
    assert os.readlink(workspace / "link") == "keep.txt"
    assert (workspace / "a" / "b" / "c.txt").read_text() == "deep\n"
    assert (workspace / "a").stat().st_mode & 0o777 == 0o700
    git = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True, check=True)
    assert "D gone.txt" in git.stdout and "D dir/old.txt" in git.stdout


@pytest.mark.parametrize("backend_kind", ["bwrap", "docker"])
async def test_tmp_is_size_limited(backend_kind: str, workspace: Path) -> None:
    problem = available_backends()[backend_kind]
    if problem is not None:
        pytest.skip(f"{backend_kind} backend unavailable: {problem}")
    memory = 256 * MiB  # /tmp gets half of it
    spec = SandboxSpec(workspace=workspace, limits=Limits(memory_bytes=memory))
    async with make_sandbox(backend_kind, spec) as sb:
        res = await sb.run(["python3", "-c", FILL, "/tmp", str(4 * memory)], timeout=120)
    errno_name, stored = res.stdout.split()
    assert errno_name == "28", res.output
    assert int(stored) <= memory // 2


USERNS_PROBE = textwrap.dedent(
    """
    import ctypes, os, platform
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
    r = libc.unshare(CLONE_NEWUSER)
    print("unshare", r, ctypes.get_errno())
    nr = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
    if nr is not None:
        pid = libc.syscall(nr, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        print("clone", pid, ctypes.get_errno())
        if pid > 0:
            os.waitpid(pid, 0)
    """
)


async def test_no_nested_user_namespaces(open_sandbox: Callable[..., Sandbox]) -> None:
    async with open_sandbox() as sb:
        tools = await sb.run(["sh", "-c", "unshare -U id -u; echo U=$?; unshare -Ur id -u; echo Ur=$?"])
        raw = await sb.run(["python3", "-c", USERNS_PROBE])
    assert "U=0" not in tools.stdout and "Ur=0" not in tools.stdout, tools.output
    assert "unshare failed" in tools.stderr
    assert tools.stdout.split() == ["U=1", "Ur=1"]  # not even once did `id -u` run (as 0 or anyone)
    lines = dict((line.split()[0], line.split()[1:]) for line in raw.stdout.splitlines())
    assert lines["unshare"][0] == "-1", raw.output
    if platform.machine() in ("x86_64", "aarch64"):
        assert lines["clone"][0] == "-1", raw.output


def test_unprivileged_bwrap_disables_user_namespaces(tmp_path: Path) -> None:
    """As a normal user, bwrap's own --disable-userns applies (the seccomp filter comes on top in real runs)."""
    binary = bwrap_path()
    if binary is None or os.geteuid() != 0:
        pytest.skip("needs bwrap, and root to switch to an unprivileged user for the check")
    argv = [binary, *namespace_args(False), "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = ["sh", "-c", "id -u; unshare -U id -u; echo U=$?; unshare -Ur id -u; echo Ur=$?"]
    res = subprocess.run([*as_nobody, *argv, "--", *probe], capture_output=True, text=True, timeout=60)
    if res.returncode != 0 and "U=" not in res.stdout:
        pytest.skip(f"unprivileged bwrap cannot run here: {res.stderr.strip()}")
    assert res.stdout.split() == ["61000", "U=1", "Ur=1"], res.stdout + res.stderr


def test_parse_size() -> None:
    assert parse_size("2G") == parse_size("2GiB") == parse_size("2gb") == 2 * 1024**3
    assert parse_size("512M") == 512 * MiB and parse_size("1048576") == MiB and parse_size("0") == 0
    for bad in ("", "lots", "-1G", "2X"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_fold_applies_whiteouts_and_opaque_dirs(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("whiteouts are character devices: making them needs root")
    lower, upper = tmp_path / "lower", tmp_path / "upper"
    (lower / "opaque").mkdir(parents=True)
    (lower / "opaque" / "old").write_text("old")
    (lower / "deleted").write_text("x")
    (lower / "merged").mkdir()
    (lower / "merged" / "kept").write_text("kept")
    (upper / "opaque").mkdir(parents=True)
    os.setxattr(upper / "opaque", "trusted.overlay.opaque", b"y")
    (upper / "opaque" / "new").write_text("new")
    os.mknod(upper / "deleted", 0o600 | 0o020000, os.makedev(0, 0))
    (upper / "merged").mkdir()
    (upper / "merged" / "added").write_text("added")
    assert fold(upper, lower) == 0
    assert sorted(os.listdir(lower)) == ["merged", "opaque"]
    assert os.listdir(lower / "opaque") == ["new"]
    assert sorted(os.listdir(lower / "merged")) == ["added", "kept"]


#: A worker process: the real worker loop, plus a docker sandbox held open as a running job would.
WORKER_WITH_SANDBOX = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from bot.settings.config import Settings
    from bot.store import Store
    from bot.worker import Worker
    from sandboxes.base import SandboxSpec
    from sandboxes.docker import DockerSandbox

    async def main():
        settings = Settings.from_env()
        store = Store.open(settings.store_path)
        loop = asyncio.create_task(Worker(settings, store).run())
        async with DockerSandbox(SandboxSpec(workspace=Path(sys.argv[1]))) as sb:
            await sb.run(["true"])
            print(sb._container.id, flush=True)
            await loop

    asyncio.run(main())
    """
)


def _worker_env(data_dir: Path, interval: float) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(data_dir),
        "REPROBOT_DATA_DIR": str(data_dir),
        "REPROBOT_SANDBOX_REAP_INTERVAL": str(interval),
        "REPROBOT_WORKER_POLL": "0.2",
        "REPROBOT_LOG_LEVEL": "INFO",
        "PYTHONPATH": str(REPO_ROOT),
        # A worker needs an App with a readable key to start; no job runs here, so GitHub is never called.
        "REPROBOT_GITHUB_APP_ID": "1",
        "REPROBOT_GITHUB_PRIVATE_KEY": throwaway_pem(),
    }


async def test_no_docker_sandbox_outlives_a_killed_worker(tmp_path: Path, workspace: Path) -> None:
    problem = available_backends()["docker"]
    if problem is not None:
        pytest.skip(f"docker backend unavailable: {problem}")
    import docker
    import docker.errors

    interval = 2.0
    data = tmp_path / "data"
    data.mkdir()
    env = _worker_env(data, interval)
    log = (tmp_path / "workers.log").open("ab")
    doomed = subprocess.Popen(
        [sys.executable, "-c", WORKER_WITH_SANDBOX, str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        start_new_session=True,
    )
    survivor = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "worker"], env=env, stdout=log, stderr=log, start_new_session=True
    )
    client = docker.from_env(timeout=60)
    cid = ""
    try:
        assert doomed.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(doomed.stdout.readline), 120)
        cid = line.decode().strip()
        assert cid, (tmp_path / "workers.log").read_text()
        assert client.containers.get(cid).status == "running"
        await asyncio.sleep(2 * interval)  # the survivor's rounds leave a live worker's sandbox alone
        assert client.containers.get(cid).status == "running"
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait()
        killed = time.monotonic()
        gone_after = None
        # One interval for the survivor's next round, plus what the engine needs to remove a container.
        while time.monotonic() - killed < interval + 15:
            try:
                client.containers.get(cid)
            except docker.errors.NotFound:
                gone_after = time.monotonic() - killed
                break
            await asyncio.sleep(0.1)
        print(f"container gone {gone_after} s after its worker was killed (reaper interval {interval} s)")
        assert gone_after is not None, "the container outlived its killed worker"

        # The quota mount the dead worker left on the workspace went with it.
        def quota_left() -> bool:
            return os.path.ismount(workspace) or bool(list(workspace.parent.glob(f"{STATE_PREFIX}*")))

        deadline = time.monotonic() + interval + 15
        while quota_left() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert not quota_left()
    finally:
        for proc in (doomed, survivor):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if cid:
            with contextlib.suppress(docker.errors.NotFound):
                client.containers.get(cid).remove(force=True)
        client.close()
        log.close()

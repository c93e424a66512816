"""Sandbox behaviour every backend shares: results, cwd, env, stdin, file access, diff, close."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from sandboxes.base import (
    TRUNCATION_MARKER,
    Limits,
    Mount,
    PathOutsideWorkspace,
    Sandbox,
    SandboxError,
    SandboxSpec,
)
from sandboxes.factory import SandboxUnavailable, available_backends, make_sandbox
from sandboxes.process import CappedBuffer

#: Backends under test here; "none" runs too since these are not containment checks.
BACKENDS = ["bwrap", "docker", "none"]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """A backend usable here, or a skip that says why not."""
    kind: str = request.param
    problem = available_backends().get(kind, "unknown backend")
    if problem is not None:
        pytest.skip(f"{kind} backend unavailable: {problem}")
    return kind


def git(ws: Path, *args: str) -> str:
    """Run git on the host in the test workspace."""
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(ws), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small git repository with one commit and an ignore rule."""
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (ws / "README.md").write_text("readme\n")
    (ws / "gone.txt").write_text("to be deleted\n")
    (ws / ".gitignore").write_text("*.log\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    return ws


@pytest.fixture
def sandbox(backend: str, workspace: Path) -> Callable[..., Sandbox]:
    """Build a sandbox of the backend under test; keyword arguments go to SandboxSpec."""

    def build(**kwargs: object) -> Sandbox:
        return make_sandbox(backend, SandboxSpec(workspace=workspace, **kwargs))  # type: ignore[arg-type]

    return build


async def test_run_returns_output_and_exit_code(sandbox: Callable[..., Sandbox]) -> None:
    async with sandbox() as sb:
        res = await sb.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
        assert not res.ok and not res.timed_out and not res.oom_killed
        ok = await sb.run(["true"])
        assert ok.ok and ok.duration >= 0
        killed = await sb.run(["sh", "-c", "kill -9 $$"])
        assert killed.exit_code == 128 + 9


async def test_missing_program_is_a_failed_command(sandbox: Callable[..., Sandbox]) -> None:
    async with sandbox() as sb:
        res = await sb.run(["definitely-not-a-program-xyz"])
    assert not res.ok


async def test_cwd_is_relative_to_the_workspace(sandbox: Callable[..., Sandbox], workspace: Path, backend: str) -> None:
    async with sandbox() as sb:
        top = await sb.run(["pwd"])
        sub = await sb.run(["pwd"], cwd="pkg")
        listed = await sb.run(["ls"], cwd="pkg")
        with pytest.raises(PathOutsideWorkspace):
            await sb.run(["pwd"], cwd="../..")
        with pytest.raises(SandboxError):
            await sb.run(["pwd"], cwd="README.md")
    expected_top = "/workspace" if backend != "none" else str(workspace.resolve())
    assert top.stdout.strip() == expected_top
    assert sub.stdout.strip() == expected_top + "/pkg"
    assert listed.stdout.split() == ["mod.py"]


async def test_only_the_explicit_environment_is_passed(
    sandbox: Callable[..., Sandbox], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROBOT_TEST_LEAK", "leaked")
    async with sandbox(env={"FROM_SPEC": "spec", "OVERRIDE": "spec"}) as sb:
        res = await sb.run(["env"], env={"FROM_CALL": "call", "OVERRIDE": "call"})
        with pytest.raises(SandboxError):
            await sb.run(["env"], env={"BAD=NAME": "x"})
    env = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
    assert env["FROM_SPEC"] == "spec" and env["FROM_CALL"] == "call" and env["OVERRIDE"] == "call"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert "REPROBOT_TEST_LEAK" not in env
    # Only minimal_env(), the spec's and the call's variables (and what the shell itself sets).
    allowed = {"FROM_SPEC", "FROM_CALL", "OVERRIDE", "PWD", "SHLVL", "_", "OLDPWD"}
    allowed |= {"PATH", "HOME", "LANG", "LC_ALL", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"}
    allowed |= {"PYTHONHASHSEED", "TERM"}
    assert set(env) <= allowed


async def test_stdin_is_fed(sandbox: Callable[..., Sandbox]) -> None:
    async with sandbox() as sb:
        small = await sb.run(["cat"], stdin=b"hello\n")
        big = await sb.run(["wc", "-c"], stdin=b"x" * 3_000_000)
        unread = await sb.run(["true"], stdin=b"y" * 3_000_000)
        none = await sb.run(["cat"])
    assert small.stdout == "hello\n"
    assert big.stdout.strip() == "3000000"
    assert unread.ok
    assert none.stdout == ""


async def test_output_is_capped_with_a_marker(sandbox: Callable[..., Sandbox]) -> None:
    async with sandbox(limits=Limits(output_bytes=100)) as sb:
        res = await sb.run(["sh", "-c", "printf 'a%.0s' $(seq 1000); printf 'b%.0s' $(seq 1000) >&2"])
    assert res.stdout_truncated and res.stderr_truncated
    assert res.stdout == "a" * 50 + TRUNCATION_MARKER.format(dropped=900) + "a" * 50
    assert res.stderr.startswith("b" * 50) and res.stderr.endswith("b" * 50)


def test_capped_buffer_keeps_head_and_tail_exactly() -> None:
    buf = CappedBuffer(10)
    for chunk in (b"0123", b"456789ab", b"", b"cdefgh"):
        buf.feed(chunk)
    text, cut = buf.text()
    assert cut and text == "01234" + TRUNCATION_MARKER.format(dropped=8) + "defgh"
    exact = CappedBuffer(10)
    exact.feed(b"0123456789")
    assert exact.text() == ("0123456789", False)


async def test_wall_timeout(sandbox: Callable[..., Sandbox]) -> None:
    async with sandbox(limits=Limits(wall_seconds=1)) as sb:
        res = await sb.run(["sh", "-c", "echo before; sleep 30"])
    assert res.timed_out and not res.ok
    assert res.stdout == "before\n"
    assert res.duration < 10


async def test_read_write_and_traversal(sandbox: Callable[..., Sandbox], workspace: Path) -> None:
    async with sandbox() as sb:
        sb.write_file("new/deep/file.txt", "héllo\n")
        assert sb.read_file("new/deep/file.txt") == "héllo\n"
        assert sb.read_file("/workspace/new/deep/file.txt") == "héllo\n"
        res = await sb.run(["cat", "new/deep/file.txt"])
        assert res.stdout == "héllo\n"
        # The command can edit what the bot wrote, and the bot reads the edit back.
        edit = await sb.run(["sh", "-c", "echo more >> new/deep/file.txt"])
        assert edit.ok, edit.output
        assert sb.read_file("new/deep/file.txt") == "héllo\nmore\n"
        for bad in ("../escape.txt", "/etc/passwd", "pkg/../../x", "", "a\x00b"):
            with pytest.raises(PathOutsideWorkspace):
                sb.write_file(bad, "x")
            with pytest.raises(PathOutsideWorkspace):
                sb.read_file(bad)
        os.symlink("/etc", workspace / "etc-link")
        with pytest.raises(PathOutsideWorkspace):
            sb.read_file("etc-link/hostname")
        os.symlink("pkg/mod.py", workspace / "inside-link")
        assert sb.read_file("inside-link").startswith("def f()")
        os.mkfifo(workspace / "fifo")
        with pytest.raises(PathOutsideWorkspace):
            sb.read_file("fifo")
    assert not (workspace.parent / "escape.txt").exists()


async def test_diff_has_new_modified_and_deleted_files(sandbox: Callable[..., Sandbox], workspace: Path) -> None:
    async with sandbox() as sb:
        sb.write_file("pkg/mod.py", "def f():\n    return 2\n")
        res = await sb.run(
            ["sh", "-c", "echo created > made_inside.txt && mkdir -p d && echo n > d/n.txt && rm gone.txt"]
        )
        assert res.ok, res.output
        sb.write_file("debug.log", "ignored\n")
        diff = await sb.diff()
    assert "diff --git a/pkg/mod.py b/pkg/mod.py" in diff
    assert "-    return 1\n+    return 2\n" in diff
    assert "diff --git a/made_inside.txt b/made_inside.txt\nnew file mode 100644" in diff
    assert "+created\n" in diff
    assert "diff --git a/d/n.txt b/d/n.txt" in diff
    assert "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644" in diff
    assert "debug.log" not in diff and "README.md" not in diff
    # The repository's own index is untouched: the new file is still untracked there.
    assert "?? made_inside.txt" in git(workspace, "status", "--porcelain")
    # The diff applies to a clean checkout.
    git(workspace, "stash", "-u", "-q")
    subprocess.run(["git", "-C", str(workspace), "apply"], input=diff, text=True, check=True)
    assert (workspace / "made_inside.txt").read_text() == "created\n"


async def test_close_is_idempotent_and_final(sandbox: Callable[..., Sandbox]) -> None:
    sb = sandbox()
    async with sb:
        assert (await sb.run(["true"])).ok
    await sb.close()
    await sb.close()
    with pytest.raises(SandboxError):
        await sb.run(["true"])


async def test_workspace_is_given_back_after_close(
    sandbox: Callable[..., Sandbox], workspace: Path, backend: str
) -> None:
    mode = workspace.stat().st_mode
    async with sandbox() as sb, sandbox() as nested:
        assert (await sb.run(["sh", "-c", "mkdir -p made/deeper && touch made/deeper/f"])).ok
        assert (await nested.run(["touch", "by-nested"])).ok
        assert "by-nested" in git(workspace, "status", "--porcelain")  # host git works meanwhile
        # Files the bot creates on the host meanwhile (git apply, checkout) stay writable inside.
        (workspace / "pkg" / "mod.py").unlink()
        (workspace / "pkg" / "mod.py").write_text("recreated\n")
        (workspace / "hostdir").mkdir()
        (workspace / "hostdir" / "f.txt").write_text("host\n")
        edit = await sb.run(["sh", "-c", "echo x >>pkg/mod.py && echo x >>hostdir/f.txt && touch hostdir/g"])
        assert edit.ok, edit.output
    owner = (workspace.stat().st_uid, workspace.stat().st_gid)
    for path in [workspace, *workspace.rglob("*")]:
        assert (path.lstat().st_uid, path.lstat().st_gid) == owner, path
    assert workspace.stat().st_mode == mode
    for path in [workspace, *workspace.rglob("*")]:
        if not path.is_symlink():
            assert not [a for a in os.listxattr(path) if a.startswith("system.posix_acl")], path
    assert git(workspace, "status", "--porcelain")  # host git works without safe.directory


def test_factory_rejects_unknown_and_unavailable(tmp_path: Path) -> None:
    backends = available_backends()
    assert set(backends) >= {"bwrap", "docker", "none"}
    assert backends["none"] is None
    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend"):
        make_sandbox("chroot", SandboxSpec(workspace=tmp_path))
    for kind, problem in backends.items():
        if problem is not None:
            with pytest.raises(SandboxUnavailable, match="not available"):
                make_sandbox(kind, SandboxSpec(workspace=tmp_path))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_bwrap_works_for_an_unprivileged_bot(tmp_path: Path) -> None:
    """The non-root path: bwrap builds a user namespace and RLIMIT_NPROC limits processes."""
    if available_backends()["bwrap"] is not None:
        pytest.skip("bwrap unavailable")
    uid = 61001
    # Not under tmp_path: pytest makes that 0700 for root, and the bot user must reach its workspace.
    base = Path(tempfile.mkdtemp(prefix="reprobot-unpriv-"))
    try:
        (base / "ws").mkdir()
        (base / "ws" / "a.txt").write_text("hi\n")
        subprocess.run(["chown", "-R", f"{uid}:{uid}", str(base)], check=True)
        script = (
            "import asyncio, sys\n"
            "from pathlib import Path\n"
            "from sandboxes.base import Limits, SandboxSpec\n"
            "from sandboxes.bwrap import BwrapSandbox\n"
            "async def main():\n"
            f"    spec = SandboxSpec(workspace=Path({str(base / 'ws')!r}), limits=Limits(max_processes=32))\n"
            "    async with BwrapSandbox(spec) as sb:\n"
            "        cmd = 'id -u; cat a.txt; echo new > b.txt; cat /etc/hostname'\n"
            "        r = await sb.run(['sh', '-c', cmd])\n"
            "        print(r.exit_code, r.stdout.split(), r.stderr)\n"
            "asyncio.run(main())\n"
        )
        root = Path(__file__).resolve().parents[1]
        proc = subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                script,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
            cwd="/",
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "0 ['61000', 'hi', 'sandbox']", proc.stdout
        assert (base / "ws" / "b.txt").stat().st_uid == uid
    finally:
        shutil.rmtree(base)


@pytest.fixture
def bwrap_only() -> None:
    """Skip unless bwrap runs here."""
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")


@pytest.mark.usefixtures("bwrap_only")
async def test_bwrap_mounts_are_read_only_unless_asked(workspace: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "tool").write_text("tool\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    mounts = (Mount(env_dir, "/opt/reprobot-env"), Mount(scratch, "/scratch", read_only=False))
    async with make_sandbox("bwrap", SandboxSpec(workspace=workspace, mounts=mounts)) as sb:
        res = await sb.run(
            [
                "sh",
                "-c",
                "cat /opt/reprobot-env/bin/tool; touch /opt/reprobot-env/x || echo RO; echo w > /scratch/w",
            ]
        )
    assert res.stdout.split() == ["tool", "RO"], res.output
    assert not (env_dir / "x").exists()
    assert (scratch / "w").read_text() == "w\n"


@pytest.mark.usefixtures("bwrap_only")
async def test_bwrap_rootfs_replaces_the_host_root(workspace: Path, tmp_path: Path) -> None:
    """A stand-in for a debootstrapped root: its /etc and /opt are used, never the host's."""
    rootfs = tmp_path / "rootfs"
    for name in ("usr", "opt", "etc", "var/lib", "root"):
        (rootfs / name).mkdir(parents=True)
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            os.symlink(os.readlink(f"/{name}"), rootfs / name)
    shutil.copy("/etc/ld.so.cache", rootfs / "etc" / "ld.so.cache")
    (rootfs / "etc" / "rootfs-marker").write_text("from rootfs\n")
    (rootfs / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (rootfs / "var" / "lib" / "data").write_text("rootfs data\n")
    env_dir = tmp_path / "venv"
    env_dir.mkdir()
    (env_dir / "marker").write_text("env\n")
    # The fake rootfs has no programs: the host /usr is lent to it as a plain mount.
    mounts = (Mount(Path("/usr"), "/usr"), Mount(env_dir, "/opt/reprobot-env"))
    spec = SandboxSpec(workspace=workspace, mounts=mounts, rootfs=rootfs)
    async with make_sandbox("bwrap", spec) as sb:
        res = await sb.run(
            [
                "sh",
                "-c",
                "cat /etc/rootfs-marker /var/lib/data /opt/reprobot-env/marker; id -un;"
                " ls /etc/apt || echo NO-HOST-ETC",
            ]
        )
    lines = res.stdout.splitlines()
    assert lines[:4] == ["from rootfs", "rootfs data", "env", "sandbox"], res.output
    assert "NO-HOST-ETC" in lines

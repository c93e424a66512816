"""Host-side workspace access for backends: confined file I/O, a safe git diff, ownership hand-over."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import stat
import struct
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from sandboxes.base import PathOutsideWorkspace, SandboxError, resolve_in_workspace

log = logging.getLogger(__name__)

#: read_file refuses bigger files rather than pulling them into the bot's memory.
MAX_READ_BYTES = 32 * 1024 * 1024
#: A diff larger than this is an error rather than something to hand to a model or a forge.
MAX_DIFF_BYTES = 64 * 1024 * 1024
GIT_TIMEOUT_SECONDS = 300.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

# Repository files may have been written by untrusted code: no hooks, no fsmonitor command, no
# external diff or textconv, no system/global config, and ownership checks off (the sandbox uid owns it).
_GIT_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "safe.directory=*",
    "diff.external=",
    "protocol.allow=never",
)


def _open_confined(
    workspace: Path,
    relpath: str,
    flags: int,
    *,
    owner: tuple[int, int] | None = None,
    make_parents: bool = False,
) -> int:
    """Open a workspace file walking from the workspace root without following any symlink.

    resolve_in_workspace rejects paths that resolve outside; walking the resolved components with
    O_NOFOLLOW then makes a symlink swapped in meanwhile (by code running in the sandbox) fail instead.
    """
    root = workspace.resolve()
    parts = resolve_in_workspace(workspace, relpath).relative_to(root).parts
    if not parts:
        raise PathOutsideWorkspace(f"{relpath!r} names the workspace itself, not a file")
    dir_fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if make_parents:
                try:
                    os.mkdir(part, 0o755, dir_fd=dir_fd)
                    if owner is not None:
                        os.chown(part, *owner, dir_fd=dir_fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            next_fd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        # O_NONBLOCK: a FIFO planted under a file's name must not hang the bot.
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            raise PathOutsideWorkspace(f"{relpath!r} changed under us or is not a regular file") from exc
        raise
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathOutsideWorkspace(f"{relpath!r} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_text(workspace: Path, relpath: str) -> str:
    """Read a workspace file as UTF-8 text (undecodable bytes replaced)."""
    fd = _open_confined(workspace, relpath, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise SandboxError(f"{relpath!r} is larger than {MAX_READ_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def write_text(workspace: Path, relpath: str, content: str, *, owner: tuple[int, int] | None = None) -> None:
    """Write a workspace file, creating parent folders; `owner` hands new entries to the sandbox uid."""
    fd = _open_confined(workspace, relpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, owner=owner, make_parents=True)
    with os.fdopen(fd, "wb") as f:
        if owner is not None:
            os.fchown(f.fileno(), *owner)
        f.write(content.encode("utf-8"))


_ACL_ACCESS = "system.posix_acl_access"
_ACL_DEFAULT = "system.posix_acl_default"


def _acl_xattr(owner: int, group: int, other: int, uid: int) -> bytes:
    """A POSIX ACL in the kernel's xattr format: base permissions plus rwx for one extra user."""
    undefined = 0xFFFFFFFF
    entries = [
        (0x01, owner, undefined),  # owning user
        (0x02, 7, uid),  # the sandbox user
        (0x04, group, undefined),  # owning group
        (0x10, 7, undefined),  # mask
        (0x20, other, undefined),  # others
    ]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below root except the top-level .git, with its lstat; symlinks are never followed."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if dirpath == str(root):
            # .git may be a directory or a gitdir file; either way it stays with its owner.
            dirnames[:] = [d for d in dirnames if d != ".git"]
            filenames = [f for f in filenames if f != ".git"]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                yield path, os.lstat(path)
            except FileNotFoundError:
                continue


def _remove_acls(path: str | Path, is_dir: bool) -> None:
    for name in (_ACL_ACCESS, _ACL_DEFAULT) if is_dir else (_ACL_ACCESS,):
        try:
            os.removexattr(path, name)
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.EOPNOTSUPP):
                log.warning("cannot remove %s from %s: %s", name, path, exc)


class WorkspaceGrant:
    """Lends a folder (a workspace) to the sandbox uid while sandboxes on it are open, then takes it back.

    Everything below the root is chowned to the sandbox uid, except .git (mounted read-only inside
    anyway). The root and .git keep their owner, so host-side git run by the bot keeps working
    without safe.directory; the sandbox user gets write access to the root through an ACL entry.
    Default ACLs on every directory give it the same access to files the bot creates meanwhile
    (git apply, checkouts). Closing the last sandbox removes the ACLs and chowns everything back
    to the root's owner.
    """

    _lock = threading.Lock()
    _users: ClassVar[dict[Path, int]] = {}
    #: Per lent root: its (mode, uid, gid) before lending.
    _saved: ClassVar[dict[Path, tuple[int, int, int]]] = {}

    def __init__(self, root: Path, uid: int, gid: int) -> None:
        self.root = root.resolve()
        self.uid, self.gid = uid, gid

    def acquire(self) -> None:
        """Hand the folder to the sandbox uid (first user only); blocking, run it in a thread."""
        with self._lock:
            count = self._users.get(self.root, 0)
            if count == 0:
                st = self.root.stat()
                self._saved[self.root] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
                try:
                    self._lend()
                except OSError:
                    self._give_back()
                    raise
            self._users[self.root] = count + 1

    def _lend(self) -> None:
        mode = self._saved[self.root][0]
        default = _acl_xattr(7, 5, 5, self.uid)
        try:
            os.setxattr(self.root, _ACL_ACCESS, _acl_xattr(mode >> 6 & 7, mode >> 3 & 7, mode & 7, self.uid))
            if self.root.is_dir():
                os.setxattr(self.root, _ACL_DEFAULT, default)
            acls = True
        except OSError as exc:
            if exc.errno != errno.EOPNOTSUPP:
                raise
            # No ACLs on this filesystem: lend the root too; host git then needs safe.directory.
            log.warning("no ACL support under %s; chowning its root to the sandbox uid", self.root)
            os.chown(self.root, self.uid, self.gid)
            acls = False
        for path, st in _walk(self.root):
            if (st.st_uid, st.st_gid) != (self.uid, self.gid):
                os.lchown(path, self.uid, self.gid)
            if acls and stat.S_ISDIR(st.st_mode):
                os.setxattr(path, _ACL_DEFAULT, default, follow_symlinks=False)

    def _give_back(self) -> None:
        mode, uid, gid = self._saved.pop(self.root)
        for path, st in _walk(self.root):
            if not stat.S_ISLNK(st.st_mode):
                _remove_acls(path, stat.S_ISDIR(st.st_mode))
            if (st.st_uid, st.st_gid) != (uid, gid):
                os.lchown(path, uid, gid)
        _remove_acls(self.root, self.root.is_dir())
        os.chown(self.root, uid, gid)
        # The ACL mask stood in for the group bits; put the recorded mode back.
        os.chmod(self.root, mode)

    def release(self) -> None:
        """Give the folder back to its owner when the last sandbox on it closes."""
        with self._lock:
            count = self._users.get(self.root, 0) - 1
            if count > 0:
                self._users[self.root] = count
                return
            self._users.pop(self.root, None)
            if self.root in self._saved:
                self._give_back()


async def _read_capped(stream: asyncio.StreamReader, cap: int, *, drain: bool) -> bytes:
    """Read a pipe to its end, keeping at most cap bytes (cap + 1 when more came and drain is False).

    StreamReader.read(n) returns whatever is buffered, not n bytes: reading once left git blocked on a
    full pipe for any diff past the first chunk.
    """
    kept = bytearray()
    while True:
        block = await stream.read(1 << 20)
        if not block:
            return bytes(kept)
        if len(kept) <= cap:
            kept += block[: cap + 1 - len(kept)]
        if len(kept) > cap and not drain:
            return bytes(kept)


async def _git(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    """Run one host git command with the safe configuration, returning stdout or raising SandboxError."""
    argv = ["git"]
    for item in _GIT_SAFE_CONFIG:
        argv += ["-c", item]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        out_task = asyncio.ensure_future(_read_capped(proc.stdout, MAX_DIFF_BYTES, drain=False))
        err_task = asyncio.ensure_future(_read_capped(proc.stderr, 64 * 1024, drain=True))
        try:
            out, err = await asyncio.wait_for(asyncio.gather(out_task, err_task), GIT_TIMEOUT_SECONDS)
        finally:
            out_task.cancel()
            err_task.cancel()
        if len(out) > MAX_DIFF_BYTES:
            raise SandboxError(f"git {args[0]} output exceeds {MAX_DIFF_BYTES} bytes")
        await asyncio.wait_for(proc.wait(), GIT_TIMEOUT_SECONDS)
    except TimeoutError:
        raise SandboxError(f"git {args[0]} timed out") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        message = err.decode(errors="replace").strip()
        raise SandboxError(f"git {args[0]} failed ({proc.returncode}): {message}")
    return out


async def git_diff(workspace: Path) -> str:
    """Unified git diff (a/ b/ prefixes) of the workspace against HEAD, untracked files included.

    A throw-away index gets every untracked file as intent-to-add, so the repository's own index
    is untouched and no blobs are written for new files. Starting that index from HEAD (no cached
    stat data) means a content change cannot hide behind a restored mtime.
    """
    root = workspace.resolve()
    if not (root / ".git").exists():
        raise SandboxError(f"{root} is not a git repository")
    with tempfile.TemporaryDirectory(prefix="reprobot-diff-") as tmp:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": tmp,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_INDEX_FILE": os.path.join(tmp, "index"),
            # Never pick up a repository above the workspace.
            "GIT_CEILING_DIRECTORIES": str(root.parent),
        }
        await _git(["read-tree", "HEAD"], root, env)
        await _git(["add", "--intent-to-add", "--all", "--", "."], root, env)
        out = await _git(
            [
                "diff",
                "HEAD",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--no-renames",
                "--binary",
                "--ignore-submodules=all",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "--",
            ],
            root,
            env,
        )
    return out.decode("utf-8", errors="replace")

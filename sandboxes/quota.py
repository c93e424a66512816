"""Workspace disk quota: the workspace is covered by an overlay whose upper layer is a size-limited disk.

While sandboxes are open on a workspace, the bot (root) mounts an overlay over the workspace folder itself:
the folder as it was is the read-only lower layer, and every write goes to the upper layer, which lives on
an ext4 file system in a sparse image file of the quota's size, loop-mounted. So:

- what sandboxes write is capped at the quota (ENOSPC inside), and never takes more of the host's disk;
- the bot keeps using the same path (read_file, write_file, git diff), it just sees the overlay;
- nothing is copied when the sandbox opens; when the last sandbox on the workspace closes, the upper layer
  (only what changed) is folded into the folder, the mounts are removed and the image deleted.

A tmpfs upper layer would be cheaper to set up, but its pages are charged to the writer's memory cgroup: a
sandbox filling its quota would be OOM-killed rather than get ENOSPC, and the host's RAM would hold it.
Mounting needs root; as a normal user the quota cannot be applied (RLIMIT_FSIZE still caps each file).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from sandboxes.base import SandboxError
from sandboxes.process import owner_alive, process_started

log = logging.getLogger(__name__)

#: Host tools (mkfs, mount) get a scrubbed environment: none of the bot's variables.
_TOOL_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
_TOOL_TIMEOUT = 120.0
#: ext4 needs a few MiB for its own metadata; a smaller quota is refused with a clear error.
MIN_QUOTA_BYTES = 8 * 1024**2
#: Prefix of the state folder (image, mount point) made beside the workspace; the pid finds stale ones.
STATE_PREFIX = ".reprobot-quota-"
_OPAQUE_XATTR = "trusted.overlay.opaque"
#: Characters the overlay mount options cannot carry in a path.
_BAD_PATH_CHARS = frozenset(",:\\\n")


class QuotaError(SandboxError):
    """The workspace quota could not be set up or taken down; the message names the step."""


def _tool(argv: list[str]) -> None:
    """Run a host tool (blocking) and raise QuotaError with its own message when it fails."""
    try:
        proc = subprocess.run(argv, env=_TOOL_ENV, capture_output=True, timeout=_TOOL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise QuotaError(f"workspace quota: {argv[0]} could not run: {exc}") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip() or f"exit {proc.returncode}"
        raise QuotaError(f"workspace quota: {' '.join(argv[:2])} failed: {err}")


def parse_size(text: str) -> int:
    """Bytes from "2147483648", "2G", "2GiB", "512M", "512MB", "64k" (binary units); ValueError if not."""
    value = text.strip().lower().replace(" ", "")
    for suffix in ("ib", "b"):
        if value.endswith(suffix) and value[: -len(suffix)][-1:] in "kmgt":
            value = value[: -len(suffix)]
            break
    scale = 1
    if value[-1:] in ("k", "m", "g", "t"):
        scale = 1024 ** ("kmgt".index(value[-1]) + 1)
        value = value[:-1]
    number = float(value)  # raises ValueError for anything else
    if number < 0 or number != number:
        raise ValueError(f"negative or invalid size {text!r}")
    return int(number * scale)


@dataclass
class _Mounted:
    state: Path
    users: int


_warned_unprivileged = False
_reaped_stale = False


def workspace_quota(root: Path, limit_bytes: int, *, privileged: bool) -> WorkspaceQuota | None:
    """The quota to acquire for a workspace, or None when there is none to apply (logged once if it cannot be)."""
    global _warned_unprivileged
    if limit_bytes <= 0:
        return None
    if not privileged:
        if not _warned_unprivileged:
            _warned_unprivileged = True
            log.warning("workspace disk quota not applied: mounting it needs root (files are still size-capped)")
        return None
    return WorkspaceQuota(root, limit_bytes)


class WorkspaceQuota:
    """Caps what sandboxes write into one workspace; shared by every sandbox open on it, like WorkspaceGrant.

    acquire() and release() are blocking (they run mkfs and mount): call them in a thread. Acquire after
    the workspace was lent to the sandbox uid, release before it is given back: lending chowns every file,
    which through the overlay would copy the whole tree into the quota.
    """

    _lock = threading.Lock()
    _active: ClassVar[dict[Path, _Mounted]] = {}

    def __init__(self, root: Path, limit_bytes: int) -> None:
        self.root = root.resolve()
        self.limit = limit_bytes

    def acquire(self) -> None:
        """Mount the overlay over the workspace (first user only)."""
        global _reaped_stale
        if not _reaped_stale:
            # A crashed CLI run has no worker to clean up after it: the next process's first quota does.
            _reaped_stale = True
            reap_stale_quota_mounts()
        with self._lock:
            mounted = self._active.get(self.root)
            if mounted is not None:
                mounted.users += 1
                return
            self._active[self.root] = _Mounted(self._mount(), 1)

    def release(self) -> None:
        """When the last sandbox on the workspace closes, fold what was written into it and unmount."""
        with self._lock:
            mounted = self._active.get(self.root)
            if mounted is None:
                return
            mounted.users -= 1
            if mounted.users > 0:
                return
            del self._active[self.root]
            self._unmount(mounted.state)

    def _mount(self) -> Path:
        if self.limit < MIN_QUOTA_BYTES:
            raise QuotaError(f"workspace quota of {self.limit} bytes is below the minimum of {MIN_QUOTA_BYTES}")
        if _BAD_PATH_CHARS & set(str(self.root)):
            raise QuotaError(f"workspace path {self.root} contains a character overlay options cannot carry")
        owner = f"{os.getpid()}-{process_started(os.getpid())}-"
        state = Path(tempfile.mkdtemp(prefix=f"{STATE_PREFIX}{owner}", dir=self.root.parent))
        disk = state / "fs"
        try:
            image = state / "disk.img"
            with image.open("wb") as fh:
                fh.truncate(self.limit)  # sparse: host blocks are only taken as the sandbox writes
            # No reserved blocks (the sandbox is not root), no journal (a scratch disk, deleted at close).
            _tool(["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "nodiscard", str(image)])
            disk.mkdir()
            _tool(["mount", "-o", "loop,nosuid,nodev,noatime", str(image), str(disk)])
            upper, work = disk / "upper", disk / "work"
            upper.mkdir()
            work.mkdir()
            # The overlay's root takes its owner, mode and ACLs from the upper layer's root.
            st = self.root.stat()
            os.chown(upper, st.st_uid, st.st_gid)
            os.chmod(upper, stat.S_IMODE(st.st_mode))
            for name in os.listxattr(self.root):
                if name.startswith("system.posix_acl"):
                    os.setxattr(upper, name, os.getxattr(self.root, name))
            # redirect_dir/metacopy off: the upper layer then holds whole files and plain whiteouts only,
            # which _fold() understands (renaming a lower directory gets EXDEV; tools fall back to copying).
            options = f"lowerdir={self.root},upperdir={upper},workdir={work},redirect_dir=off,metacopy=off,index=off"
            _tool(["mount", "-t", "overlay", "-o", options, "reprobot-workspace", str(self.root)])
        except BaseException:
            with contextlib.suppress(QuotaError):
                if os.path.ismount(disk):
                    _tool(["umount", str(disk)])
            shutil.rmtree(state, ignore_errors=True)
            raise
        log.debug("workspace %s: %d-byte quota mounted from %s", self.root, self.limit, state)
        return state

    def _unmount(self, state: Path) -> None:
        disk = state / "fs"
        try:
            _tool(["umount", str(self.root)])
        except QuotaError:
            # Something still holds the overlay: detach it so the folder is usable, and fold what it wrote.
            log.warning("workspace %s busy at close; detaching its overlay", self.root)
            _tool(["umount", "--lazy", str(self.root)])
        failed = fold(disk / "upper", self.root)
        if failed:
            log.warning("workspace %s: %d entries written in the sandbox could not be kept", self.root, failed)
        try:
            _tool(["umount", str(disk)])
        except QuotaError:
            _tool(["umount", "--lazy", str(disk)])
        shutil.rmtree(state, ignore_errors=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, _OPAQUE_XATTR, follow_symlinks=False) == b"y"
    except OSError:
        return False


def _copy_meta(st: os.stat_result, dest: Path) -> None:
    os.lchown(dest, st.st_uid, st.st_gid)
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(dest, stat.S_IMODE(st.st_mode))
        if not stat.S_ISDIR(st.st_mode):
            os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))


def fold(upper: Path, lower: Path) -> int:
    """Apply an overlay's upper layer to its lower folder, so the folder shows what the overlay showed.

    Whiteouts (0:0 character devices) delete, opaque directories replace, everything else is copied over
    with its owner, mode and times. Returns how many entries could not be applied (logged, not raised:
    a sandbox may have made paths too long to copy, and the rest must still be kept).
    """
    failed = 0
    stack = [(upper, lower)]
    while stack:
        src_dir, dest_dir = stack.pop()
        try:
            entries = list(os.scandir(src_dir))
        except OSError as exc:
            log.warning("cannot read %s: %s", src_dir, exc)
            failed += 1
            continue
        for entry in entries:
            src, dest = Path(entry.path), dest_dir / entry.name
            try:
                st = entry.stat(follow_symlinks=False)
                mode = st.st_mode
                if stat.S_ISCHR(mode) and st.st_rdev == 0:
                    _remove(dest)  # a whiteout: deleted in the overlay
                elif stat.S_ISDIR(mode):
                    if os.path.lexists(dest) and (_opaque(src) or dest.is_symlink() or not dest.is_dir()):
                        _remove(dest)
                    if not os.path.lexists(dest):
                        os.mkdir(dest)
                    _copy_meta(st, dest)
                    stack.append((src, dest))
                else:
                    if os.path.lexists(dest):
                        _remove(dest)
                    if stat.S_ISREG(mode):
                        shutil.copyfile(src, dest, follow_symlinks=False)
                    elif stat.S_ISLNK(mode):
                        os.symlink(os.readlink(src), dest)
                    elif stat.S_ISFIFO(mode):
                        os.mkfifo(dest)
                    else:
                        continue  # sockets and devices have no content worth keeping
                    _copy_meta(st, dest)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    log.warning("cannot apply %s to %s: %s", src, dest, exc)
                failed += 1
    return failed


def _unescape_mountinfo(field: str) -> str:
    """Undo the octal escapes (\\040 for a space...) of /proc/self/mountinfo."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def reap_stale_quota_mounts() -> int:
    """Unmount quota overlays and disks left by bot processes that died (kill -9); returns how many.

    The workspace keeps what it had before the sandbox opened; what the dead process's sandboxes wrote is
    dropped with its image, as the job that made it is retried from the start anyway.
    """
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return 0
    stale: dict[Path, list[str]] = {}
    for line in lines:
        before, _, after = line.partition(" - ")
        target = _unescape_mountinfo(before.split()[4])
        fstype, source, options = [*after.split(), "", "", ""][:3]
        if fstype == "overlay" and source == "reprobot-workspace":
            match = re.search(r"upperdir=([^,]*)", _unescape_mountinfo(options))
            state = Path(match.group(1)).parent.parent if match else None
        elif fstype == "ext4" and Path(target).name == "fs" and Path(target).parent.name.startswith(STATE_PREFIX):
            state = Path(target).parent
        else:
            continue
        if state is None or not state.name.startswith(STATE_PREFIX):
            continue
        pid, _, rest = state.name[len(STATE_PREFIX) :].partition("-")
        started = rest.partition("-")[0]
        if not pid.isdigit() or owner_alive(int(pid), started or None):
            continue
        stale.setdefault(state, []).append(target)
    for state, targets in stale.items():
        # Overlays first (they sit on the disk), the most recently mounted first.
        for target in reversed(targets):
            with contextlib.suppress(QuotaError):
                _tool(["umount", "--lazy", target])
        shutil.rmtree(state, ignore_errors=True)
        log.info("removed the workspace quota %s of a process that is gone", state)
    return len(stale)

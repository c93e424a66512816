"""Keep the cache folder bounded: built environments and stored baselines go, least recently used first.

Both caches only grow: every new set of requirements builds an environment (tens to hundreds of MB), and every
commit a job starts from keeps a baseline. A deployment that serves many repos for months would fill its disk.
Workers prune on their hourly round (bot/worker.py), and `reprobot cache prune` does it by hand:

- an entry unused for `max_days` goes (0: no age limit);
- then, while the caches hold more than `max_bytes`, the least recently used entry goes (0: no size limit);
- an entry used within `min_idle` seconds never goes, whatever the limits: a running job may be using it.

"Used" is the entry's marker mtime, touched by every job that reads it: an environment's `.reprobot-ready`
(under a shared lock on its build lock, so a prune cannot slip between a job's check and its touch), a
baseline's file. An environment is removed under its build lock, by renaming it aside first: a job that
looks after that builds it again, and a build in progress is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CacheEntry", "PruneReport", "entries", "lock_shared", "plan", "prune", "touch"]

#: The marker of a finished environment (sandboxes/environment.py writes it last).
READY = ".reprobot-ready"
#: The prefix of an environment renamed aside for removal (one a crash left behind goes at the next prune).
TRASH = ".trash-"


@dataclass(frozen=True)
class CacheEntry:
    """One removable cache entry: an environment folder or a baseline file."""

    kind: str  # "environment" or "baseline"
    path: Path
    size: int
    used: float  # seconds since the epoch


@dataclass
class PruneReport:
    """What a prune removed (or would remove, in a dry run) and what the caches hold after it."""

    removed: list[CacheEntry] = field(default_factory=list)
    kept_bytes: int = 0
    skipped_busy: int = 0

    @property
    def freed_bytes(self) -> int:
        """Bytes the removed entries held."""
        return sum(entry.size for entry in self.removed)


def touch(marker: Path) -> None:
    """Mark a cache entry as used now (its marker's mtime); a vanished marker is left alone."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(marker)


@contextlib.contextmanager
def lock_shared(lock_path: Path) -> Iterator[None]:
    """Hold an environment's build lock shared: a prune (which takes it exclusively) waits meanwhile."""
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tree_size(root: Path) -> int:
    """Bytes of the regular files under `root` (symlinks not followed)."""
    total = 0
    stack = [root]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as it:
            for item in it:
                with contextlib.suppress(OSError):
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.is_file(follow_symlinks=False):
                        total += item.stat(follow_symlinks=False).st_size
    return total


def entries(cache_dir: Path) -> list[CacheEntry]:
    """Every finished environment and stored baseline under `cache_dir`, with its size and last use."""
    found: list[CacheEntry] = []
    envs = cache_dir / "envs"
    if envs.is_dir():
        for folder in sorted(envs.iterdir()):
            marker = folder / READY
            if folder.name.startswith(TRASH) or folder.is_symlink() or not folder.is_dir() or not marker.is_file():
                continue  # a lock file, a build in progress, or something that is not ours
            with contextlib.suppress(FileNotFoundError):
                found.append(CacheEntry("environment", folder, _tree_size(folder), marker.stat().st_mtime))
    baselines = cache_dir / "baselines"
    if baselines.is_dir():
        for file in sorted(baselines.glob("*.json.gz")):
            with contextlib.suppress(FileNotFoundError):
                stat = file.stat()
                found.append(CacheEntry("baseline", file, stat.st_size, stat.st_mtime))
    return found


def plan(found: list[CacheEntry], *, max_bytes: int, max_days: float, min_idle: float, now: float) -> list[CacheEntry]:
    """Which entries to remove (pure): too old first, then least recently used while over `max_bytes`."""
    removable = [e for e in found if now - e.used >= min_idle]
    doomed = [e for e in removable if max_days > 0 and now - e.used > max_days * 86400]
    total = sum(e.size for e in found) - sum(e.size for e in doomed)
    if max_bytes > 0:
        for entry in sorted((e for e in removable if e not in doomed), key=lambda e: e.used):
            if total <= max_bytes:
                break
            doomed.append(entry)
            total -= entry.size
    return doomed


def prune(
    cache_dir: Path,
    *,
    max_bytes: int,
    max_days: float,
    min_idle: float = 86400.0,
    now: float | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Remove what `plan` picks under `cache_dir` (nothing in a dry run); blocking, run it on a thread."""
    now = time.time() if now is None else now
    if not dry_run and (cache_dir / "envs").is_dir():
        for left in (cache_dir / "envs").glob(f"{TRASH}*"):
            shutil.rmtree(left, ignore_errors=True)
    found = entries(cache_dir)
    report = PruneReport()
    for entry in plan(found, max_bytes=max_bytes, max_days=max_days, min_idle=min_idle, now=now):
        if dry_run or _remove(entry, min_idle=min_idle, now=now):
            report.removed.append(entry)
        else:
            report.skipped_busy += 1
    report.kept_bytes = sum(e.size for e in found) - report.freed_bytes
    return report


def _remove(entry: CacheEntry, *, min_idle: float, now: float) -> bool:
    """Remove one entry unless it was used meanwhile or is being built; True when it is gone."""
    if entry.kind == "baseline":
        with contextlib.suppress(FileNotFoundError):
            if now - entry.path.stat().st_mtime < min_idle:
                return False  # read again since the plan
            entry.path.unlink()
        return True
    lock_path = entry.path.parent / f"{entry.path.name}.lock"
    with lock_path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a job is checking it or building it right now
        try:
            marker = entry.path / READY
            if not marker.is_file() or now - marker.stat().st_mtime < min_idle:
                return False
            aside = entry.path.parent / f"{TRASH}{entry.path.name}-{uuid.uuid4().hex[:8]}"
            entry.path.rename(aside)  # from here on, a job finds no environment and builds one
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    shutil.rmtree(aside, ignore_errors=True)
    return True

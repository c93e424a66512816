"""Per-sandbox cgroups (v1 pids+memory, or v2) so limits hold even for root and OOM kills are seen."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from pathlib import Path

from sandboxes.base import Limits

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def _own_cgroups() -> dict[str, str]:
    """Controller name (or "" for the v2 unified tree) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _remove_stale(parent: Path) -> None:
    """Remove empty cgroups left by reprobot processes that died without closing their sandboxes."""
    try:
        entries = [e for e in os.listdir(parent) if e.startswith("reprobot-")]
    except OSError:
        return
    for entry in entries:
        try:
            os.kill(int(entry.split("-")[1]), 0)
            continue  # its creator still runs
        except ProcessLookupError:
            pass
        except (ValueError, IndexError, PermissionError):
            continue
        with contextlib.suppress(OSError):
            (parent / entry).rmdir()  # fails harmlessly (EBUSY) while anything still lives in it


class SandboxCgroup:
    """One leaf cgroup per sandbox: a pids limit, a memory limit, OOM accounting and a reliable kill.

    Per sandbox rather than per command: moving processes into a freshly made cgroup pair slowed
    every bwrap start by ~15 ms here, a reused one costs nothing measurable.
    """

    def __init__(self, dirs: dict[str, Path], version: int) -> None:
        self.dirs = dirs  # controller -> leaf directory ("unified" for v2)
        self.version = version

    @classmethod
    def create(cls, limits: Limits, *, extra_pids: int = 0) -> SandboxCgroup | None:
        """Make a leaf under this process's own cgroup; None when cgroups cannot be used here."""
        own = _own_cgroups()
        name = f"reprobot-{os.getpid()}-{next(_counter)}"
        pids_max = str(limits.max_processes + extra_pids)
        mem = str(limits.memory_bytes)
        if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:
            return cls._create_v2(CGROUP_ROOT / own[""].lstrip("/"), name, pids_max, mem)
        dirs: dict[str, Path] = {}
        settings = {
            "pids": [("pids.max", pids_max)],
            # memsw only exists with swap accounting; writing it keeps swap from absorbing the limit.
            "memory": [("memory.limit_in_bytes", mem), ("memory.memsw.limit_in_bytes", mem)],
        }
        for controller, values in settings.items():
            if controller not in own:
                continue
            parent = CGROUP_ROOT / controller / own[controller].lstrip("/")
            _remove_stale(parent)
            leaf = parent / name
            try:
                leaf.mkdir()
            except OSError as exc:
                log.debug("cgroup %s unavailable: %s", controller, exc)
                continue
            try:
                _write(leaf / values[0][0], values[0][1])
            except OSError as exc:
                # A controller whose limit did not take must not count as limiting: rlimits then apply.
                log.warning("cannot set %s in %s: %s", values[0][0], leaf, exc)
                leaf.rmdir()
                continue
            for fname, value in values[1:]:
                with contextlib.suppress(OSError):
                    _write(leaf / fname, value)
            dirs[controller] = leaf
        return cls(dirs, 1) if dirs else None

    @classmethod
    def _create_v2(cls, parent: Path, name: str, pids_max: str, mem: str) -> SandboxCgroup | None:
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            return None
        # Without delegated controllers a leaf would limit nothing; rlimits are the fallback then.
        if "pids" not in enabled and "memory" not in enabled:
            return None
        _remove_stale(parent)
        leaf = parent / name
        try:
            leaf.mkdir()
        except OSError as exc:
            log.debug("cgroup v2 unavailable: %s", exc)
            return None
        for fname, value in (("pids.max", pids_max), ("memory.max", mem), ("memory.swap.max", "0")):
            if (leaf / fname).exists():
                try:
                    _write(leaf / fname, value)
                except OSError as exc:
                    log.warning("cannot set %s in %s: %s", fname, leaf, exc)
        return cls({"unified": leaf}, 2)

    @property
    def has_pids(self) -> bool:
        """True when the process count is limited by this cgroup."""
        if self.version == 2:
            return (self.dirs["unified"] / "pids.max").exists()
        return "pids" in self.dirs

    @property
    def has_memory(self) -> bool:
        """True when memory is limited by this cgroup."""
        if self.version == 2:
            return (self.dirs["unified"] / "memory.max").exists()
        return "memory" in self.dirs

    @property
    def procs_files(self) -> list[str]:
        """The cgroup.procs files a child writes "0" to, before exec, to join this cgroup."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def pids(self) -> set[int]:
        """Processes currently in the cgroup."""
        found: set[int] = set()
        for d in self.dirs.values():
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return found

    def kill_all(self) -> None:
        """SIGKILL everything in the cgroup; new forks are impossible once the members are all dead."""
        kill_file = self.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill"
        if kill_file.exists():
            try:
                _write(kill_file, "1")
                return
            except OSError as exc:
                log.debug("cgroup.kill failed: %s", exc)
        # Repeat: a member may fork between reading the list and the kill.
        for _ in range(10):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def oom_kills(self) -> int:
        """How many processes of this cgroup the kernel OOM killer has killed so far."""
        if self.version == 2:
            path = self.dirs["unified"] / "memory.events"
        elif "memory" in self.dirs:
            path = self.dirs["memory"] / "memory.oom_control"
        else:
            return 0
        try:
            for line in path.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            return 0
        return 0

    def destroy(self, wait: float = 5.0) -> None:
        """Kill what is left, wait for it to be gone, and remove the cgroup directories."""
        deadline = time.monotonic() + wait
        self.kill_all()
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
            self.kill_all()
        for d in self.dirs.values():
            # Removal can briefly fail with EBUSY while killed members are reaped.
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() >= deadline:
                        log.warning("cannot remove cgroup %s: %s", d, exc)
                        break
                    time.sleep(0.01)

"""Bubblewrap backend: new namespaces, no network, a minimal read-only root, an unprivileged uid, limits."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from sandboxes.backend import WorkspaceLease, check_mount_sources, check_mount_targets
from sandboxes.base import WORKSPACE_MOUNT, SandboxError, SandboxSpec
from sandboxes.hostsandbox import ProcessSandbox
from sandboxes.process import Launch
from sandboxes.seccomp import no_userns_bpf
from sandboxes.session import SessionPlan, agent_source

log = logging.getLogger(__name__)

#: Host uid/gid the sandboxed command runs as when the bot is root (and its uid inside in every case).
#: Not in the host's passwd on purpose: nothing on the host belongs to it except lent workspaces.
SANDBOX_UID = 61000
SANDBOX_GID = 61000
BWRAP = "/usr/bin/bwrap"
SETPRIV = "/usr/bin/setpriv"

#: Host directories making up the root in host mode (the /bin, /lib... symlinks are mirrored as such).
HOST_TOP = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The only host /etc entries programs get: the dynamic linker, alternatives, Python's and time data.
HOST_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "mime.types",
    "protocols",
    "services",
)  # plus /etc/python3*
#: Never taken from a root filesystem: made fresh, private to the bot, or generated below.
_ROOTFS_SKIP = frozenset({"/proc", "/dev", "/sys", "/tmp", "/run", "/root", "/home", "/lost+found", WORKSPACE_MOUNT})
_ROOTFS_ETC_SKIP = frozenset({"resolv.conf", "shadow", "shadow-", "gshadow", "gshadow-"})


def _generated_etc(uid: int, gid: int) -> dict[str, str]:
    """Small /etc files written for the sandbox instead of taking the host's."""
    return {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{uid}:{gid}:reprobot sandbox:/tmp:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
        "group": f"root:x:0:\nsandbox:x:{gid}:\nnogroup:x:65534:\n",
        "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        "hostname": "sandbox\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
        # The workspace root keeps the bot's ownership; git inside must not refuse it.
        "gitconfig": "[safe]\n\tdirectory = *\n[core]\n\tfsmonitor = false\n",
    }


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("reprobot-bwrap", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _tree_args(src: Path, dest: str, expand: set[str], skip: frozenset[str]) -> list[str]:
    """ro-bind src at dest; directories in `expand` are recreated with their entries bound one by one.

    Recreating a directory (in bwrap's tmpfs root) is what lets a mount point be created below a
    read-only directory of the root filesystem, e.g. /opt/reprobot-env.
    """
    if src.is_symlink():
        return ["--symlink", os.readlink(src), dest]
    if dest not in expand or not src.is_dir():
        return ["--ro-bind", str(src), dest]
    args = [] if dest == "/" else ["--dir", dest]
    for name in sorted(os.listdir(src)):
        child = f"{dest.rstrip('/')}/{name}"
        if child not in skip:
            args += _tree_args(src / name, child, expand, skip)
    return args


def namespace_args(privileged: bool) -> list[str]:
    """bwrap options for namespaces, capabilities and the sandbox uid (privileged: the bot is root)."""
    args = ["--die-with-parent", "--new-session"]
    if privileged:
        # No user namespace: bwrap mounts as real root, the command then becomes SANDBOX_UID.
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        args += ["--unshare-cgroup-try"]
        return [*args, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args += ["--unshare-all", "--unshare-user", "--disable-userns"]
    return [*args, "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL"]


def user_command(argv: list[str], privileged: bool) -> list[str]:
    """The command bwrap starts: as root, setpriv first drops to SANDBOX_UID with no_new_privs."""
    if not privileged:
        return list(argv)
    drop = [SETPRIV, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups"]
    return [*drop, "--inh-caps=-all", "--no-new-privs", "--", *argv]


_warned_no_seccomp = False


def seccomp_program(privileged: bool) -> bytes | None:
    """The filter against user namespaces (sandboxes/seccomp.py) for bwrap's --seccomp.

    As root it is the only guard, so without libseccomp this raises SandboxError. As a normal user
    --disable-userns already holds, and a missing libseccomp only costs the second layer (logged once).
    """
    global _warned_no_seccomp
    try:
        return no_userns_bpf()
    except SandboxError as exc:
        if privileged:
            raise
        if not _warned_no_seccomp:
            _warned_no_seccomp = True
            log.warning("%s; relying on bwrap's --disable-userns alone", exc)
        return None


def bwrap_path() -> str | None:
    """The bwrap binary, if installed."""
    return shutil.which("bwrap") or (BWRAP if os.access(BWRAP, os.X_OK) else None)


class BwrapSandbox(ProcessSandbox):
    """Runs every command with bubblewrap; see DESIGN.md section 3.

    As root, bwrap itself runs as root (so workspaces under 0700 folders can be bound) but without a
    user namespace, and the command drops to SANDBOX_UID via setpriv with no_new_privs: processes of
    the sandbox are an unprivileged host uid. Limits come from a per-sandbox cgroup where possible
    (pids, memory with OOM reporting) and rlimits otherwise. As a normal user, bwrap makes a user
    namespace mapping SANDBOX_UID inside to the bot's uid, and RLIMIT_NPROC does the process limit.
    """

    metrics_backend = "bwrap"

    pids_overhead = 2  # bwrap and its pid-1 reaper live in the cgroup too
    pytest_sweep = "ns"  # the session has its own pid namespace

    def __init__(self, spec: SandboxSpec, *, bwrap: str | None = None) -> None:
        super().__init__(spec)
        self.bwrap = bwrap or bwrap_path() or BWRAP
        self.privileged = os.geteuid() == 0
        self._lease = WorkspaceLease()
        self._etc: Path | None = None
        check_mount_targets(spec)

    async def _open(self) -> None:
        check_mount_sources(self.spec)
        if self.spec.rootfs is not None and not (self.spec.rootfs / "usr").is_dir():
            raise SandboxError(f"rootfs {self.spec.rootfs} has no /usr")
        self._etc = await asyncio.to_thread(self._build_etc)
        if self.privileged and not self._setpriv_visible():
            raise SandboxError(f"{SETPRIV} is missing; it drops the sandbox to an unprivileged uid")
        # The sandbox uid must be able to write the workspace and the read-write mounts.
        await self._lease.acquire(self.spec, SANDBOX_UID, SANDBOX_GID, privileged=self.privileged)

    async def _close(self) -> None:
        await self._lease.release()
        if self._etc is not None:
            await asyncio.to_thread(shutil.rmtree, self._etc, True)
            self._etc = None

    def _file_owner(self) -> tuple[int, int] | None:
        return (SANDBOX_UID, SANDBOX_GID) if self.privileged else None

    def _setpriv_visible(self) -> bool:
        """Whether setpriv exists inside: in the root filesystem, or under one of the mounts."""
        if (self.spec.rootfs or Path("/")).joinpath(SETPRIV.lstrip("/")).exists():
            return True
        for mount in self.spec.mounts:
            inside = PurePosixPath(mount.inside)
            if PurePosixPath(SETPRIV).is_relative_to(inside):
                return mount.host.joinpath(PurePosixPath(SETPRIV).relative_to(inside)).exists()
        return False

    def _build_etc(self) -> Path:
        """A private /etc: chosen host entries (or the rootfs's /etc) plus the generated files.

        Built once per sandbox and bound as one read-only mount: binding each entry cost ~4 ms a run.
        """
        # tmpfs when there is one: creating hundreds of /etc/alternatives links took ~0.3 s in /tmp here.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        etc = Path(tempfile.mkdtemp(prefix="reprobot-etc-", dir=shm))
        etc.chmod(0o755)
        generated = _generated_etc(SANDBOX_UID, SANDBOX_GID)
        if self.spec.rootfs is not None:
            source = self.spec.rootfs / "etc"
            names = sorted(set(os.listdir(source)) - _ROOTFS_ETC_SKIP)
        else:
            source = Path("/etc")
            names = sorted({*HOST_ETC, *(p.name for p in source.glob("python3*"))})
        for name in names:
            src, dest = source / name, etc / name
            if name in generated:
                continue
            if src.is_symlink():
                os.symlink(os.readlink(src), dest)
            elif src.is_dir():
                shutil.copytree(src, dest, symlinks=True)
            elif src.is_file():
                shutil.copy2(src, dest)
        for name, content in generated.items():
            (etc / name).write_text(content)
            (etc / name).chmod(0o644)
        return etc

    def _root_args(self) -> list[str]:
        """The read-only root: a built root filesystem, or a few host directories; never the host root."""
        assert self._etc is not None
        rootfs = self.spec.rootfs
        if rootfs is not None:
            expand = {"/"}
            # Every rootfs directory above a mount point the rootfs lacks must be recreated.
            for target in (m.inside for m in self.spec.mounts):
                parts = PurePosixPath(target).parts[1:]
                for i in range(len(parts)):
                    entry = rootfs.joinpath(*parts[: i + 1])
                    if not os.path.lexists(entry):
                        expand.update("/" + "/".join(parts[:j]) for j in range(i + 1))
                        break
                    if entry.is_symlink() or not entry.is_dir():
                        break
            args = _tree_args(rootfs, "/", expand, _ROOTFS_SKIP | {"/etc"})
        else:
            args = []
            for name in HOST_TOP:
                if os.path.lexists(f"/{name}"):
                    args += _tree_args(Path(f"/{name}"), f"/{name}", set(), frozenset())
        return [*args, "--ro-bind", str(self._etc), "/etc"]

    def _launch(self, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Launch, list[int]]:
        return self._bwrap_launch(user_command(argv, self.privileged), cwd, env)

    def _session_plan(self, agent_fd: int) -> SessionPlan | None:
        """bwrap around the exec agent: one namespace for every command of the sandbox's lifetime."""
        python = "/usr/bin/python3"
        if not (self.spec.rootfs or Path("/")).joinpath(python.lstrip("/")).exists():
            return None  # nothing to run the agent with inside: commands run cold
        kill_uid = str(SANDBOX_UID) if self.privileged else "-1"
        # The agent's code comes in through a memfd: nothing of the host's paths shows inside.
        code = _memfd(agent_source().encode())
        agent = [python, "-I", "-S", f"/proc/self/fd/{code}", str(agent_fd), "ns", kill_uid]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        launch, fds = self._bwrap_launch(agent, self.spec.workspace.resolve(), env)
        launch.pass_fds = (*launch.pass_fds, code)
        fds.append(code)
        return SessionPlan(launch=launch, fds_to_close=fds, agent_fd=agent_fd)

    def _session_cwd(self, host_cwd: Path) -> str:
        rel = host_cwd.relative_to(self.spec.workspace.resolve()).as_posix()
        return WORKSPACE_MOUNT if rel == "." else f"{WORKSPACE_MOUNT}/{rel}"

    def _bwrap_launch(self, command: list[str], cwd: Path, env: dict[str, str]) -> tuple[Launch, list[int]]:
        """bwrap running `command` (already behind the privilege drop) with every confinement option."""
        workspace = self.spec.workspace.resolve()
        args = [*namespace_args(self.privileged), "--hostname", "sandbox", "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += [*self._root_args(), "--proc", "/proc", "--dev", "/dev"]
        # Half the memory limit: filling /tmp (charged as memory) hits ENOSPC before the OOM killer.
        size = str(max(self.spec.limits.memory_bytes // 2, 16 * 1024 * 1024))
        for tmp in ("/dev/shm", "/tmp"):
            args += ["--perms", "1777", "--size", size, "--tmpfs", tmp]
        args += ["--bind", str(workspace), WORKSPACE_MOUNT]
        if os.path.lexists(workspace / ".git"):
            # Host git later reads this repository; code in the sandbox must not plant config or hooks.
            args += ["--ro-bind", str(workspace / ".git"), f"{WORKSPACE_MOUNT}/.git"]
        made: set[str] = set()
        for mount in self.spec.mounts:
            # bwrap would create missing parents 0700 (root's), unreadable for the sandbox uid.
            parts = PurePosixPath(mount.inside).parts[1:-1]
            for i in range(1, len(parts) + 1):
                parent = "/" + "/".join(parts[:i])
                if parent not in made:
                    made.add(parent)
                    args += ["--dir", parent]
            args += ["--ro-bind" if mount.read_only else "--bind", str(mount.host), mount.inside]
        rel = cwd.relative_to(workspace).as_posix()
        inside_cwd = WORKSPACE_MOUNT if rel == "." else f"{WORKSPACE_MOUNT}/{rel}"
        args += ["--remount-ro", "/", "--chdir", inside_cwd]
        fds: list[int] = []
        program = seccomp_program(self.privileged)
        if program is not None:
            fds.append(_memfd(program))
            args += ["--seccomp", str(fds[0])]
        # Options go through a memfd: /proc/1/cmdline inside then shows no host paths or env values.
        fds.append(_memfd(b"".join(a.encode() + b"\0" for a in args)))
        launch = Launch(
            argv=[self.bwrap, "--args", str(fds[-1]), "--", *command],
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd="/",
            pass_fds=tuple(fds),
        )
        return launch, fds

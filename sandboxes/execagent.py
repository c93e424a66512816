"""The exec agent of a warm sandbox session: runs INSIDE the sandbox, standard library only, as a script.

One agent lives for a whole trajectory (sandboxes/session.py starts it under bwrap, or bare for the
none backend). The host sends it one command at a time over a SOCK_SEQPACKET socket: a JSON request
and, as SCM_RIGHTS, the command's stdin/stdout/stderr pipes. The agent forks, the child execs the
command in its own session, and the agent reports the wait status. A command then costs a fork, not a
new namespace, mount set and cgroup move.

Guarantees kept from the cold path:
- the host enforces the wall timeout; on "kill" (or when the host goes away) the agent kills the
  command's whole tree; with its own pid namespace ("ns" mode) that is every other process in it, so
  even a command that left its session (setsid) dies, exactly as when a cold bwrap's namespace ends;
- after every command, leftovers (background jobs) are killed before the status is reported, so no
  process of one command outlives it and output pipes reach end of file;
- limits, seccomp, mounts and namespaces are inherited from the session's sandbox; the privilege drop
  to the sandbox uid is done in the child as setpriv does it in the cold path.

argv: WHERE MODE UID. WHERE is an inherited socket fd, or the path of a unix socket to connect to (a
container's agent). MODE is "ns" (kill every other process of the commands' uid in the pid namespace)
or "group" (the command's process group only). UID >= 0: the agent is root and each command drops to
UID (no groups, no capabilities, no_new_privs); a killer child with that uid clears the namespace.
-1: the agent already is the commands' uid.
Written for any Python 3.8+ a root filesystem may ship (annotations are never evaluated).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

_MAX_REQUEST = 1 << 22


def _recv_request(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One request and its file descriptors; (None, []) when the host closed the socket."""
    fds: list[int] = []
    msg, ancdata, _flags, _addr = sock.recvmsg(_MAX_REQUEST, socket.CMSG_SPACE(16))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds.extend(int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, usable, 4))
    if not msg:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(msg.decode()), fds


class _Drop:
    """The privilege drop of a command, done in the child as setpriv would do it (one exec less)."""

    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.libc: Any = None
        if uid >= 0:
            import ctypes  # only needed (and only imported) when the agent runs as root

            self.ctypes: Any = ctypes
            self.libc = ctypes.CDLL(None, use_errno=True)

    def __call__(self) -> None:
        if self.libc is None:
            return
        uid = self.uid
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if self.libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(self.ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        # Leaving root clears the permitted and effective sets; inheritable ones are cleared here.
        header = (self.ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
        data = (self.ctypes.c_uint32 * 6)()
        if self.libc.capset(header, data) != 0:
            raise OSError(self.ctypes.get_errno(), "capset")


_PR_SET_NO_NEW_PRIVS = 38
_CAP_VERSION_3 = 0x20080522


def _child(req: dict[str, Any], fds: list[int], drop: _Drop) -> None:
    """In the forked child: become the command (never returns)."""
    try:
        os.setsid()
        drop()
        stdin = fds[2] if len(fds) > 2 else os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.closerange(3, 1 << 16)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.chdir(req["cwd"])
        argv = req["argv"]
        env = req["env"]
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        code = 127 if exc.errno == errno.ENOENT else 126
        with contextlib.suppress(OSError):
            os.write(2, f"{req['argv'][0]}: {exc.strerror}\n".encode())
        os._exit(code)
    except BaseException:  # nothing may return into the agent's loop
        os._exit(126)


def _spawn(req: dict[str, Any], fds: list[int]) -> int | None:
    """posix_spawn (a vfork, cheaper than fork) when no privilege drop is needed; None: use fork instead."""
    argv, env = req["argv"], req["env"]
    name = argv[0]
    dirs = [""] if "/" in name else env.get("PATH", os.defpath).split(os.pathsep)
    path = next((p for p in (os.path.join(d, name) for d in dirs) if os.access(p, os.X_OK)), None)
    if path is None:
        return None  # the fork path reports it as a shell would (127)
    stdin = fds[2] if len(fds) > 2 else os.open(os.devnull, os.O_RDONLY)
    actions: list[tuple[int, ...]] = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_DUP2, fds[0], 1),
        (os.POSIX_SPAWN_DUP2, fds[1], 2),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in {stdin, *fds} if fd > 2]
    try:
        os.chdir(req["cwd"])  # inherited by the child; the agent itself never uses its cwd
        return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True, setsigdef=(signal.SIGPIPE,))
    except OSError:
        return None
    finally:
        if len(fds) <= 2:
            os.close(stdin)


def _others(uid: int) -> list[int]:
    """Live processes of the commands' uid in this pid namespace, but its init and the agent."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, me):  # kill(-1) spares init and the caller
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z":
            found.append(int(entry))
    return found


def _kill_namespace(kill_uid: int) -> None:
    """SIGKILL every process of the namespace but pid 1 and the agent, until none is left."""
    uid = os.getuid() if kill_uid < 0 else kill_uid
    for _ in range(200):
        if not _others(uid):
            return
        if kill_uid < 0:
            # Same uid as the commands: kill(-1) spares the caller and the namespace's init.
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
        else:
            # The agent is root without CAP_KILL: a child that is the sandbox uid may signal its peers.
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([])
                    os.setresgid(kill_uid, kill_uid, kill_uid)
                    os.setresuid(kill_uid, kill_uid, kill_uid)
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    os._exit(1)
                os._exit(0)
            os.waitpid(pid, 0)
        time.sleep(0.002)


def _kill_tree(pid: int, mode: str, kill_uid: int) -> None:
    if mode == "ns":
        _kill_namespace(kill_uid)
    else:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def _wait(sock: socket.socket, pid: int, mode: str, kill_uid: int) -> tuple[int, bool]:
    """Wait for the command, killing its tree when the host says so; returns (status, host_gone)."""
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLIN)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        poll.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pidfd = None
    host_gone = False
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, host_gone
            events = poll.poll(None if pidfd is not None else 5)
            for fd, _ in events:
                if fd == sock.fileno():
                    msg = b""
                    with contextlib.suppress(OSError):
                        msg = sock.recv(4096)
                    if not msg:
                        host_gone = True
                    _kill_tree(pid, mode, kill_uid)
                    if host_gone:
                        poll.unregister(sock.fileno())
    finally:
        if pidfd is not None:
            os.close(pidfd)


def main() -> None:
    """Serve commands until the host closes the socket."""
    where, mode, kill_uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if where.startswith("/"):
        # A container: the host listens on a socket bind-mounted in (file descriptors cross it as well).
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(where)
    else:
        os.set_inheritable(int(where), False)
        sock = socket.socket(fileno=int(where))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    drop = _Drop(kill_uid)
    sock.send(json.dumps({"ready": os.getpid()}).encode())
    while True:
        try:
            req, fds = _recv_request(sock)
        except (OSError, ValueError):
            return
        if req is None:
            if mode == "ns":
                _kill_tree(0, mode, kill_uid)
            return
        try:
            spawned = _spawn(req, fds) if drop.libc is None else None
            pid = os.fork() if spawned is None else spawned
        except OSError as exc:
            for f in fds:
                os.close(f)
            sock.send(json.dumps({"error": f"fork: {exc}"}).encode())
            continue
        if pid == 0:
            _child(req, fds, drop)
        for f in fds:
            os.close(f)
        status, host_gone = _wait(sock, pid, mode, kill_uid)
        # Background jobs die with the command, as when a cold sandbox's namespace ends.
        _kill_tree(pid, mode, kill_uid)
        if host_gone:
            return
        try:
            sock.send(json.dumps({"status": status}).encode())
        except OSError:
            return


if __name__ == "__main__":
    main()

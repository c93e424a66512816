"""A preloaded pytest that forks a worker per run: runs INSIDE the sandbox, standard library + pytest only.

Started by the host (sandboxes/pytest_client.py, through the warm session's exec agent) as
`PYTHON -c SOURCE MODE` with the same environment and working directory as an ordinary
`PYTHON -m pytest` run. It imports pytest (with its built-in plugins) once, but never
the project's code: the worker forked for each run imports that itself, so edited sources are always
seen. MODE is "ns" (the sandbox has its own pid namespace: after a run, every other process of this uid
but this server and its ancestors is killed) or "group" (the worker's process group only).

Protocol: one JSON request per line on stdin, `{"args": [...], "timeout": seconds, "output_bytes": n}`;
one JSON reply per line on stdout, `{"status": wait status, "head": text, "tail": text, "dropped": bytes,
"timed_out": bool, "seconds": float}`, or `{"error": why}` when the run cannot be served like an ordinary
one (the host then runs it the ordinary way). The first line written is `{"ready": pid}` (or an error).
End of stdin: the server exits.
Written for any Python 3.8+ an environment may hold (annotations are never evaluated).
"""

from __future__ import annotations

import sys

# `python -c` puts "" (the working directory: the project) first on sys.path; nothing here may import from it.
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]

#: Modules every interpreter has loaded before the working directory goes on sys.path: never shadowed.
_STARTUP = frozenset(sys.modules)

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

_GRACE = 2.0


def _project_dirs(cwd: str) -> list[str]:
    """Folders a worker would import project code from ahead of the environment: cwd and PYTHONPATH."""
    dirs = [cwd]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            dirs.append(os.path.abspath(os.path.join(cwd, entry)))
    return dirs


def _under(path: str, dirs: list[str]) -> bool:
    path = os.path.abspath(path)
    return any(path == d or path.startswith(d.rstrip(os.sep) + os.sep) for d in dirs)


def _preload() -> None:
    """Import what every run imports; nothing of the project (checked by the caller)."""
    import _pytest.config
    import _pytest.junitxml
    import pytest  # noqa: F401

    for name in _pytest.config.default_plugins:
        with contextlib.suppress(ImportError):
            __import__("_pytest." + name)
    # Plugins found through entry points (pytest-timeout...) are left to the worker: pytest marks them
    # for assertion rewriting and warns about any already imported, which an ordinary run never shows.
    # pluggy lists the environment's plugins through importlib.metadata: warm its parsing machinery.
    try:
        import importlib.metadata as metadata

        for dist in metadata.distributions():
            dist.entry_points  # noqa: B018
    except Exception:
        pass


def _preloaded_top_names() -> set[str]:
    """Top-level names of what the preload imported, which a project module of the same name would shadow."""
    return {name.split(".", 1)[0] for name in list(sys.modules) if name not in _STARTUP} - set(sys.builtin_module_names)


def _shadowed(dirs: list[str], names: set[str]) -> str | None:
    """A preloaded module the project's folders hold a module or package of the same name of (or None)."""
    for folder in dirs:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem = entry.split(".", 1)[0]
            if stem not in names:
                continue
            full = os.path.join(folder, entry)
            if entry.endswith((".py", ".pyc", ".so", ".pyd")) or os.path.isfile(os.path.join(full, "__init__.py")):
                return stem
    return None


def _worker(args: list[str], cwd: str, write_fd: int, private: list[int]) -> None:
    """In the forked child: be `python -m pytest ARGS` (never returns)."""
    code = 1
    try:
        os.setsid()
        for fd in private:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        # A fresh interpreter's signal handling, as `python -m pytest` starts with it.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.path.insert(0, cwd)  # as `python -m` does: the absolute working directory first
        # The import system's folder listings date from the preload; files created since must be found.
        import importlib

        importlib.invalidate_caches()
        sys.argv = ["-m", *args]
        if "random" in sys.modules:
            sys.modules["random"].seed()  # a fresh process would not share the server's sequence
        import runpy

        try:
            # Exactly what `python -m pytest` runs: pytest/__main__.py as __main__, argv[0] its path.
            runpy._run_module_as_main("pytest", alter_argv=True)  # type: ignore[attr-defined]
            code = 0
        except SystemExit as exc:
            code = _exit_value(exc.code)
        except KeyboardInterrupt:
            sys.excepthook(*sys.exc_info())
            code = -signal.SIGINT
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        _finalize()
    except BaseException:
        code = 1
    if code == -signal.SIGINT:
        # Python ends on an uncaught KeyboardInterrupt by dying of SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _exit_value(code: object) -> int:
    """SystemExit's code as the interpreter turns it into an exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(Exception):
        sys.stderr.write(str(code) + "\n")
    return 1


def _finalize() -> None:
    """What the interpreter does at exit: wait for threads, run atexit handlers, flush stdio."""
    try:
        import threading

        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except Exception:
        pass
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _ancestors() -> set[int]:
    found = set()
    pid = os.getpid()
    while pid > 1:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            break
        pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return found


def _sweep(spare: set[int]) -> None:
    """SIGKILL every process of this uid in the pid namespace but pid 1, this server and its ancestors."""
    uid = os.getuid()
    for _ in range(200):
        victims = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in spare or entry == "1":
                continue
            try:
                if os.stat("/proc/" + entry).st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z":
                victims.append(int(entry))
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _kill_run(pid: int, mode: str, spare: set[int]) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)
    if mode == "ns":
        _sweep(spare)


class _Capped:
    """The first and last bytes of a stream within a cap, and how many were dropped between them."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit, 0) // 2
        self.tail_limit = max(limit, 0) - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def reply(self) -> dict[str, object]:
        return {
            "head": self.head.decode("utf-8", "replace"),
            "tail": self.tail.decode("utf-8", "replace"),
            "dropped": self.total - len(self.head) - len(self.tail),
        }


def _serve(req: dict[str, object], cwd: str, mode: str, private: list[int], spare: set[int]) -> dict[str, object]:
    """Fork a worker for one request, enforce its timeout, collect its output and status."""
    args = req["args"]
    timeout = float(req.get("timeout", 300.0))  # type: ignore[arg-type]
    buf = _Capped(int(req.get("output_bytes", 1 << 20)))  # type: ignore[call-overload]
    start = time.monotonic()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _worker(list(args), cwd, write_fd, private)  # type: ignore[call-overload]
    os.close(write_fd)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)  # absent before Python 3.9 and off Linux: AttributeError below
    except (AttributeError, OSError):
        pidfd = None
    poll = select.poll()
    poll.register(read_fd, select.POLLIN)
    if pidfd is not None:
        poll.register(pidfd, select.POLLIN)
    status = None
    timed_out = False
    eof = False
    deadline = start + timeout
    try:
        while not (eof and status is not None):
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                    # Leftovers die with the run; the pipe then reaches end of file.
                    _kill_run(pid, mode, spare)
                    deadline = time.monotonic() + _GRACE
                    if pidfd is not None:
                        poll.unregister(pidfd)
                    continue
            now = time.monotonic()
            if now >= deadline:
                if status is not None:
                    break  # something outside our reach still holds the pipe: stop reading
                timed_out = True
                _kill_run(pid, mode, spare)
                status = os.waitpid(pid, 0)[1]
                _kill_run(pid, mode, spare)
                deadline = time.monotonic() + _GRACE
                if pidfd is not None:
                    poll.unregister(pidfd)
                continue
            wait = deadline - now if (pidfd is not None or status is not None) else min(deadline - now, 0.05)
            for fd, _ in poll.poll(max(wait, 0.0) * 1000):
                if fd == read_fd:
                    data = os.read(read_fd, 1 << 16)
                    if data:
                        buf.feed(data)
                    else:
                        eof = True
                        poll.unregister(read_fd)
    finally:
        os.close(read_fd)
        if pidfd is not None:
            os.close(pidfd)
    reply = buf.reply()
    reply.update(status=status, timed_out=timed_out, seconds=time.monotonic() - start)
    return reply


def main() -> None:
    """Preload, say ready, then serve one request per line until end of input."""
    mode = sys.argv[1] if len(sys.argv) > 1 else "group"
    # The protocol gets private copies of stdin/stdout; fd 0 and 1 themselves then point nowhere.
    req_fd, rep_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    requests = os.fdopen(req_fd, "rb")

    def send(obj: dict[str, object]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(rep_fd, data) :]

    cwd = os.getcwd()
    dirs = _project_dirs(cwd)
    try:
        _preload()
    except Exception as exc:
        send({"error": f"preload failed: {exc!r}"})
        return
    loaded: list[str] = [
        f for f in (getattr(m, "__file__", None) for m in list(sys.modules.values())) if isinstance(f, str)
    ]
    project = [f for f in loaded if _under(f, dirs)]
    if project:
        # A .pth file or sitecustomize pulled in project code: a worker would see it stale.
        send({"error": f"project code imported while preloading: {project[0]}"})
        return
    names = _preloaded_top_names()
    # What the preload made lives as long as the server: out of the collector's sight, a worker's own
    # collections (pytest runs several at teardown) walk only what the run made, and the preloaded pages
    # stay shared with the server instead of being copied when the collector touches them.
    import gc

    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    spare = _ancestors() | {1}
    send({"ready": os.getpid()})
    private = [req_fd, rep_fd]
    while True:
        line = requests.readline()
        if not line:
            return
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not isinstance(req.get("args"), list):
                raise ValueError("bad request")
        except ValueError as exc:
            send({"error": f"bad request: {exc}"})
            continue
        clash = _shadowed(dirs, names)
        if clash is not None:
            send({"error": f"the project has its own {clash!r}, which the server preloaded"})
            continue
        send(_serve(req, cwd, mode, private, spare))


if __name__ == "__main__":
    main()

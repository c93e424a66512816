"""A real PostgreSQL server from Debian's package, for tests, the soak and the bench (initdb + pg_ctl).

Run as a non-root user (root may not run postgres): the `postgres` system user when the suite runs as root,
else the current user. The server listens on 127.0.0.1 on a free port, with trust auth, in a temp directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"}


def pg_bin() -> Path | None:
    """The newest /usr/lib/postgresql/*/bin holding pg_ctl, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["/usr/sbin/runuser", "-u", "postgres", "--"]


class PgServer:
    """One running server; `url(db)` names a database on it; `new_database()` makes a fresh one."""

    def __init__(self, root: Path | None = None, *, listen: str = "127.0.0.1", allow: str | None = None) -> None:
        """Initialise a cluster under `root` (default: a new directory in /tmp; not started).

        Run as root, the server's user must reach `root`: pytest's temp dirs are private to root, so the
        default is a fresh directory directly under /tmp, handed to the postgres user and removed by stop().
        """
        self._owned = root is None
        root = Path(tempfile.mkdtemp(prefix="reprobot-pg-")) if root is None else root
        binary = pg_bin()
        if binary is None:
            raise RuntimeError("no pg_ctl under /usr/lib/postgresql/*/bin (apt-get install postgresql)")
        self.bin = binary
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.listen = listen
        self.host = "127.0.0.1" if listen in ("127.0.0.1", "*", "0.0.0.0") else listen
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        subprocess.run(
            [*_as_user(), str(binary / "initdb"), "-D", str(self.data), "-U", "reprobot", "-A", "trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
            env=_ENV,
        )
        if allow is not None:  # clients from this network (e.g. other network namespaces) may connect too
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {allow} trust\n")

    @classmethod
    def attach(cls, root: Path, port: int, *, owned: bool = False) -> PgServer:
        """A handle on a server another process started under `root` on `port` (127.0.0.1), without initdb.

        The workers of a parallel test run share one server this way (tests/xdist_shared.py); `owned` lets
        stop() remove `root` too, as the starter's own handle would.
        """
        binary = pg_bin()
        if binary is None:
            raise RuntimeError("no pg_ctl under /usr/lib/postgresql/*/bin (apt-get install postgresql)")
        server = cls.__new__(cls)
        server._owned = owned
        server.bin = binary
        server.root = root
        server.data = root / "data"
        server.port = port
        server.listen = server.host = "127.0.0.1"
        return server

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        opts = f"-h {self.listen} -p {self.port} -k {self.root} -c fsync=off -c max_connections=200"
        ctl = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w"]
        subprocess.run(
            [*_as_user(), *ctl, "-o", opts, "start"],
            check=True,
            capture_output=True,
            env=_ENV,
        )

    def stop(self) -> None:
        """Stop the server (fast mode)."""
        subprocess.run(
            [*_as_user(), str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
            env=_ENV,
        )
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """The connection URL of `database` over TCP."""
        return f"postgresql://reprobot@{self.host}:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database and return its URL (one per test keeps tests apart)."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@contextlib.contextmanager
def running(root: Path | None = None, *, listen: str = "127.0.0.1", allow: str | None = None) -> Iterator[PgServer]:
    """A started server under `root`, stopped on exit."""
    server = PgServer(root, listen=listen, allow=allow)
    server.start()
    try:
        yield server
    finally:
        server.stop()

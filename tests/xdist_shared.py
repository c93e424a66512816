"""What the workers of one parallel run (pytest-xdist, `make test`) share: one folder, one PostgreSQL server.

Under xdist each worker is its own pytest session, so a session-scoped fixture runs once per worker. The
expensive ones (the environment cache, the PostgreSQL server) are made once for the whole run instead: the
first worker to need one makes it under a file lock in the run's shared folder, the others find it there.
Run without xdist (`pytest tests/test_x.py`), everything here falls back to the plain session's own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from filelock import FileLock

from tests.pg_server import PgServer

#: The file in the shared folder naming the run's PostgreSQL server (its root folder and port).
PG_STATE = "pg-server.json"


def worker_id() -> str:
    """This process's xdist worker id ("gw0", "gw1", ...), or "master" when the run is not parallel."""
    return os.environ.get("PYTEST_XDIST_WORKER", "master")


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """A folder all workers of this run share: the controller's base temp dir (each worker's is inside it).

    Without xdist it is the session's own base temp dir, so callers need not tell the two cases apart.
    """
    base = factory.getbasetemp()
    return base.parent if worker_id() != "master" else base


def shared_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder `name` in the shared root, made once (mkdir is atomic: a second worker just finds it)."""
    path = shared_root(factory) / name
    path.mkdir(exist_ok=True)
    return path


def shared_pg_server(factory: pytest.TempPathFactory) -> PgServer:
    """The run's PostgreSQL server: started by the first worker that asks, attached to by every later one.

    No worker stops it, since another may still be using it: the controller does, after all workers have
    finished (stop_shared_pg_server, from pytest_sessionfinish in conftest.py).
    """
    root = shared_root(factory)
    with FileLock(str(root / f"{PG_STATE}.lock")):
        state = root / PG_STATE
        if state.exists():
            known = json.loads(state.read_text())
            return PgServer.attach(Path(known["root"]), int(known["port"]))
        server = PgServer()
        server.start()
        state.write_text(json.dumps({"root": str(server.root), "port": server.port, "pid": os.getpid()}))
        return server


def stop_shared_pg_server(root: Path) -> None:
    """Stop the run's shared PostgreSQL server, if a worker started one (called once, by the controller)."""
    state = root / PG_STATE
    if not state.exists():
        return
    known = json.loads(state.read_text())
    PgServer.attach(Path(known["root"]), int(known["port"]), owned=True).stop()
    state.unlink()

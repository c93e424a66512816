"""Shared fixtures: paths to ../shared, a session-wide environment cache, settings in a temp data dir."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from bot.settings.config import Settings
from bot.store import Store
from bot.store.base import StoreConnection
from bot.store.pg import is_postgres_url
from tests.pg_server import PgServer, pg_bin
from tests.pg_server import running as pg_running
from tests.runner_procs import free_port as pick_free_port
from tests.xdist_shared import shared_dir, shared_pg_server, stop_shared_pg_server, worker_id

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
QUIXBUGS = SHARED / "bench" / "quixbugs"
FIXTURES = SHARED / "fixtures"
#: Mined real-bug cases, built from git mirrors by `make bench-data MIRRORS=DIR` (REPROBOT_MINED_CASES: elsewhere).
MINED = Path(os.environ.get("REPROBOT_MINED_CASES") or REPO_ROOT / "bench" / "data" / "realbugs")
#: Wheels for the test environments, downloaded by `make wheelhouse` (which `make test` runs first).
WHEELHOUSE = REPO_ROOT / ".reprobot" / "wheelhouse"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Environments are built with pip from the local wheelhouse only: tests reach no host but 127.0.0.1."""
    if not any(WHEELHOUSE.glob("pytest-*.whl")):
        pytest.exit(f"no wheels in {WHEELHOUSE}: run `make wheelhouse` (make test does it first)", returncode=4)
    # The host-side `pip download` (and the source fetcher) read these: run_host's allowlist passes them on.
    os.environ["PIP_NO_INDEX"] = "1"
    os.environ["PIP_FIND_LINKS"] = str(WHEELHOUSE)


def require_shared(path: Path = QUIXBUGS) -> Path:
    """Skip the calling test, with the reason, when ../shared (bench data, fixtures) is absent."""
    if not path.exists():
        pytest.skip(f"needs {path} (the shared bench/fixtures folder beside the checkout), which is absent")
    return path


def require_mined(name: str) -> Path:
    """Skip the calling test, with the reason, when the mined case `name` has not been built here."""
    path = MINED / name
    if not (path / "repo").is_dir():
        pytest.skip(f"needs the mined case {name} in {MINED}: `make bench-data MIRRORS=DIR` builds it")
    return path


@pytest.fixture(autouse=True)
def _no_store_calls_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test checks that no blocking store call runs on a thread that runs an event loop.

    With the guard on, such a call raises StoreOnEventLoop (it could stall `serve` for the busy timeout);
    tests that read the store from a coroutine do it with asyncio.to_thread, as the product code does.
    """
    monkeypatch.setattr(StoreConnection, "loop_guard", True)


@pytest.fixture(autouse=True)
def _private_data_dir(
    tmp_path_factory: pytest.TempPathFactory, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own REPROBOT_DATA_DIR (its cache: the run's shared environment cache).

    So a test that runs the bot without naming a data dir never shares one with a test running beside it in
    another worker (nor reads the developer's, or CI's REPROBOT_DATA_DIR). A test that sets its own wins.
    A folder of its own, not under tmp_path: tests may check what tmp_path holds.
    """
    data = tmp_path_factory.mktemp("data")
    (data / "cache").symlink_to(env_cache)
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(data))


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 free now, for a server the test starts in another process (`--port`).

    A server started in the test's own process binds port 0 instead and reads the port it got.
    """
    return pick_free_port()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller of a parallel run stops the PostgreSQL server its workers shared (they never do)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or a run without xdist (its server is the pg_server fixture's own)
    stop_shared_pg_server(config._tmp_path_factory.getbasetemp())  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environment cache per test run, so virtualenvs are built once.

    Shared by the workers of a parallel run: builds take a per-environment flock (sandboxes/environment.py),
    so two workers wanting the same environment build it once and the second gets a cache hit.
    """
    return shared_dir(tmp_path_factory, "env-cache")


@pytest.fixture
def settings(tmp_path: Path, env_cache: Path) -> Settings:
    """Settings with a private data dir whose cache is shared across the session.

    Workers do not prune that cache: it is the session's, and walking it in every worker test costs seconds
    (tests/test_cache_prune.py turns the limits on where it tests them)."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    return Settings(data_dir=data, trajectories=2, cache_max_size=0, cache_max_days=0.0)


def load_script(relative: str) -> ModuleType:
    """A script of bench/ (outside the packages), loaded by its path under the repo and registered by its stem."""
    path = REPO_ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_git_repo(path: Path, files: dict[str, str]) -> Path:
    """Create a one-commit git repo with the given files."""
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *cfg, *args], cwd=path, check=True, capture_output=True)
    return path


def one_module_project(path: Path, source: str) -> Path:
    """A git repo of one module `mod.py` holding source, a setup.py and one passing test."""
    return make_git_repo(
        path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='mod', version='0.1', py_modules=['mod'])\n",
            "mod.py": source,
            "tests/test_other.py": "def test_other():\n    assert True\n",
        },
    )


# -- the PostgreSQL engine (issue 17): a real server for the session, and the `engine` parameter ---------------


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    """A real PostgreSQL server from Debian's package for the whole run (skips when there is no pg_ctl).

    In a parallel run the workers share one server (tests/xdist_shared.py); each test still gets its own
    databases from new_database().
    """
    if pg_bin() is None:
        pytest.skip("no pg_ctl under /usr/lib/postgresql/*/bin: apt-get install postgresql (.ci/system-packages)")
    if worker_id() != "master":
        yield shared_pg_server(tmp_path_factory)
        return
    with pg_running() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on both engines: on PostgreSQL, `Store.open(path)` opens a fresh database per distinct path.

    The same path opens the same database again, so reopen, two-connection and crash tests keep their meaning.
    """
    if request.param == "sqlite":
        return "sqlite"
    if request.node.get_closest_marker("sqlite_only"):
        pytest.skip("SQLite-file behaviour (WAL, the file itself): PostgreSQL has no such file")
    server: PgServer = request.getfixturevalue("pg_server")
    urls: dict[str, str] = {}
    open_url = Store.open_url.__func__  # type: ignore[attr-defined]

    def open_on_pg(cls: type[Store], path: Path | str, *, clock: Callable[[], float] = time.time) -> Store:
        if isinstance(path, str) and is_postgres_url(path):
            return open_url(cls, path, clock=clock)  # type: ignore[no-any-return]
        key = str(Path(path).resolve())
        if key not in urls:
            urls[key] = server.new_database()
        return open_url(cls, urls[key], clock=clock)  # type: ignore[no-any-return]

    monkeypatch.setattr(Store, "open", classmethod(open_on_pg))
    request.node.stash[_PG_URLS] = urls
    return "postgresql"


_PG_URLS = pytest.StashKey[dict[str, str]]()


@pytest.fixture
def store_target(engine: str, request: pytest.FixtureRequest) -> Callable[[Path], Path | str]:
    """What another process passes to `Store.open` for `path`: the path itself, or its PostgreSQL URL."""

    def target(path: Path) -> Path | str:
        if engine == "sqlite":
            return path
        Store.open(path).close()  # makes the database for this path if it is new
        return request.node.stash[_PG_URLS][str(Path(path).resolve())]

    return target


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """`settings` on each engine: SQLite under the data dir, or REPROBOT_DATABASE_URL set to a fresh database
    on the session's PostgreSQL (for tests whose bot processes read the store's place from the settings)."""
    if request.param == "sqlite":
        return settings
    return replace(settings, database_url=request.getfixturevalue("pg_server").new_database())

"""Nothing a repo declares runs on the host: source-only and direct-URL dependencies, end to end.

Two repos depend on a package whose setup.py tries to write a marker file at an absolute host path and
records the environment it ran in. The real console script runs `env test` and `fix` on them with canary
secrets in its environment: no marker may appear, the recorded build environment must be the sandbox's
(no canary in it), and no canary may show in any output or in any file under the data dirs.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import subprocess
import tarfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sandboxes.factory import available_backends
from tests.conftest import WHEELHOUSE, make_git_repo
from tests.test_cli import CALC, CALC_TESTS, ISSUE, REPROBOT

pytestmark = pytest.mark.timeout(1200)

SETUP_PY = """\
import os, pathlib
from setuptools import setup

env = dict(os.environ)
try:
    # On the host this would succeed: the marker's folder exists there (and nowhere in a sandbox).
    pathlib.Path({marker!r}).write_text(repr(env))
    wrote = True
except OSError:
    wrote = False
pkg = pathlib.Path(__file__).resolve().parent / {module!r}
(pkg / "_build_env.py").write_text(f"BUILD_ENV = {{env!r}}\\nMARKER_WRITTEN = {{wrote!r}}\\n")
setup(name={name!r}, version="1.0", packages=[{module!r}])
"""

DEP_TESTS = """\
import {module}
from {module} import _build_env


def test_dependency_imports_and_works():
    assert {module}.double(21) == 42


def test_it_was_built_in_the_sandbox():
    assert not _build_env.MARKER_WRITTEN
    assert _build_env.BUILD_ENV.get("HOME") == "/tmp"
"""


def make_sdist(folder: Path, name: str, marker: Path) -> Path:
    """A source archive written with tarfile (nothing of it runs here); its setup.py is the canary."""
    module = name.replace("-", "_")
    base = f"{module}-1.0"
    files = {
        "setup.py": SETUP_PY.format(marker=str(marker), module=module, name=name),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{module}/__init__.py": "def double(x):\n    return 2 * x\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{base}.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return archive


def dep_repo(path: Path, requirement: str, module: str) -> Path:
    """The buggy calc project of test_cli, depending on `requirement`, with tests that import it."""
    pyproject = (
        f'[project]\nname = "calc"\nversion = "0"\ndependencies = [{json.dumps(requirement)}]\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": CALC_TESTS,
        "tests/test_dep.py": DEP_TESTS.format(module=module),
        "pyproject.toml": pyproject,
    }
    return make_git_repo(path, files)


@dataclass
class Served:
    """A real HTTP server on 127.0.0.1 serving one folder, recording the paths asked for."""

    url: str
    requests: list[str]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    root = tmp_path / "served"
    root.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", requests), root
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def canaries() -> dict[str, str]:
    tag = uuid.uuid4().hex[:12]
    return {
        "REPROBOT_LLM_API_KEY": f"canary-llm-{tag}",
        "REPROBOT_GITHUB_PRIVATE_KEY": f"-----BEGIN canary-pem-{tag}-----",
        "GITHUB_TOKEN": f"canary-ghtoken-{tag}",
    }


def _require_sandbox_and_build_wheels(backend: str = "bwrap") -> None:
    problem = available_backends()[backend]
    if problem is not None:
        pytest.skip(f"{backend} backend unavailable: {problem}")
    if not any(WHEELHOUSE.glob("setuptools-*.whl")):
        pytest.skip(f"no setuptools wheel in {WHEELHOUSE} (run `make wheelhouse`): sdists cannot be built offline")


def run_cli(args: list[str | Path], data: Path, env: dict[str, str], timeout: float = 900) -> tuple[int, str, str]:
    """The real console script; (exit code, stdout, stderr)."""
    full = {**os.environ, **env, "REPROBOT_DATA_DIR": str(data)}
    proc = subprocess.run(
        [REPROBOT, *map(str, args), "--json"], capture_output=True, text=True, timeout=timeout, env=full
    )
    return proc.returncode, proc.stdout, proc.stderr


def leaks(canaries: dict[str, str], texts: list[str], roots: list[Path]) -> list[str]:
    """Where any canary value shows: in the given outputs, or in any file under the roots."""
    found = [f"output #{i}" for i, text in enumerate(texts) for v in canaries.values() if v in text]
    values = [v.encode() for v in canaries.values()]
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found.extend(str(path) for v in values if v in data)
    return found


def installed_build_env(data: Path, module: str) -> dict[str, str]:
    """The environment the package's setup.py saw, as recorded in the built (and installed) package."""
    (recorded,) = (data / "cache" / "envs").glob(f"*/lib/python3*/site-packages/{module}/_build_env.py")
    scope: dict[str, Any] = {}
    exec(compile(recorded.read_text(), str(recorded), "exec"), scope)  # our own test's generated file
    assert scope["MARKER_WRITTEN"] is False
    env = scope["BUILD_ENV"]
    assert isinstance(env, dict)
    return env


def assert_clean_build_env(env: dict[str, str], canaries: dict[str, str]) -> None:
    assert env.get("HOME") == "/tmp", env  # the sandbox's minimal environment, not the bot's
    for key, value in canaries.items():
        assert key not in env and value not in repr(env)
    assert not [k for k in env if k.startswith(("REPROBOT_", "GITHUB_"))]


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_source_only_dependency_is_built_in_the_sandbox_never_on_the_host(
    tmp_path: Path, canaries: dict[str, str], backend: str
) -> None:
    _require_sandbox_and_build_wheels(backend)
    marker = tmp_path / "host-marker-sdist"
    sdists = make_sdist(tmp_path / "find-links", "canary-pkg", marker).parent
    repo = dep_repo(tmp_path / "repo", "canary-pkg", "canary_pkg")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    env = {**canaries, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"{WHEELHOUSE} {sdists}"}
    data = tmp_path / "data"

    code, out, err = run_cli(["env", "test", "--repo", repo, "--sandbox", backend], data, env)
    assert code == 0, err
    report = json.loads(out)
    assert report["tests"]["tests/test_dep.py::test_dependency_imports_and_works"] == "passed", report
    assert report["tests"]["tests/test_dep.py::test_it_was_built_in_the_sandbox"] == "passed", report
    assert not report["cache_hit"]
    assert not marker.exists(), "the dependency's setup.py ran on the host"
    assert_clean_build_env(installed_build_env(data, "canary_pkg"), canaries)

    if backend != "bwrap":
        # `fix` drives the same build; once, on the default backend, keeps the suite's time in bounds.
        assert leaks(canaries, [out, err], [data]) == []
        return
    fix_data = tmp_path / "fix-data"
    fcode, fout, ferr = run_cli(
        ["fix", "--repo", repo, "--issue", issue, "-M", "1", "--sandbox", backend], fix_data, env
    )
    doc = json.loads(fout)
    assert doc["status"] != "error" and fcode != 7, (fcode, doc["reasons"], ferr[-2000:])
    assert not marker.exists(), "the dependency's setup.py ran on the host"
    assert_clean_build_env(installed_build_env(fix_data, "canary_pkg"), canaries)
    assert leaks(canaries, [out, err, fout, ferr], [data, fix_data]) == []


def test_a_direct_url_dependency_is_refused_then_built_in_the_sandbox_when_allowed(
    tmp_path: Path, canaries: dict[str, str], served: tuple[Served, Path]
) -> None:
    _require_sandbox_and_build_wheels()
    server, root = served
    marker = tmp_path / "host-marker-url"
    archive = make_sdist(root, "url-canary", marker)
    requirement = f"url-canary @ {server.url}/{archive.name}"
    repo = dep_repo(tmp_path / "repo", requirement, "url_canary")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    env = {**canaries, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}
    data = tmp_path / "data"

    # Not allowed by default: a clear refusal naming the requirement and the policy key, nothing fetched.
    code, out, err = run_cli(["env", "test", "--repo", repo], data, env)
    assert code == 7
    assert "url-canary @ http://127.0.0.1" in err and "allow_direct_references" in err
    fcode, fout, ferr = run_cli(["fix", "--repo", repo, "--issue", issue, "-M", "1"], data, env)
    assert fcode == 7 and json.loads(fout)["status"] == "error"
    assert "allow_direct_references" in " ".join(json.loads(fout)["reasons"])
    assert server.requests == [] and not marker.exists()

    # Allowed: fetched as a file from the server, built in the sandbox, importable by the project's tests.
    acode, aout, aerr = run_cli(["env", "test", "--repo", repo, "--allow-direct-references"], data, env)
    assert acode == 0, aerr
    report = json.loads(aout)
    assert report["tests"]["tests/test_dep.py::test_dependency_imports_and_works"] == "passed", report
    assert server.requests == [f"/{archive.name}"]
    assert not marker.exists(), "the direct-URL dependency's setup.py ran on the host"
    assert_clean_build_env(installed_build_env(data, "url_canary"), canaries)

    gcode, gout, gerr = run_cli(
        ["fix", "--repo", repo, "--issue", issue, "-M", "1", "--allow-direct-references"], data, env
    )
    doc = json.loads(gout)
    assert doc["status"] != "error" and gcode != 7, (gcode, doc["reasons"], gerr[-2000:])
    assert not marker.exists()
    assert leaks(canaries, [out, err, fout, ferr, aout, aerr, gout, gerr], [data]) == []

"""Environment for a repo: detect how to install and test it, build a cached virtualenv, run its tests."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandboxes.base import ExecResult, Mount, Sandbox
from sandboxes.workspace import SCRATCH_DIR

log = logging.getLogger(__name__)

#: Where a per-repo virtualenv is mounted inside the sandbox (read-only).
ENV_MOUNT = "/opt/reprobot-env"
#: Always installed: the test runner, per-test timeouts and coverage for fault localization.
BASE_TEST_DEPS = ("pytest", "pytest-timeout", "coverage")
_REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "requirements-tests.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/dev.txt",
)
_TEST_EXTRAS = ("test", "tests", "testing", "dev")


class EnvironmentError_(RuntimeError):
    """The environment could not be built; the message says which step failed and why."""


@dataclass(frozen=True)
class EnvironmentSpec:
    """How to install and test a repo: what a later setup agent refines, and what the cache keys on."""

    language: str = "python"
    deps: tuple[str, ...] = BASE_TEST_DEPS
    install_steps: tuple[str, ...] = ()
    test_command: tuple[str, ...] = ("python", "-m", "pytest")
    per_test_template: str = "python -m pytest {test_id}"
    report_format: str = "junit-xml"
    python_path: tuple[str, ...] = (".",)
    sources: tuple[str, ...] = ()

    def cache_key(self, python: str) -> str:
        """Hash of everything that determines the built environment."""
        blob = json.dumps({"deps": sorted(self.deps), "python": python, "lang": self.language})
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready view of the spec."""
        return asdict(self)


_REQ_LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-\[\],]*\s*(?:[<>=!~;].*)?)$")


def _requirements_from_file(path: Path) -> list[str]:
    deps: list[str] = []
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.split("#", 1)[0].strip()
        # Skip pip options, includes, editable installs and local paths: they need more than a name.
        if not line or line.startswith(("-", ".", "/")) or "://" in line:
            continue
        if _REQ_LINE.match(line):
            deps.append(line)
    return deps


def detect_python_spec(repo: Path) -> EnvironmentSpec:
    """Read the repo's declared test dependencies from pyproject and requirements files."""
    deps: list[str] = list(BASE_TEST_DEPS)
    sources: list[str] = []
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(errors="replace"))
        except tomllib.TOMLDecodeError as exc:
            log.warning("ignoring unparsable pyproject.toml: %s", exc)
            data = {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        declared = project.get("dependencies", [])
        if isinstance(declared, list):
            deps.extend(str(d) for d in declared)
        extras = project.get("optional-dependencies", {})
        if isinstance(extras, dict):
            for name in _TEST_EXTRAS:
                if isinstance(extras.get(name), list):
                    deps.extend(str(d) for d in extras[name])
        groups = data.get("dependency-groups", {})
        if isinstance(groups, dict):
            for name in _TEST_EXTRAS:
                if isinstance(groups.get(name), list):
                    deps.extend(str(d) for d in groups[name] if isinstance(d, str))
        sources.append("pyproject.toml")
    for rel in _REQUIREMENT_FILES:
        path = repo / rel
        if path.is_file():
            deps.extend(_requirements_from_file(path))
            sources.append(rel)
    python_path = [".", "src"] if (repo / "src").is_dir() else ["."]
    unique = tuple(dict.fromkeys(d.strip() for d in deps if d.strip()))
    return EnvironmentSpec(deps=unique, python_path=tuple(python_path), sources=tuple(sources))


@dataclass(frozen=True)
class BuiltEnvironment:
    """A virtualenv on the host, ready to be mounted read-only into sandboxes."""

    spec: EnvironmentSpec
    path: Path
    cache_hit: bool
    seconds: float

    @property
    def mount(self) -> Mount:
        """The read-only mount that makes this environment visible inside a sandbox."""
        return Mount(self.path, ENV_MOUNT, read_only=True)

    @property
    def python(self) -> str:
        """The interpreter as seen from inside the sandbox."""
        return f"{ENV_MOUNT}/bin/python"


async def _run_host(argv: list[str], timeout: float) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return -1, f"timed out after {timeout:.0f}s"
    return proc.returncode or 0, out.decode("utf-8", "replace")


async def build_environment(
    spec: EnvironmentSpec,
    cache_dir: Path,
    *,
    python: Path,
    index_url: str | None = None,
    timeout: float = 900.0,
) -> BuiltEnvironment:
    """Build (or reuse) the virtualenv for `spec` outside the sandbox, with network, cached by spec hash."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    key = spec.cache_key(str(python))
    envs = cache_dir / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    target = envs / key
    ready = target / ".reprobot-ready"
    if ready.exists():
        return BuiltEnvironment(spec, target, True, loop.time() - started)
    lock_path = envs / f"{key}.lock"
    with lock_path.open("w") as lock:
        # Two jobs on the same repo must not build the same environment at once.
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if ready.exists():
                return BuiltEnvironment(spec, target, True, loop.time() - started)
            staging = envs / f"{key}.build-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            code, out = await _run_host([str(python), "-m", "venv", str(staging)], timeout)
            if code != 0:
                raise EnvironmentError_(f"creating the virtualenv with {python} failed: {out.strip()[-500:]}")
            pip = [
                str(staging / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
            ]
            if index_url:
                pip += ["--index-url", index_url]
            code, out = await _run_host([*pip, *spec.deps], timeout)
            if code != 0:
                shutil.rmtree(staging, ignore_errors=True)
                raise EnvironmentError_(f"installing test dependencies failed: {out.strip()[-800:]}")
            (staging / "reprobot-spec.json").write_text(json.dumps(spec.to_json(), indent=2))
            shutil.rmtree(target, ignore_errors=True)
            # venvs started via `python -m` survive a rename: pyvenv.cfg is found next to bin/python.
            staging.rename(target)
            ready.write_text("ok\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return BuiltEnvironment(spec, target, False, loop.time() - started)


# --------------------------------------------------------------------------- test runs


@dataclass(frozen=True)
class TestRun:
    """One pytest run inside the sandbox: per-test statuses plus the raw result."""

    __test__ = False  # not a pytest class

    tests: dict[str, str]
    result: ExecResult
    collected: bool = True

    def count(self, status: str) -> int:
        """How many tests ended with `status` (passed, failed, error, skipped)."""
        return sum(1 for s in self.tests.values() if s == status)

    @property
    def failed_ids(self) -> set[str]:
        """Tests that failed or errored."""
        return {t for t, s in self.tests.items() if s in ("failed", "error")}

    @property
    def passed_ids(self) -> set[str]:
        """Tests that passed."""
        return {t for t, s in self.tests.items() if s == "passed"}

    @property
    def all_passed(self) -> bool:
        """True when something ran and nothing failed, errored or timed out."""
        return bool(self.tests) and not self.failed_ids and not self.result.timed_out

    def summary(self) -> dict[str, int]:
        """Counts per status."""
        return {s: self.count(s) for s in ("passed", "failed", "error", "skipped")}


def parse_junit_xml(text: str) -> dict[str, str]:
    """Map pytest node-ish ids (file::name) to passed/failed/error/skipped from JUnit XML."""
    tests: dict[str, str] = {}
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return tests
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        name = case.get("name", "")
        file_attr = case.get("file")
        test_id = _junit_test_id(classname, name, file_attr)
        status = "passed"
        for child in case:
            if child.tag == "failure":
                status = "failed"
            elif child.tag == "error":
                status = "error"
            elif child.tag == "skipped":
                status = "skipped"
        tests[test_id] = status
    return tests


def _junit_test_id(classname: str, name: str, file_attr: str | None) -> str:
    # pytest writes classname "tests.test_x" or "tests.test_x.TestCls"; rebuild "tests/test_x.py::[Cls::]name".
    parts = classname.split(".") if classname else []
    cls: list[str] = []
    while parts and parts[-1][:1].isupper():
        cls.insert(0, parts.pop())
    module = "/".join(parts) + ".py" if parts else (file_attr or "")
    return "::".join([module, *cls, name])


class TestRunner:
    """Runs pytest for one repo inside a sandbox with a mounted environment."""

    __test__ = False

    def __init__(self, env: BuiltEnvironment, *, timeout: float = 300.0, per_test_timeout: int = 60) -> None:
        self.env = env
        self.timeout = timeout
        self.per_test_timeout = per_test_timeout
        self._counter = 0

    def _env_vars(self) -> dict[str, str]:
        paths = [f"/workspace/{p}".rstrip("/.") or "/workspace" for p in self.env.spec.python_path]
        return {"PYTHONPATH": ":".join(paths), "VIRTUAL_ENV": "/opt/reprobot-env"}

    async def run(
        self,
        sandbox: Sandbox,
        selection: Iterable[str] = (),
        *,
        timeout: float | None = None,
        per_test_timeout: int | None = None,
        coverage_rc: str | None = None,
        extra_args: Iterable[str] = (),
    ) -> TestRun:
        """Run the selected tests (all when empty) and parse per-test results from JUnit XML."""
        self._counter += 1
        report = f"{SCRATCH_DIR}/junit-{os.getpid()}-{self._counter}.xml"
        pytest_args = [
            "-q",
            "-p",
            "no:cacheprovider",
            "--tb=short",
            "-rN",
            f"--junitxml=/workspace/{report}",
            "-o",
            "junit_family=xunit1",
            f"--timeout={per_test_timeout or self.per_test_timeout}",
            *extra_args,
            *selection,
        ]
        if coverage_rc:
            argv = [self.env.python, "-m", "coverage", "run", f"--rcfile={coverage_rc}", "-m", "pytest"]
        else:
            argv = [self.env.python, "-m", "pytest"]
        result = await sandbox.run([*argv, *pytest_args], timeout=timeout or self.timeout, env=self._env_vars())
        tests: dict[str, str] = {}
        report_path = sandbox.spec.workspace / report
        if report_path.is_file():
            tests = parse_junit_xml(report_path.read_text(errors="replace"))
            report_path.unlink(missing_ok=True)
        # Exit code 5 means nothing was collected; 2/3/4 mean pytest itself could not run the selection.
        collected = result.exit_code not in (2, 3, 4, 5) or bool(tests)
        return TestRun(tests=tests, result=result, collected=collected)


def host_python_version() -> str:
    """The bot's own interpreter version, for diagnostics."""
    return ".".join(map(str, sys.version_info[:3]))


@dataclass(frozen=True)
class Baseline:
    """Test statuses on the unmodified base commit."""

    tests: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    output_tail: str = ""

    @property
    def passing(self) -> set[str]:
        """Tests that passed at baseline and so must still pass after a patch."""
        return {t for t, s in self.tests.items() if s == "passed"}

    @property
    def failing(self) -> set[str]:
        """Tests that already failed at baseline (ignored by regression checks)."""
        return {t for t, s in self.tests.items() if s in ("failed", "error")}

"""Running a repo's tests inside a sandbox and turning the report into per-test statuses."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandboxes.base import WORKSPACE_MOUNT, ExecResult, Sandbox
from sandboxes.envspec import EnvironmentSpec
from sandboxes.results import parse_junit_xml, parse_report
from sandboxes.rust import sandbox_env as rust_sandbox_env
from sandboxes.workspace import SCRATCH_DIR

#: Where a per-repo environment is mounted inside the sandbox (read-only).
ENV_MOUNT = "/opt/reprobot-env"
#: Workspace folder holding static metadata of the project under test (see write_metadata_shim).
META_DIR = f"{SCRATCH_DIR}/meta"
#: Report formats parsed from stdout and stderr merged into one stream, in the order they were written.
INTERLEAVED_FORMATS = frozenset({"cargo"})


class MountedEnvironment(Protocol):
    """What the runner needs of a built environment."""

    @property
    def spec(self) -> EnvironmentSpec: ...

    @property
    def python(self) -> str: ...


@dataclass(frozen=True)
class TestRun:
    """One test run inside the sandbox: per-test statuses plus the raw result."""

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


def write_metadata_shim(workspace: Path, spec: EnvironmentSpec) -> None:
    """Static dist-info for the project under test, so importlib.metadata finds it without installing it.

    Installing the project would run its build backend; this only copies declared name and version.
    """
    if spec.project is None:
        return
    name, version = spec.project
    dist = workspace / META_DIR / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    pkg_info = workspace / "PKG-INFO"
    text = pkg_info.read_text(errors="replace") if pkg_info.is_file() else ""
    if not text.startswith("Metadata-Version"):
        text = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    (dist / "METADATA").write_text(text)
    (dist / "INSTALLER").write_text("reprobot\n")


def pytest_extra_args(command: tuple[str, ...]) -> list[str]:
    """Arguments the spec's test command gives pytest (after `pytest` / `python -m pytest`)."""
    for i, word in enumerate(command):
        if word in ("pytest", "py.test") or word.endswith("/pytest"):
            return list(command[i + 1 :])
    return []


class TestRunner:
    """Runs a repo's tests inside a sandbox with its mounted environment; pytest via JUnit XML."""

    __test__ = False

    def __init__(self, env: MountedEnvironment, *, timeout: float = 300.0, per_test_timeout: int = 60) -> None:
        self.env = env
        self.timeout = timeout
        self.per_test_timeout = per_test_timeout
        self._counter = 0

    def env_vars(self) -> dict[str, str]:
        """The environment every test command runs with (tools that run pytest their own way reuse it)."""
        return self._env_vars()

    def suite_args(self) -> list[str]:
        """pytest arguments that select the whole suite the way a whole-suite `run` does."""
        return ["--continue-on-collection-errors", *pytest_extra_args(self.env.spec.test_command)]

    def _env_vars(self) -> dict[str, str]:
        if self.env.spec.language == "rust":
            # Build output stays in the workspace's scratch folder: later runs in the same workspace reuse it.
            return rust_sandbox_env(ENV_MOUNT, f"{SCRATCH_DIR}/cargo-target")
        paths = [f"{WORKSPACE_MOUNT}/{p}".rstrip("/.") or WORKSPACE_MOUNT for p in self.env.spec.python_path]
        if self.env.spec.project is not None:
            paths.append(f"{WORKSPACE_MOUNT}/{META_DIR}")
        return {
            "PYTHONPATH": ":".join(paths),
            "VIRTUAL_ENV": ENV_MOUNT,
            "PATH": f"{ENV_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin",
        }

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
        """Run the selected tests (all when empty) and parse per-test results."""
        if self.env.spec.report_format != "junit-xml":
            return await self._run_other(sandbox, list(selection), timeout or self.timeout)
        write_metadata_shim(sandbox.spec.workspace, self.env.spec)
        self._counter += 1
        report = f"{SCRATCH_DIR}/junit-{os.getpid()}-{self._counter}.xml"
        selection = list(selection)
        pytest_args = [
            "-q",
            "-p",
            "no:cacheprovider",
            "--tb=short",
            "-rN",
            f"--junitxml={WORKSPACE_MOUNT}/{report}",
            "-o",
            "junit_family=xunit1",
            f"--timeout={per_test_timeout or self.per_test_timeout}",
            *extra_args,
            # The spec's own pytest arguments (paths, options) apply to whole-suite runs only, and there
            # a module that fails to import must not hide every other test's baseline status.
            *(selection or ["--continue-on-collection-errors", *pytest_extra_args(self.env.spec.test_command)]),
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

    async def _run_other(self, sandbox: Sandbox, selection: list[str], timeout: float) -> TestRun:
        """Non-pytest suites: the spec's command (or per-test template), then its report format's parser."""
        spec = self.env.spec
        workspace = sandbox.spec.workspace
        for rel in spec.report_paths:
            for old in workspace.glob(rel):
                old.unlink(missing_ok=True)
        if selection:
            # Every selected test runs even when an earlier one fails; the exit code says whether any failed.
            steps = (spec.per_test_template.format(test_id=shlex.quote(t)) for t in selection)
            script = "rc=0; " + "".join(f"{{ {step}; }} || rc=1; " for step in steps) + 'exit "$rc"'
            argv = ["sh", "-c", script]
        else:
            argv = list(spec.test_command)
        for step in spec.install_steps:
            setup = await sandbox.run(["sh", "-c", step], timeout=timeout, env=self._env_vars())
            if not setup.ok:
                return TestRun(tests={}, result=setup, collected=False)
        if spec.report_format in INTERLEAVED_FORMATS and not spec.report_paths:
            # The parser needs both streams in order (cargo names each test binary on stderr, results on stdout).
            argv = ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv]
        result = await sandbox.run(argv, timeout=timeout, env=self._env_vars())
        if spec.report_format == "exit-code":
            name = " ".join(selection) or "suite"
            return TestRun(tests={name: "passed" if result.ok else "failed"}, result=result)
        if spec.report_paths:
            texts = [p.read_text(errors="replace") for rel in spec.report_paths for p in sorted(workspace.glob(rel))]
        else:
            texts = [result.stdout]
        tests = parse_report(spec.report_format, texts)
        return TestRun(tests=tests, result=result, collected=bool(tests) or result.ok)


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

"""Running a repo's tests inside a sandbox and turning the report into per-test statuses."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandboxes.base import WORKSPACE_MOUNT, ExecResult, PytestServing, Sandbox
from sandboxes.envspec import EnvironmentSpec
from sandboxes.results import junit_collection_errors, parse_junit_xml, parse_report
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
    #: Test modules pytest could not collect (import errors), with the error pytest reported for each.
    collection_errors: dict[str, str] = field(default_factory=dict)

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


#: The ini file the runner writes when the project's pytest settings sit where pytest would not read them.
PYTEST_INI = f"{SCRATCH_DIR}/pytest.ini"


def pytest_config_args(workspace: Path, spec: EnvironmentSpec) -> list[str]:
    """pytest arguments that hand it the project's settings: `-c` an ini of ours, or an addopts override."""
    args: list[str] = []
    if spec.pytest_ini:
        ini = workspace / PYTEST_INI
        ini.parent.mkdir(parents=True, exist_ok=True)
        # Later keys win, as in a dict: the ini holds each setting once.
        values = dict(spec.pytest_ini)
        lines = ["[pytest]", *(f"{k} = {v.replace(chr(10), chr(10) + '    ')}" for k, v in values.items())]
        ini.write_text("\n".join(lines) + "\n")
        # rootdir stays the workspace: test ids and conftest discovery must not move to the scratch folder.
        args += ["-c", f"{WORKSPACE_MOUNT}/{PYTEST_INI}", f"--rootdir={WORKSPACE_MOUNT}"]
    for key, value in spec.pytest_overrides:
        args += ["-o", f"{key}={value}"]
    return args


def selection_collect_args(spec: EnvironmentSpec) -> list[str]:
    """For runs of chosen tests: pytest's default class and function prefixes added to the project's own.

    A test reprobot writes (`test_...` in a `Test...` class) must be collected even where the project named
    its tests otherwise (python_functions = check_*); the project's own tests keep being collected too.
    """
    defaults = {"python_classes": "Test", "python_functions": "test"}
    args: list[str] = []
    for key, value in spec.pytest_collect:
        if defaults[key] not in value.split():
            args += ["-o", f"{key}={value} {defaults[key]}"]
    return args


def pytest_extra_args(command: tuple[str, ...]) -> list[str]:
    """Arguments the spec's test command gives pytest (after `pytest` / `python -m pytest`)."""
    for i, word in enumerate(command):
        if word in ("pytest", "py.test") or word.endswith("/pytest"):
            return list(command[i + 1 :])
    return []


class TestSuite:
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
        """pytest arguments that select the whole suite the way a whole-suite `run` does.

        Our scratch folder is never part of it: a project whose `norecursedirs` does not skip dot-folders, run
        with `--doctest-modules`, would otherwise import our helper scripts as its own modules.
        """
        return [
            "--continue-on-collection-errors",
            f"--ignore={WORKSPACE_MOUNT}/{SCRATCH_DIR}",
            *pytest_extra_args(self.env.spec.test_command),
        ]

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
        env: Mapping[str, str] | None = None,
    ) -> TestRun:
        """Run the selected tests (all when empty) and parse per-test results; `env` adds to env_vars()."""
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
            *pytest_config_args(sandbox.spec.workspace, self.env.spec),
            *(selection_collect_args(self.env.spec) if selection else []),
            *extra_args,
            # The spec's own pytest arguments (paths, options) apply to whole-suite runs only, and there
            # a module that fails to import must not hide every other test's baseline status.
            *(selection or self.suite_args()),
        ]
        if coverage_rc:
            argv = [self.env.python, "-m", "coverage", "run", f"--rcfile={coverage_rc}", "-m", "pytest"]
        else:
            argv = [self.env.python, "-m", "pytest"]
        variables = {**self._env_vars(), **(env or {})}
        served: ExecResult | None = None
        if not coverage_rc and isinstance(sandbox, PytestServing):
            # A warm sandbox's preloaded pytest: the same run without starting an interpreter (None: not here).
            served = await sandbox.run_pytest(
                self.env.python, pytest_args, timeout=timeout or self.timeout, env=variables
            )
        result = served or await sandbox.run([*argv, *pytest_args], timeout=timeout or self.timeout, env=variables)
        tests: dict[str, str] = {}
        errors: dict[str, str] = {}
        report_path = sandbox.spec.workspace / report
        if report_path.is_file():
            text = report_path.read_text(errors="replace")
            tests, errors = parse_junit_xml(text), junit_collection_errors(text)
            report_path.unlink(missing_ok=True)
        # Exit code 5 means nothing was collected; 2/3/4 mean pytest itself could not run the selection.
        collected = result.exit_code not in (2, 3, 4, 5) or bool(tests)
        return TestRun(tests=tests, result=result, collected=collected, collection_errors=errors)

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
    #: Test modules that did not import at baseline -> the error's last line (the rest of the suite still ran).
    collection_errors: dict[str, str] = field(default_factory=dict)
    #: file -> line -> coverage test contexts of the baseline run (None: not measured); see agents/impact.py.
    coverage: dict[str, dict[int, set[str]]] | None = field(default=None, compare=False, repr=False)
    #: Why the repo has no test to keep passing ("pytest collected no tests ..."); "" when it has some. Such a
    #: repo is validated on the BRT, the assessment's near inputs and the report's examples only.
    no_tests: str = ""
    #: True when this baseline was read from the cache (sandboxes/baseline_cache.py), not run by this job.
    cached: bool = field(default=False, compare=False)

    @property
    def passing(self) -> set[str]:
        """Tests that passed at baseline and so must still pass after a patch."""
        return {t for t, s in self.tests.items() if s == "passed"}

    @property
    def failing(self) -> set[str]:
        """Tests that already failed at baseline (ignored by regression checks)."""
        return {t for t, s in self.tests.items() if s in ("failed", "error")}


_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_ERROR_LINE = re.compile(r"^(?:E\s+)?((?:[A-Za-z_][\w.]*(?:Error|Exception|Exit))\b.*)$", re.M)


def diagnose_baseline(run: TestRun, spec: EnvironmentSpec) -> str | None:
    """Why a pytest baseline ran no test at all (an environment failure, not a verdict on the bug); None if tests ran.

    Names the missing module, the collection error, an empty collection or pytest's own complaint (usage or
    internal error), and where the runner's settings came from, so a maintainer can tell a missing dependency
    from a test-discovery mismatch. A run killed after collecting (output flood, memory) is not diagnosed here.
    """
    ran = [t for t, s in run.tests.items() if s != "error" or t not in run.collection_errors]
    if ran:
        return None
    texts = [*run.collection_errors.values(), run.result.output]
    missing = sorted({m for text in texts for m in _MISSING_MODULE.findall(text)})
    where = f" (test settings from {spec.pytest_source})" if spec.pytest_source else ""
    if missing:
        names = ", ".join(repr(m) for m in missing)
        return (
            f"the tests cannot import {names} (ModuleNotFoundError while collecting): a dependency the project "
            f"does not declare where reprobot reads them, or the project itself is not importable{where}"
        )
    if run.collection_errors:
        first_id, first = next(iter(run.collection_errors.items()))
        return f"collecting the tests failed in {first_id}: {error_summary(first)}{where}"
    if collected_nothing(run):
        return (
            "pytest collected no tests: no test file matches the project's test settings or pytest's defaults "
            f"(python_files, testpaths){where}"
        )
    output = run.result.output
    if run.result.exit_code not in (2, 3, 4):
        # Killed (a flood of output, memory) or stopped some other way after collecting: not a setup fault.
        return None
    complaint = [ln.strip() for ln in output.splitlines() if re.match(r"^\s*(ERROR|error|E\s+\w+Error)\b", ln)]
    tail = complaint[0] if complaint else (output.strip().splitlines() or ["no output"])[-1]
    return f"pytest could not start the suite (exit code {run.result.exit_code}): {tail[:300]}{where}"


def collected_nothing(run: TestRun) -> bool:
    """True when pytest found no test at all and nothing failed to import: a repo without tests, not a setup fault.

    Exit 5 is pytest's "no tests collected"; the summary lines cover a runner that hides the code (a wrapper).
    A test module that does not import is a collection error, never "nothing collected".
    """
    if run.tests or run.collection_errors or run.result.timed_out:
        return False
    output = run.result.output
    return run.result.exit_code == 5 or "collected 0 items" in output or "no tests ran" in output


def error_summary(text: str) -> str:
    """The line of a collection error that names it (`ModuleNotFoundError: No module named 'x'`)."""
    found = _ERROR_LINE.findall(text)
    lines = text.strip().splitlines()
    return (found[-1].strip() if found else (lines[-1].strip() if lines else "unknown error"))[:300]

"""Environment for a repo: detect how to install and test it, build a cached virtualenv, run its tests."""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import logging
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.utils import canonicalize_name

from sandboxes.base import Mount, Sandbox, SandboxError
from sandboxes.cache_prune import READY, lock_shared, touch
from sandboxes.envspec import (
    BASE_TEST_DEPS,
    EnvironmentSpec,
    ci_test_commands,
    detect_python_spec,
    detect_spec,
    with_extra_deps,
)
from sandboxes.hostrun import run_host
from sandboxes.interpreters import available_interpreters
from sandboxes.pydeps import Classified, DependencyError
from sandboxes.pyenv import build_python_env, installed_distributions, refuse_direct_references
from sandboxes.results import parse_junit_xml
from sandboxes.rust import RustSetupError, RustToolchain, find_rust_toolchain, vendor_crates
from sandboxes.setup_agent import SetupAgent, SetupBudget, SetupFailed
from sandboxes.testrun import (
    ENV_MOUNT,
    Baseline,
    TestRun,
    TestSuite,
    collected_nothing,
    diagnose_baseline,
    error_summary,
)

__all__ = [
    "BASE_TEST_DEPS",
    "ENV_MOUNT",
    "Baseline",
    "BuiltEnvironment",
    "EnvironmentError_",
    "EnvironmentSpec",
    "TestRun",
    "TestSuite",
    "build_environment",
    "collected_nothing",
    "describe_environment",
    "detect_python_spec",
    "detect_spec",
    "diagnose_baseline",
    "parse_junit_xml",
    "prepare_environment",
    "run_baseline",
    "with_extra_deps",
]

log = logging.getLogger(__name__)


class EnvironmentError_(RuntimeError):
    """The environment could not be built; the message says which step failed and why."""


@dataclass(frozen=True)
class BuiltEnvironment:
    """A virtualenv on the host, ready to be mounted read-only into sandboxes."""

    spec: EnvironmentSpec
    path: Path
    cache_hit: bool
    seconds: float
    #: Further read-only host trees the environment needs inside the sandbox (a Rust toolchain).
    extra_mounts: tuple[Mount, ...] = ()

    @property
    def mount(self) -> Mount:
        """The read-only mount that makes this environment visible inside a sandbox."""
        return Mount(self.path, ENV_MOUNT, read_only=True)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """Every mount a sandbox running this environment needs: the environment first."""
        return (self.mount, *self.extra_mounts)

    @property
    def python(self) -> str:
        """The interpreter as seen from inside the sandbox."""
        return f"{ENV_MOUNT}/bin/python"


async def build_environment(
    spec: EnvironmentSpec,
    cache_dir: Path,
    *,
    python: Path,
    index_url: str | None = None,
    timeout: float = 900.0,
    workspace: Path | None = None,
    sandbox: str = "bwrap",
    rootfs: Path | None = None,
    allow_direct_references: bool = False,
) -> BuiltEnvironment:
    """Build (or reuse) the environment for `spec`, cached by spec hash; the result carries `spec` itself.

    Projects with the same dependencies share one environment unless a dependency installs the project
    itself, which then gets one of its own with that copy uninstalled (see docs/environments.md).

    Python gets a virtualenv created and filled inside a `sandbox` sandbox from wheels the host only
    downloaded (sandboxes/pyenv.py): nothing a repo declares runs on the host. Direct-reference
    requirements are refused unless `allow_direct_references` (path references need `workspace`).
    Rust gets the workspace's crates vendored (needs `workspace`) and the host toolchain as an extra mount.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    extra: tuple[Mount, ...] = ()
    toolchain = None
    try:
        # Refused before the cache is looked at: a policy that stopped allowing them must see the refusal.
        classified = refuse_direct_references(spec.deps, allow_direct_references)
    except DependencyError as exc:
        raise EnvironmentError_(str(exc)) from exc
    if spec.language == "rust":
        toolchain = await asyncio.to_thread(find_rust_toolchain)
        if toolchain is None:
            raise EnvironmentError_("rust toolchain missing on this host: no rustc with a cargo next to it")
        extra = (toolchain.mount,)
    envs = cache_dir / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    build = functools.partial(
        _cached_env,
        envs,
        spec,
        toolchain=toolchain,
        workspace=workspace,
        classified=classified,
        python=python,
        index_url=index_url,
        timeout=timeout,
        sandbox=sandbox,
        rootfs=rootfs,
        pip_cache=cache_dir / "pip",
    )
    shared_key = spec.cache_key(str(python))
    # Only a Python project is linked into its env (and uninstalled from it): any other spec shares by its key.
    if spec.project is None or spec.language != "python":
        path, hit = await build(shared_key, remove=None)
        return BuiltEnvironment(_with_build_notes(spec, path), path, hit, loop.time() - started, extra)
    project = spec.project[0]
    own_key = spec.cache_key(str(python), own=True)
    if _ready(envs / own_key) or any(c.kind == "path" for c in classified):
        # Built before because a dependency pulled the project in (the shared env would not do either), or a
        # path requirement points into this workspace, whose content the requirement text does not capture.
        path, hit = await build(own_key, remove=project)
        return BuiltEnvironment(_with_build_notes(spec, path), path, hit, loop.time() - started, extra)
    path, hit = await build(shared_key, remove=None)
    installed = await asyncio.to_thread(_read_dists, path)
    if installed is not None and canonicalize_name(project) not in installed:
        return BuiltEnvironment(_with_build_notes(spec, path), path, hit, loop.time() - started, extra)
    # A dependency installed the project itself (attrs via hypothesis), or the record is unreadable: the
    # tests must see the workspace's copy only, so the project gets an env of its own, that copy uninstalled.
    log.info("%s is installed by its own dependencies: building an environment of its own", project)
    path, own_hit = await build(own_key, remove=project)
    return BuiltEnvironment(_with_build_notes(spec, path), path, hit and own_hit, loop.time() - started, extra)


#: The file, in a built environment, listing the canonical names of the distributions installed in it.
DISTS_FILE = "reprobot-dists.json"
#: The file, in a built environment, with notes on the declared pins loosened to build it.
RELAXED_FILE = "reprobot-relaxed.json"


def _with_build_notes(spec: EnvironmentSpec, path: Path) -> EnvironmentSpec:
    """`spec` with the env's notes on loosened pins, so reports say what the tests ran against."""
    try:
        notes = json.loads((path / RELAXED_FILE).read_text())
    except (OSError, ValueError):
        return spec
    extra = tuple(str(n) for n in notes if isinstance(n, str)) if isinstance(notes, list) else ()
    return replace(spec, notes=(*spec.notes, *extra)) if extra else spec


def _ready(target: Path) -> bool:
    return (target / READY).exists()


def _use_if_ready(envs: Path, key: str) -> bool:
    """True when the env for `key` is built; it is then marked used, under its lock held shared, so that a
    prune (sandboxes/cache_prune.py) either sees this use or removed the env before the check."""
    target = envs / key
    if not _ready(target):
        return False
    with lock_shared(envs / f"{key}.lock"):
        if not _ready(target):
            return False
        touch(target / READY)
        return True


def _read_dists(target: Path) -> frozenset[str] | None:
    """The distributions recorded after the build, or None when the record is missing or unreadable."""
    try:
        data = json.loads((target / DISTS_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, list) or not all(isinstance(n, str) for n in data):
        return None
    return frozenset(data)


async def _cached_env(
    envs: Path,
    spec: EnvironmentSpec,
    key: str,
    *,
    remove: str | None,
    toolchain: RustToolchain | None,
    workspace: Path | None,
    classified: list[Classified],
    python: Path,
    index_url: str | None,
    timeout: float,
    sandbox: str,
    rootfs: Path | None,
    pip_cache: Path,
) -> tuple[Path, bool]:
    """The env folder for `key`, built unless ready, and whether it was ready (a cache hit)."""
    target = envs / key
    if await asyncio.to_thread(_use_if_ready, envs, key):
        return target, True
    lock_path = envs / f"{key}.lock"
    with lock_path.open("w") as lock:
        # Two jobs must not build the same environment at once.
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if _ready(target):
                touch(target / READY)
                return target, True
            staging = envs / f"{key}.build-{os.getpid()}"
            await asyncio.to_thread(_remove_build_dirs, staging)
            try:
                if toolchain is not None:
                    await _vendor_rust(toolchain, workspace, staging, timeout)
                else:
                    await _build_venv(
                        staging,
                        spec,
                        classified,
                        remove=remove,
                        python=python,
                        index_url=index_url,
                        timeout=timeout,
                        workspace=workspace,
                        sandbox=sandbox,
                        rootfs=rootfs,
                        pip_cache=pip_cache,
                    )
            except BaseException:
                await asyncio.to_thread(_remove_build_dirs, staging)
                raise
            await asyncio.to_thread(shutil.rmtree, _scratch(staging), True)
            # The sandbox could write into staging: the bot's own files are created afresh, never followed.
            # The spec recorded is the first builder's: other projects may share this env.
            _write_new(staging / "reprobot-spec.json", json.dumps(spec.to_json(), indent=2))
            if toolchain is None:
                dists = await asyncio.to_thread(installed_distributions, staging)
                _write_new(staging / DISTS_FILE, json.dumps(dists, indent=0))
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
            _write_new(target / READY, "ok\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target, False


def _scratch(staging: Path) -> Path:
    return staging.parent / f"{staging.name}.work"


def _remove_build_dirs(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(_scratch(staging), ignore_errors=True)


def _write_new(path: Path, text: str) -> None:
    """Write a file the bot owns in a folder a sandbox wrote to: whatever sits at that name is replaced."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(text)


async def _vendor_rust(toolchain: RustToolchain, workspace: Path | None, staging: Path, timeout: float) -> None:
    if workspace is None:
        raise EnvironmentError_("a Rust environment is built from a workspace: its Cargo.toml names the crates")
    try:
        await vendor_crates(toolchain, workspace, staging, env_mount=ENV_MOUNT, timeout=timeout)
    except RustSetupError as exc:
        raise EnvironmentError_(str(exc)) from exc


async def _build_venv(
    staging: Path,
    spec: EnvironmentSpec,
    classified: list[Classified],
    *,
    remove: str | None,
    python: Path,
    index_url: str | None,
    timeout: float,
    workspace: Path | None,
    sandbox: str,
    rootfs: Path | None,
    pip_cache: Path,
) -> None:
    """The virtualenv at `staging`, built in the sandbox; EnvironmentError_ says which step failed and why.

    Notes on pins loosened to install at all are kept in the env (RELAXED_FILE), for every job that uses it.
    """
    try:
        notes = await build_python_env(
            staging,
            classified,
            python=str(python),
            backend=sandbox,
            rootfs=rootfs,
            index_url=index_url,
            workspace=workspace,
            remove=remove,
            python_path=spec.python_path,
            link_workspace=spec.language == "python",
            timeout=timeout,
            pip_cache=pip_cache,
        )
    except DependencyError as exc:
        raise EnvironmentError_(str(exc)) from exc
    except SandboxError as exc:
        raise EnvironmentError_(f"the {sandbox} sandbox that builds the environment failed: {exc}") from exc
    if notes:
        _write_new(staging / RELAXED_FILE, json.dumps(notes, indent=0))


#: Maven files that load code into Maven itself (build extensions, JVM options, extra CLI flags).
MAVEN_CODE_FILES = (".mvn/extensions.xml", ".mvn/jvm.config", ".mvn/maven.config")


def host_step_problem(step: str, workspace: Path) -> str | None:
    """Why a download step must not run on the host for this workspace, or None when it may.

    Maven build extensions (`.mvn/extensions.xml`, `<extensions>` in a pom) and `.mvn/jvm.config` /
    `.mvn/maven.config` load the repo's chosen code into the host's Maven; Gradle build scripts are code.
    """
    tool = Path(shlex.split(step)[0]).name if step.strip() else ""
    if tool in ("gradle", "gradlew"):
        return "Gradle build scripts are code; reprobot never runs Gradle on the host"
    if tool == "mvn":
        for rel in MAVEN_CODE_FILES:
            if (workspace / rel).exists():
                return f"{rel} loads code into Maven, which would run it on the host"
        for pom in sorted(workspace.rglob("pom.xml")):
            if "<extensions>" in pom.read_text(errors="replace"):
                return f"{pom.relative_to(workspace)} declares Maven build extensions, which would run on the host"
    return None


def host_step_argv(step: str) -> list[str]:
    """The argv of a download step (no shell); npm always gets --ignore-scripts."""
    argv = shlex.split(step)
    if argv and Path(argv[0]).name == "npm" and "--ignore-scripts" not in argv:
        argv.append("--ignore-scripts")
    return argv


async def run_fetch_steps(spec: EnvironmentSpec, workspace: Path, timeout: float = 900.0) -> None:
    """Run the spec's download-only steps on the host, in the workspace, with network (no repo code runs).

    Each runs without a shell, with run_host's scrubbed environment; steps that would load repo-chosen
    code into the host tool are refused with the reason.
    """
    for step in spec.fetch_steps:
        try:
            argv = host_step_argv(step)
        except ValueError as exc:
            raise EnvironmentError_(f"fetch step {step!r} cannot be parsed: {exc}") from exc
        if not argv:
            continue
        problem = await asyncio.to_thread(host_step_problem, step, workspace)
        if problem is not None:
            raise EnvironmentError_(f"fetch step {step!r} refused: {problem}")
        if shutil.which(argv[0]) is None:
            raise EnvironmentError_(f"{spec.language} toolchain missing on this host: {argv[0]!r} not found")
        run = await run_host(argv, timeout=timeout, cwd=workspace)
        if run.timed_out:
            raise EnvironmentError_(f"fetch step {step!r} timed out after {timeout:.0f}s")
        if run.code != 0:
            raise EnvironmentError_(f"fetch step {step!r} failed ({run.code}): {run.stdout.strip()[-800:]}")


async def prepare_environment(
    workspace: Path,
    cache_dir: Path,
    *,
    python: Path,
    index_url: str | None = None,
    setup: list[str] | None = None,
    test: str | None = None,
    spec: EnvironmentSpec | None = None,
    agent: SetupAgent | None = None,
    sandbox: str = "bwrap",
    rootfs: Path | None = None,
    allow_direct_references: bool = False,
    extra_deps: tuple[str, ...] = (),
) -> BuiltEnvironment:
    """Detect (policy, then repo signals, then the setup agent if given), fetch and build (or reuse) the env.

    `extra_deps` are requirements the caller knows the tests need beyond what the repo declares (a benchmark
    case's `deps`); they are resolved and installed like the repo's own, and a bad one is an EnvironmentError_.

    `python` is the configured interpreter; a Python project gets the one its requires-python or classifiers
    ask for among those on the host (and in `rootfs`, the sandbox root, when one is used). The environment is
    built in a `sandbox` sandbox (on `rootfs` when given); see build_environment.
    """
    if spec is None:
        try:
            interpreters = await asyncio.to_thread(available_interpreters, Path("/"), rootfs)
            # Detection parses the repo's test files: off the event loop.
            spec = await asyncio.to_thread(
                functools.partial(
                    detect_spec, workspace, setup=setup, test=test, interpreters=interpreters, default_python=python
                )
            )
        except ValueError as exc:
            if agent is None:
                raise EnvironmentError_(str(exc)) from exc
            try:
                spec = await agent.discover(
                    workspace, None, budget=SetupBudget(), ci_commands=tuple(ci_test_commands(workspace))
                )
            except SetupFailed as failed:
                raise EnvironmentError_(f"{exc}; the setup agent failed too: {failed}") from failed
    try:
        spec = with_extra_deps(spec, extra_deps)
    except ValueError as exc:
        raise EnvironmentError_(str(exc)) from exc
    await run_fetch_steps(spec, workspace)
    chosen = Path(spec.python) if spec.python else python
    return await build_environment(
        spec,
        cache_dir,
        python=chosen,
        index_url=index_url,
        workspace=workspace,
        sandbox=sandbox,
        rootfs=rootfs,
        allow_direct_references=allow_direct_references,
    )


async def run_baseline(
    sandbox: Sandbox, env: BuiltEnvironment, *, timeout: float = 900.0, coverage_rc: str | None = None
) -> tuple[Baseline, TestRun]:
    """Run the whole suite on the unmodified workspace; the baseline statuses and the raw run.

    With `coverage_rc` the suite runs under coverage.py with those settings (for test impact selection).
    """
    started = time.monotonic()
    run = await TestSuite(env, timeout=timeout).run(sandbox, [], coverage_rc=coverage_rc)
    baseline = Baseline(
        tests=run.tests,
        seconds=time.monotonic() - started,
        output_tail=run.result.output[-2000:],
        collection_errors={t: error_summary(e) for t, e in run.collection_errors.items()},
    )
    return baseline, run


def describe_environment(env: BuiltEnvironment) -> dict[str, object]:
    """The environment as reported in a job's JSON: interpreter and why, pytest, where settings came from."""
    spec = env.spec
    pytest_req = next((d for d in spec.deps if re.match(r"^pytest\b(?![-_.\w])", d)), None)
    return {
        "language": spec.language,
        "python": spec.python_version or None,
        "interpreter": spec.python or None,
        "python_reason": spec.python_reason or None,
        "pytest": pytest_req,
        "test_settings": spec.pytest_source or None,
        "sources": list(spec.sources),
        "notes": list(spec.notes),
        "cache_hit": env.cache_hit,
    }


def host_python_version() -> str:
    """The bot's own interpreter version, for diagnostics."""
    return ".".join(map(str, sys.version_info[:3]))

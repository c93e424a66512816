"""Environment for a repo: detect how to install and test it, build a cached virtualenv, run its tests."""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import logging
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import WORKSPACE_MOUNT, Mount, Sandbox
from sandboxes.envspec import BASE_TEST_DEPS, EnvironmentSpec, ci_test_commands, detect_python_spec, detect_spec
from sandboxes.hostrun import HostRun, run_host
from sandboxes.interpreters import available_interpreters
from sandboxes.results import parse_junit_xml
from sandboxes.rust import RustSetupError, RustToolchain, find_rust_toolchain, vendor_crates
from sandboxes.setup_agent import SetupAgent, SetupBudget, SetupFailed
from sandboxes.testrun import (
    ENV_MOUNT,
    META_DIR,
    Baseline,
    TestRun,
    TestRunner,
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
    "TestRunner",
    "build_environment",
    "describe_environment",
    "detect_python_spec",
    "detect_spec",
    "diagnose_baseline",
    "parse_junit_xml",
    "prepare_environment",
    "run_baseline",
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
) -> BuiltEnvironment:
    """Build (or reuse) the environment for `spec` outside the sandbox, with network, cached by spec hash.

    Python gets a virtualenv; Rust gets the workspace's crates vendored (needs `workspace`) and the host
    toolchain as an extra mount.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    extra: tuple[Mount, ...] = ()
    toolchain = None
    if spec.language == "rust":
        toolchain = await asyncio.to_thread(find_rust_toolchain)
        if toolchain is None:
            raise EnvironmentError_("rust toolchain missing on this host: no rustc with a cargo next to it")
        extra = (toolchain.mount,)
    key = spec.cache_key(str(python))
    envs = cache_dir / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    target = envs / key
    ready = target / ".reprobot-ready"
    if ready.exists():
        return BuiltEnvironment(spec, target, True, loop.time() - started, extra)
    lock_path = envs / f"{key}.lock"
    with lock_path.open("w") as lock:
        # Two jobs on the same repo must not build the same environment at once.
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if ready.exists():
                return BuiltEnvironment(spec, target, True, loop.time() - started, extra)
            staging = envs / f"{key}.build-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            if toolchain is not None:
                await _vendor_rust(toolchain, workspace, staging, timeout)
            else:
                await _build_venv(staging, spec, python, index_url, timeout)
            (staging / "reprobot-spec.json").write_text(json.dumps(spec.to_json(), indent=2))
            shutil.rmtree(target, ignore_errors=True)
            # venvs started via `python -m` survive a rename: pyvenv.cfg is found next to bin/python.
            staging.rename(target)
            ready.write_text("ok\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return BuiltEnvironment(spec, target, False, loop.time() - started, extra)


async def _vendor_rust(toolchain: RustToolchain, workspace: Path | None, staging: Path, timeout: float) -> None:
    if workspace is None:
        raise EnvironmentError_("a Rust environment is built from a workspace: its Cargo.toml names the crates")
    try:
        await vendor_crates(toolchain, workspace, staging, env_mount=ENV_MOUNT, timeout=timeout)
    except RustSetupError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentError_(str(exc)) from exc


async def _build_venv(
    staging: Path, spec: EnvironmentSpec, python: Path, index_url: str | None, timeout: float
) -> None:
    """A virtualenv at `staging` with the spec's deps, linked to the workspace (see _link_workspace)."""
    venv = await run_host([str(python), "-m", "venv", str(staging)], timeout=timeout)
    if venv.code != 0:
        raise EnvironmentError_(f"creating the virtualenv with {python} failed: {venv.stdout.strip()[-500:]}")
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
    installed = await run_host([*pip, *spec.deps], timeout=timeout) if spec.deps else HostRun(0, "")
    if installed.code != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentError_(f"installing test dependencies failed: {installed.stdout.strip()[-800:]}")
    await _link_workspace(staging, spec, timeout)
    _relocate_scripts(staging)


async def _link_workspace(venv: Path, spec: EnvironmentSpec, timeout: float) -> None:
    """Make the workspace's code the project's only copy in the env, like an editable install would.

    A dependency may have pulled the project itself from PyPI (attrs via hypothesis): that copy is removed,
    and a .pth file puts the workspace source folders and the static metadata on sys.path, where tools that
    read site-packages (mypy) find them too. Nothing of the repo runs on the host.
    """
    if spec.language != "python":
        return
    if spec.project is not None:
        python = str(venv / "bin" / "python")
        await run_host([python, "-m", "pip", "uninstall", "-y", "-q", spec.project[0]], timeout=timeout)
    entries = [f"{WORKSPACE_MOUNT}/{p}".rstrip("/.") or WORKSPACE_MOUNT for p in spec.python_path]
    if spec.project is not None:
        entries.append(f"{WORKSPACE_MOUNT}/{META_DIR}")
    for site in venv.glob("lib/python3*/site-packages"):
        (site / "_reprobot_workspace.pth").write_text("".join(f"{e}\n" for e in entries))


def _relocate_scripts(venv: Path) -> None:
    """Point console-script shebangs at the mount point: the env is only ever used as ENV_MOUNT."""
    old = str(venv).encode()
    for script in (venv / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if old in data[:4096]:
            script.write_bytes(data.replace(old, ENV_MOUNT.encode()))


async def run_fetch_steps(spec: EnvironmentSpec, workspace: Path, timeout: float = 900.0) -> None:
    """Run the spec's download-only steps on the host, in the workspace, with network (no repo code runs)."""
    for step in spec.fetch_steps:
        tool = shutil.which(step.split()[0])
        if tool is None:
            raise EnvironmentError_(f"{spec.language} toolchain missing on this host: {step.split()[0]!r} not found")
        run = await run_host(["sh", "-c", step], timeout=timeout, cwd=workspace)
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
    rootfs: Path | None = None,
) -> BuiltEnvironment:
    """Detect (policy, then repo signals, then the setup agent if given), fetch and build (or reuse) the env.

    `python` is the configured interpreter; a Python project gets the one its requires-python or classifiers
    ask for among those on the host (and in `rootfs`, the sandbox root, when one is used).
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
    await run_fetch_steps(spec, workspace)
    chosen = Path(spec.python) if spec.python else python
    return await build_environment(spec, cache_dir, python=chosen, index_url=index_url, workspace=workspace)


async def run_baseline(sandbox: Sandbox, env: BuiltEnvironment, *, timeout: float = 900.0) -> tuple[Baseline, TestRun]:
    """Run the whole suite on the unmodified workspace; the baseline statuses and the raw run."""
    started = time.monotonic()
    run = await TestRunner(env, timeout=timeout).run(sandbox, [])
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

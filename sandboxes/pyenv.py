"""A Python virtualenv built inside the sandbox, from a wheelhouse the host filled with files only.

Host side: `pip download --only-binary :all:` (wheels only; pip then reads metadata, never runs a build)
with the scrubbed environment of run_host. A dependency without a wheel is fetched as a source archive
(sandboxes/pydeps.py) and built into a wheel *inside* the sandbox, with no network, from the same
wheelhouse; whatever that build still misses (build backends, their plugins, a dependency that is
itself source-only) is downloaded the same way, in a bounded number of rounds. The virtualenv is then
created and populated in the sandbox (`python -m venv`, `pip install --no-index --find-links`), with the
environment folder mounted read-write at ENV_MOUNT: the path it is later mounted at read-only, so no
script needs relocating.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename

from sandboxes.base import WORKSPACE_MOUNT, ExecResult, Limits, Mount, Sandbox, SandboxSpec
from sandboxes.factory import make_sandbox
from sandboxes.hostrun import run_host
from sandboxes.pydeps import (
    Classified,
    DependencyError,
    SourceFetcher,
    Sources,
    archive_build_requires,
    classify,
    missing_distribution,
    wheel_name,
)
from sandboxes.testrun import ENV_MOUNT, META_DIR

log = logging.getLogger(__name__)

#: The host-filled wheelhouse, read-only inside the build sandbox.
WHEELS_MOUNT = "/opt/reprobot-wheels"
#: Host downloads plus sandbox builds one environment may take before it is declared unresolvable.
MAX_ROUNDS = 12
#: Where the build sandbox writes the wheels it built (workspace-relative).
_BUILT = "built"
_ENV_PY = f"{ENV_MOUNT}/bin/python"
_PIP_QUIET = ("--disable-pip-version-check", "-q")


def refuse_direct_references(deps: tuple[str, ...], allowed: bool) -> list[Classified]:
    """Every requirement classified; DependencyError for direct references unless `allowed`.

    A direct reference (`name @ URL`, a path, `git+...`) bypasses the index: it is refused unless the repo's
    policy allows it (`environment.allow_direct_references`), and even then built only in the sandbox.
    """
    classified = [classify(d) for d in deps]
    direct = [c for c in classified if c.direct]
    if direct and not allowed:
        listed = ", ".join(repr(c.text) for c in direct)
        raise DependencyError(
            f"direct-reference requirement(s) refused: {listed} (URL, path or VCS requirements bypass the "
            "package index; set `environment.allow_direct_references: true` in the repo's policy to have "
            "them fetched as files and built in the sandbox)"
        )
    return classified


@dataclass
class PythonBuild:
    """One environment build: the sandbox it runs in, the host-only wheelhouse, and the round budget."""

    sandbox: Sandbox
    wheels: Path
    built: Path
    fetcher: SourceFetcher
    timeout: float
    index_url: str | None = None
    pip_cache: Path | None = None
    python_version: str = ""
    rounds: int = 0
    from_source: set[str] = field(default_factory=set)

    def _spend(self, what: str) -> None:
        self.rounds += 1
        if self.rounds > MAX_ROUNDS:
            raise DependencyError(f"dependencies still unresolved after {MAX_ROUNDS} download/build rounds ({what})")

    async def _run(self, argv: list[str]) -> ExecResult:
        env = {"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        return await self.sandbox.run(argv, timeout=self.timeout, env=env)

    async def create_venv(self, python: str) -> None:
        """`python -m venv ENV_MOUNT` in the sandbox; records the interpreter's version."""
        script = 'set -e; "$1" -m venv "$2"; "$2/bin/python" -c "import sys; print(*sys.version_info[:3], sep=\'.\')"'
        res = await self._run(["sh", "-c", script, "sh", python, ENV_MOUNT])
        if not res.ok:
            raise DependencyError(f"creating the virtualenv with {python} in the sandbox failed: {_tail(res.output)}")
        self.python_version = res.stdout.strip().splitlines()[-1]

    async def download(self, requirements: list[str]) -> None:
        """Wheels for `requirements` and their dependencies into the wheelhouse; sources built when needed."""
        if not requirements:
            return
        major_minor = ".".join(self.python_version.split(".")[:2])
        argv = [sys.executable, "-m", "pip", "download", *_PIP_QUIET, "--only-binary", ":all:"]
        argv += ["--python-version", major_minor, "-d", str(self.wheels), "--find-links", str(self.wheels)]
        if self.index_url:
            argv += ["--index-url", self.index_url]
        extra = {"PIP_NO_INPUT": "1"}
        if self.pip_cache is not None:
            extra["PIP_CACHE_DIR"] = str(self.pip_cache)
        while True:
            self._spend(f"downloading {requirements[:3]}")
            run = await run_host([*argv, *requirements], timeout=self.timeout, extra_env=extra)
            if run.timed_out:
                raise DependencyError(f"downloading wheels timed out after {self.timeout:.0f}s")
            if run.code == 0:
                return
            missing = missing_distribution(run.stdout)
            key = _project(missing) if missing else ""
            if missing is None or key in self.from_source:
                raise DependencyError(f"downloading wheels failed: {_tail(run.stdout)}")
            # No wheel fits: fetch the source archive as a file and build it in the sandbox.
            self.from_source.add(key)
            log.info("no wheel for %s: building its source archive in the sandbox", missing)
            archive = await self.fetcher.sdist(missing, self.python_version)
            await self.build(archive)

    async def download_relaxing(self, requirements: list[str]) -> tuple[list[str], list[str]]:
        """download(), loosening the pins by RELAX_LEVELS when they cannot be met together today.

        Returns the requirements that were downloaded and notes on what was loosened (empty when nothing
        was). A timeout is not a conflict: it is raised as it is.
        """
        try:
            await self.download(requirements)
            return requirements, []
        except DependencyError as exc:
            if "timed out" in str(exc):
                raise
            first = exc
        for level in RELAX_LEVELS:
            relaxed, notes = _relaxed(requirements, level)
            if not notes:
                continue
            self.rounds = 0
            self.from_source.clear()
            log.info("the declared pins cannot be installed together: retrying with %s", level)
            try:
                await self.download(relaxed)
            except DependencyError as exc:
                if "timed out" in str(exc):
                    raise
                continue
            why = _tail(str(first), 200).splitlines()[-1] if str(first).strip() else "they could not be installed"
            return relaxed, [f"the declared pins could not be installed together ({why}); {level}: " + "; ".join(notes)]
        raise first

    async def build(self, archive: Path, name: str | None = None) -> Path:
        """Build a source archive (already in the wheelhouse's sdists/) into a wheel inside the sandbox."""
        await self.download(await asyncio.to_thread(archive_build_requires, archive))
        rel = archive.relative_to(self.wheels).as_posix()
        argv = [_ENV_PY, "-m", "pip", "wheel", *_PIP_QUIET, "--no-index", "--find-links", WHEELS_MOUNT]
        argv += ["--no-deps", "--use-pep517", "-w", f"{WORKSPACE_MOUNT}/{_BUILT}", f"{WHEELS_MOUNT}/{rel}"]
        asked: set[str] = set()
        while True:
            self._spend(f"building {archive.name}")
            res = await self._run(argv)
            if res.ok:
                break
            missing = missing_distribution(res.output)
            if missing is None or missing in asked:
                raise DependencyError(f"building {archive.name} in the sandbox failed: {_tail(res.output)}")
            # The build asked for something its static requirements did not list (get_requires_for_build_*).
            asked.add(missing)
            await self.download([missing])
        return await asyncio.to_thread(self._collect, name or _sdist_project(archive.name), archive.name)

    def _collect(self, project: str | None, source: str) -> Path:
        """Copy the wheel the sandbox built (a regular file, never a link) into the host-only wheelhouse."""
        found: Path | None = None
        for entry in sorted(os.scandir(self.built), key=lambda e: e.name):
            if not entry.is_file(follow_symlinks=False) or not entry.name.endswith(".whl"):
                continue
            built_name = wheel_name(Path(entry.name))
            if built_name is None or (project is not None and built_name != canonicalize_name(project)):
                continue
            target = self.wheels / entry.name
            if not target.exists():
                _copy_regular(Path(entry.path), target)
            found = target
        if found is None:
            raise DependencyError(f"building {source} in the sandbox produced no wheel for {project or 'it'}")
        return found

    async def install(self, requirements: list[str]) -> None:
        """`pip install --no-index --find-links WHEELS` of the requirements into ENV_MOUNT, in the sandbox."""
        if not requirements:
            return
        argv = [_ENV_PY, "-m", "pip", "install", *_PIP_QUIET, "--no-index", "--find-links", WHEELS_MOUNT]
        res = await self._run([*argv, *requirements])
        if not res.ok:
            raise DependencyError(f"installing test dependencies in the sandbox failed: {_tail(res.output)}")

    async def link_workspace(self, remove: str | None, entries: list[str]) -> None:
        """Make the workspace the project's only copy in the env, like an editable install would.

        A dependency may have pulled the project itself from the index (attrs via hypothesis): that copy
        (`remove`) is uninstalled, and a .pth file puts the workspace source folders and the static metadata
        on sys.path, where tools that read site-packages (mypy) find them too. Both happen in the sandbox.
        """
        if remove is not None:
            await self._run([_ENV_PY, "-m", "pip", "uninstall", *_PIP_QUIET, "-y", remove])
        code = (
            "import pathlib, sys, sysconfig\n"
            "pth = pathlib.Path(sysconfig.get_paths()['purelib'], '_reprobot_workspace.pth')\n"
            "pth.write_text(''.join(e + '\\n' for e in sys.argv[1:]))\n"
        )
        res = await self._run([_ENV_PY, "-c", code, *entries])
        if not res.ok:
            raise DependencyError(f"linking the workspace into the env failed: {_tail(res.output)}")


def _project(requirement: str) -> str:
    """The canonical project name of a requirement string pip printed (the string itself if unparsable)."""
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return requirement


def _sdist_project(filename: str) -> str | None:
    try:
        return str(parse_sdist_filename(filename)[0])
    except (InvalidSdistFilename, ValueError):
        return None


def _copy_regular(source: Path, target: Path) -> None:
    """Copy a file the sandbox wrote, refusing links and special files, never overwriting."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DependencyError(f"{source.name} built in the sandbox is not a regular file")
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            while chunk := os.read(fd, 1024 * 1024):
                os.write(out, chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _tail(text: str, limit: int = 800) -> str:
    return text.strip()[-limit:]


#: How a developer loosens pins that cannot be met today, in order: keep only each pin's lower bound (the
#: release the project was written against, or newer), then no version at all. pytest is left alone: its
#: requirement was already fitted to the interpreter and the suite (sandboxes/pytest_config.py).
RELAX_LEVELS = ("lower bounds", "unpinned")


def relax_requirement(requirement: str, level: str) -> str:
    """`requirement` loosened to `level` (see RELAX_LEVELS); unchanged when it has no version to loosen."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return requirement
    if req.url or not str(req.specifier) or canonicalize_name(req.name) == "pytest":
        return requirement
    floor = ""
    if level == "lower bounds":
        lows = [s.version.removesuffix(".*") for s in req.specifier if s.operator in (">=", ">", "==", "~=", "===")]
        floor = f">={lows[0]}" if len(lows) == 1 else ""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}{floor}{marker}"


def _relaxed(requirements: list[str], level: str) -> tuple[list[str], list[str]]:
    """The requirements at `level`, and a note per requirement that changed."""
    out = [relax_requirement(r, level) for r in requirements]
    notes = [f"{old!r} relaxed to {new!r}" for old, new in zip(requirements, out, strict=True) if old != new]
    return out, notes


async def build_python_env(
    staging: Path,
    classified: list[Classified],
    *,
    python: str,
    backend: str,
    rootfs: Path | None,
    index_url: str | None,
    workspace: Path | None,
    remove: str | None,
    python_path: tuple[str, ...],
    link_workspace: bool,
    timeout: float,
    pip_cache: Path | None = None,
) -> list[str]:
    """Create and fill the virtualenv at `staging` inside a `backend` sandbox (see the module docstring).

    Returns notes on the declared pins that had to be loosened to install at all (empty when none were).

    With `link_workspace` the workspace's `python_path` folders and the metadata folder are put on sys.path
    and the distribution `remove` (the project, when a dependency pulled it in) is uninstalled.
    Raises DependencyError (what could not be provided, and why) or SandboxError (the sandbox failed).
    """
    if backend == "none":
        raise DependencyError(
            "environments are built only inside an isolating sandbox (bwrap or docker), never with backend 'none'"
        )
    scratch = staging.parent / f"{staging.name}.work"
    wheels, box = scratch / "wheels", scratch / "box"
    for folder in (staging, wheels / "sdists", box / _BUILT):
        folder.mkdir(parents=True, exist_ok=True)
    sources = Sources.from_pip_settings(dict(os.environ), index_url)
    spec = SandboxSpec(
        workspace=box,
        mounts=(Mount(staging, ENV_MOUNT, read_only=False), Mount(wheels, WHEELS_MOUNT, read_only=True)),
        limits=Limits(wall_seconds=timeout, max_processes=512),
        rootfs=rootfs,
    )
    async with make_sandbox(backend, spec) as sandbox:
        build = PythonBuild(
            sandbox=sandbox,
            wheels=wheels,
            built=box / _BUILT,
            fetcher=SourceFetcher(sources, wheels / "sdists"),
            timeout=timeout,
            index_url=index_url,
            pip_cache=pip_cache,
        )
        await build.create_venv(python)
        host_reqs: list[str] = []
        box_reqs: list[str] = []
        for req in classified:
            if not req.direct:
                host_reqs.append(req.text)
                box_reqs.append(req.text)
                continue
            # Fetched as a file (never by pip on the host), built in the sandbox, installed by its wheel's path.
            fetched = await build.fetcher.direct(req, workspace)
            wheel = fetched if fetched.name.endswith(".whl") else await build.build(fetched, req.name)
            if fetched.name.endswith(".whl") and fetched.parent != wheels:
                wheel = wheels / fetched.name
                await asyncio.to_thread(_copy_regular, fetched, wheel)
            name = req.name or wheel_name(wheel) or wheel.name
            extras = f"[{','.join(req.extras)}]" if req.extras else ""
            host_reqs.append(f"{name}{extras} @ {wheel.as_uri()}")
            box_reqs.append(f"{name}{extras} @ file://{WHEELS_MOUNT}/{wheel.name}")
        relaxed_reqs, notes = await build.download_relaxing(host_reqs)
        if notes:
            # The same loosening inside the sandbox: direct references (host paths) were never relaxed.
            box_reqs = [
                box if host == new else new for box, host, new in zip(box_reqs, host_reqs, relaxed_reqs, strict=True)
            ]
        await build.install(box_reqs)
        entries = [f"{WORKSPACE_MOUNT}/{p}".rstrip("/.") or WORKSPACE_MOUNT for p in python_path]
        # Listed whether or not this project has metadata, so the env does not depend on the project: site
        # skips a .pth folder that does not exist.
        entries.append(f"{WORKSPACE_MOUNT}/{META_DIR}")
        if link_workspace:
            await build.link_workspace(remove, entries)
    return notes


#: How much of a METADATA / PKG-INFO file is read for its Name header (the headers come first).
_METADATA_HEAD = 64 * 1024


def installed_distributions(env: Path) -> list[str]:
    """Canonical names of the distributions installed in the virtualenv at `env`, read on the host.

    The sandbox wrote that folder: only files are read (nothing from the env is imported or run), no link is
    followed and nothing but a regular file is opened. Each distribution counts under the name in its folder
    name and under its METADATA Name when they differ, so a project is never missed for a spelling.
    """
    names: set[str] = set()
    for site in _site_packages(env):
        for entry in os.scandir(site):
            stem, dot, suffix = entry.name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            names.add(canonicalize_name(stem.partition("-")[0]))
            if entry.is_dir(follow_symlinks=False):
                meta = Path(entry.path) / ("METADATA" if suffix == "dist-info" else "PKG-INFO")
            elif entry.is_file(follow_symlinks=False):
                meta = Path(entry.path)  # a single-file .egg-info holds PKG-INFO itself
            else:
                continue
            name = _metadata_name(meta)
            if name:
                names.add(canonicalize_name(name))
    names.discard("")
    return sorted(names)


def _site_packages(env: Path) -> list[Path]:
    """env/lib/python*/site-packages folders that are real folders (a link could point anywhere on the host)."""
    lib = env / "lib"
    if not lib.is_dir() or lib.is_symlink():
        return []
    found: list[Path] = []
    for entry in os.scandir(lib):
        if entry.name.startswith("python") and entry.is_dir(follow_symlinks=False):
            site = Path(entry.path) / "site-packages"
            if site.is_dir() and not site.is_symlink():
                found.append(site)
    return sorted(found)


def _metadata_name(path: Path) -> str | None:
    """The Name header of a metadata file, or None when it is missing, not a regular file or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _METADATA_HEAD).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    for line in head.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "name":
            return value.strip()
    return None

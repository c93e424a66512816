"""Setup discovery without I/O beyond reading the repo: policy first, then repo signals -> EnvironmentSpec."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
import sys
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml
from packaging.markers import InvalidMarker, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sandboxes.interpreters import Interpreter, choose_interpreter, interpreter_for_path
from sandboxes.pytest_config import (
    NOSE_STYLE,
    PYTEST_DEFAULTS,
    PytestConfig,
    SuiteSignals,
    pytest_requirement,
    read_pytest_config,
    sanitize_addopts,
    scan_suite,
    untested_python_sources,
)
from sandboxes.rust import manifest_digest
from sandboxes.setup_meta import marker_requirements, read_setup_metadata

log = logging.getLogger(__name__)

#: Always installed for Python: the test runner, per-test timeouts and coverage for fault localization.
BASE_TEST_DEPS = ("pytest", "pytest-timeout", "coverage")
#: Requirement files always read when present (the common names); see requirement_files() for the rest.
REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "requirements-tests.txt",
    "requirements_tests.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "tests-requirements.txt",
    "tests_requirements.txt",
    "dev-requirements.txt",
    "dev_requirements.txt",
    "requirements_dev.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "requirements/dev.txt",
    "requirements/base.txt",
)
#: Qualifiers of a requirement file's name (requirements-<q>.txt, <q>_requirements.txt, requirements/<q>.txt)
#: whose packages the tests need; any other qualifier (docs, lint, release...) is for something else.
_REQ_QUALIFIERS = {"", "test", "tests", "testing", "dev", "develop", "development", "ci", "base", "common", "install"}
_REQ_NAME = re.compile(r"^(?:(?P<a>[a-z0-9]+)[-_.])?req(?:uirement)?s(?:[-_.](?P<b>[a-z0-9]+))?\.(?:txt|in|pip)$")
TEST_EXTRAS = ("test", "tests", "testing", "dev")
#: Extras that gather every optional stack of a project: their packages are kept only where tests import them.
OPTIONAL_EXTRAS = ("all", "full", "complete", "everything", "extras", "optional")
#: Distribution name -> module name where they differ and a guess from the name would miss.
_IMPORT_NAMES = {
    "pillow": "PIL", "pyyaml": "yaml", "scikit-learn": "sklearn", "scikit-image": "skimage",
    "beautifulsoup4": "bs4", "opencv-python": "cv2", "opencv-python-headless": "cv2", "python-dateutil": "dateutil",
    "protobuf": "google", "attrs": "attr", "pyzmq": "zmq", "pymysql": "pymysql", "tensorflow-cpu": "tensorflow",
    "tensorflow-gpu": "tensorflow", "torch": "torch", "pyjwt": "jwt", "msgpack-python": "msgpack",
}  # fmt: skip
#: Bumped when the on-disk layout of built environments changes, so old caches are not reused (4: built in the
#: sandbox from host-downloaded wheels; 5: the interpreter and pytest era are part of the spec; 6: shared across
#: projects, the .pth always lists the metadata folder and reprobot-dists.json lists what is installed).
ENV_LAYOUT = 6
_PY_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "pytest.ini", "conftest.py")
_REQ_LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-\[\],]*\s*(?:[<>=!~;].*)?)$")
#: Requirement-file lines that name a path, URL or VCS checkout instead of a project on an index.
_DIRECT_LINE = re.compile(r"^(-e\s+|--editable\s+)?(\.|/|~|file:|git\+|hg\+|svn\+|bzr\+)")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_TEST_WORDS = re.compile(
    r"\b(pytest|tox|nox|unittest|go test|cargo test|npm (?:run )?test|yarn test|mvn|gradle|make test)\b"
)


@dataclass(frozen=True)
class EnvironmentSpec:
    """How to install and test a repo: language, install steps, test command, per-test template, report format.

    `deps` are Python requirements resolved on the host into the cached environment; `fetch_steps` are
    host commands that only download (no repo code runs); `install_steps` run inside the sandbox.
    """

    language: str = "python"
    deps: tuple[str, ...] = BASE_TEST_DEPS
    install_steps: tuple[str, ...] = ()
    fetch_steps: tuple[str, ...] = ()
    test_command: tuple[str, ...] = ("python", "-m", "pytest")
    per_test_template: str = "python -m pytest {test_id}"
    report_format: str = "junit-xml"
    #: Report files the test command writes (workspace-relative globs); empty: parsed from its stdout.
    report_paths: tuple[str, ...] = ()
    python_path: tuple[str, ...] = (".",)
    #: Distribution name and version from static metadata, so importlib.metadata finds the project.
    project: tuple[str, str] | None = None
    sources: tuple[str, ...] = ()
    #: Test-looking commands found in CI workflows, for the setup agent and for a maintainer to read.
    ci_commands: tuple[str, ...] = field(default=())
    #: Hash of dependency manifests not listed in `deps` (Cargo.toml/Cargo.lock), part of the cache key.
    manifest_digest: str = ""
    #: The interpreter chosen for the project (its path inside the sandbox; "" keeps the configured one),
    #: its version and why it was chosen.
    python: str = ""
    python_version: str = ""
    python_reason: str = ""
    #: pytest settings the runner passes in an ini file of its own (`-c`), because pytest would not read them
    #: where the project put them (setup.cfg [pytest], nose's [nosetests]); empty when pytest finds them itself.
    pytest_ini: tuple[tuple[str, str], ...] = ()
    #: Settings passed as `-o key=value` when pytest reads the project's config itself: the project's addopts
    #: minus options that change how runs are measured, nose's collection patterns for a nose-style suite.
    pytest_overrides: tuple[tuple[str, str], ...] = ()
    #: Where the project's test-runner settings came from ("" when it has none).
    pytest_source: str = ""
    #: The effective python_classes / python_functions where the project changed pytest's defaults.
    pytest_collect: tuple[tuple[str, str], ...] = ()
    #: What detection could not honour, or left out on purpose (optional stacks), for the job's report.
    notes: tuple[str, ...] = ()

    def cache_key(self, python: str, *, own: bool = False) -> str:
        """Hash of everything that determines the built environment.

        Without `own` the project's name is left out: projects with the same dependencies, interpreter and
        python_path share one environment (build_environment checks that none of its distributions is the
        project). `own` keys the project's own environment, the one its copy pulled in by a dependency is
        uninstalled from.
        """
        blob = json.dumps(
            {
                "deps": sorted(self.deps),
                "python": python,
                "lang": self.language,
                "fetch": list(self.fetch_steps),
                "layout": ENV_LAYOUT,
                "paths": list(self.python_path),
                "project": self.project[0] if own and self.project else None,
                **({"manifests": self.manifest_digest} if self.manifest_digest else {}),
            }
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready view of the spec."""
        return asdict(self)


def requirements_from_file(path: Path, _seen: set[Path] | None = None) -> list[str]:
    """Plain requirement lines of a requirements file, following `-r` includes within the repo."""
    seen = _seen if _seen is not None else set()
    if path in seen:
        return []
    seen.add(path)
    deps: list[str] = []
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.split(" #", 1)[0].split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.startswith(("-r ", "--requirement ")):
            include = (path.parent / line.split(None, 1)[1].strip()).resolve()
            if include.is_file():
                deps.extend(requirements_from_file(include, seen))
            continue
        if not line or _is_self_reference(line):
            continue
        # Direct references are kept so the build can refuse them by name (or, if the policy allows
        # them, fetch and build them in the sandbox); other pip options are not requirements.
        if _DIRECT_LINE.match(line):
            deps.append(line)
        elif line.startswith("-"):
            continue
        elif "://" in line or _REQ_LINE.match(line):
            deps.append(line)
    return deps


def _is_self_reference(line: str) -> bool:
    """`.`, `-e .`, `-e .[test]`: the project itself, which goes on PYTHONPATH instead of being built."""
    target = re.sub(r"^(-e|--editable)\s+", "", line).split("[", 1)[0].strip()
    return target in (".", "./", "file:.", "file:./")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _expand_extras(project: dict[str, object], names: tuple[str, ...]) -> list[str]:
    """Requirements of the named extras, expanding `self[extra]` references instead of installing self."""
    extras = project.get("optional-dependencies", {})
    if not isinstance(extras, dict):
        return []
    table = {str(k): tuple(str(r) for r in v) for k, v in extras.items() if isinstance(v, list)}
    required, optional = expand_extras(str(project.get("name", "")), table, names)
    return [*required, *(f"{OPTIONAL_MARK}{r}" for r in optional)]


#: Prefix of a requirement reached only through an "all"-like extra or tox.ini, until the test imports decide.
OPTIONAL_MARK = "\x00optional:"


def expand_extras(
    own_name: str, extras: dict[str, tuple[str, ...]], names: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """Requirements of the named extras: (required, optional).

    `self[extra]` references are expanded instead of installing the project itself; what is reached through
    an "all"-like extra (OPTIONAL_EXTRAS) is optional: it is installed only when the tests import it.
    """
    own = _norm(own_name)
    required: list[str] = []
    optional: list[str] = []
    todo = [(n, n in OPTIONAL_EXTRAS) for n in names if n in extras]
    done: set[str] = set()
    while todo:
        extra, is_optional = todo.pop(0)
        if extra in done:
            continue
        done.add(extra)
        for req in extras.get(extra, ()):
            match = _NAME.match(req)
            if match and own and _norm(match.group(1)) == own:
                for name in (e.strip() for e in (match.group(2) or "").split(",")):
                    if name and name in extras:
                        todo.append((name, is_optional or name in OPTIONAL_EXTRAS))
            else:
                (optional if is_optional else required).append(req)
    return required, optional


def requirement_files(repo: Path) -> list[str]:
    """Requirement files the tests need, by name: the common names first, then any other file named like one.

    Matches requirements.txt, requirements-test.txt, test_requirements.txt, requirements/dev.txt and the like at
    the root or in a requirements/ (or reqs/) folder, with a test/dev/ci-like qualifier (or none).
    """
    found = [rel for rel in REQUIREMENT_FILES if (repo / rel).is_file()]
    candidates = sorted(p for p in repo.glob("*.txt") if p.is_file())
    for folder in ("requirements", "reqs", "requirement"):
        if (repo / folder).is_dir():
            candidates += sorted(p for p in (repo / folder).glob("*.txt") if p.is_file())
    for path in candidates:
        rel = path.relative_to(repo).as_posix()
        if rel in found:
            continue
        if path.parent != repo:
            qualifier = path.stem.lower()
        else:
            match = _REQ_NAME.match(path.name.lower())
            if match is None:
                continue
            qualifier = match.group("a") or match.group("b") or ""
        if qualifier in _REQ_QUALIFIERS:
            found.append(rel)
    return found


def _import_name(requirement: str) -> str:
    match = _NAME.match(requirement)
    if match is None:
        return ""
    name = _norm(match.group(1))
    return _IMPORT_NAMES.get(name, name.removeprefix("python-").removesuffix("-python").replace("-", "_"))


def keep_optional(requirement: str, signals: SuiteSignals) -> bool:
    """Whether an optional requirement is needed: a pytest plugin, or a module the collected tests import.

    Modules the project's own code imports unconditionally count too: the tests cannot import the project
    without them. Stacks imported lazily or under try/except ImportError are optional integrations.
    """
    match = _NAME.match(requirement)
    if match is None:
        return False
    name = _norm(match.group(1))
    if name == "pytest" or name.startswith("pytest-"):
        return True
    if signals.files == 0:
        return True  # no test file to judge by: keep what the project lists
    module = _import_name(requirement).lower()
    return module in {m.lower() for m in (*signals.imports, *signals.package_imports)}


def _pkg_info(repo: Path) -> tuple[str, str] | None:
    path = repo / "PKG-INFO"
    if not path.is_file():
        return None
    fields = {}
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    if fields.get("name") and fields.get("version"):
        return fields["name"], fields["version"]
    return None


@dataclass
class _Declared:
    """What a Python project declares about itself, gathered from its files in a fixed order."""

    deps: list[str]
    #: The files it was read from, as the spec lists them.
    sources: list[str] = field(default_factory=list)
    #: (name, version), from PKG-INFO, pyproject.toml or setup.py/setup.cfg (the first that has both).
    project: tuple[str, str] | None = None
    requires_python: str = ""
    classifiers: tuple[str, ...] = ()


def _python_spec(
    repo: Path, interpreters: list[Interpreter] | None = None, default_python: Path | None = None
) -> EnvironmentSpec:
    notes: list[str] = []
    declared = _declared(repo)
    config = read_pytest_config(repo)
    signals = scan_suite(repo, config)
    deps = _fit_to_suite(declared, signals, config, notes)
    chosen, reason = _choose_python(declared.requires_python, declared.classifiers, interpreters, default_python)
    version = chosen.version if chosen else (sys.version_info[0], sys.version_info[1])
    deps = _pin_pytest(deps, signals, config, version, notes)
    python_path = [".", "src"] if (repo / "src").is_dir() else ["."]
    unique = tuple(dict.fromkeys(d.strip() for d in deps if d.strip()))
    overrides = _pytest_overrides(config, signals)
    return EnvironmentSpec(
        deps=unique,
        python_path=tuple(python_path),
        sources=tuple(declared.sources),
        project=declared.project,
        python=chosen.path if chosen else "",
        python_version=chosen.label if chosen else "",
        python_reason=reason,
        pytest_ini=() if config.native else (*config.values, *overrides.items()),
        pytest_overrides=tuple(overrides.items()) if config.native else (),
        pytest_collect=tuple(
            (k, v)
            for k in ("python_classes", "python_functions")
            if (v := overrides.get(k, config.get(k))) != PYTEST_DEFAULTS[k]
        ),
        pytest_source=config.source,
        notes=tuple(notes),
    )


def _declared(repo: Path) -> _Declared:
    """The project's requirements (test ones included), name, version and Python range, from all its files."""
    found = _Declared(deps=list(BASE_TEST_DEPS), project=_pkg_info(repo))
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file():
        _read_pyproject(pyproject, found)
        found.sources.append("pyproject.toml")
    # setup.py (read with ast, never run) and setup.cfg's [options]: the legacy places for the same facts.
    legacy = read_setup_metadata(repo)
    if legacy.sources:
        found.deps.extend(legacy.install_requires)
        found.deps.extend(legacy.tests_require)
        found.deps.extend(marker_requirements(legacy.extras_require))
        required, optional = expand_extras(legacy.name, legacy.extras_require, TEST_EXTRAS)
        found.deps.extend([*required, *(f"{OPTIONAL_MARK}{r}" for r in optional)])
        found.requires_python = found.requires_python or legacy.python_requires
        found.classifiers = found.classifiers or legacy.classifiers
        if found.project is None and legacy.name and legacy.version:
            found.project = (legacy.name, legacy.version)
    for rel in requirement_files(repo):
        found.deps.extend(requirements_from_file(repo / rel))
        found.sources.append(rel)
    for rel in ("setup.cfg", "tox.ini", "noxfile.py", "setup.py", "pytest.ini"):
        if (repo / rel).is_file() and rel not in found.sources:
            found.sources.append(rel)
    # tox.ini's deps serve every tox env at once, and often carry heavy optional stacks: tests decide.
    found.deps.extend(f"{OPTIONAL_MARK}{d}" for d in _tox_deps(repo))
    return found


def _read_pyproject(path: Path, found: _Declared) -> None:
    """Add what pyproject.toml declares: [project] and its test extras, test dependency groups."""
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        log.warning("ignoring unparsable pyproject.toml: %s", exc)
        data = {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    declared = project.get("dependencies", [])
    if isinstance(declared, list):
        found.deps.extend(str(d) for d in declared)
    found.deps.extend(_expand_extras(project, TEST_EXTRAS))
    groups = data.get("dependency-groups", {})
    if isinstance(groups, dict):
        for name in TEST_EXTRAS:
            if isinstance(groups.get(name), list):
                found.deps.extend(str(d) for d in groups[name] if isinstance(d, str))
    if found.project is None and isinstance(project.get("name"), str) and isinstance(project.get("version"), str):
        found.project = (project["name"], project["version"])
    if isinstance(project.get("requires-python"), str):
        found.requires_python = project["requires-python"]
    if isinstance(project.get("classifiers"), list):
        found.classifiers = tuple(str(c) for c in project["classifiers"])


def _fit_to_suite(declared: _Declared, signals: SuiteSignals, config: PytestConfig, notes: list[str]) -> list[str]:
    """The requirements the test suite needs: the optional ones it uses, not the project itself.

    Plus what its imports and pytest options need but nothing declares (nose, pytest-cov).
    """
    deps = _resolve_optional(declared.deps, signals, notes)
    if declared.project is not None:
        own = _norm(declared.project[0])
        deps = [d for d in deps if not ((m := _NAME.match(d)) and _norm(m.group(1)) == own)]
    if signals.nose_imports and not any(_dist_name(d) in ("nose", "pynose", "nose-py3", "nose3") for d in deps):
        deps.append("nose")  # the tests import nose.tools but nothing declares it (it came with the old tox setup)
    if "--cov" in config.get("addopts") and not any(_dist_name(d) == "pytest-cov" for d in deps):
        deps.append("pytest-cov")  # the config's addopts name its options; pytest refuses unknown ones
    return deps


def _pin_pytest(
    deps: list[str], signals: SuiteSignals, config: PytestConfig, version: tuple[int, int], notes: list[str]
) -> list[str]:
    """deps with one pytest requirement first, fitting the project's own pins, its suite and the Python.

    A pin whose environment marker excludes this interpreter (`pytest==4.6.*; python_version == "2.7"`) is
    not a pin for it: projects pin one pytest per Python line, and combining them all asks for the impossible.
    """
    pins = [d for d in deps if _dist_name(d) == "pytest" and marker_applies(d, version)]
    specifiers = [str(d)[len(m.group(0)) :].split(";")[0].strip() for d in pins if (m := _NAME.match(d))]
    requirement, pytest_notes = pytest_requirement([x for x in specifiers if x], signals, config, version)
    notes.extend(pytest_notes)
    return [requirement, *(d for d in deps if _dist_name(d) != "pytest")]


def _pytest_overrides(config: PytestConfig, signals: SuiteSignals) -> dict[str, str]:
    """pytest settings to change: addopts without options that break our runs, nose's collection rules."""
    addopts = config.get("addopts")
    overrides = {"addopts": sanitize_addopts(addopts)} if addopts and sanitize_addopts(addopts) != addopts else {}
    if config.nose or signals.nose_imports:
        # nose collected more than pytest's defaults (utils_tests.py, TestX classes ending in Test): the
        # project's own patterns still win where it set them.
        project = dict(config.values)
        overrides.update({k: v for k, v in NOSE_STYLE.items() if k not in project})
    return overrides


def marker_applies(requirement: str, version: tuple[int, int]) -> bool:
    """Whether a requirement's environment marker holds on CPython `version` on Linux (True without one)."""
    try:
        marker = Requirement(requirement).marker
    except InvalidRequirement:
        return True  # unreadable here: let pip judge it, as before
    if marker is None:
        return True
    env = {
        "python_version": f"{version[0]}.{version[1]}",
        "python_full_version": f"{version[0]}.{version[1]}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "extra": "",
    }
    try:
        return bool(marker.evaluate(env))
    except (UndefinedEnvironmentName, InvalidMarker, ValueError):
        return True


def _dist_name(requirement: str) -> str:
    match = _NAME.match(requirement)
    return _norm(match.group(1)) if match else ""


def _resolve_optional(deps: list[str], signals: SuiteSignals, notes: list[str]) -> list[str]:
    """Optional requirements kept where the tests need them, dropped (and noted) otherwise."""
    out: list[str] = []
    dropped: list[str] = []
    for dep in deps:
        if not dep.startswith(OPTIONAL_MARK):
            out.append(dep)
            continue
        req = dep.removeprefix(OPTIONAL_MARK)
        required = (d for d in deps if not d.startswith(OPTIONAL_MARK))
        if keep_optional(req, signals) or any(_dist_name(d) == _dist_name(req) for d in required):
            out.append(req)
        else:
            dropped.append(req)
    if dropped:
        notes.append(
            "left out optional packages no collected test imports (from tox.ini or an 'all' extra): "
            + ", ".join(sorted(set(dropped)))
        )
    return out


def _choose_python(
    requires: str, classifiers: tuple[str, ...], interpreters: list[Interpreter] | None, default: Path | None
) -> tuple[Interpreter | None, str]:
    if interpreters is None:
        return None, ""
    configured = interpreter_for_path(default, interpreters) if default is not None else None
    chosen, reason = choose_interpreter(requires, classifiers, interpreters, configured)
    if chosen is not None and configured is not None and chosen.version == configured.version and default:
        # The configured path (often /usr/bin/python3) is the same interpreter: keep it, and its cached envs.
        chosen = Interpreter(chosen.version, str(default))
    return chosen, reason


def _tox_deps(repo: Path) -> list[str]:
    """Plain `deps =` of tox's [testenv] (requirement files referenced there are read too)."""
    path = repo / "tox.ini"
    if not path.is_file():
        return []
    deps: list[str] = []
    section, in_deps = "", False
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section, in_deps = line.strip("[]"), False
            continue
        if section != "testenv":
            continue
        if re.match(r"^deps\s*=", line):
            in_deps, line = True, line.split("=", 1)[1].strip()
        elif raw[:1] not in (" ", "\t") and line:
            in_deps = False
        if not in_deps or not line or "{" in line:
            continue
        if line.startswith("-r"):
            ref = repo / line[2:].strip()
            if ref.is_file():
                deps.extend(requirements_from_file(ref))
        elif not line.startswith("-") and _REQ_LINE.match(line):
            deps.append(line)
    return deps


def _node_spec(repo: Path) -> EnvironmentSpec | None:
    try:
        pkg = json.loads((repo / "package.json").read_text(errors="replace"))
    except (OSError, json.JSONDecodeError):
        return None
    scripts = pkg.get("scripts", {}) if isinstance(pkg, dict) else {}
    test = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
    all_deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
    npm = "npm ci" if (repo / "package-lock.json").is_file() else "npm install"
    fetch = (f"{npm} --ignore-scripts",) if all_deps else ()
    report = ".reprobot/jest.json"
    if "vitest" in test or "vitest" in all_deps:
        cmd = ("npx", "vitest", "run", "--reporter=json", f"--outputFile={report}")
        tmpl = "npx vitest run {test_id}"
    elif "jest" in test or "jest" in all_deps:
        cmd = ("npx", "jest", "--ci", "--json", f"--outputFile={report}")
        tmpl = "npx jest {test_id}"
    else:
        return EnvironmentSpec(
            language="node",
            deps=(),
            fetch_steps=fetch,
            test_command=("npm", "test"),
            per_test_template="npm test -- {test_id}",
            report_format="exit-code",
            sources=("package.json",),
        )
    return EnvironmentSpec(
        language="node",
        deps=(),
        fetch_steps=fetch,
        test_command=cmd,
        per_test_template=tmpl,
        report_format="jest-json",
        report_paths=(report,),
        sources=("package.json",),
    )


def _other_spec(repo: Path) -> EnvironmentSpec | None:
    if (repo / "go.mod").is_file():
        return EnvironmentSpec(
            language="go",
            deps=(),
            fetch_steps=("go mod download",),
            test_command=("go", "test", "-json", "./..."),
            per_test_template="go test -json -run '^{test_id}$' ./...",
            report_format="go-json",
            sources=("go.mod",),
        )
    if (repo / "Cargo.toml").is_file():
        # Crates are vendored on the host while the environment is built (sandboxes/rust.py), not fetched here.
        return EnvironmentSpec(
            language="rust",
            deps=(),
            manifest_digest=manifest_digest(repo),
            test_command=("cargo", "test", "--offline", "--no-fail-fast"),
            # Ids are "target::path::name": the filter is the name within its binary, matched exactly.
            per_test_template='{{ id={test_id}; cargo test --offline --no-fail-fast -- --exact "${{id#*::}}"; }}',
            report_format="cargo",
            sources=("Cargo.toml",),
        )
    if (repo / "pom.xml").is_file():
        return EnvironmentSpec(
            language="java",
            deps=(),
            fetch_steps=("mvn -q dependency:go-offline",),
            test_command=("mvn", "-o", "-q", "test"),
            per_test_template="mvn -o -q test -Dtest={test_id}",
            report_format="surefire-xml",
            report_paths=("**/target/surefire-reports/TEST-*.xml",),
            sources=("pom.xml",),
        )
    for build in ("build.gradle", "build.gradle.kts"):
        if (repo / build).is_file():
            gradle = "./gradlew" if (repo / "gradlew").is_file() else "gradle"
            return EnvironmentSpec(
                language="java",
                deps=(),
                test_command=(gradle, "test", "--offline"),
                per_test_template=f"{gradle} test --offline --tests {{test_id}}",
                report_format="surefire-xml",
                report_paths=("**/build/test-results/test/TEST-*.xml",),
                sources=(build,),
            )
    return None


def makefile_has_test(repo: Path) -> bool:
    """Whether a Makefile at the root defines a `test` target."""
    for name in ("Makefile", "makefile", "GNUmakefile"):
        path = repo / name
        if path.is_file() and re.search(r"^test\s*:", path.read_text(errors="replace"), re.M):
            return True
    return False


def ci_test_commands(repo: Path) -> list[str]:
    """`run:` steps of GitHub Actions workflows (and GitLab script lines) that look like running tests."""
    found: list[str] = []
    files = sorted((repo / ".github" / "workflows").glob("*.y*ml")) if (repo / ".github").is_dir() else []
    if (repo / ".gitlab-ci.yml").is_file():
        files.append(repo / ".gitlab-ci.yml")
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(errors="replace"))
        except (yaml.YAMLError, OSError):
            continue
        for cmd in _walk_run_steps(data):
            for line in cmd.splitlines():
                line = line.strip()
                if line and _TEST_WORDS.search(line) and "${{" not in line and line not in found:
                    found.append(line)
    return found


def _walk_run_steps(node: object) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("run", "script") and isinstance(value, str):
                out.append(value)
            elif key == "script" and isinstance(value, list):
                out.extend(str(v) for v in value)
            else:
                out.extend(_walk_run_steps(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_walk_run_steps(item))
    return out


def detect_spec(
    repo: Path,
    *,
    setup: list[str] | None = None,
    test: str | None = None,
    interpreters: list[Interpreter] | None = None,
    default_python: Path | None = None,
) -> EnvironmentSpec:
    """The EnvironmentSpec for a repo: the policy's setup/test first, then repo signals, then CI steps.

    For Python, `interpreters` (those available to sandboxes) lets the spec choose the project's Python
    (`default_python` is the configured one); without them the configured interpreter is kept.
    Raises ValueError when nothing tells how to test the repo (the caller may then run the setup agent).
    """
    ci = tuple(ci_test_commands(repo))
    spec: EnvironmentSpec | None = None
    if any((repo / m).is_file() for m in _PY_MARKERS) or requirement_files(repo):
        spec = _python_spec(repo, interpreters, default_python)
    elif (repo / "package.json").is_file():
        spec = _node_spec(repo)
    if spec is None:
        spec = _other_spec(repo)
    if spec is None and makefile_has_test(repo):
        spec = EnvironmentSpec(
            language="make",
            deps=(),
            test_command=("make", "test"),
            per_test_template="make test",
            report_format="exit-code",
            sources=("Makefile",),
        )
    if spec is None and ci:
        spec = EnvironmentSpec(
            language="shell",
            deps=(),
            test_command=("sh", "-c", ci[0]),
            per_test_template=ci[0],
            report_format="exit-code",
            sources=("ci",),
        )
    if spec is None and untested_python_sources(repo):
        plain = _python_spec(repo, interpreters, default_python)
        note = "Python modules without a build file or tests: pytest runs the bug reproduction test, the only test"
        spec = replace(plain, sources=("python files",), notes=(*plain.notes, note))
    if spec is None and not (setup or test):
        raise ValueError(f"no test setup found in {repo}: no policy, no known build file, no CI test step")
    spec = spec or EnvironmentSpec(language="shell", deps=(), report_format="exit-code")
    if setup or test:
        spec = replace(
            spec,
            install_steps=tuple(setup or ()) or spec.install_steps,
            test_command=tuple(shlex.split(test)) if test else spec.test_command,
            report_format=spec.report_format if not test or "pytest" in test else "exit-code",
            sources=("policy", *spec.sources),
        )
    return replace(spec, ci_commands=ci)


def with_extra_deps(spec: EnvironmentSpec, extra: tuple[str, ...] | list[str]) -> EnvironmentSpec:
    """`spec` with further requirements the caller knows the tests need (a benchmark case's `deps`).

    A bare name the spec already requires adds no constraint and is left out, so the spec (and its cached
    environment) stays the same when the extra list only repeats it; anything else is appended after the
    detected requirements, which keep their pins (pip resolves both together). Raises ValueError for a
    requirement that is not PEP 508 and for a project that is not Python.
    """
    if not extra:
        return spec
    if spec.language != "python":
        raise ValueError(f"extra Python requirements {list(extra)!r} given for a {spec.language} project")
    have = {_canonical(d) for d in spec.deps}
    added: list[str] = []
    for text in extra:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise ValueError(f"requirement {text!r} is not a valid PEP 508 requirement: {exc}") from None
        bare = not (req.specifier or req.extras or req.marker or req.url)
        if (bare and canonicalize_name(req.name) in have) or text in spec.deps or text in added:
            continue
        added.append(text.strip())
    if not added:
        return spec
    return replace(
        spec,
        deps=(*spec.deps, *added),
        sources=(*spec.sources, "extra-deps"),
        notes=(*spec.notes, f"extra requirements: {', '.join(added)}"),
    )


def _canonical(requirement: str) -> str:
    """The lower-cased project name at the start of a requirement string ("" when there is none)."""
    match = _NAME.match(requirement)
    return canonicalize_name(match.group(1)) if match else ""


def detect_python_spec(repo: Path) -> EnvironmentSpec:
    """The Python spec from pyproject/requirements/tox files (kept for callers that only run pytest)."""
    return replace(_python_spec(repo), ci_commands=tuple(ci_test_commands(repo)))

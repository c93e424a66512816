"""Setup discovery without I/O beyond reading the repo: policy first, then repo signals -> EnvironmentSpec."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

from sandboxes.rust import manifest_digest

log = logging.getLogger(__name__)

#: Always installed for Python: the test runner, per-test timeouts and coverage for fault localization.
BASE_TEST_DEPS = ("pytest", "pytest-timeout", "coverage")
REQUIREMENT_FILES = (
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
TEST_EXTRAS = ("test", "tests", "testing", "dev")
#: Bumped when the on-disk layout of built environments changes, so old caches are not reused (4: built in the
#: sandbox from host-downloaded wheels).
ENV_LAYOUT = 4
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

    def cache_key(self, python: str) -> str:
        """Hash of everything that determines the built environment."""
        blob = json.dumps(
            {
                "deps": sorted(self.deps),
                "python": python,
                "lang": self.language,
                "fetch": list(self.fetch_steps),
                "layout": ENV_LAYOUT,
                "paths": list(self.python_path),
                "project": self.project[0] if self.project else None,
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
    own = _norm(str(project.get("name", "")))
    extras = project.get("optional-dependencies", {})
    if not isinstance(extras, dict):
        return []
    out: list[str] = []
    todo, done = [n for n in names if isinstance(extras.get(n), list)], set()
    while todo:
        extra = todo.pop(0)
        if extra in done:
            continue
        done.add(extra)
        for req in extras.get(extra, []):
            match = _NAME.match(str(req))
            if match and own and _norm(match.group(1)) == own:
                todo.extend(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
            else:
                out.append(str(req))
    return out


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


def _python_spec(repo: Path) -> EnvironmentSpec:
    deps: list[str] = list(BASE_TEST_DEPS)
    sources: list[str] = []
    project_meta = _pkg_info(repo)
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
        deps.extend(_expand_extras(project, TEST_EXTRAS))
        groups = data.get("dependency-groups", {})
        if isinstance(groups, dict):
            for name in TEST_EXTRAS:
                if isinstance(groups.get(name), list):
                    deps.extend(str(d) for d in groups[name] if isinstance(d, str))
        if project_meta is None and isinstance(project.get("name"), str) and isinstance(project.get("version"), str):
            project_meta = (project["name"], project["version"])
        sources.append("pyproject.toml")
    for rel in REQUIREMENT_FILES:
        path = repo / rel
        if path.is_file():
            deps.extend(requirements_from_file(path))
            sources.append(rel)
    for rel in ("setup.cfg", "tox.ini", "noxfile.py", "setup.py", "pytest.ini"):
        if (repo / rel).is_file() and rel not in sources:
            sources.append(rel)
    deps.extend(_tox_deps(repo))
    python_path = [".", "src"] if (repo / "src").is_dir() else ["."]
    unique = tuple(dict.fromkeys(d.strip() for d in deps if d.strip()))
    return EnvironmentSpec(deps=unique, python_path=tuple(python_path), sources=tuple(sources), project=project_meta)


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


def detect_spec(repo: Path, *, setup: list[str] | None = None, test: str | None = None) -> EnvironmentSpec:
    """The EnvironmentSpec for a repo: the policy's setup/test first, then repo signals, then CI steps.

    Raises ValueError when nothing tells how to test the repo (the caller may then run the setup agent).
    """
    ci = tuple(ci_test_commands(repo))
    spec: EnvironmentSpec | None = None
    if any((repo / m).is_file() for m in _PY_MARKERS) or any((repo / r).is_file() for r in REQUIREMENT_FILES):
        spec = _python_spec(repo)
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


def detect_python_spec(repo: Path) -> EnvironmentSpec:
    """The Python spec from pyproject/requirements/tox files (kept for callers that only run pytest)."""
    return replace(_python_spec(repo), ci_commands=tuple(ci_test_commands(repo)))

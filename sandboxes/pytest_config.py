"""The project's test-runner settings and the era of its suite, read statically (no repo code runs).

pytest reads its own config files, but not all of them in every version: `[pytest]` in setup.cfg is refused by
pytest >= 4, and nose's `[nosetests]` means nothing to pytest. So the settings are read here from every place a
project may have put them, and the runner hands them to pytest itself when pytest would not find them.
The suite's own files tell which pytest it needs: nose-style `setup`/`teardown` methods stopped running
in pytest 8, yield tests in pytest 4.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import logging
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

log = logging.getLogger(__name__)

PYTEST_DEFAULTS = {"python_files": "test_*.py *_test.py", "python_classes": "Test", "python_functions": "test"}
#: What nose collects by default (its testMatch `(?:^|[\b_./-])[Tt]est`), as pytest globs and prefixes.
NOSE_STYLE = {
    "python_files": "test*.py Test*.py *_test.py *_tests.py *-test.py",
    "python_classes": "Test *Test *Tests",
    "python_functions": "test Test *_test",
}
#: The oldest pytest that runs on each interpreter (older ones fail at import or at assertion rewriting).
PYTEST_FLOOR = {(3, 8): "4.6", (3, 9): "6.2", (3, 10): "6.2.5", (3, 11): "7.1", (3, 12): "7.4", (3, 13): "8.2"}
#: Releases used to check that a combined range can be met at all (one per minor line is enough).
_KNOWN_PYTEST = [
    "3.10.1", "4.6.11", "5.4.3", "6.2.5", "7.0.1", "7.1.3", "7.2.2", "7.3.2", "7.4.4",
    "8.0.2", "8.1.2", "8.2.2", "8.3.5", "8.4.2", "9.0.1",
]  # fmt: skip
#: addopts that would change how our runs are measured or stop them early: coverage plugins fight the
#: runner's own coverage (fault localization), xdist splits the process, -x stops the baseline at the first failure.
_DROP_OPTS = {
    "-x": 0, "--exitfirst": 0, "--maxfail": 1, "--lf": 0, "--last-failed": 0, "--ff": 0, "--failed-first": 0,
    "--sw": 0, "--stepwise": 0, "--pdb": 0, "-n": 1, "--numprocesses": 1, "--dist": 1, "--maxprocesses": 1,
    "--looponfail": 0, "-f": 0, "--junitxml": 1, "--junit-xml": 1, "--html": 1, "--cov-report": 1,
    "--cov-config": 1, "--cov-fail-under": 1, "--cov-append": 0, "--cov-branch": 0, "--no-cov": 0,
    "--no-cov-on-fail": 0, "--cov-context": 1,
}  # fmt: skip
_SKIP_DIRS = {".git", ".tox", ".nox", ".venv", "venv", "env", "build", "dist", "node_modules", ".reprobot", "docs"}
_MAX_TEST_FILES = 600


@dataclass(frozen=True)
class PytestConfig:
    """The project's test-runner settings and where they came from.

    `native` is True when pytest finds them on its own (pytest.ini, pyproject, tox.ini [pytest],
    setup.cfg [tool:pytest]); otherwise the runner writes them into an ini file it passes with `-c`.
    """

    values: tuple[tuple[str, str], ...] = ()
    source: str = ""
    native: bool = True
    nose: bool = False

    def get(self, key: str) -> str:
        """A setting's value, or pytest's default for the collection patterns ('' for others)."""
        return dict(self.values).get(key, PYTEST_DEFAULTS.get(key, ""))


@dataclass(frozen=True)
class SuiteSignals:
    """What the test files themselves say about the runner they were written for."""

    nose_imports: bool = False
    nose_fixtures: bool = False
    yield_tests: bool = False
    imports: frozenset[str] = field(default_factory=frozenset)
    files: int = 0
    #: Modules the project's own code imports unconditionally at module level (needed to import it at all).
    package_imports: frozenset[str] = field(default_factory=frozenset)


def _ini_section(path: Path, section: str) -> dict[str, str] | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(errors="replace"), source=path.name)
    except configparser.Error as exc:
        log.warning("%s is not parsable, its [%s] section is ignored: %s", path.name, section, exc)
        return None
    if not parser.has_section(section):
        return None
    return {k: v.strip() for k, v in parser.items(section)}


def _pyproject_section(path: Path) -> dict[str, str] | None:
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except tomllib.TOMLDecodeError:
        return None
    section = data.get("tool", {}).get("pytest", {}).get("ini_options")
    if not isinstance(section, dict):
        return None
    out = {}
    for key, value in section.items():
        if isinstance(value, list):
            out[key] = ("\n" if key == "markers" else " ").join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def read_pytest_config(repo: Path) -> PytestConfig:
    """The project's pytest settings, found where pytest looks (its order), then in the places it no longer reads."""
    found: tuple[dict[str, str], str, bool] | None = None
    for name in ("pytest.ini", ".pytest.ini"):
        if (repo / name).is_file():
            found = (_ini_section(repo / name, "pytest") or {}, name, True)
            break
    if found is None and (repo / "pyproject.toml").is_file():
        section = _pyproject_section(repo / "pyproject.toml")
        if section is not None:
            found = (section, "pyproject.toml [tool.pytest.ini_options]", True)
    if found is None and (repo / "tox.ini").is_file():
        section = _ini_section(repo / "tox.ini", "pytest")
        if section is not None:
            found = (section, "tox.ini [pytest]", True)
    if found is None and (repo / "setup.cfg").is_file():
        section = _ini_section(repo / "setup.cfg", "tool:pytest")
        if section is not None:
            found = (section, "setup.cfg [tool:pytest]", True)
        else:
            old = _ini_section(repo / "setup.cfg", "pytest")
            if old is not None:
                # pytest >= 4 refuses this section outright ("no longer supported"), so it is handed over with -c.
                found = (old, "setup.cfg [pytest]", False)
    values, source, native = found or ({}, "", True)
    nose = _nose_settings(repo)
    if nose is not None:
        # nose's own selection (where=, tests=) becomes testpaths; the project's pytest settings still win.
        native = native and not set(nose) - set(values)
        values = {**nose, **values}
        source = source or "setup.cfg [nosetests]"
    # Every key is kept: where pytest does not read the section itself, all of it is handed over.
    return PytestConfig(values=tuple(values.items()), source=source, native=native, nose=nose is not None)


def _nose_settings(repo: Path) -> dict[str, str] | None:
    """nose's [nosetests] section (setup.cfg, or a .noserc / nose.cfg) translated to pytest settings."""
    for name in ("setup.cfg", "nose.cfg", ".noserc"):
        path = repo / name
        if not path.is_file():
            continue
        section = _ini_section(path, "nosetests")
        if section is None:
            continue
        paths = [p for key in ("where", "w", "tests") for p in re.split(r"[,\s]+", section.get(key, "")) if p]
        return {"testpaths": " ".join(dict.fromkeys(paths))} if paths else {}
    return None


def sanitize_addopts(addopts: str) -> str:
    """addopts without the options that would change how the runner measures (see _DROP_OPTS)."""
    try:
        words = shlex.split(addopts)
    except ValueError:
        return addopts
    out: list[str] = []
    skip = 0
    for word in words:
        if skip:
            skip -= 1
            continue
        name = word.split("=", 1)[0]
        if name == "--cov" or name.startswith("--cov="):
            continue  # --cov takes an optional value, always given inline or as its own --cov=path here
        if name in _DROP_OPTS:
            skip = _DROP_OPTS[name] if "=" not in word else 0
            continue
        if re.fullmatch(r"-n\w+", word):
            continue  # -n4 / -nauto (xdist)
        out.append(word)
    return shlex.join(out)


def _matches(name: str, patterns: str) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in patterns.split())


def _is_test_name(name: str, prefixes: str) -> bool:
    return any(fnmatch.fnmatch(name, p) if "*" in p else name.startswith(p) for p in prefixes.split())


def suite_files(repo: Path, config: PytestConfig) -> list[Path]:
    """Test modules (and conftest.py files) that pytest would collect under the config, nose-widened if nose."""
    patterns = config.get("python_files")
    if config.nose:
        patterns = f"{patterns} {NOSE_STYLE['python_files']}"
    roots = [repo / p for p in config.get("testpaths").split() if (repo / p).exists()] or [repo]
    found: list[Path] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            rel = path.relative_to(repo).parts
            if any(part in _SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
                continue
            if path.name == "conftest.py" or _matches(path.name, patterns):
                found.append(path)
            if len(found) >= _MAX_TEST_FILES:
                return found
    return found


def scan_suite(repo: Path, config: PytestConfig) -> SuiteSignals:
    """Static signals from the test files: nose use, nose-style fixtures, yield tests, imported modules."""
    nose_imports = nose_fixtures = yield_tests = False
    imports: set[str] = set()
    files = suite_files(repo, config)
    functions = config.get("python_functions")
    for path in files:
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imports.add(node.module.split(".")[0])
        nose_imports = nose_imports or "nose" in imports
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                nose_fixtures = nose_fixtures or node.name in ("setup", "teardown") or _uses_with_setup(node)
                yield_tests = yield_tests or (_is_test_name(node.name, functions) and _is_generator(node))
            elif isinstance(node, ast.ClassDef) and not _is_unittest_case(node):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        nose_fixtures = nose_fixtures or item.name in ("setup", "teardown")
                        yield_tests = yield_tests or (_is_test_name(item.name, functions) and _is_generator(item))
    return SuiteSignals(
        nose_imports, nose_fixtures, yield_tests, frozenset(imports), len(files), _package_imports(repo, set(files))
    )


#: Module and folder names that hold tests whatever their file names.
_TEST_NAMES = frozenset({"test", "tests", "testing"})


def untested_python_sources(repo: Path) -> bool:
    """True when the repo holds Python modules and no test module pytest would collect by its defaults.

    Such a repo (a script or a small library, with no build file and no tests) is still a Python project: the
    bot runs its BRT with pytest, the only suite the repo will have. A repo with tests but no build file is
    left to the setup agent, which can find how those tests are run.
    """
    sources = False
    for path in repo.rglob("*.py"):
        rel = path.relative_to(repo).parts
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
            continue
        if path.name == "conftest.py" or _matches(path.name, PYTEST_DEFAULTS["python_files"]):
            return False
        if path.stem in _TEST_NAMES or any(part in _TEST_NAMES for part in rel[:-1]):
            return False  # tests by another convention (unittest's tests.py, a test/ folder): not "no tests"
        sources = True
    return sources


def _package_imports(repo: Path, tests: set[Path]) -> frozenset[str]:
    """Top-level imports of the project's non-test modules, outside try blocks (a try marks an optional import)."""
    found: set[str] = set()
    count = 0
    for path in sorted(repo.rglob("*.py")):
        rel = path.relative_to(repo).parts
        if path in tests or any(part in _SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
            continue
        if rel[0] in ("tests", "test", "testing") or path.name == "setup.py":
            continue
        count += 1
        if count > _MAX_TEST_FILES:
            break
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        todo: list[ast.stmt] = list(tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.If):
                todo.extend([*node.body, *node.orelse])
    return frozenset(found)


def _uses_with_setup(func: ast.FunctionDef) -> bool:
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
        if name == "with_setup":
            return True
    return False


def _is_unittest_case(cls: ast.ClassDef) -> bool:
    # unittest.TestCase subclasses keep setUp/tearDown semantics in every pytest; only plain classes changed.
    names = [b.attr if isinstance(b, ast.Attribute) else b.id if isinstance(b, ast.Name) else "" for b in cls.bases]
    return any("TestCase" in name for name in names)


def _is_generator(func: ast.FunctionDef) -> bool:
    if any(_decorator_name(d) in ("fixture", "yield_fixture") for d in func.decorator_list):
        return False
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # a nested function's yield is its own
        todo.extend(ast.iter_child_nodes(node))
    return False


def _decorator_name(deco: ast.expr) -> str:
    target = deco.func if isinstance(deco, ast.Call) else deco
    return target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""


def pytest_requirement(
    pins: list[str], signals: SuiteSignals, config: PytestConfig, python: tuple[int, int]
) -> tuple[str, list[str]]:
    """One `pytest` requirement that fits the interpreter, the project's pins and the era of its suite.

    Returns the requirement and notes on what could not be honoured (a pin or an era no pytest on this
    interpreter can meet). Priority when they conflict: the interpreter, then the project's pins, then the era.
    """
    notes: list[str] = []
    floor = PYTEST_FLOOR.get(python) or (min(PYTEST_FLOOR.values()) if python < min(PYTEST_FLOOR) else "8.2")
    base = SpecifierSet(f">={floor}")
    pinned = SpecifierSet()
    for pin in pins:
        try:
            pinned &= SpecifierSet(pin)
        except InvalidSpecifier:
            notes.append(f"ignored an unreadable pytest pin {pin!r}")
    minversion = config.get("minversion").strip()
    if re.fullmatch(r"\d+(\.\d+)*", minversion):
        pinned &= SpecifierSet(f">={minversion}")
    era = SpecifierSet()
    why = ""
    if signals.yield_tests:
        era, why = SpecifierSet("<4"), "yield tests (removed in pytest 4)"
    elif signals.nose_fixtures or signals.nose_imports or config.nose:
        era, why = SpecifierSet("<8"), "nose-style suite (pytest 8 dropped nose support)"
    if not str(pinned) and not str(era):
        return "pytest", notes  # nothing asks for an older pytest: the newest fits
    for spec, dropped in ((base & pinned & era, None), (base & pinned, "era"), (base & era, "pins"), (base, "both")):
        if _satisfiable(spec):
            if dropped in ("era", "both") and why:
                notes.append(f"the suite needs pytest {era} for its {why}, which does not run on Python "
                             f"{python[0]}.{python[1]}; those tests may not run")  # fmt: skip
            if dropped in ("pins", "both") and str(pinned):
                notes.append(f"the project pins pytest {pinned}, which does not run on Python {python[0]}.{python[1]}")
            return f"pytest{_canonical(spec)}", notes
    return f"pytest>={floor}", notes


def _satisfiable(spec: SpecifierSet) -> bool:
    known = [Version(v) for v in _KNOWN_PYTEST]
    if any(spec.contains(v) for v in known):
        return True
    # A pin to a release between our samples (pytest==7.2.1): trust an exact or upper-bounded pin that the floor allows.
    # A wildcard pin (==6.0.*) is not one release: the samples above decide it, or two of them would pass vacuously.
    exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
    return bool(exact) and all(spec.contains(Version(s.version)) for s in exact)


def _canonical(spec: SpecifierSet) -> str:
    return ",".join(sorted(str(s) for s in spec))

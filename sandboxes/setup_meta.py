"""Static packaging metadata of legacy projects: `setup.py` read with `ast` (never run), `setup.cfg` with configparser.

A `setup.py` is code: running it on the host would run the repo's code there. So only what can be read without
running it is taken: literals, names bound to literals at module level (lists, dicts, strings, tuples), `+`
of such lists, `name.append(literal)` / `name.extend([...])` at module level, and `__version__` of the
package read from its own `__init__.py` as text. Anything computed is left out, not guessed.
"""

from __future__ import annotations

import ast
import configparser
import logging
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

log = logging.getLogger(__name__)

_SETUP_KEYS = ("install_requires", "tests_require", "extras_require", "python_requires", "classifiers", "name")
_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)


@dataclass(frozen=True)
class SetupMetadata:
    """What setup.py / setup.cfg declare; empty fields where nothing could be read statically."""

    name: str = ""
    version: str = ""
    install_requires: tuple[str, ...] = ()
    tests_require: tuple[str, ...] = ()
    extras_require: dict[str, tuple[str, ...]] = field(default_factory=dict)
    python_requires: str = ""
    classifiers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def merged(self, other: SetupMetadata) -> SetupMetadata:
        """`self` completed by `other` (setup.py's explicit values win over setup.cfg's)."""
        extras = {**other.extras_require, **self.extras_require}
        return SetupMetadata(
            name=self.name or other.name,
            version=self.version or other.version,
            install_requires=self.install_requires or other.install_requires,
            tests_require=self.tests_require or other.tests_require,
            extras_require=extras,
            python_requires=self.python_requires or other.python_requires,
            classifiers=self.classifiers or other.classifiers,
            sources=(*self.sources, *other.sources),
        )


class _Scope:
    """Module-level names bound to statically known values, in file order."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def eval(self, node: ast.AST | None) -> object:
        """The value of `node` if it is a literal or built from known names; None otherwise."""
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self.values.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.eval(node.left), self.eval(node.right)
            if isinstance(left, list | tuple) and isinstance(right, list | tuple):
                return [*left, *right]
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return None
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.eval(e) for e in node.elts]
            return [i for i in items if i is not None]
        if isinstance(node, ast.Dict):
            out: dict[str, object] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                k, v = self.eval(key), self.eval(value)
                if isinstance(k, str) and v is not None:
                    out[k] = v
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "dict"):
            if node.func.id == "dict" and not node.args:
                return {kw.arg: self.eval(kw.value) for kw in node.keywords if kw.arg}
            return self.eval(node.args[0]) if node.args else None
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, str | list | tuple | dict) else None

    def visit(self, stmt: ast.stmt) -> None:
        """Track a module-level binding or an in-place list growth."""
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    if value is None:
                        self.values.pop(target.id, None)
                    else:
                        self.values[target.id] = value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = self.eval(stmt.value)
            if value is not None:
                self.values[stmt.target.id] = value
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            self.values[stmt.target.id] = self.eval(ast.BinOp(stmt.target, stmt.op, stmt.value))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._grow(stmt.value)

    def _grow(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and call.args):
            return
        current = self.values.get(func.value.id)
        if not isinstance(current, list):
            return
        arg = self.eval(call.args[0])
        if func.attr == "append" and arg is not None:
            current.append(arg)
        elif func.attr == "extend" and isinstance(arg, list | tuple):
            current.extend(arg)


def _setup_call(tree: ast.Module) -> ast.Call | None:
    """The `setup(...)` (or `setuptools.setup(...)`) call, wherever it is (module level or under `if`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "setup":
                return node
    return None


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#"))
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if isinstance(v, str) and v.strip())
    return ()


def _extras(value: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): _strings(v) for k, v in value.items() if _strings(v)}


def read_setup_py(repo: Path) -> SetupMetadata:
    """Static metadata of `repo/setup.py`; empty when absent or unparsable (logged)."""
    path = repo / "setup.py"
    if not path.is_file():
        return SetupMetadata()
    try:
        tree = ast.parse(path.read_text(errors="replace"), filename="setup.py")
    except (SyntaxError, ValueError) as exc:
        log.warning("setup.py is not parsable, its metadata is ignored: %s", exc)
        return SetupMetadata()
    scope = _Scope()
    # Only unconditional module-level bindings: what an if/try adds depends on the interpreter or platform
    # that would run setup.py (a Python 2 backport, a Windows-only package), which static reading cannot know.
    for stmt in tree.body:
        scope.visit(stmt)
    call = _setup_call(tree)
    if call is None:
        return SetupMetadata(sources=("setup.py",))
    kwargs: dict[str, object] = {}
    for kw in call.keywords:
        if kw.arg in (*_SETUP_KEYS, "version"):
            kwargs[kw.arg] = scope.eval(kw.value)
        elif kw.arg is None:  # setup(**meta): a dict bound at module level
            spread = scope.eval(kw.value)
            if isinstance(spread, dict):
                kwargs.update({k: v for k, v in spread.items() if isinstance(k, str)})
    name = kwargs.get("name")
    version = kwargs.get("version")
    meta = SetupMetadata(
        name=name if isinstance(name, str) else "",
        version=version if isinstance(version, str) else "",
        install_requires=_strings(kwargs.get("install_requires")),
        tests_require=_strings(kwargs.get("tests_require")),
        extras_require=_extras(kwargs.get("extras_require")),
        python_requires=requires if isinstance(requires := kwargs.get("python_requires"), str) else "",
        classifiers=_strings(kwargs.get("classifiers")),
        sources=("setup.py",),
    )
    if meta.name and not meta.version:
        meta = _with_package_version(repo, meta)
    return meta


def _with_package_version(repo: Path, meta: SetupMetadata) -> SetupMetadata:
    """`__version__ = '...'` of the package named like the project, read as text (for `version=pkg.__version__`)."""
    package = meta.name.replace("-", "_")
    for candidate in (repo / package / "__init__.py", repo / "src" / package / "__init__.py", repo / f"{package}.py"):
        if candidate.is_file():
            match = _VERSION_LINE.search(candidate.read_text(errors="replace"))
            if match:
                return replace(meta, version=match.group(1))
    return meta


def read_setup_cfg(repo: Path) -> SetupMetadata:
    """[metadata] and [options] / [options.extras_require] of `repo/setup.cfg`; empty when absent or unparsable."""
    path = repo / "setup.cfg"
    if not path.is_file():
        return SetupMetadata()
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(errors="replace"), source="setup.cfg")
    except configparser.Error as exc:
        log.warning("setup.cfg is not parsable, its metadata is ignored: %s", exc)
        return SetupMetadata()

    def get(section: str, key: str) -> str:
        return parser.get(section, key, fallback="") if parser.has_section(section) else ""

    extras: dict[str, tuple[str, ...]] = {}
    if parser.has_section("options.extras_require"):
        for key, value in parser.items("options.extras_require"):
            extras[key] = _cfg_list(value)
    version = get("metadata", "version")
    meta = SetupMetadata(
        name=get("metadata", "name").strip(),
        # `attr:` and `file:` directives need the code or more files; only a plain version is taken.
        version="" if ":" in version else version.strip(),
        install_requires=_cfg_list(get("options", "install_requires")),
        tests_require=_cfg_list(get("options", "tests_require")),
        extras_require={k: v for k, v in extras.items() if v},
        python_requires=get("options", "python_requires").strip(),
        classifiers=_cfg_list(get("metadata", "classifiers")),
        sources=("setup.cfg",) if parser.has_section("options") or parser.has_section("metadata") else (),
    )
    if meta.name and not meta.version:
        meta = _with_package_version(repo, meta)
    return meta


def _cfg_list(value: str) -> tuple[str, ...]:
    # setuptools' list values: one per line (a `;` there starts an environment marker, not a new item),
    # or comma-separated on a single line.
    lines = [ln.split(" #", 1)[0].strip() for ln in value.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if len(lines) == 1 and "," in lines[0] and ";" not in lines[0] and "[" not in lines[0]:
        lines = [part.strip() for part in lines[0].split(",") if part.strip()]
    return tuple(lines)


def read_setup_metadata(repo: Path) -> SetupMetadata:
    """setup.py's static metadata completed by setup.cfg's."""
    return read_setup_py(repo).merged(read_setup_cfg(repo))


def marker_requirements(extras: dict[str, tuple[str, ...]]) -> list[str]:
    """Requirements of `extras_require` keys that are only environment markers (`":python_version < '3'"`).

    setuptools treats such a key as conditional install_requires; pip evaluates `req; marker` the same way.
    """
    out: list[str] = []
    for key, reqs in extras.items():
        if not key.startswith(":"):
            continue
        marker = " ".join(key[1:].split())
        out.extend(f"{req}; {marker}" if marker and ";" not in req else req for req in reqs)
    return out


#: `name = module:attr` as console_scripts entries write it (setup.py strings, setup.cfg lines).
_ENTRY_POINT = re.compile(r"""^\s*['"]?\s*(?P<name>[\w.-]+)\s*=\s*(?P<target>[\w.]+\s*:\s*[\w.]+)\s*['"]?\s*,?\s*$""")


def console_scripts(texts: dict[str, str]) -> dict[str, str]:
    """Command name -> `module:attr` for the console scripts the packaging files declare.

    `texts` maps a packaging file's name (pyproject.toml, setup.cfg, setup.py) to its text. Read statically:
    pyproject's [project.scripts] with tomllib, setup.cfg's [options.entry_points] console_scripts with
    configparser, and in setup.py the `'name = module:attr'` strings of its console_scripts list (the code is
    never run). A command the report runs under one of these names runs the project's own code.
    """
    found: dict[str, str] = {}
    if "pyproject.toml" in texts:
        try:
            project = tomllib.loads(texts["pyproject.toml"]).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        scripts = project.get("scripts", {}) if isinstance(project, dict) else {}
        found.update({k: v for k, v in scripts.items() if isinstance(v, str)} if isinstance(scripts, dict) else {})
    if "setup.cfg" in texts:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(texts["setup.cfg"], source="setup.cfg")
            value = parser.get("options.entry_points", "console_scripts", fallback="")
        except configparser.Error:
            value = ""
        found.update(_entry_points(value.splitlines()))
    if "setup.py" in texts:
        section = re.search(r"console_scripts['\"]?\s*[:=]\s*\[(?P<body>[^\]]*)\]", texts["setup.py"])
        found.update(_entry_points(section.group("body").replace(",", "\n").splitlines()) if section else {})
    return {name: "".join(target.split()) for name, target in found.items()}


def _entry_points(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        m = _ENTRY_POINT.match(line)
        if m:
            out[m.group("name")] = m.group("target")
    return out


PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


def read_console_scripts(repo: Path) -> dict[str, str]:
    """console_scripts of the packaging files at the top of `repo` (none when it has none)."""
    texts: dict[str, str] = {}
    for name in PACKAGING_FILES:
        path = repo / name
        try:
            texts[name] = path.read_text(errors="replace") if path.is_file() else ""
        except OSError:
            continue  # an unreadable file declares nothing we can use
    return console_scripts({k: v for k, v in texts.items() if v})

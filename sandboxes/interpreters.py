"""Which Python a project's environment is built with: its `requires-python` or classifiers, among those available."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

_EXE = re.compile(r"^python3\.(\d+)$")
_CLASSIFIER = re.compile(r"^Programming Language :: Python :: (\d)\.(\d+)\s*$")
#: The oldest interpreter worth offering: older ones cannot run the runner's own tools (pytest-timeout, coverage).
MIN_PYTHON = (3, 8)


@dataclass(frozen=True)
class Interpreter:
    """An interpreter by version and by its path as seen inside the sandbox."""

    version: tuple[int, int]
    path: str

    @property
    def label(self) -> str:
        """ "3.11"."""
        return f"{self.version[0]}.{self.version[1]}"


def available_interpreters(host_root: Path = Path("/"), rootfs: Path | None = None) -> list[Interpreter]:
    """`/usr/bin/python3.X` present on the host, and in the sandbox root when one is used, oldest first.

    With a built root filesystem the environment runs inside it, so an interpreter counts only if it is
    there too (the host's copy would not be visible in the sandbox).
    """

    def found(root: Path) -> set[int]:
        folder = root / "usr" / "bin"
        if not folder.is_dir():
            return set()
        return {int(m.group(1)) for p in folder.iterdir() if (m := _EXE.match(p.name))}

    minors = found(host_root)
    if rootfs is not None:
        minors &= found(rootfs)
    return [Interpreter((3, m), f"/usr/bin/python3.{m}") for m in sorted(minors) if (3, m) >= MIN_PYTHON]


def classifier_versions(classifiers: tuple[str, ...] | list[str]) -> list[tuple[int, int]]:
    """`Programming Language :: Python :: 3.X` versions, sorted."""
    out = {(int(m.group(1)), int(m.group(2))) for c in classifiers if (m := _CLASSIFIER.match(c.strip()))}
    return sorted(out)


def choose_interpreter(
    requires: str, classifiers: tuple[str, ...] | list[str], available: list[Interpreter], default: Interpreter | None
) -> tuple[Interpreter | None, str]:
    """The interpreter for a project, and why; None when nothing is available (the caller keeps its default).

    Order: interpreters that meet `requires-python`; among them one the classifiers list (newest), else the
    one nearest the newest classified version (a project classified up to 3.8 is closer to 3.9 than 3.12),
    else the configured default, else the newest. When none meets `requires-python`, the default is kept
    and the reason says so.
    """
    try:
        spec = SpecifierSet(requires.strip()) if requires.strip() else SpecifierSet()
    except InvalidSpecifier:
        spec, requires = SpecifierSet(), ""
    fitting = [i for i in available if spec.contains(Version(i.label), prereleases=True)]
    if not fitting:
        fallback = default or (available[-1] if available else None)
        label = fallback.label if fallback else "none"
        have = ", ".join(i.label for i in available) or "none"
        return fallback, f"no available interpreter ({have}) meets requires-python {requires!r}; using {label}"
    listed = classifier_versions(classifiers)
    where = f"requires-python {requires!r}" if requires.strip() else "no requires-python"
    if listed:
        named = [i for i in fitting if i.version in listed]
        if named:
            return named[-1], f"newest available version listed in the classifiers ({where})"
        newest = listed[-1]
        later = [i for i in fitting if i.version > newest]
        if later:
            return later[0], f"nearest available version after the newest classifier {newest[0]}.{newest[1]} ({where})"
    if default is not None and default in fitting:
        return default, f"the configured interpreter meets {where}"
    return fitting[-1], f"newest available interpreter meeting {where}"


def interpreter_for_path(path: Path, available: list[Interpreter]) -> Interpreter | None:
    """The available interpreter a configured path (`/usr/bin/python3`, a symlink) resolves to, if any."""
    name = path.resolve().name if path.exists() else path.name
    match = _EXE.match(name)
    if match is None:
        return None
    version = (3, int(match.group(1)))
    return next((i for i in available if i.version == version), None)

"""Test impact selection: which baseline tests a candidate edit can affect, from per-test line coverage.

The baseline run under coverage.py with `dynamic_context = test_function` maps each executed line to the
tests that ran it (agents/localize.coverage_from_json). A candidate that only changes lines
inside function bodies can only change the behaviour of the tests that executed those lines, so those
are the regression tests to run first; a surviving candidate still runs the full suite once.

Anything whose effect coverage contexts cannot see falls back to the full suite:
- a module-level statement (coverage drops the import-time context, and imports run for every test),
  which includes a def/class header, its decorators and default values, and class-body statements;
- a pytest fixture (its body runs in set-up, possibly for tests that never reach the changed line);
- a conftest.py, or a test file itself;
- a file that does not parse, or one the coverage map has never seen.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from agents.localize.ranking import coverage_from_json, split_outcomes
from sandboxes.base import WORKSPACE_MOUNT, Sandbox, SandboxError
from sandboxes.seqdiff import edit_opcodes
from sandboxes.workspace import SCRATCH_DIR

log = logging.getLogger(__name__)

#: coverage.py settings of the baseline run: which test executed which line.
_RC = f"""\
[run]
dynamic_context = test_function
data_file = {WORKSPACE_MOUNT}/{SCRATCH_DIR}/.coverage-baseline
branch = False
[json]
show_contexts = True
"""
_RC_REL = f"{SCRATCH_DIR}/coveragerc-baseline"
_JSON_REL = f"{SCRATCH_DIR}/coverage-baseline.json"
_EXPORT_REL = f"{SCRATCH_DIR}/coverage_export.py"

#: Runs inside the sandbox with the repo's own coverage.py: the per-line contexts in a compact form. `coverage
#: json --show-contexts` repeats every test name on every line it ran, which passes the 32 MB read cap on a
#: suite of ~2,000 tests; lines of one block share one set of tests, so sets are stored once and named by index.
_EXPORT = """\
import json, sys
from coverage import CoverageData


def main(data_file, out_file):
    data = CoverageData(basename=data_file)
    data.read()
    name_ids, set_ids, files = {}, {}, {}
    for path in data.measured_files():
        lines = {}
        for line, contexts in (data.contexts_by_lineno(path) or {}).items():
            ids = tuple(sorted(name_ids.setdefault(c, len(name_ids)) for c in contexts if c))
            if ids:
                lines[str(line)] = set_ids.setdefault(ids, len(set_ids))
        if lines:
            files[path] = lines
    names = sorted(name_ids, key=name_ids.get)
    sets = [list(s) for s in sorted(set_ids, key=set_ids.get)]
    document = {"format": "compact-contexts", "contexts": names, "sets": sets, "files": files}
    with open(out_file, "w") as fh:
        json.dump(document, fh, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
"""


@dataclass(frozen=True)
class Impact:
    """The regression tests to run first for one edit, or `full` with the reason the whole suite is needed."""

    tests: tuple[str, ...] = ()
    full: bool = False
    reason: str = ""


def changed_lines(old: str, new: str) -> set[int]:
    """Lines of `old` (1-based) that the edit replaces or deletes; a pure insertion names its neighbours."""
    lines: set[int] = set()
    for _tag, i1, i2, _j1, _j2 in edit_opcodes(old.splitlines(), new.splitlines()):
        if i2 > i1:
            lines.update(range(i1 + 1, i2 + 1))
        else:
            # Inserted between old lines i1 and i1 + 1: both sides decide where it lives.
            lines.update(n for n in (i1, i1 + 1) if n >= 1)
    return lines


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("fixture", "yield_fixture"):
            return True
    return False


def _is_test_path(path: str) -> bool:
    name = PurePosixPath(path).name
    parts = PurePosixPath(path).parts[:-1]
    return name.startswith("test_") or name.endswith("_test.py") or "tests" in parts or "test" in parts


def fallback_reason(path: str, source: str, lines: Iterable[int]) -> str | None:
    """Why an edit of `lines` in `path` (old `source`) needs the full suite, or None when coverage can tell."""
    if PurePosixPath(path).name == "conftest.py":
        return f"{path} is a conftest"
    if _is_test_path(path):
        return f"{path} is a test file"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return f"{path} does not parse"
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for line in sorted(lines):
        # Inside a body means past the header (decorators, defaults and annotations run at import time).
        enclosing = [f for f in functions if f.body[0].lineno <= line <= (f.end_lineno or f.lineno)]
        if not enclosing:
            return f"{path}:{line} is a module-level statement"
        if any(_is_fixture(f) for f in enclosing):
            return f"{path}:{line} is in a pytest fixture"
    return None


def select_tests(
    coverage: Mapping[str, Mapping[int, set[str]]],
    path: str,
    old: str,
    new: str,
    node_ids: Iterable[str],
) -> Impact:
    """The baseline tests (pytest node ids from `node_ids`) that executed a line the edit of `path` changes.

    `coverage` is file -> line -> test contexts (coverage_from_json). Falls back to the full suite for the
    cases in the module docstring.
    """
    lines = changed_lines(old, new)
    if not lines:
        return Impact(reason="the edit changes no line")
    reason = fallback_reason(path, old, lines)
    if reason is not None:
        return Impact(full=True, reason=reason)
    chosen = tests_covering(coverage, path, lines, node_ids)
    if chosen is None:
        return Impact(full=True, reason=f"{path} is not in the baseline coverage")
    lines_text = ", ".join(str(n) for n in sorted(lines)[:5])
    return Impact(tests=chosen, reason=f"{len(chosen)} tests executed {path} lines {lines_text}")


def tests_covering(
    coverage: Mapping[str, Mapping[int, set[str]]], path: str, lines: Iterable[int], node_ids: Iterable[str]
) -> tuple[str, ...] | None:
    """The tests (pytest node ids from `node_ids`) that executed any of `lines` of `path` at baseline.

    None when `path` is not in the coverage at all (nothing is known about it), an empty tuple when it is and no
    test ran those lines.
    """
    if path not in coverage:
        return None
    per_line = coverage[path]
    contexts = {c for line in lines for c in per_line.get(line, ())}
    if not contexts:
        return ()
    return tuple(n for n in node_ids if split_outcomes(contexts, [], [n])[1])


def coverage_rc(sandbox: Sandbox) -> str:
    """Write the baseline's coverage settings into the workspace; the --rcfile path as seen inside."""
    sandbox.write_file(_RC_REL, _RC)
    return f"{WORKSPACE_MOUNT}/{_RC_REL}"


async def read_coverage(sandbox: Sandbox, python: str) -> dict[str, dict[int, set[str]]] | None:
    """The per-line test contexts of the run made with coverage_rc(), or None when coverage gave none."""
    data_file = f"{WORKSPACE_MOUNT}/{SCRATCH_DIR}/.coverage-baseline"
    return await export_contexts(sandbox, python, data_file, _JSON_REL) or None


async def export_contexts(
    sandbox: Sandbox, python: str, data_file: str, out_rel: str
) -> dict[str, dict[int, set[str]]]:
    """file -> line -> test contexts of the coverage data at `data_file` (a path inside the sandbox).

    Exported in the sandbox with the repo's own coverage.py in the compact form (_EXPORT); empty when coverage
    gave nothing or the export is too large to read: localization and impact selection are then done without.
    """
    sandbox.write_file(_EXPORT_REL, _EXPORT)
    argv = [python, f"{WORKSPACE_MOUNT}/{_EXPORT_REL}", data_file, f"{WORKSPACE_MOUNT}/{out_rel}"]
    conv = await sandbox.run(argv, timeout=120)
    if conv.exit_code != 0:
        log.info("coverage contexts unavailable: %s", conv.output[-300:])
        return {}
    try:
        data = json.loads(sandbox.read_file(out_rel))
    except (OSError, ValueError, SandboxError) as exc:
        log.warning("coverage contexts unreadable, going on without them: %s", exc)
        return {}
    return coverage_from_json(data, WORKSPACE_MOUNT)

"""Build realbugs cases from recipes and git mirrors, and verify each in a sandbox (issue 27).

    python bench/data/mine.py build --mirrors DIR [--out bench/data/realbugs] [RECIPE.toml ...]
    python bench/data/mine.py candidates MIRROR [--max-lines 40] [--limit 50]
    python bench/data/mine.py repro RECIPE.toml --mirrors DIR SCRIPT.py [--fixed]
    python bench/data/mine.py draft MIRROR COMMIT > bench/data/recipes/<project>-<short>.toml
    python bench/data/mine.py check-issue CASE_DIR
    python bench/data/mine.py table [--built bench/data/realbugs]

A recipe (bench/data/recipes/<project>-<short>.toml) names an upstream repository, its buggy parent commit and
the fix commit, the fix's source paths, the upstream tests that form the BRT, what to trim, the deps and the
Python version, and carries the report we wrote as a user would. `build` turns it plus a git mirror (a bare or
ordinary git directory, as the search tool's `fetch` leaves under /work/.mirror/<owner>+<name>/repo) into a case
folder laid out like ../shared/bench/realbugs: case.toml, issue.md, repo/ (the buggy tree, trimmed),
oracle/fix.diff (the fix restricted to the source paths) and oracle/test_brt.py (the fix commit's version of
the BRT tests). It then verifies the case in a sandbox, with the environment the bot itself builds for a case
(the case's deps on top of what is detected in repo/): (i) the kept tests pass on the buggy tree, (ii) every BRT
test fails on it, (iii) with fix.diff applied everything passes. A case that fails a check is not written.

Nothing fetched runs on the host: git only reads the mirror (archive, diff, show), and every test or script
runs in the sandbox. Nothing here reaches the network except pip building the environment.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.settings.config import Settings  # noqa: E402
from sandboxes.base import WORKSPACE_MOUNT, Limits, SandboxSpec  # noqa: E402
from sandboxes.environment import (  # noqa: E402
    BuiltEnvironment,
    EnvironmentError_,
    TestRun,
    TestSuite,
    build_environment,
    detect_python_spec,
    with_extra_deps,
)
from sandboxes.factory import make_sandbox  # noqa: E402
from sandboxes.workspace import SAFE_GIT, GitError, apply_patch, copy_workspace  # noqa: E402

#: Keys every recipe must have.
REQUIRED = ("project", "repo", "mirror", "buggy", "fixed", "source_paths", "brt_tests", "license", "issue")
#: Seconds a whole-suite run may take in the sandbox.
SUITE_TIMEOUT = 900.0
#: The per-test timeout the oracle BRT carries (pytest-timeout), like the shared cases' marks.
BRT_TIMEOUT = 60
#: An added line of the fix shorter than this (stripped) may appear in a report by chance: `return x`, `else:`.
MIN_LEAK_CHARS = 12
#: Files a fix commit often also touches that are no part of the fix (version and metadata).
VERSION_FILES = ("__version__.py", "_version.py", "version.py", "_meta.py", "__about__.py")
#: Paths that name a test file (a candidate fix commit changes one of these and some other .py file).
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*\.py$|(^|/)tests?\.py$|_tests?\.py$|(^|/)conftest\.py$"
)


class RecipeError(ValueError):
    """The recipe is malformed, or its mirror lacks a commit or path it names."""


@dataclass(frozen=True)
class Recipe:
    """One bug to mine: where it is upstream, what forms its oracle, and the report we wrote for it."""

    name: str
    project: str
    url: str
    mirror: str
    buggy: str
    fixed: str
    source_paths: tuple[str, ...]
    #: Upstream test ids at the fixed commit: `path.py::test_x` or `path.py::TestClass::test_x`.
    brt_tests: tuple[str, ...]
    license: str
    issue: str
    brt_path: str = ""
    trims: tuple[str, ...] = ()
    #: Kept tests removed from the buggy tree (ids at the buggy commit), each with its reason in repo_changes.
    drop_tests: tuple[str, ...] = ()
    deps: tuple[str, ...] = ("pytest", "pytest-timeout")
    python: str = "3.11"
    #: Extra fields for case.toml (symptom, issue_style, difficulty, fix_size, ...).
    case: dict[str, Any] = field(default_factory=dict)
    repo_changes: str = ""
    #: A BRT written out in the recipe, for an upstream test that cannot be cut out as it is (table-driven
    #: tests whose new rows are the fix's test): it replaces the extracted one, and repo_changes says why.
    brt: str = ""

    @property
    def brt_target(self) -> str:
        """Where the BRT goes in repo/: given, or test_brt.py beside the first upstream test file."""
        if self.brt_path:
            return self.brt_path
        parent = PurePosixPath(self.brt_tests[0].split("::", 1)[0]).parent
        return str(parent / "test_brt.py") if str(parent) != "." else "test_brt.py"


def load_recipe(path: Path) -> Recipe:
    """Read a recipe file; RecipeError naming what is missing or wrong."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{path.name}: not valid TOML: {exc}") from exc
    missing = [k for k in REQUIRED if not data.get(k)]
    if missing:
        raise RecipeError(f"{path.name}: missing {', '.join(missing)}")
    for key in ("buggy", "fixed"):
        if not re.fullmatch(r"[0-9a-f]{40}", str(data[key])):
            raise RecipeError(f"{path.name}: {key} must be a full 40-hex commit id")
    return Recipe(
        name=path.stem,
        project=str(data["project"]),
        url=str(data["repo"]),
        mirror=str(data["mirror"]),
        buggy=str(data["buggy"]),
        fixed=str(data["fixed"]),
        source_paths=tuple(data["source_paths"]),
        brt_tests=tuple(data["brt_tests"]),
        license=str(data["license"]),
        issue=str(data["issue"]).strip() + "\n",
        brt_path=str(data.get("brt_path", "")),
        trims=tuple(data.get("trims", ())),
        drop_tests=tuple(data.get("drop_tests", ())),
        deps=tuple(data.get("deps", ("pytest", "pytest-timeout"))),
        python=str(data.get("python", "3.11")),
        case=dict(data.get("case", {})),
        repo_changes=str(data.get("repo_changes", "")),
        brt=str(data.get("brt", "")),
    )


# -- reading the mirror (git only reads it: no hook, filter or external diff of the repo runs) ------------------


def find_mirror(mirrors: Path, name: str) -> Path | None:
    """The git directory of `name` (owner+repo) under `mirrors`: `<name>/repo` as fetched, or `<name>` itself."""
    for candidate in (mirrors / name / "repo", mirrors / name, mirrors / name.split("+")[-1]):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def git_read(mirror: Path, *args: str, binary: bool = False) -> Any:
    """stdout of a read-only git command on the mirror (bytes when `binary`); RecipeError when git fails."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1"}
    # --git-dir: a bare mirror and a checkout are read the same way, and nothing in a work tree is consulted.
    git_dir = mirror / ".git" if (mirror / ".git").is_dir() else mirror
    proc = subprocess.run(
        [*SAFE_GIT, f"--git-dir={git_dir}", *args], capture_output=True, env=env, timeout=300, check=False
    )
    if proc.returncode != 0:
        raise RecipeError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout if binary else proc.stdout.decode("utf-8", "replace")


def _trimmed(rel: str, trims: tuple[str, ...]) -> bool:
    """Whether repo-relative `rel` is a trimmed path or lies under one."""
    return any(rel == t.rstrip("/") or rel.startswith(t.rstrip("/") + "/") for t in trims)


def export_tree(mirror: Path, commit: str, dest: Path, trims: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """`git archive` of `commit` into `dest` minus the trims (symlinks and specials skipped).

    Returns the files written and the trims that removed something (a recipe's trim list may name paths that only
    some commits have; case.toml records what was actually left out).
    """
    data = git_read(mirror, "archive", "--format=tar", commit, binary=True)
    written: list[str] = []
    used: set[str] = set()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            rel = member.name
            if member.isfile():
                used.update(t for t in trims if _trimmed(rel, (t,)))
            if not member.isfile() or _trimmed(rel, trims) or ".." in PurePosixPath(rel).parts:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has content
            target.write_bytes(source.read())
            written.append(rel)
    return written, [t for t in trims if t in used]


def fix_diff(mirror: Path, recipe: Recipe) -> str:
    """The upstream fix restricted to the recipe's source paths, as `git apply` takes it in repo/."""
    diff = git_read(
        mirror, "diff", "--no-color", "--no-ext-diff", recipe.buggy, recipe.fixed, "--", *recipe.source_paths
    )
    if not diff.strip():
        raise RecipeError(f"{recipe.name}: the fix changes none of {', '.join(recipe.source_paths)}")
    return diff


# -- the oracle BRT: the fix commit's version of the chosen tests, nothing else of their modules' tests ---------


def _is_test_function(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")


def _is_test_class(node: ast.stmt) -> bool:
    """A class pytest or unittest collects tests from (or a mixin that holds tests)."""
    if not isinstance(node, ast.ClassDef):
        return False
    # A TestCase subclass that only inherits its tests from a mixin holds tests all the same.
    case = any((b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) == "TestCase" for b in node.bases)
    return case or node.name.startswith("Test") or any(_is_test_function(n) for n in node.body)


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based first line (decorators included) and end line of a statement."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)]) - 1
    assert node.end_lineno is not None
    return first, node.end_lineno


def _needed_classes(classes: list[ast.ClassDef], wanted: set[str]) -> set[str]:
    """Test classes that hold a wanted test, and (transitively) the classes in this module they derive from."""
    needed = {c.name for c in classes if c.name in wanted or any(w.startswith(f"{c.name}::") for w in wanted)}
    bases = {c.name: {b.id for b in c.bases if isinstance(b, ast.Name)} for c in classes}
    while True:
        more = set().union(*(bases[n] for n in needed if n in bases)) - needed
        if not more:
            return needed
        needed |= more


def select_tests(source: str, wanted: set[str], *, keep: bool) -> str:
    """The module with only the `wanted` tests (keep=True) or without them (keep=False); other code stays.

    `wanted` holds `test_x` and `TestClass::test_x` names (a parametrize suffix `[...]` is ignored). A test class
    keeps its non-test members; with keep=True a class none of whose tests is wanted is dropped whole, unless a
    kept class derives from it (a mixin of tests): then only its unwanted tests go.
    """
    wanted = {w.split("[", 1)[0] for w in wanted}
    lines = source.splitlines(keepends=True)
    body = ast.parse(source).body
    classes = [n for n in body if isinstance(n, ast.ClassDef) and _is_test_class(n)]
    needed = _needed_classes(classes, wanted)
    drop: list[tuple[int, int]] = []
    for node in body:
        if _is_test_function(node):
            if (getattr(node, "name", "") in wanted) != keep:
                drop.append(_span(node))
        elif isinstance(node, ast.ClassDef) and node in classes and node.name not in wanted:
            if keep and node.name not in needed:
                drop.append(_span(node))
                continue
            for member in node.body:
                if _is_test_function(member) and (f"{node.name}::{getattr(member, 'name', '')}" in wanted) != keep:
                    drop.append(_span(member))
    for first, last in sorted(drop, reverse=True):
        lines[first:last] = []
    return "".join(lines)


def oracle_brt(mirror: Path, recipe: Recipe) -> str:
    """The BRT: each upstream test file at the fixed commit cut to the chosen tests, with a timeout mark.

    A recipe's own `brt` text is taken as it is instead.
    """
    if recipe.brt:
        return recipe.brt.lstrip("\n")
    by_file: dict[str, set[str]] = {}
    for test_id in recipe.brt_tests:
        path, _, name = test_id.partition("::")
        if not name:
            raise RecipeError(f"{recipe.name}: BRT id {test_id!r} names no test (want path.py::test_x)")
        by_file.setdefault(path, set()).add(name)
    parts = []
    for path, names in by_file.items():
        text = git_read(mirror, "show", f"{recipe.fixed}:{path}")
        # Dropped tests leave runs of blank lines behind: two blank lines are enough between what remains.
        parts.append(re.sub(r"\n{4,}", "\n\n\n", select_tests(text, names, keep=True)).rstrip() + "\n")
    body = "\n\n".join(parts)
    header = f'"""Oracle BRT from the upstream fix ({", ".join(recipe.brt_tests)}, fixed version)."""\n'
    if re.search(r"^pytestmark\s*=", body, re.M):
        return header + body
    # At the end: a __future__ import must stay first, and pytest reads pytestmark after the module ran.
    mark = f"import pytest as _pytest  # noqa: E402\n\npytestmark = _pytest.mark.timeout({BRT_TIMEOUT})\n"
    return f"{header}{body}\n\n{mark}"


def drop_kept_tests(repo: Path, ids: tuple[str, ...]) -> None:
    """Remove the named tests from the buggy tree's test files (ids `path.py::[Class::]test`)."""
    by_file: dict[str, set[str]] = {}
    for test_id in ids:
        path, _, name = test_id.partition("::")
        by_file.setdefault(path, set()).add(name)
    for path, names in by_file.items():
        target = repo / path
        if not target.is_file():
            raise RecipeError(f"drop_tests names {path}, which the buggy tree does not have")
        target.write_text(select_tests(target.read_text(), names, keep=False))


# -- the report: it must not give the fix away --------------------------------------------------------------------


def leaked_lines(issue: str, diff: str) -> list[str]:
    """Added lines of `diff` (code that is new, not moved) that the report repeats verbatim."""
    added, removed = set(), set()
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added.add(line[1:].strip())
        elif line.startswith("-") and not line.startswith("---"):
            removed.add(line[1:].strip())
    text = " ".join(issue.split())
    leaks = []
    for line in sorted(added - removed):
        if len(line) < MIN_LEAK_CHARS or line.startswith("#"):
            continue
        if " ".join(line.split()) in text:
            leaks.append(line)
    return leaks


# -- verifying in a sandbox ----------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """The three checks on a built case: what ran, how it ended, and why it is rejected (if it is)."""

    reasons: list[str] = field(default_factory=list)
    regression: dict[str, int] = field(default_factory=dict)
    brt_failed: int = 0
    brt_symptoms: dict[str, int] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """All three checks held."""
        return not self.reasons


class CaseRunner:
    """Runs pytest on fresh copies of one case's repo/ in sandboxes, in the environment the bot would build."""

    def __init__(self, repo: Path, deps: tuple[str, ...], python: str, settings: Settings, sandbox: str) -> None:
        self.repo = repo
        self.deps = deps
        self.python = python
        self.settings = settings
        self.sandbox = sandbox
        self._env: BuiltEnvironment | None = None
        self._count = 0

    async def environment(self) -> BuiltEnvironment:
        """The case's environment (built once; the bot's cache makes later builds of the same deps free)."""
        if self._env is None:
            interpreter = Path(f"/usr/bin/python{self.python}")
            if not interpreter.exists():
                raise EnvironmentError_(f"python {self.python} is not installed here ({interpreter})")
            self._env = await build_environment(
                with_extra_deps(detect_python_spec(self.repo), self.deps),
                self.settings.cache_dir,
                python=interpreter,
                index_url=self.settings.pip_index_url,
                sandbox=self.sandbox,
                rootfs=self.settings.rootfs,
            )
        return self._env

    async def _copy(self, work: Path, patch: str, files: dict[str, str]) -> Path:
        self._count += 1
        ws = await copy_workspace(self.repo, work / f"run{self._count}")
        await apply_patch(ws, patch)
        for rel, text in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        return ws

    def _spec(self, ws: Path, env: BuiltEnvironment) -> SandboxSpec:
        limits = Limits(wall_seconds=SUITE_TIMEOUT, disk_bytes=self.settings.sandbox_disk_quota)
        return SandboxSpec(workspace=ws, mounts=env.mounts, limits=limits, session="cold")

    async def tests(self, work: Path, *, patch: str = "", files: dict[str, str] | None = None,
                    selection: tuple[str, ...] = ()) -> TestRun:  # fmt: skip
        """pytest (the selection, or the whole suite) on a copy with `patch` applied and `files` written."""
        env = await self.environment()
        ws = await self._copy(work, patch, files or {})
        async with make_sandbox(self.sandbox, self._spec(ws, env)) as sb:
            return await TestSuite(env, timeout=SUITE_TIMEOUT).run(sb, list(selection))

    async def script(self, work: Path, text: str, *, patch: str = "") -> str:
        """What `python repro.py` printed (stdout, then stderr) on a copy, run in the sandbox from repo/."""
        env = await self.environment()
        ws = await self._copy(work, patch, {"repro.py": text})
        suite = TestSuite(env)
        async with make_sandbox(self.sandbox, self._spec(ws, env)) as sb:
            result = await sb.run([env.python, "repro.py"], timeout=120, cwd=WORKSPACE_MOUNT, env=suite.env_vars())
        return result.output.replace(WORKSPACE_MOUNT + "/", "").replace(f"{WORKSPACE_MOUNT}", ".")


def _ids(run: TestRun, statuses: tuple[str, ...]) -> list[str]:
    return sorted(t for t, s in run.tests.items() if s in statuses)


def _symptom(run: TestRun, test_id: str) -> str:
    """wrong_value for a failed assertion, exception for anything else a BRT test raised."""
    text = run.result.output
    block = text[text.find(test_id.rsplit("::", 1)[-1]) :]
    return "wrong_value" if re.search(r"\bAssertionError\b|^E\s+assert ", block, re.M) else "exception"


async def verify(runner: CaseRunner, fix: str, brt: str, brt_path: str, work: Path) -> Verdict:
    """(i) kept tests pass on buggy, (ii) every BRT test fails on buggy, (iii) with the fix everything passes."""
    verdict = Verdict()
    buggy = await runner.tests(work)
    bad = _ids(buggy, ("failed", "error"))
    if not buggy.tests or bad or buggy.collection_errors:
        problem = (
            bad[:5] or sorted(buggy.collection_errors)[:5] or [f"nothing collected: {buggy.result.output[-300:]!r}"]
        )
        verdict.reasons.append(f"kept tests do not pass on the buggy commit: {', '.join(problem)}")
    verdict.regression = buggy.summary()
    before = await runner.tests(work, files={brt_path: brt}, selection=(brt_path,))
    passing = _ids(before, ("passed",))
    failing = _ids(before, ("failed", "error"))
    verdict.brt_failed = len(failing)
    for test_id in failing:
        kind = _symptom(before, test_id)
        verdict.brt_symptoms[kind] = verdict.brt_symptoms.get(kind, 0) + 1
    if not before.tests:
        verdict.reasons.append(f"the BRT collects no test on the buggy commit: {before.result.output[-300:]}")
    elif passing:
        verdict.reasons.append(f"the BRT does not fail on the buggy commit: {', '.join(passing)} passed")
    try:
        fixed = await runner.tests(work, patch=fix, files={brt_path: brt})
    except GitError as exc:
        verdict.reasons.append(f"fix.diff does not apply to repo/: {exc}")
        return verdict
    verdict.fixed = fixed.summary()
    bad = _ids(fixed, ("failed", "error"))
    if bad or not fixed.tests:
        # An empty run (a timeout, a sandbox that failed to start) says why only in its output.
        shown = ", ".join(bad[:5]) or f"nothing collected: {fixed.result.output[-300:]!r}"
        verdict.reasons.append(f"tests fail with the fix applied: {shown}")
    elif not any(t.startswith(brt_path) for t in fixed.passed_ids):
        # A project whose pytest config names its test files (python_files = "tests.py") skips test_brt.py.
        reason = f"the BRT did not run with the fix applied (does the project's pytest config collect {brt_path}?)"
        verdict.reasons.append(reason)
    return verdict


# -- writing a case ------------------------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A TOML literal for a string, number, bool, list or flat table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)


def case_toml(recipe: Recipe, verdict: Verdict, trimmed: list[str]) -> str:
    """case.toml in the shared realbugs format, counts taken from the verification runs."""
    reg = verdict.regression
    notes = [f"{reg.get('skipped', 0)} skipped"] if reg.get("skipped") else []
    meta: dict[str, Any] = {
        "id": f"realbugs/{recipe.name}",
        "suite": "realbugs",
        "language": "python",
        "split": "development",
        "test_command": "python -m pytest -q",
        "deps": list(recipe.deps),
        "brt_path": recipe.brt_target,
        "failing_cases": verdict.brt_failed,
        "regression_cases": reg.get("passed", 0),
        "regression_origin": "upstream",
        **({"regression_note": "plus " + ", ".join(notes) + ", not counted"} if notes else {}),
        "failing_symptoms": verdict.brt_symptoms,
        **recipe.case,
    }
    meta.setdefault("symptom", max(verdict.brt_symptoms, key=lambda k: verdict.brt_symptoms[k], default="exception"))
    source = {
        "dataset": "mined",
        "repo": recipe.url,
        "commit": recipe.buggy,
        "fixed_commit": recipe.fixed,
        "path": ", ".join(recipe.source_paths),
        "upstream_failing_tests": ", ".join(recipe.brt_tests),
        "license": recipe.license,
        "recipe": f"bench/data/recipes/{recipe.name}.toml",
        "trimmed": trimmed,
        "dropped_tests": list(recipe.drop_tests),
        "repo_changes": recipe.repo_changes or f"git archive of the buggy commit minus {', '.join(trimmed)}",
    }
    body = "".join(f"{k} = {toml_value(v)}\n" for k, v in meta.items())
    return body + "\n[source]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in source.items())


@dataclass
class Built:
    """One recipe's outcome: the case folder (when it verified) and the verdict."""

    recipe: Recipe
    verdict: Verdict
    folder: Path | None = None


def stage_repo(mirror: Path, recipe: Recipe, dest: Path) -> list[str]:
    """repo/: the buggy tree minus trims and dropped tests; the trims that removed something."""
    for path in recipe.source_paths:
        if _trimmed(path, recipe.trims):
            raise RecipeError(f"{recipe.name}: source path {path} is trimmed")
    _, trimmed = export_tree(mirror, recipe.buggy, dest, recipe.trims)
    drop_kept_tests(dest, recipe.drop_tests)
    return trimmed


async def build_case(recipe: Recipe, mirror: Path, out: Path, settings: Settings, sandbox: str) -> Built:
    """Stage, verify and (when every check holds) write one case folder `out/<recipe name>`."""
    fix = fix_diff(mirror, recipe)
    leaks = leaked_lines(recipe.issue, fix)
    with tempfile.TemporaryDirectory(prefix=f"mine-{recipe.name}-") as tmp:
        stage = Path(tmp) / "repo"
        trimmed = stage_repo(mirror, recipe, stage)
        brt = oracle_brt(mirror, recipe)
        runner = CaseRunner(stage, recipe.deps, recipe.python, settings, sandbox)
        try:
            verdict = await verify(runner, fix, brt, recipe.brt_target, Path(tmp) / "work")
        except EnvironmentError_ as exc:
            verdict = Verdict(reasons=[f"environment: {exc}"])
        if leaks:
            verdict.reasons.append(f"issue.md repeats added lines of fix.diff: {leaks}")
        if not verdict.ok:
            return Built(recipe, verdict)
        folder = out / recipe.name
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "oracle").mkdir(parents=True)
        shutil.copytree(stage, folder / "repo")
        (folder / "oracle" / "fix.diff").write_text(fix)
        (folder / "oracle" / "test_brt.py").write_text(brt)
        (folder / "issue.md").write_text(recipe.issue)
        (folder / "case.toml").write_text(case_toml(recipe, verdict, trimmed))
        return Built(recipe, verdict, folder)


# -- candidates: fix commits worth a look ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A commit that changes non-test Python source and adds or modifies a test."""

    commit: str
    parent: str
    date: str
    subject: str
    source: dict[str, tuple[int, int]]
    tests: dict[str, tuple[int, int]]

    @property
    def source_lines(self) -> int:
        """Lines added plus removed in non-test source."""
        return sum(a + r for a, r in self.source.values())


def is_test_path(path: str) -> bool:
    """Whether a repo path is a test file or lies in a test folder."""
    return bool(_TEST_PATH.search(path))


def _is_source(path: str) -> bool:
    """Non-test Python source of the project (not docs, examples, packaging or CI)."""
    skip = ("docs/", "doc/", "examples/", "benchmarks/", ".github/", "scripts/")
    return path.endswith(".py") and not is_test_path(path) and not path.startswith(skip) and path != "setup.py"


def parse_log(text: str) -> list[Candidate]:
    """Candidates from `git log --numstat` output in the format `candidates` asks for."""
    found = []
    for block in text.split("\x1e")[1:]:
        head, _, stats = block.partition("\n")
        commit, parents, date, subject = [*head.split("\x1f"), "", "", ""][:4]
        if len(parents.split()) != 1:
            continue  # a merge or the root commit: no single buggy parent
        source: dict[str, tuple[int, int]] = {}
        tests: dict[str, tuple[int, int]] = {}
        for row in stats.strip().splitlines():
            parts = row.split("\t")
            if len(parts) != 3 or not parts[0].isdigit():
                continue  # binary file
            added, removed, path = int(parts[0]), int(parts[1]), parts[2]
            if is_test_path(path) and path.endswith(".py") and added:
                tests[path] = (added, removed)
            elif _is_source(path):
                source[path] = (added, removed)
        if source and tests:
            found.append(Candidate(commit, parents, date, subject, source, tests))
    return found


def candidates(mirror: Path, *, max_lines: int = 40, limit: int = 50, rev: str = "HEAD") -> list[Candidate]:
    """Fix commits reachable from `rev` with a small source change and a test change, newest first."""
    log = git_read(mirror, "log", rev, "--no-renames", "--numstat", "--format=\x1e%H\x1f%P\x1f%cs\x1f%s")
    small = [c for c in parse_log(log) if c.source_lines <= max_lines]
    return small[:limit]


def test_sources(source: str) -> dict[str, str]:
    """`name` / `Class::name` of each test in a module -> its source text (to see which tests a commit touched)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if _is_test_function(node):
            found[getattr(node, "name", "")] = ast.get_source_segment(source, node) or ""
        elif _is_test_class(node):
            assert isinstance(node, ast.ClassDef)
            for member in node.body:
                if _is_test_function(member):
                    text = ast.get_source_segment(source, member) or ""
                    found[f"{node.name}::{getattr(member, 'name', '')}"] = text
    return found


def draft(mirror: Path, commit: str, mirror_name: str) -> str:
    """A recipe draft for a candidate fix commit: its source paths, and as BRT every test it adds or changes.

    The report and the case fields are left for a person to write; `build` then says which BRT tests do not
    fail on the buggy parent (those leave the recipe).
    """
    fixed = git_read(mirror, "rev-parse", f"{commit}^{{commit}}").strip()
    buggy = git_read(mirror, "rev-parse", f"{fixed}^").strip()
    changed = git_read(mirror, "diff", "--name-only", "--no-renames", buggy, fixed).split()
    # A version bump or an author list is no part of the fix.
    sources = [p for p in changed if _is_source(p) and PurePosixPath(p).name not in VERSION_FILES]
    brt: list[str] = []
    for path in (p for p in changed if is_test_path(p) and p.endswith(".py")):
        after = test_sources(git_read(mirror, "show", f"{fixed}:{path}"))
        try:
            before = test_sources(git_read(mirror, "show", f"{buggy}:{path}"))
        except RecipeError:
            before = {}  # a test file the fix adds
        brt.extend(f"{path}::{name}" for name, text in after.items() if before.get(name) != text)
    fields = {"mirror": mirror_name, "buggy": buggy, "fixed": fixed, "source_paths": sources, "brt_tests": brt}
    body = "".join(f"{k} = {toml_value(v)}\n" for k, v in fields.items())
    return f'project = ""\nrepo = ""\n{body}trims = []\nlicense = ""\nrepo_changes = ""\nissue = """\n"""\n'


def table(recipes: list[Path], built: Path) -> str:
    """The MINED table (markdown): one row per recipe, counts from its built case.toml under `built` when present."""
    head = (
        "| case | project | commit (buggy -> fixed) | bug (report title) | fix size | symptom | report style "
        "| BRT cases | regression cases | licence |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for path in recipes:
        recipe = load_recipe(path)
        toml = built / recipe.name / "case.toml"
        meta = tomllib.loads(toml.read_text()) if toml.is_file() else {}
        title = recipe.issue.strip().splitlines()[0].lstrip("# ").replace("|", "\\|")
        note = meta.get("regression_note", "")
        skipped = re.search(r"\d+ skipped", note)
        regression = f"{meta.get('regression_cases', '?')}" + (f" (+{skipped.group(0)})" if skipped else "")
        symptom = str(meta.get("symptom", recipe.case.get("symptom", "")))
        fix_size = str(recipe.case.get("fix_size", "")).replace("|", "\\|")
        cells = [
            recipe.name, recipe.project, f"{recipe.buggy[:7]} -> {recipe.fixed[:7]}", title, fix_size, symptom,
            str(recipe.case.get("issue_style", "")), str(meta.get("failing_cases", "?")), regression, recipe.license,
        ]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |\n")
    return head + "".join(rows)


# -- command line ---------------------------------------------------------------------------------------------------


def _recipes(paths: list[Path]) -> list[Path]:
    return paths or sorted((ROOT / "bench" / "data" / "recipes").glob("*.toml"))


async def _build_all(args: argparse.Namespace, settings: Settings) -> int:
    failures = 0
    for path in _recipes(args.recipes):
        try:
            recipe = load_recipe(path)
            mirror = find_mirror(args.mirrors, recipe.mirror)
            if mirror is None:
                print(
                    f"SKIP {path.stem}: no mirror {recipe.mirror} under {args.mirrors}"
                    f" (fetch github:{recipe.mirror.replace('+', '/')})"
                )
                failures += int(not args.allow_missing)
                continue
            built = await build_case(recipe, mirror, args.out, settings, args.sandbox)
        except (RecipeError, GitError, SyntaxError) as exc:
            print(f"FAIL {path.stem}: {exc}")
            failures += 1
            continue
        v = built.verdict
        if v.ok:
            print(
                f"OK   {path.stem}: BRT {v.brt_failed} fail on buggy; regression {v.regression}; fixed {v.fixed}",
                flush=True,
            )
        else:
            print(f"FAIL {path.stem}: " + "; ".join(v.reasons), flush=True)
            failures += 1
    return 1 if failures else 0


async def _repro(args: argparse.Namespace, settings: Settings) -> int:
    recipe = load_recipe(args.recipe)
    mirror = find_mirror(args.mirrors, recipe.mirror)
    if mirror is None:
        print(f"no mirror {recipe.mirror} under {args.mirrors}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mine-repro-") as tmp:
        stage = Path(tmp) / "repo"
        stage_repo(mirror, recipe, stage)
        runner = CaseRunner(stage, recipe.deps, recipe.python, settings, args.sandbox)
        patch = fix_diff(mirror, recipe) if args.fixed else ""
        print(await runner.script(Path(tmp) / "work", args.script.read_text(), patch=patch), end="")
    return 0


def _check_issue(case: Path) -> int:
    leaks = leaked_lines((case / "issue.md").read_text(), (case / "oracle" / "fix.diff").read_text())
    for line in leaks:
        print(f"issue.md repeats an added line of fix.diff: {line}")
    return 1 if leaks else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build and verify cases from recipes (all under bench/data/recipes)")
    build.add_argument("recipes", nargs="*", type=Path)
    build.add_argument("--mirrors", type=Path, required=True, help="folder holding <owner>+<name>/repo mirrors")
    build.add_argument("--out", type=Path, default=ROOT / "bench" / "data" / "realbugs")
    build.add_argument("--allow-missing", action="store_true", help="a recipe without a mirror is not a failure")
    cand = sub.add_parser("candidates", help="list small fix commits with a test change in a mirror")
    cand.add_argument("mirror", type=Path)
    cand.add_argument("--max-lines", type=int, default=40)
    cand.add_argument("--limit", type=int, default=50)
    cand.add_argument("--rev", default="HEAD")
    repro = sub.add_parser("repro", help="run a script on a recipe's buggy (or --fixed) tree in the sandbox")
    repro.add_argument("recipe", type=Path)
    repro.add_argument("script", type=Path)
    repro.add_argument("--mirrors", type=Path, required=True)
    repro.add_argument("--fixed", action="store_true")
    dr = sub.add_parser("draft", help="print a recipe draft for a fix commit (BRT: the tests it adds or changes)")
    dr.add_argument("mirror", type=Path)
    dr.add_argument("commit")
    tab = sub.add_parser("table", help="print the markdown table of the recipes (counts from built cases)")
    tab.add_argument("recipes", nargs="*", type=Path)
    tab.add_argument("--built", type=Path, default=ROOT / "bench" / "data" / "realbugs")
    check = sub.add_parser("check-issue", help="fail when a case's issue.md repeats an added line of its fix")
    check.add_argument("case", type=Path)
    for p in (build, repro):
        p.add_argument("--sandbox", default="bwrap", help="sandbox backend the tests run in (bwrap or docker)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Dispatch a subcommand; the exit code says whether everything asked for succeeded."""
    args = _parser().parse_args(argv)
    if args.command == "candidates":
        for c in candidates(args.mirror, max_lines=args.max_lines, limit=args.limit, rev=args.rev):
            src = " ".join(f"{p}(+{a}-{r})" for p, (a, r) in c.source.items())
            tests = " ".join(f"{p}(+{a}-{r})" for p, (a, r) in c.tests.items())
            print(f"{c.commit[:10]} {c.date} {c.subject[:70]}\n    src: {src}\n    tests: {tests}")
        return 0
    if args.command == "draft":
        print(draft(args.mirror, args.commit, args.mirror.resolve().parent.name), end="")
        return 0
    if args.command == "table":
        print(table(_recipes(args.recipes), args.built), end="")
        return 0
    if args.command == "check-issue":
        return _check_issue(args.case)
    settings = Settings()
    if args.command == "build":
        return asyncio.run(_build_all(args, settings))
    return asyncio.run(_repro(args, settings))


if __name__ == "__main__":
    sys.exit(main())

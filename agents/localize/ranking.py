"""Fault localization: traceback frames, Ochiai over per-test coverage, and the ranked statement list."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

#: Inside every sandbox backend the repository is mounted here (see sandboxes.base.WORKSPACE_MOUNT).
_WORKSPACE_PREFIX = "/workspace/"

#: Weight of the deepest in-repo frame of a traceback; the k-th frame outward gets FRAME_BOOST / (k + 1).
FRAME_BOOST = 0.5
#: Every in-repo frame is ranked together with SBFL: the k-th frame (deepest first) is placed no lower than
#: position FRAME_STRIDE * (k + 1) - 1 of the ranking, so callers interleave with the best-covered lines
#: instead of sinking below every statement of the crash site.
FRAME_STRIDE = 2
#: Added to every statement of a function the report names (in prose, inline code or a snippet); a named
#: function's statements are candidates even where no failing test covered them.
NAMED_BOOST = 0.1
#: The reason a covered statement of a named function carries (its score unchanged).
NAMED_NOTE = "in a function the report names"

_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$')
# pytest --tb=short: "pkg/m.py:6: in outer"; --tb=long/line last entry: "pkg/m.py:2: KeyError[: msg]";
# --tb=long other entries: "pkg/m.py:6: " (nothing after the colon).
_PYTEST_FRAME = re.compile(
    r"^(?P<file>[^\s:][^:]*?\.py):(?P<line>\d+):"
    r"(?: in (?P<func>[\w<>.]+)|\s(?P<exc>[A-Za-z_][\w.]*)(?::.*)?|\s*)$"
)
_PYTEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>\w+)\s*\(")
_SECTION = re.compile(r"^=+ (?P<title>.*?) =+$")
_TEST_HEADER = re.compile(r"^_{3,} .* _{3,}$")
_NEW_TRACE = (
    "Traceback (most recent call last):",
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_PHASES = frozenset({"setup", "run", "teardown", "call"})


@dataclass(frozen=True)
class Frame:
    """One traceback entry; depth 0 is the innermost frame of the traceback it came from."""

    file: str
    line: int
    function: str
    depth: int


@dataclass(frozen=True)
class Location:
    """A ranked suspicious statement: repo-relative file, 1-based line, combined score, why it ranked."""

    file: str
    line: int
    score: float
    reasons: tuple[str, ...]


def normalize_path(path: str, root: str | None = None) -> str:
    """Make a path repo-relative: strip `root` (absolute checkout), the sandbox mount and `./`."""
    path = path.replace("\\", "/")
    if root:
        prefix = root.replace("\\", "/").rstrip("/") + "/"
        if path.startswith(prefix):
            path = path[len(prefix) :]
    if path.startswith(_WORKSPACE_PREFIX):
        path = path[len(_WORKSPACE_PREFIX) :]
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_traceback_frames(text: str, root: str | None = None) -> list[Frame]:
    """Frames of every traceback in `text`, outermost first, from interpreter or pytest output.

    Understands the interpreter's `File "...", line N, in f` entries (also pytest --tb=native) and
    pytest's `path.py:N: in f` (--tb=short), `path.py:N: ` / `path.py:N: ExcType` (--tb=long/auto/line).
    A new traceback starts at "Traceback (most recent call last):", a chained-exception banner or a
    pytest per-test header; depths are numbered within each traceback. Pytest's warnings summary is
    skipped because its `path:N: SomeWarning` lines are not frames.
    """
    groups: list[list[tuple[str, int, str]]] = [[]]
    in_warnings = False
    last_def = ""
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        section = _SECTION.match(line)
        if section:
            in_warnings = "warnings summary" in section.group("title")
            groups.append([])
            continue
        if in_warnings:
            continue
        if line.startswith(_NEW_TRACE) or _TEST_HEADER.match(line):
            groups.append([])
            last_def = ""
            continue
        defn = _PYTEST_DEF.match(line)
        if defn:
            # pytest --tb=long shows the function source above its location line, not the name.
            last_def = defn.group("name")
            continue
        match = _PY_FRAME.match(line)
        if match:
            groups[-1].append((normalize_path(match["file"], root), int(match["line"]), match["func"] or ""))
            continue
        match = _PYTEST_FRAME.match(line)
        if match:
            func = match["func"] or last_def
            groups[-1].append((normalize_path(match["file"], root), int(match["line"]), func))
            last_def = ""
    frames: list[Frame] = []
    for group in groups:
        for index, (file, lineno, func) in enumerate(group):
            frames.append(Frame(file, lineno, func, len(group) - 1 - index))
    return frames


def ochiai(
    coverage: Mapping[str, Mapping[int, set[str]]], failing: set[str], passing: set[str]
) -> dict[tuple[str, int], float]:
    """Ochiai suspiciousness ef / sqrt(total_failed * (ef + ep)) for every covered line.

    Tests in neither set (unknown outcome, import-time context) are ignored. Lines that no failing
    test executed score 0.0; with no failing test at all every line scores 0.0.
    """
    total_failed = len(failing)
    scores: dict[tuple[str, int], float] = {}
    for file, lines in coverage.items():
        for lineno, tests in lines.items():
            ef = len(tests & failing)
            ep = len(tests & passing)
            scores[(file, lineno)] = ef / math.sqrt(total_failed * (ef + ep)) if ef else 0.0
    return scores


def coverage_from_json(data: Mapping[str, object], root: str) -> dict[str, dict[int, set[str]]]:
    """Per-line test contexts from `coverage json --show-contexts` (coverage.py 7, format 3).

    Files are made repo-relative (files outside `root` given as absolute paths are dropped). The
    empty context (module import time) is dropped. Each context is reduced to its test part (see
    `context_test_name`), so "test_m.test_p", "tests/test_m.py::test_p|run" and "static|test_m.test_p"
    all survive in a form `split_outcomes` can match to pytest node ids.
    """
    result: dict[str, dict[int, set[str]]] = {}
    files = data.get("files")
    if not isinstance(files, Mapping):
        return result
    if data.get("format") == "compact-contexts":
        return _compact_coverage(data, files, root)
    for name, info in files.items():
        rel = normalize_path(str(name), root)
        if rel.startswith("/") or not isinstance(info, Mapping):
            continue
        contexts = info.get("contexts")
        if not isinstance(contexts, Mapping):
            continue
        lines = result.setdefault(rel, {})
        for lineno, ctxs in contexts.items():
            tests = {context_test_name(str(c)) for c in ctxs or ()} - {""}
            if tests:
                lines.setdefault(int(lineno), set()).update(tests)
    return result


def _compact_coverage(
    data: Mapping[str, object], files: Mapping[str, object], root: str
) -> dict[str, dict[int, set[str]]]:
    """The compact export (agents/localize/impact.py): context names and sets of them stored once, by index."""
    names, sets = data.get("contexts"), data.get("sets")
    if not isinstance(names, list) or not isinstance(sets, list):
        return {}
    tests = [context_test_name(str(n)) for n in names]
    resolved: list[set[str]] = []
    for ids in sets:
        members = ids if isinstance(ids, list) else []
        resolved.append({tests[i] for i in members if isinstance(i, int) and 0 <= i < len(tests)} - {""})
    result: dict[str, dict[int, set[str]]] = {}
    for name, lines in files.items():
        rel = normalize_path(str(name), root)
        if rel.startswith("/") or not isinstance(lines, Mapping):
            continue
        for lineno, index in lines.items():
            if isinstance(index, int) and 0 <= index < len(resolved) and resolved[index]:
                result.setdefault(rel, {}).setdefault(int(lineno), set()).update(resolved[index])
    return result


def context_test_name(context: str) -> str:
    """The test part of a coverage context: drop a static-context prefix and a pytest-cov phase suffix.

    coverage's `dynamic_context = test_function` yields "<module __name__>.<qualname>", e.g.
    "test_m.test_p" (rootdir-relative import of tests/test_m.py without __init__.py),
    "tests.test_m.TestK.test_meth" (package or --import-mode=importlib). pytest-cov's
    `--cov-context=test` yields "<node id>|run". A static context `[run] context = X` prefixes "X|".
    """
    parts = [p for p in context.split("|") if p]
    while parts and parts[-1] in _PHASES:
        parts.pop()
    return parts[-1] if parts else ""


def _nodeid_key(nodeid: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(module path parts, qualname parts) of a pytest node id, parameters stripped."""
    path, _, rest = nodeid.partition("::")
    path = path[:-3] if path.endswith(".py") else path
    module = tuple(p for p in path.replace("\\", "/").split("/") if p and p != ".")
    qual = tuple(re.sub(r"\[.*\]$", "", p) for p in rest.split("::") if p) if rest else ()
    return module, qual


def _context_matches(context: str, nodeid: str) -> bool:
    if "::" in context:
        # pytest-cov contexts are node ids; a parametrized one must match exactly.
        return context == nodeid or ("[" not in context and _nodeid_key(context) == _nodeid_key(nodeid))
    module, qual = _nodeid_key(nodeid)
    tokens = tuple(context.split("."))
    if not qual or len(tokens) <= len(qual) or tokens[-len(qual) :] != qual:
        return False
    head = tokens[: -len(qual)]
    # The module's __name__ is a dotted suffix of the file path: which prefix depends on rootdir,
    # __init__.py files and the import mode, so accept any suffix.
    return len(head) <= len(module) and module[len(module) - len(head) :] == head


def split_outcomes(contexts: Iterable[str], failed: Iterable[str], passed: Iterable[str]) -> tuple[set[str], set[str]]:
    """Map coverage contexts to (failing, passing) sets given pytest node ids of failed/passed tests.

    test_function contexts name the test function, not the node id, so parametrized cases share one
    context: a context is failing if ANY node id that maps to it failed, passing only if every
    mapped node id passed. Contexts that match no node id are in neither set.
    """
    failed_ids = list(failed)
    passed_ids = list(passed)
    failing: set[str] = set()
    passing: set[str] = set()
    for context in set(contexts):
        if any(_context_matches(context, n) for n in failed_ids):
            failing.add(context)
        elif any(_context_matches(context, n) for n in passed_ids):
            passing.add(context)
    return failing, passing


def all_contexts(coverage: Mapping[str, Mapping[int, set[str]]]) -> set[str]:
    """Every test context that appears anywhere in `coverage`."""
    return {c for lines in coverage.values() for tests in lines.values() for c in tests}


def _parse(source: str) -> ast.Module | None:
    """The module's syntax tree; None for source that does not parse (a file mid-edit, another dialect)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def statement_starts(source: str) -> dict[int, int]:
    """Map each line of a simple statement or compound header to that statement's first line.

    Tracebacks point at the failing sub-expression's line, coverage at the statement's first line;
    normalizing both to the statement start merges them into one location.
    """
    tree = _parse(source)
    if tree is None:
        return {}
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = min(end, body[0].lineno - 1) if body[0].lineno > node.lineno else node.lineno
        for lineno in range(node.lineno, end + 1):
            starts.setdefault(lineno, node.lineno)
    return starts


def definition_lines(source: str) -> set[int]:
    """First lines of def/class statements and their decorators."""
    tree = _parse(source)
    if tree is None:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines.add(node.lineno)
            lines.update(d.lineno for d in node.decorator_list)
    return lines


def import_time_lines(source: str) -> frozenset[int]:
    """Lines a module or class body runs when imported: def, class, import and docstring lines."""
    tree = _parse(source) if source else None
    if tree is None:
        return frozenset()
    lines: set[int] = set()
    bodies = [tree.body, *(n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
    for body in bodies:
        for stmt in body:
            definition = isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import)
            docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            if definition or docstring or isinstance(stmt, ast.ImportFrom):
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
                lines.update(range(first, stmt.lineno + 1))
    return frozenset(lines)


def rank_statements(
    sbfl: Mapping[tuple[str, int], float],
    frames: Iterable[Frame],
    repo_files: set[str],
    test_files: set[str],
    *,
    top: int,
    sources: Mapping[str, str] | None = None,
    mentioned: Iterable[str] = (),
    fold: bool = True,
    noted: Mapping[str, str] | None = None,
) -> list[Location]:
    """Rank suspicious statements: Ochiai, every in-repo traceback frame, and the functions the report names.

    Only lines in `repo_files` (all files when empty) that are not in `test_files` count; a frame's path from
    the reporter's machine is mapped to the repo file it ends with (see `repo_file_for`). Within each
    traceback, the deepest frame in such a file gets FRAME_BOOST and the k-th one outward
    FRAME_BOOST / (k + 1); a line keeps its best boost. Then every frame is ranked together with SBFL: the
    k-th frame (deepest first) is moved up to position FRAME_STRIDE * (k + 1) - 1 when it ranked lower, so a
    caller that passed the bad value is tried among the first candidates. With `sources` (file -> text), the
    statements of functions the report names (`mentioned`: function, `Class.method`, module or file names)
    get NAMED_BOOST, continuation lines fold onto the statement's first line (unless `fold` is False) and
    def/class header lines are dropped. Ties: higher score, then deeper frame, then files the report names,
    then file and line. Works with only SBFL scores or only frames. `noted` (file -> text) are files whose
    named-function statements keep their score but carry the reason NAMED_NOTE, so a search can try them
    after its top locations without reordering those.
    """

    # With fold=False each line of a multi-line statement stays its own location: the fix search then mutates
    # one line's sub-expressions at a time instead of sharing one budget across the whole statement.
    starts = {f: statement_starts(s) for f, s in (sources or {}).items()} if fold else {}
    headers = {f: definition_lines(s) for f, s in (sources or {}).items()}
    tally = _Tally(repo_files, test_files, starts)
    tally.add_sbfl(sbfl)
    best_rank = tally.add_frames(frames)
    named = set(mentioned)
    in_named = tally.add_named(sources or {}, named)
    tally.note_named(noted or {}, named, in_named)
    # A nested `def` line runs at call time and scores, but there is nothing in it to repair.
    scores = {k: v for k, v in tally.scores.items() if k[1] not in headers.get(k[0], ())}
    ordered = _order(scores, best_rank, named, in_named)
    ordered = _interleave_frames(ordered, scores, best_rank, tally.reasons)
    return [Location(f, ln, round(scores[(f, ln)], 6), tuple(tally.reasons[(f, ln)])) for f, ln in ordered[:top]]


@dataclass
class _Tally:
    """Scores, and the reasons behind them, of the statements in the files that count."""

    repo_files: set[str]
    test_files: set[str]
    #: file -> {line: first line of its statement}; lines of files not in it stand for themselves.
    starts: Mapping[str, Mapping[int, int]]
    scores: dict[tuple[str, int], float] = field(default_factory=dict)
    reasons: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    def eligible(self, file: str) -> bool:
        """Whether lines of `file` may be ranked: a repo file (any, when none are known), not a test file."""
        return file not in self.test_files and (not self.repo_files or file in self.repo_files)

    def key(self, file: str, line: int) -> tuple[str, int]:
        """The statement a line belongs to."""
        return file, self.starts.get(file, {}).get(line, line)

    def note(self, key: tuple[str, int], reason: str) -> None:
        """Record why a statement ranks."""
        self.reasons.setdefault(key, []).append(reason)

    def add_sbfl(self, sbfl: Mapping[tuple[str, int], float]) -> None:
        """Ochiai scores; a statement keeps the best of its lines."""
        for (file, line), score in sbfl.items():
            if self.eligible(file) and score > 0:
                k = self.key(file, line)
                if score > self.scores.get(k, 0.0):
                    self.scores[k] = score
                self.note(k, f"ochiai={score:.3f}")

    def add_frames(self, frames: Iterable[Frame]) -> dict[tuple[str, int], int]:
        """Boost traceback frames (the deepest most); returns each frame's best rank, 0 for the deepest."""
        boosts: dict[tuple[str, int], float] = {}
        best_rank: dict[tuple[str, int], int] = {}
        for trace in _split_traces([_in_repo(f, self.repo_files) for f in frames]):
            relevant = [f for f in trace if self.eligible(f.file)]
            relevant.sort(key=lambda f: f.depth)
            for rank, frame in enumerate(relevant):
                k = self.key(frame.file, frame.line)
                boost = FRAME_BOOST / (rank + 1)
                if boost > boosts.get(k, 0.0):
                    boosts[k] = boost
                best_rank[k] = min(best_rank.get(k, rank), rank)
        for k, boost in boosts.items():
            self.scores[k] = self.scores.get(k, 0.0) + boost
            where = "deepest frame" if best_rank[k] == 0 else f"frame #{best_rank[k] + 1} from the deepest"
            self.note(k, f"traceback {where} (+{boost:.3f})")
        return best_rank

    def add_named(self, sources: Mapping[str, str], named: set[str]) -> dict[str, set[int]]:
        """Boost the statements of functions the report names; returns their lines per file."""
        # The functions the user writes about ("`parse_row` drops the last field", a call in the snippet).
        in_named = {f: named_function_lines(s, named) for f, s in sources.items() if self.eligible(f)} if named else {}
        for file, lines in in_named.items():
            for k in {self.key(file, line) for line in lines & _statement_lines(sources, file)}:
                self.scores[k] = self.scores.get(k, 0.0) + NAMED_BOOST
                self.note(k, f"in a function the report names (+{NAMED_BOOST:.3f})")
        return in_named

    def note_named(self, noted: Mapping[str, str], named: set[str], in_named: Mapping[str, set[int]]) -> None:
        """Mark (without a boost) scored statements of named functions in the `noted` files."""
        for file, text in noted.items():
            if not named or not self.eligible(file) or file in in_named:
                continue
            for line in named_function_lines(text, named) & _statement_lines(noted, file):
                if (file, line) in self.scores:
                    self.note((file, line), NAMED_NOTE)


def _order(
    scores: Mapping[tuple[str, int], float],
    best_rank: Mapping[tuple[str, int], int],
    named: set[str],
    in_named: Mapping[str, set[int]],
) -> list[tuple[str, int]]:
    """Statements by score; ties by deeper frame, then named files and functions, then file and line."""

    # A small suite covers every line with the same tests, so Ochiai ties are common; the file the user
    # talks about is the better guess than the alphabetically first one.
    def unnamed(file: str) -> bool:
        base = file.rsplit("/", 1)[-1]
        return not ({file, base, base.removesuffix(".py")} & named)

    def outside_named(file: str, line: int) -> bool:
        return line not in in_named.get(file, ())

    return sorted(
        scores,
        key=lambda k: (-scores[k], best_rank.get(k, 1 << 30), unnamed(k[0]), outside_named(*k), k[0], k[1]),
    )


def _interleave_frames(
    ordered: list[tuple[str, int]],
    scores: dict[tuple[str, int], float],
    best_rank: Mapping[tuple[str, int], int],
    reasons: dict[tuple[str, int], list[str]],
) -> list[tuple[str, int]]:
    """Move the k-th frame (deepest first) up to position FRAME_STRIDE * (k + 1) - 1 when it ranked lower.

    A promoted frame takes the score of the line it now precedes, so a later trajectory's jittered re-sort
    keeps it among the same neighbours.
    """
    result = list(ordered)
    frames = sorted((k for k in best_rank if k in scores), key=lambda k: (best_rank[k], result.index(k)))
    for index, frame in enumerate(frames):
        target = FRAME_STRIDE * (index + 1) - 1
        position = result.index(frame)
        if position <= target:
            continue
        result.pop(position)
        result.insert(target, frame)
        below = result[target + 1]
        if scores[below] > scores[frame]:
            scores[frame] = scores[below]
        reasons[frame].append(f"traceback frame ranked with SBFL (moved up to #{target + 1})")
    return result


def _statement_lines(sources: Mapping[str, str], file: str) -> set[int]:
    """Lines that start a statement (where a fix template can apply) in `file`."""
    return set(statement_starts(sources[file]).values()) if file in sources else set()


def repo_file_for(path: str, repo_files: set[str]) -> str | None:
    """The repo file a traceback path names, also when the path is from the reporter's machine.

    `/home/me/src/proj/pkg/mod.py` or `.../site-packages/pkg/mod.py` is `pkg/mod.py` when the repo has that
    file: the longest repo path the frame's path ends with (whole components). A frame in the interpreter's
    own library (`/usr/lib/python3.11/json/decoder.py`) belongs to Python, not to the repo.
    """
    if path in repo_files:
        return path
    if "/lib/python" in path and not ("site-packages" in path or "dist-packages" in path):
        return None
    parts = [p for p in path.split("/") if p and p != "."]
    for start in range(1, len(parts)):
        candidate = "/".join(parts[start:])
        if candidate in repo_files:
            return candidate
    return None


def _in_repo(frame: Frame, repo_files: set[str]) -> Frame:
    """`frame` with its file mapped onto the repo's (unchanged when it names no repo file)."""
    if not repo_files:
        return frame
    mapped = repo_file_for(frame.file, repo_files)
    return frame if mapped is None or mapped == frame.file else replace(frame, file=mapped)


def named_function_lines(source: str, names: set[str]) -> set[int]:
    """Lines inside functions (or methods) whose name, or `Class.name`, is among `names`."""
    tree = _parse(source)
    if tree is None:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and f"{node.name}.{child.name}" in names:
                    lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _split_traces(frames: list[Frame]) -> list[list[Frame]]:
    """Cut a concatenation of tracebacks where depth stops decreasing (a new traceback begins)."""
    traces: list[list[Frame]] = []
    for frame in frames:
        if traces and traces[-1] and frame.depth < traces[-1][-1].depth:
            traces[-1].append(frame)
        else:
            traces.append([frame])
    return traces

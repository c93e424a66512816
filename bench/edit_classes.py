"""Mine the edit classes of small real fixes and say which the mutation families cover (issue 27 part 5).

    python bench/edit_classes.py --mirrors /work/.mirror [--realbugs DIR] [--recipes DIR] [--max-lines 6]

Fix commits are read from bare git mirrors (`<owner>+<name>/repo` or a bare repo directly): a non-merge
commit whose message mentions fix/bug, or that changes non-test `.py` source together with a test. Only fixes
of at most `--max-lines` changed source lines are kept (the size a single search edit can reach). Each changed
file is parsed before and after with `ast`; the two statement lists are aligned (difflib over `ast.dump`), and
each elementary change (a statement inserted, deleted, or rewritten in place) is classified by the smallest
differing node pair. The development cases' oracle fixes (realbugs `oracle/fix.diff` and the mined recipes,
whose diffs come from the mirrors) are classified the same way and counted in their own column.

Held-out measurement projects are never read (see `HELD_OUT`). The mirrors are only read with `git` plumbing
(`show`, `log`, `diff`), with no hooks, filters or external diff programs.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import subprocess
import sys
import tomllib
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: Projects kept for measurement only: never mined.
HELD_OUT = ("tqdm", "thefuck", "pysnooper", "black", "datasette")

#: The projects the issue names for mining (mirror folder names). Other mirrors in the folder are read
#: only with --all (some belong to other benchmarks).
DEFAULT_PROJECTS = (
    "r1chardj0n3s+parse",
    "tkem+cachetools",
    "cpburnz+python-pathspec",
    "keleshev+schema",
    "uiri+toml",
    "hukkin+tomli",
    "alecthomas+voluptuous",
    "jquast+wcwidth",
    "jazzband+prettytable",
    "SethMMorton+natsort",
    "pyeve+cerberus",
    "ubernostrum+webcolors",
    "gweis+isodate",
    "un33k+python-slugify",
    "Suor+funcy",
    "jaraco+inflect",
    "jpadilla+pyjwt",
)

#: class -> (mutation operators that emit this shape, how fully). "" = no family emits it. "(new)" marks the
#: families added from this table (agents/repair/mutation/calls.py, stmts.loop_exits).
COVERAGE: dict[str, tuple[str, str]] = {
    "operator swap": ("cmpop, boolop, binop, augop", "yes"),
    "negation added/removed": ("negate", "yes"),
    "constant change": ("constant, off_by_one", "yes"),
    "name change": ("name, use_local, rename2", "yes"),
    "attribute change": ("attribute", "yes"),
    "method swap": ("attribute (_METHOD_SWAPS), builtin", "fixed pairs only"),
    "call unwrap": ("builtin", "single-argument calls"),
    "call wrap": ("builtin (len), helper_wrap (new)", "len; the module's own one-argument helpers"),
    "callee change": ("callee (new), builtin (_BUILTIN_SWAPS)", "module functions, class methods, builtin pairs"),
    "argument added/removed": ("call_args", "drop; add a local to module functions"),
    "keyword argument added/removed": ("keyword (new)", "drop one; forward a parameter the callee takes"),
    "comparison chain change": ("cmpop", "operators only, no link dropped"),
    "condition term added/removed": (
        "term_removal, none_guard, length_guard (new)",
        "removal; None checks; length checks before an index",
    ),
    "term added/removed": ("term_removal, term_addition", "yes"),
    "guard inserted": (
        "early_return, empty_guard, loop_exit (new), raise_guard (new)",
        "None/type guards; loop exits on own tests; None/type raises of the exception the BRT expects",
    ),
    "statement wrapped in guard": ("none_guard", "None checks only"),
    "return inserted": ("", "no"),
    "continue/break inserted": ("loop_exit (new)", "under a guard only"),
    "assignment inserted": ("insert_update, accumulate", "loop updates only"),
    "call statement inserted": ("insert_update (container updates)", "container updates only"),
    "statement deleted": ("delete", "yes"),
    "statement wrapped in try/unwrapped": ("", "no"),
    "value wrapped in a 1-tuple": ("format_tuple (new)", "the value of a one-conversion `%` template"),
    "isinstance type widened/narrowed": ("isinstance_type (new)", "a sibling builtin type added; one type dropped"),
    "slice taken from the other end": ("slice_mirror (new)", "one-sided slices"),
    "assignments made simultaneous/sequential": ("simultaneous (new)", "two assignments merged; no split"),
    "block inserted": ("", "no"),
    "definition inserted": ("", "no"),
    "branch added/removed": ("", "no"),
    "signature change": ("", "no"),
    "other statement inserted": ("", "no"),
    "other": ("", "no"),
}

NON_CODE = "non-code (docstring, import, metadata)"
_FIX_WORDS = re.compile(r"\b(fix(e[sd])?|bug|bugfix|regression|crash|wrong|incorrect)\b", re.IGNORECASE)
_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=", "-c", "core.attributesFile=/dev/null"]
_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


@dataclass
class Tally:
    """Class counts over mined fixes (one count per elementary edit) and over development oracles."""

    mined: Counter[str] = field(default_factory=Counter)
    oracle: Counter[str] = field(default_factory=Counter)
    fixes: int = 0
    oracle_fixes: int = 0


def is_test_path(path: str) -> bool:
    """Test modules and folders (never part of a fix's source)."""
    parts = path.lower().split("/")
    return any(p.startswith("test") or p.endswith("_test.py") or p == "conftest.py" for p in parts)


def is_source_path(path: str) -> bool:
    """Non-test Python source (setup/doc config files are not the fix)."""
    name = path.rsplit("/", 1)[-1]
    return (
        path.endswith(".py")
        and not is_test_path(path)
        and name not in ("setup.py", "conf.py", "noxfile.py")
        and not path.startswith(("docs/", "doc/"))
    )


def git(repo: Path, *args: str) -> str:
    """Run a read-only git command in a bare mirror; "" on failure (e.g. a file absent at that commit)."""
    proc = subprocess.run(
        [*_GIT, f"--git-dir={repo}", *args], capture_output=True, text=True, errors="replace", check=False
    )
    return proc.stdout if proc.returncode == 0 else ""


def fix_commits(repo: Path, max_lines: int) -> list[tuple[str, list[str]]]:
    """(commit, changed source paths) of small fix commits, newest first."""
    log = git(repo, "log", "--no-merges", "--no-renames", "--format=@@%H%x00%s", "--numstat")
    found: list[tuple[str, list[str]]] = []
    for block in log.split("@@")[1:]:
        head, _, stats = block.partition("\n")
        sha, _, subject = head.partition("\x00")
        source: list[str] = []
        lines, tests = 0, False
        for row in stats.strip().splitlines():
            added, deleted, path = [*row.split("\t"), "", "", ""][:3]
            if is_test_path(path) and path.endswith(".py"):
                tests = True
            elif is_source_path(path):
                if not added.isdigit() or not deleted.isdigit():
                    lines = max_lines + 1  # binary: skip
                    continue
                source.append(path)
                lines += int(added) + int(deleted)
        if source and 0 < lines <= max_lines and (tests or _FIX_WORDS.search(subject)):
            found.append((sha, source))
    return found


def parse(text: str) -> ast.Module | None:
    """The module, or None when it does not parse with this Python (old Python 2 sources)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _dump(node: ast.AST) -> str:
    return ast.dump(node)


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement (body, orelse, finalbody, handlers' bodies)."""
    lists: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            lists.append(value)
    for handler in getattr(stmt, "handlers", []) or []:
        lists.append(handler.body)
    for case in getattr(stmt, "cases", []) or []:
        lists.append(case.body)
    return lists


def _header(stmt: ast.stmt) -> str:
    """The statement without its nested bodies, to tell a header change from a body change."""
    fields = {
        name: _dump(value)
        if isinstance(value, ast.AST)
        else repr([_dump(v) if isinstance(v, ast.AST) else v for v in value])
        if isinstance(value, list)
        else repr(value)
        for name, value in ast.iter_fields(stmt)
        if name not in ("body", "orelse", "finalbody", "handlers", "cases")
        and not (isinstance(value, list) and value and isinstance(value[0], ast.stmt))
    }
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        fields.pop("decorator_list", None)  # decorators are compared as expressions below
    return type(stmt).__name__ + repr(sorted(fields.items()))


Change = tuple[str, ast.stmt | None, ast.stmt | None]


def diff_statements(old: list[ast.stmt], new: list[ast.stmt]) -> list[Change]:
    """Elementary changes between two statement lists: ("insert", None, s), ("delete", s, None),
    ("replace", a, b) for a statement rewritten in place (for compound ones: its header)."""
    matcher = difflib.SequenceMatcher(a=[_dump(s) for s in old], b=[_dump(s) for s in new], autojunk=False)
    changes: list[Change] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        olds, news = old[i1:i2], new[j1:j2]
        tried = _try_change(olds, news) or _merge_change(olds, news)
        if tried is not None:
            changes.append(tried)
            continue
        if tag == "replace" and len(olds) == len(news):
            for a, b in zip(olds, news, strict=True):
                changes.extend(_diff_pair(a, b))
            continue
        if tag == "replace":
            changes.extend(_diff_uneven(olds, news))
            continue
        changes.extend(("delete", s, None) for s in olds)
        changes.extend(("insert", None, s) for s in news)
    return changes


def _try_change(olds: list[ast.stmt], news: list[ast.stmt]) -> Change | None:
    """Statements wrapped in a `try` (the new run is one `try` whose body is the old run), or unwrapped."""
    for kind, run, other in (("try_wrap", olds, news), ("try_unwrap", news, olds)):
        wrapper = other[0] if len(other) == 1 and isinstance(other[0], ast.Try) else None
        if wrapper is not None and run and [_dump(s) for s in wrapper.body] == [_dump(s) for s in run]:
            return (kind, olds[0] if olds else None, news[0] if news else None)
    return None


def _merge_change(olds: list[ast.stmt], news: list[ast.stmt]) -> Change | None:
    """Consecutive assignments made one tuple assignment (`a = b; b = a + b` -> `a, b = b, a + b`), or split."""
    for kind, run, other in (("merge", olds, news), ("split", news, olds)):
        if len(other) != 1 or not isinstance(other[0], ast.Assign) or len(run) < 2:
            continue
        merged = other[0]
        if len(merged.targets) != 1 or not isinstance(merged.targets[0], ast.Tuple):
            continue
        if not all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in run):
            continue
        singles = [_dump(s.targets[0]) for s in run if isinstance(s, ast.Assign)]
        if singles == [_dump(t) for t in merged.targets[0].elts]:
            return (kind, olds[0], news[0])
    return None


def _diff_pair(a: ast.stmt, b: ast.stmt) -> list[Change]:
    """One statement against its counterpart: recurse into compound statements with the same header."""
    if type(a) is type(b) and _bodies(a) and len(_bodies(a)) == len(_bodies(b)):
        changes: list[Change] = [] if _header(a) == _header(b) else [("replace", a, b)]
        for body_a, body_b in zip(_bodies(a), _bodies(b), strict=True):
            changes.extend(diff_statements(body_a, body_b))
        return changes
    if isinstance(b, ast.If) and any(_dump(s) == _dump(a) for s in b.body) and len(b.body) == 1:
        return [("wrap", a, b)]
    return [("replace", a, b)]


def _diff_uneven(olds: list[ast.stmt], news: list[ast.stmt]) -> list[Change]:
    """A run of statements replaced by a run of another length: pair by position while the types match,
    the rest are insertions or deletions."""
    changes: list[Change] = []
    k = 0
    while k < min(len(olds), len(news)) and type(olds[k]) is type(news[k]):
        changes.extend(_diff_pair(olds[k], news[k]))
        k += 1
    changes.extend(("delete", s, None) for s in olds[k:])
    changes.extend(("insert", None, s) for s in news[k:])
    return changes


Pair = tuple[ast.AST | None, ast.AST, ast.AST]


def _node_pairs(a: ast.AST, b: ast.AST, parent: ast.AST | None, out: list[Pair]) -> None:
    """The smallest differing node pairs of two trees, each with the parent (in a) they hang from."""
    if type(a) is not type(b):
        out.append((parent, a, b))
        return
    for name, va in ast.iter_fields(a):
        vb = getattr(b, name, None)
        if isinstance(va, ast.AST) and isinstance(vb, ast.AST):
            _node_pairs(va, vb, a, out)
        elif isinstance(va, list) and isinstance(vb, list):
            if len(va) != len(vb):
                out.append((parent, a, b))
                return
            for xa, xb in zip(va, vb, strict=True):
                if isinstance(xa, ast.AST) and isinstance(xb, ast.AST):
                    _node_pairs(xa, xb, a, out)
                elif xa != xb:
                    out.append((parent, a, b))
                    return
        elif (va != vb and not isinstance(va, ast.AST) and not isinstance(vb, ast.AST)) or (
            (va is None) != (vb is None)
        ):
            out.append((parent, a, b))
            return


_OPS = (ast.operator, ast.cmpop, ast.boolop, ast.unaryop)


def classify_pair(parent: ast.AST | None, a: ast.AST, b: ast.AST) -> str:
    """The class of one smallest differing node pair (a in the old tree, b in the new)."""
    if isinstance(a, _OPS) and isinstance(b, _OPS):
        return "comparison chain change" if isinstance(parent, ast.Compare) and len(parent.ops) > 1 else "operator swap"
    if isinstance(a, ast.Compare) and isinstance(b, ast.Compare):
        return "comparison chain change" if max(len(a.ops), len(b.ops)) > 1 else "other"
    if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
        return "constant change"
    if isinstance(a, ast.Slice) and isinstance(b, ast.Slice) and _mirrored(a, b):
        return "slice taken from the other end"
    if isinstance(a, ast.BoolOp) and isinstance(b, ast.BoolOp) and type(a.op) is type(b.op):
        return "condition term added/removed" if _terms_added_or_removed(a.values, b.values) else "other"
    if isinstance(parent, ast.Call) and parent.func is a and isinstance(a, (ast.Name, ast.Attribute)):
        same_base = isinstance(a, ast.Attribute) and isinstance(b, ast.Attribute) and _dump(a.value) == _dump(b.value)
        return "method swap" if same_base else "callee change"
    if isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return "name change"
    if isinstance(a, ast.Attribute) and isinstance(b, ast.Attribute) and a.attr != b.attr:
        return "attribute change"
    type_check = isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "isinstance"
    if type_check and any(isinstance(x, ast.Tuple) and _dump(y) in map(_dump, x.elts) for x, y in ((a, b), (b, a))):
        return "isinstance type widened/narrowed"
    if isinstance(b, ast.Tuple) and len(b.elts) == 1 and _dump(b.elts[0]) == _dump(a):
        return "value wrapped in a 1-tuple"
    if isinstance(a, ast.Call) and isinstance(b, ast.Call):
        if len(a.args) != len(b.args):
            return "argument added/removed"
        return "keyword argument added/removed" if len(a.keywords) != len(b.keywords) else "other"
    return _classify_shapes(a, b)


def _mirrored(a: ast.Slice, b: ast.Slice) -> bool:
    """`s[k:]` against `s[:-k]` (or `s[:k]` against `s[-k:]`): one bound, moved to the other side and negated."""
    if a.step is not None or b.step is not None or (a.lower is None) == (a.upper is None):
        return False
    bound_a = a.lower if a.lower is not None else a.upper
    bound_b = b.upper if a.lower is not None else b.lower
    other_b = b.lower if a.lower is not None else b.upper
    if bound_a is None or bound_b is None or other_b is not None:
        return False
    for x, y in ((bound_a, bound_b), (bound_b, bound_a)):
        if isinstance(y, ast.UnaryOp) and isinstance(y.op, ast.USub) and _dump(y.operand) == _dump(x):
            return True
    return False


def _terms_added_or_removed(old: list[ast.expr], new: list[ast.expr]) -> bool:
    """Is one chain of `and`/`or` terms the other with terms inserted anywhere (`a and c` -> `a and b and c`)?"""
    short, long = sorted(([_dump(v) for v in old], [_dump(v) for v in new]), key=len)
    if len(short) == len(long):
        return False
    rest = iter(long)
    return all(any(term == other for other in rest) for term in short)


def _contains(outer: ast.AST, inner: ast.AST, depth: int = 1) -> bool:
    """Is inner one of outer's direct operands (args of a call, operand of a unary op, sides of a binop)?"""
    key = _dump(inner)
    if isinstance(outer, ast.Call):
        return any(_dump(x) == key for x in outer.args) or (
            isinstance(outer.func, ast.Attribute) and _dump(outer.func.value) == key
        )
    if isinstance(outer, ast.BoolOp):
        return any(_dump(x) == key for x in outer.values)
    if isinstance(outer, ast.BinOp):
        return key in (_dump(outer.left), _dump(outer.right))
    if isinstance(outer, ast.UnaryOp):
        return _dump(outer.operand) == key
    return False


def _classify_shapes(a: ast.AST, b: ast.AST) -> str:
    """Pairs of different node types: a wrapper added or removed around an expression."""
    for outer, inner, wrap in ((a, b, False), (b, a, True)):
        if not _contains(outer, inner):
            continue
        if isinstance(outer, ast.Call):
            return "call wrap" if wrap else "call unwrap"
        if isinstance(outer, ast.UnaryOp) and isinstance(outer.op, ast.Not):
            return "negation added/removed"
        if isinstance(outer, ast.BoolOp):
            return "condition term added/removed"
        if isinstance(outer, ast.BinOp):
            return "term added/removed"
    if isinstance(a, ast.Constant) or isinstance(b, ast.Constant):
        return "constant change"  # a literal replaced by an expression or the reverse
    return "other"


def classify_inserted(stmt: ast.stmt) -> str:
    """The class of an inserted statement."""
    if isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], _EXITS) and not stmt.orelse:
        return "guard inserted"
    if isinstance(stmt, ast.Return):
        return "return inserted"
    if isinstance(stmt, (ast.Continue, ast.Break)):
        return "continue/break inserted"
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return "assignment inserted"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return "call statement inserted"
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.Try, ast.With)):
        return "block inserted"
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "definition inserted"
    return "other statement inserted"


def _non_code(stmt: ast.stmt | None) -> bool:
    """Docstrings, imports and module metadata (`__version__ = ...`): not a change a search edit makes."""
    if stmt is None:
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return True
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return bool(targets) and all(isinstance(t, ast.Name) and t.id.startswith("__") for t in targets)


def classify_change(change: Change) -> list[str]:
    """Classes of one elementary change (a rewritten statement may hold several differing pairs)."""
    kind, a, b = change
    if _non_code(a) and _non_code(b):
        return [NON_CODE]
    if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) and type(a) is type(b):
        return ["signature change"]
    if isinstance(a, ast.If) and isinstance(b, ast.If) and len(_bodies(a)) != len(_bodies(b)):
        return ["branch added/removed"]
    if kind == "insert" and b is not None:
        return [classify_inserted(b)]
    if kind == "delete":
        return ["statement deleted"]
    if kind == "wrap":
        return ["statement wrapped in guard"]
    if kind in ("try_wrap", "try_unwrap"):
        return ["statement wrapped in try/unwrapped"]
    if kind in ("merge", "split"):
        return ["assignments made simultaneous/sequential"]
    assert a is not None and b is not None
    if type(a) is not type(b):
        if isinstance(b, ast.If) and len(b.body) == 1 and isinstance(b.body[0], _EXITS):
            return ["guard inserted"]
        return ["other"]
    pairs: list[Pair] = []
    _node_pairs(a, b, None, pairs)
    if not pairs:
        return []
    return sorted({classify_pair(*p) for p in pairs})


def classify_sources(old: str, new: str) -> list[str]:
    """Classes of the edit that turns module source old into new ([] when either does not parse)."""
    old_tree, new_tree = parse(old), parse(new)
    if old_tree is None or new_tree is None:
        return []
    classes: list[str] = []
    for change in diff_statements(old_tree.body, new_tree.body):
        classes.extend(classify_change(change))
    return classes


def mine_mirror(repo: Path, max_lines: int, tally: Tally) -> None:
    """Add one mirror's small fix commits to the tally."""
    for sha, paths in fix_commits(repo, max_lines):
        classes: list[str] = []
        for path in paths:
            old, new = git(repo, "show", f"{sha}^:{path}"), git(repo, "show", f"{sha}:{path}")
            if old and new:
                classes.extend(classify_sources(old, new))
        if any(c != NON_CODE for c in classes):
            tally.fixes += 1
            tally.mined.update(classes)


def apply_diff(old: str, diff: str) -> str:
    """Apply a one-file unified diff to old (hunks in order; context is trusted, as the diff came from git)."""
    lines = old.split("\n")
    out: list[str] = []
    pos = 0
    for hunk in re.split(r"^(?=@@ )", diff, flags=re.MULTILINE)[1:]:
        header, *body = hunk.split("\n")
        start = int(re.match(r"@@ -(\d+)", header).group(1))  # type: ignore[union-attr]
        at = start - 1 if start > 0 else 0
        out.extend(lines[pos:at])
        pos = at
        for row in body:
            if row.startswith("+"):
                out.append(row[1:])
            elif row.startswith("-"):
                pos += 1
            elif (row.startswith(" ") or row == "") and pos < len(lines) and row[1:] == lines[pos]:
                out.append(lines[pos])
                pos += 1
    out.extend(lines[pos:])
    return "\n".join(out)


def _file_diffs(diff: str) -> dict[str, str]:
    """Split a multi-file git diff into path -> that file's diff."""
    files: dict[str, str] = {}
    for part in re.split(r"^(?=diff --git )", diff, flags=re.MULTILINE):
        match = re.search(r"^\+\+\+ b/(\S+)", part, flags=re.MULTILINE)
        if match:
            files[match.group(1)] = part
    return files


def classify_realbugs(folder: Path, tally: Tally) -> None:
    """Oracle fixes of the shared realbugs cases (buggy source in repo/, fix in oracle/fix.diff)."""
    for case in sorted(p for p in folder.glob("*/oracle/fix.diff")):
        root = case.parent.parent
        classes: list[str] = []
        for path, diff in _file_diffs(case.read_text(errors="replace")).items():
            source = root / "repo" / path
            if path.endswith(".py") and source.is_file():
                old = source.read_text(errors="replace")
                classes.extend(classify_sources(old, apply_diff(old, diff)))
        tally.oracle_fixes += 1
        tally.oracle.update(classes or ["other"])


def classify_recipes(folder: Path, mirrors: Path, tally: Tally) -> None:
    """Oracle fixes of the mined recipes, rebuilt from the mirrors (buggy and fixed commit)."""
    for recipe in sorted(folder.glob("*.toml")):
        data = tomllib.loads(recipe.read_text())
        repo = _git_dir(mirrors / data["mirror"])
        if repo is None:
            continue
        classes: list[str] = []
        for path in data["source_paths"]:
            old, new = git(repo, "show", f"{data['buggy']}:{path}"), git(repo, "show", f"{data['fixed']}:{path}")
            if path.endswith(".py") and old and new:
                classes.extend(classify_sources(old, new))
        tally.oracle_fixes += 1
        tally.oracle.update(classes or ["other"])


def _git_dir(folder: Path) -> Path | None:
    """The bare repository of a mirror folder (`<folder>/repo` or the folder itself)."""
    for candidate in (folder / "repo", folder):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def table(tally: Tally) -> str:
    """Markdown table, most frequent mined class first."""
    # Docstrings, imports and metadata are listed apart: no search edit targets them.
    total = sum(v for k, v in tally.mined.items() if k != NON_CODE) or 1
    oracle_total = sum(v for k, v in tally.oracle.items() if k != NON_CODE) or 1
    rows = [
        f"Mined: {tally.fixes} small fix commits, {sum(tally.mined.values())} elementary edits. "
        f"Development oracles: {tally.oracle_fixes} fixes, {sum(tally.oracle.values())} edits.",
        "",
        "| class | mined | share | oracle | oracle share | covered | by |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sorted(COVERAGE, key=lambda c: (-tally.mined[c], -tally.oracle[c], c)):
        by, covered = COVERAGE[name]
        rows.append(
            f"| {name} | {tally.mined[name]} | {tally.mined[name] / total:.1%} | {tally.oracle[name]} | "
            f"{tally.oracle[name] / oracle_total:.1%} | {covered} | {by or '-'} |"
        )
    rows.append(f"| ({NON_CODE}, not in the shares) | {tally.mined[NON_CODE]} | | {tally.oracle[NON_CODE]} | | | |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Mine the mirrors, classify the development oracles, print the table."""
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of mirrors (<owner>+<name>/repo)")
    parser.add_argument("--realbugs", type=Path, default=Path("/work/shared/bench/realbugs"))
    parser.add_argument("--recipes", type=Path, default=here / "data" / "recipes")
    parser.add_argument("--max-lines", type=int, default=6, help="largest fix kept (changed source lines)")
    parser.add_argument("--all", action="store_true", help="every mirror in the folder, not only the named ones")
    args = parser.parse_args(argv)
    tally = Tally()
    names = sorted(p.name for p in args.mirrors.iterdir()) if args.all else list(DEFAULT_PROJECTS)
    for name in names:
        repo = _git_dir(args.mirrors / name)
        if repo is None or any(h in name.lower() for h in HELD_OUT):
            continue
        mine_mirror(repo, args.max_lines, tally)
    if args.realbugs.is_dir():
        classify_realbugs(args.realbugs, tally)
    if args.recipes.is_dir():
        classify_recipes(args.recipes, args.mirrors, tally)
    print(table(tally))
    return 0


if __name__ == "__main__":
    sys.exit(main())

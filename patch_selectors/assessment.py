"""Patch-correctness assessment, the pure part: which functions a fix touches, and what the traces say.

A patch that passes the BRT and the regression suite can still be wrong: it may fit the one reported input
and break behaviour nobody tested (an overfitting patch). Three checks from the literature on overfitting in
test-based repair, each computed here from plain JSON that the sandbox-side harness
(`patch_selectors.probe_harness`) wrote:

* **Behaviour on the passing tests.** Every call of a touched function made while a test that passes on the
  buggy code runs must return the same value (and leave its arguments the same) after the patch; the test's
  printed output must not change either. Those tests define behaviour the user relied on.
* **Near inputs.** The report's example call is replayed with small type-preserving mutations of its
  arguments; the patched code must not raise or hang where the original returned. Validated candidates
  that disagree with each other on such an input cannot all be right.
* **Smallest semantic change.** The AST edit size of each fix, so that among equally safe candidates the one
  that changes least is preferred.

The verdict is ``confident`` only when nothing was flagged and some evidence beyond the BRT existed; any
flag, or no evidence at all, gives ``unsure``, and the bot then suggests instead of opening a PR.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from patch_selectors.patch import FilePatch, Patch
from sandboxes.seqdiff import edit_opcodes

Verdict = Literal["confident", "unsure", "not_assessed"]
_SHOWN = 3


@dataclass(frozen=True)
class Target:
    """A function a patch touches: repo-relative file and qualified name (as `co_qualname` spells it)."""

    file: str
    qualname: str

    def to_json(self) -> dict[str, str]:
        """The harness's config form."""
        return {"file": self.file, "qualname": self.qualname}


def changed_lines(fp: FilePatch) -> tuple[set[int], set[int]]:
    """(old line numbers removed, new line numbers added) of one file's hunks.

    A pure deletion has no added line; the new line right after it stands for it, so the function that lost
    the line is still found on the new side.
    """
    old: set[int] = set()
    new: set[int] = set()
    for hunk in fp.hunks:
        o, n = hunk.old_start, hunk.new_start
        for line in hunk.lines:
            tag = line[:1]
            if tag == "-":
                old.add(o)
                new.add(max(n, 1))
                o += 1
            elif tag == "+":
                new.add(n)
                n += 1
            elif tag == "\\":
                continue
            else:
                o += 1
                n += 1
    return old, new


def enclosing_functions(source: str, lines: Iterable[int]) -> set[str]:
    """Qualified names of the innermost functions containing any of `lines` (module level gives none)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    spans: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans.append((start, child.end_lineno or child.lineno, qual))
                walk(child, qual + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    found: set[str] = set()
    for line in lines:
        inside = [s for s in spans if s[0] <= line <= s[1]]
        if inside:
            found.add(min(inside, key=lambda s: s[1] - s[0])[2])
    return found


def touched_targets(fix: Patch, old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> list[Target]:
    """Every Python function whose body the fix part changes, on either side of the patch."""
    targets: set[Target] = set()
    for fp in fix.files:
        path = fp.new_path or fp.old_path or ""
        if not path.endswith(".py"):
            continue
        old_lines, new_lines = changed_lines(fp)
        names = enclosing_functions(old_sources.get(fp.old_path or path, ""), old_lines)
        names |= enclosing_functions(new_sources.get(path, ""), new_lines)
        targets.update(Target(path, q) for q in names)
    return sorted(targets, key=lambda t: (t.file, t.qualname))


#: Documented examples per touched file: at most this many are run.
MAX_EXAMPLES = 12


def documented_examples(source: str, names: Iterable[str]) -> list[dict[str, str]]:
    """The author's own `>>>` examples that call one of `names`, with a literal expected result.

    Examples are read from every docstring of the module (module, classes, functions) and from string
    statements anywhere at module level (some projects document a function in a string after it). Only
    one-line examples whose expected output is a Python literal are kept (`>>> f(3)` then `9`), so the harness
    can compare values rather than text; examples that need earlier lines of a session stay unresolved there.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    # A nested function runs through the function that defines it: `outer.<locals>.inner` counts `outer` too.
    wanted = {part for n in names for part in n.split(".") if part != "<locals>"}
    texts: list[str] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert isinstance(body, list)
        for index, stmt in enumerate(body):
            doc = (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            )
            if doc and (index == 0 or isinstance(node, ast.Module)):
                texts.append(stmt.value.value)
    found: list[dict[str, str]] = []
    for text in texts:
        lines = [line.strip() for line in text.split("\n")]
        for i, line in enumerate(lines):
            if not line.startswith(">>> ") or i + 1 >= len(lines):
                continue
            expr, expected = line[4:].strip(), lines[i + 1]
            if not expected or expected.startswith((">>>", "...")):
                continue
            if i + 2 < len(lines) and lines[i + 2] and not lines[i + 2].startswith(">>>"):
                continue  # output over several lines, or prose right after it: not a value to compare
            try:
                called = {
                    n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                    for n in ast.walk(ast.parse(expr, mode="eval"))
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
                }
                ast.literal_eval(expected)
            except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
                continue
            if called & wanted:
                found.append({"source": expr, "expected": expected})
    unique = {(e["source"], e["expected"]): e for e in found}
    return list(unique.values())[:MAX_EXAMPLES]


def semantic_size(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> int:
    """How many AST tokens the fix changes (comments and formatting do not count); -1 when a side does not parse."""
    total = 0
    for path in sorted(set(old_sources) | set(new_sources)):
        try:
            old = _tokens(old_sources.get(path, ""))
            new = _tokens(new_sources.get(path, ""))
        except (SyntaxError, ValueError):
            return -1
        total += sum(max(i2 - i1, j2 - j1) for _tag, i1, i2, j1, j2 in edit_opcodes(old, new))
    return total


def table_entry_lines(source: str) -> set[int]:
    """Lines that hold entries of a literal data table spread over several lines (`{(False, True): MLB, ...}`).

    Such a line runs whenever the table is built, whichever entry a call then looks up, so a test or a near
    input that ran it is no evidence that the changed entry was ever used. A mapping's entries count as data
    when they are built of constants, names and attributes only; a list, set or tuple is a table only when
    every element is a constant (`("yes", "on", "1")`). A display of names (`return (\n low,\n high)`) or
    an element computed from the call's values (`x + 1`) is used every time and stays evidence. A table on one
    line counts when that line only assigns it (`lengths = [31, 28, 31, 30]`); inside a longer expression the
    line does other work, which a check that ran it did use.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    lines: set[int] = set()
    assigned = {
        id(stmt.value)
        for stmt in ast.walk(tree)
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.lineno == stmt.end_lineno
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict | ast.List | ast.Set | ast.Tuple):
            continue
        if node.end_lineno is None or (node.end_lineno == node.lineno and id(node) not in assigned):
            continue
        for key, value in _table_entries(node):
            lines.update(range(key.lineno, (value.end_lineno or value.lineno) + 1))
    return lines


def _table_entries(node: ast.Dict | ast.List | ast.Set | ast.Tuple) -> list[tuple[ast.expr, ast.expr]]:
    """(key, value) of each data entry of a literal display (an element is its own key); none if it computes."""
    if isinstance(node, ast.Dict):
        entries = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
        return [(k, v) for k, v in entries if _data(k) and _data(v)]
    if all(_constant(e) for e in node.elts):
        return [(e, e) for e in node.elts]
    return []


def _constant(node: ast.expr) -> bool:
    """A literal constant, a negative number, or a tuple of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.Tuple) and all(_constant(e) for e in node.elts)


def _data(node: ast.expr) -> bool:
    """An expression of constants, names and attributes (and tuples of them): a table's data, not a computation."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _data(node.value)
    if isinstance(node, ast.Tuple):
        return all(_data(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return False


class Shape(NamedTuple):
    """What the fix's shape alone says about it, before anything runs."""

    deletion: bool  # it only removes code (`deletes_only`)
    raising: bool  # it adds a `raise` (`raises_added`)
    silencing: bool  # it adds an `except` handler (`handlers_added`)
    orphaning: bool  # it leaves a value the function computes unused (`orphans_left`)


def fix_shape(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> Shape:
    """The shape flags of a fix, from the sources of the files it changes."""
    return Shape(
        deletes_only(old_sources, new_sources),
        raises_added(old_sources, new_sources),
        handlers_added(old_sources, new_sources),
        orphans_left(old_sources, new_sources),
    )


def _more_nodes(old_sources: Mapping[str, str], new_sources: Mapping[str, str], kind: type[ast.AST]) -> bool:
    """True when a file of the fix has more nodes of `kind` than before."""

    def count(source: str) -> int:
        try:
            return sum(isinstance(node, kind) for node in ast.walk(ast.parse(source)))
        except (SyntaxError, ValueError):
            return 0

    return any(count(new_sources.get(p, "")) > count(old_sources.get(p, "")) for p in new_sources)


def raises_added(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> bool:
    """True when a file of the fix has more `raise` statements than before.

    A new raise is an error users will see, of a type and with a message of the fix's own making: a test that
    expects the call to fail passes whatever the message says, and no test that passed before can tell
    whether the project wants that error (a report often gives the message it expects, the BRT rarely).
    """
    return _more_nodes(old_sources, new_sources, ast.Raise)


def handlers_added(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> bool:
    """True when a file of the fix has more `except` handlers than before.

    A new handler turns an error into a result of the fix's own choosing (nothing, `None`, the loop's end):
    the reported call stops raising whatever that result is, and no test that passed before reached it.
    """
    return _more_nodes(old_sources, new_sources, ast.ExceptHandler)


def orphans_left(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> bool:
    """True when a local the function computes and used is, after the fix, still computed but never used.

    `return out` -> `return nums` makes the call pass by bypassing the loop that builds `out`: the work the
    function does no longer reaches its result, the shape of a fix that fits the example rather than the code.
    Only updating a value (`out.append(x)`, `d[k] = v`, `n += 1`), or reading it to update itself
    (`if x not in seen: seen.append(x)`), is not using it (`_LiveNames`).
    """
    for path in sorted(set(old_sources) & set(new_sources)):
        try:
            old, new = _function_uses(old_sources[path]), _function_uses(new_sources[path])
        except (SyntaxError, ValueError):
            return False
        for name, (stored, live) in new.items():
            before = old.get(name)
            if before is not None and (stored - live) & before[0] & before[1]:
                return True
    return False


def _function_uses(source: str) -> dict[str, tuple[set[str], set[str]]]:
    """Per function (by qualified name): the locals it assigns, and the names whose value reaches its result."""
    out: dict[str, tuple[set[str], set[str]]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out[name] = _LiveNames(child).result()
                visit(child, name + ".")

    visit(ast.parse(source), "")
    return out


def _reads(node: ast.AST | None) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} if node else set()


class _LiveNames:
    """Which locals of a function reach what it returns, yields, raises or changes outside itself.

    A flow-insensitive pass: every write of a local depends on what its statement and the enclosing
    conditions and loops read; returns, raises, yields, calls and writes to anything not local are the sinks;
    a local is live when a sink depends on it, directly or through other locals.
    """

    def __init__(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stored = {
            n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
        }
        self.deps: dict[str, set[str]] = {}
        self.sinks: set[str] = set()
        self._block(func.body, set())

    def result(self) -> tuple[set[str], set[str]]:
        live, todo = set(), list(self.sinks)
        while todo:
            name = todo.pop()
            if name not in live:
                live.add(name)
                todo += self.deps.get(name, ())
        return self.stored, live

    def _write(self, target: ast.AST, reads: set[str]) -> None:
        if isinstance(target, ast.Name):
            self.deps.setdefault(target.id, set()).update(reads)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for element in ast.iter_child_nodes(target):
                self._write(element, reads)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            base = target.value
            while isinstance(base, ast.Attribute | ast.Subscript):
                base = base.value
            extra = _reads(target.slice) if isinstance(target, ast.Subscript) else set()
            if isinstance(base, ast.Name) and base.id in self.stored:
                self.deps.setdefault(base.id, set()).update(reads | extra)
            else:
                self.sinks.update(reads | extra | _reads(base))  # an object that outlives the call

    def _block(self, body: Sequence[ast.stmt], context: set[str]) -> None:
        for stmt in body:
            self._statement(stmt, context)

    def _statement(self, stmt: ast.stmt, context: set[str]) -> None:
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            reads = _reads(stmt.value) | context
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                self._write(target, reads | (_reads(target) if isinstance(stmt, ast.AugAssign) else set()))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self._update(stmt.value):
            receiver = stmt.value.func.value  # type: ignore[attr-defined]
            self._write(receiver, _reads(stmt.value) | context)
        elif isinstance(stmt, ast.If | ast.While):
            self._block(stmt.body, context | _reads(stmt.test))
            self._block(stmt.orelse, context | _reads(stmt.test))
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._write(stmt.target, _reads(stmt.iter) | context)
            self._block(stmt.body, context | _reads(stmt.iter))
            self._block(stmt.orelse, context)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                self.sinks.update(_reads(item.context_expr))
            self._block(stmt.body, context)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                self._block(block, context)
        else:  # return, raise, a call for its effect, a nested def (closures), assert, del, ...
            self.sinks.update(_reads(stmt) | context)

    def _update(self, call: ast.Call) -> bool:
        """`x.append(...)` on a local `x`: a write of x, not a use."""
        func = call.func
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.stored


def deletes_only(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> bool:
    """True when the fix only removes code (a statement, a conjunct of a condition, an argument).

    Deleting a check or a statement is the classic shape of an overfitting repair (the "anti-delete"
    patterns of search-based repair): the reported input stops failing because the code that handled
    some other case is gone. An operand turned into its identity is a deletion too: `xs[1:]` -> `xs[0:]`
    drops the slice, `i - 1` -> `i - 0` the offset (`_identities_removed`).
    """
    changed = False
    for path in sorted(set(old_sources) | set(new_sources)):
        try:
            # List brackets move when a list loses an element: compare the node sequence without them.
            old = [t for t in (x.strip("[]") for x in _tokens(old_sources.get(path, ""), identities=False)) if t]
            new = [t for t in (x.strip("[]") for x in _tokens(new_sources.get(path, ""), identities=False)) if t]
        except (SyntaxError, ValueError):
            return False
        ops = edit_opcodes(old, new)
        if any(op[0] != "delete" for op in ops):
            return False
        changed = changed or bool(ops)
    return changed


def literal_only(old_sources: Mapping[str, str], new_sources: Mapping[str, str]) -> bool:
    """True when the fix changes nothing but literal values (`count = 1` -> `count = 2`, `-1` -> `0`)."""
    changed = False
    for path in sorted(set(old_sources) | set(new_sources)):
        try:
            old_tree = ast.parse(old_sources.get(path, ""))
            new_tree = ast.parse(new_sources.get(path, ""))
        except (SyntaxError, ValueError):
            return False
        if ast.dump(old_tree) == ast.dump(new_tree):
            continue
        if _shape_without_literals(old_tree) != _shape_without_literals(new_tree):
            return False
        changed = True
    return changed


def _shape_without_literals(tree: ast.AST) -> str:
    """The tree's dump with every number, string and negated number reduced to one placeholder."""
    return ast.dump(_LiteralBlanker().visit(copy.deepcopy(tree)), annotate_fields=False, include_attributes=False)


class _LiteralBlanker(ast.NodeTransformer):
    """Every literal (and negated literal) becomes the same placeholder constant."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return ast.Constant(value=...)
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value=...)


def _tokens(source: str, identities: bool = True) -> list[str]:
    """The AST of `source` as a token list; `identities=False` first drops identity operands."""
    tree = ast.parse(source)
    if not identities:
        tree = _IdentityRemover().visit(tree)
    dump = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return dump.replace("(", " ( ").replace(")", " ) ").replace(",", " ").split()


def _number(node: ast.AST | None, value: int) -> bool:
    return (
        isinstance(node, ast.Constant)
        and not isinstance(node.value, bool)
        and isinstance(node.value, (int, float))
        and node.value == value
    )


class _IdentityRemover(ast.NodeTransformer):
    """`xs[0:]` -> `xs[:]`, `xs[::1]` -> `xs[:]`, `e + 0` / `e - 0` / `e * 1` / `e // 1` -> `e`."""

    def visit_Slice(self, node: ast.Slice) -> ast.AST:
        self.generic_visit(node)
        if _number(node.lower, 0):
            node.lower = None
        if _number(node.step, 1):
            node.step = None
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.Add, ast.Sub)) and _number(node.right, 0):
            return node.left
        if isinstance(node.op, ast.Add) and _number(node.left, 0):
            return node.right
        if isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv)) and _number(node.right, 1):
            return node.left
        if isinstance(node.op, ast.Mult) and _number(node.left, 1):
            return node.right
        return node


@dataclass(frozen=True)
class TraceRun:
    """One harness run, as the JSON it wrote: per-test call events, outcomes, printed output, probes."""

    events: Mapping[str, Sequence[Sequence[str]]] = field(default_factory=dict)
    outcomes: Mapping[str, str] = field(default_factory=dict)
    stdout: Mapping[str, str] = field(default_factory=dict)
    probes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: Documented examples run after the suite, by key: outcome pass | fail | raise | timeout | unresolved.
    examples: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    seeds: int = 0
    error: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceRun:
        """Parse the harness document defensively (it was written inside the sandbox)."""
        events = data.get("events") if isinstance(data.get("events"), dict) else {}
        outcomes = data.get("outcomes") if isinstance(data.get("outcomes"), dict) else {}
        stdout = data.get("stdout") if isinstance(data.get("stdout"), dict) else {}
        probes: dict[str, Mapping[str, str]] = {}
        for row in data.get("probes") or []:
            if isinstance(row, dict) and isinstance(row.get("key"), str):
                probes[row["key"]] = {str(k): str(v) for k, v in row.items()}
        examples: dict[str, Mapping[str, str]] = {}
        for row in data.get("examples") or []:
            if isinstance(row, dict) and isinstance(row.get("key"), str):
                examples[row["key"]] = {str(k): str(v) for k, v in row.items()}
        seeds = data.get("seeds")
        return cls(
            events={str(k): [list(map(str, e)) for e in v] for k, v in (events or {}).items() if isinstance(v, list)},
            outcomes={str(k): str(v) for k, v in (outcomes or {}).items()},
            stdout={str(k): str(v) for k, v in (stdout or {}).items()},
            probes=probes,
            examples=examples,
            seeds=seeds if isinstance(seeds, int) else 0,
        )


def _targets_of(event: Sequence[str], targets: set[str] | None) -> bool:
    return targets is None or (bool(event) and event[0] in targets)


def behaviour_changes(
    before: TraceRun, after: TraceRun, *, exclude_prefix: str, targets: set[str] | None = None
) -> tuple[int, int, list[str]]:
    """(tests compared, calls compared, differences) over tests that passed before the patch.

    A test that passed on the buggy code, and is not the BRT, pins behaviour. The calls the test itself makes
    into the touched functions (depth 0) must give the same results in the same order, and its printed
    output must not change. Nested calls (recursion, helpers) may come and go, since a fix can change how
    a result is computed; a nested call whose function and arguments some passing test calls at the top
    must still return what that test saw and leave its arguments the same. Other intermediate results are
    not pinned: no test asserts them, and the steps of a recursion are where a recursive bug lives.
    """
    tests = 0
    calls = 0
    diffs: list[str] = []
    pinned = {
        (e[0], e[2])
        for test, outcome in before.outcomes.items()
        if outcome == "passed" and not test.startswith(exclude_prefix)
        for e in before.events.get(test, [])
        if len(e) >= 5 and e[1] == "0" and _targets_of(e, targets)
    }
    for test, outcome in sorted(before.outcomes.items()):
        if outcome != "passed" or test.startswith(exclude_prefix) or test not in after.outcomes:
            continue
        tests += 1
        # Field 5 (did a changed line run) differs by design between versions: compare the behaviour only.
        old = [list(e[:5]) for e in before.events.get(test, []) if _targets_of(e, targets) and len(e) >= 5]
        new = [list(e[:5]) for e in after.events.get(test, []) if _targets_of(e, targets) and len(e) >= 5]
        calls += len(old)
        top_old = [e for e in old if e[1] == "0"]
        top_new = [e for e in new if e[1] == "0"]
        seen = {(e[0], e[2]): e for e in old}
        nested = next(
            (
                (seen[(e[0], e[2])], e)
                for e in new
                if (e[0], e[2]) in seen and (e[0], e[2]) in pinned and list(seen[(e[0], e[2])][3:5]) != list(e[3:5])
            ),
            None,
        )
        if top_old != top_new:
            diffs.append(f"{test}: {_first_difference(top_old, top_new)}")
        elif nested is not None:
            diffs.append(f"{test}: {_first_difference([nested[0]], [nested[1]])}")
        elif before.stdout.get(test, "") != after.stdout.get(test, ""):
            diffs.append(f"{test}: its printed output changed")
    return tests, calls, diffs


def _first_difference(old: Sequence[Sequence[str]], new: Sequence[Sequence[str]]) -> str:
    for a, b in zip(old, new, strict=False):
        if list(a) != list(b):
            name = a[0].split("::")[-1] if a else "?"
            if len(a) > 3 and len(b) > 3 and a[2] == b[2] and a[3] != b[3]:
                return f"{name}{a[2]} returned {_clip(b[3])} instead of {_clip(a[3])}"
            if len(a) > 4 and len(b) > 4 and a[2] == b[2]:
                return f"{name}{a[2]} left its arguments as {_clip(b[4])} instead of {_clip(a[4])}"
            return f"the calls of {name} differ: {_clip(a[2])} before, {_clip(b[2] if len(b) > 2 else '?')} after"
    return f"{len(old)} call(s) of the changed function(s) before, {len(new)} after"


def exercised(before: TraceRun, after: TraceRun, *, exclude_prefix: str, targets: set[str] | None = None) -> int:
    """How many checks besides the BRT ran the patch's changed lines in the patched version.

    Counted: calls of the touched functions, inside tests that passed before, during which a changed line
    ran; and near inputs compared with the original (it returned) on which a changed line ran. A check that
    never reaches the changed code says nothing about the change.
    """
    count = 0
    for test, outcome in before.outcomes.items():
        if outcome != "passed" or test.startswith(exclude_prefix):
            continue
        count += sum(1 for e in after.events.get(test, []) if _targets_of(e, targets) and len(e) >= 6 and e[5] == "1")
    for key, row in before.probes.items():
        other = after.probes.get(key)
        if row.get("outcome") == "ok" and other is not None and other.get("hit") == "1":
            count += 1
    return count


def new_crashes(original: TraceRun, patched: TraceRun) -> tuple[int, list[str]]:
    """(near inputs compared, inputs where the patch raises or hangs but the original returned)."""
    compared = 0
    crashes: list[str] = []
    for key, row in original.probes.items():
        other = patched.probes.get(key)
        if other is None or row.get("outcome") != "ok":
            continue
        compared += 1
        if other.get("outcome") == "raise":
            crashes.append(f"{_clip(key)} raises {other.get('exc', '?')} (the original returned)")
        elif other.get("outcome") == "timeout":
            crashes.append(f"{_clip(key)} hangs (the original returned)")
    return compared, crashes


def example_checks(before: TraceRun, after: TraceRun) -> tuple[int, int, list[str]]:
    """(examples run, passing ones that ran the changed lines, failures the patch answers for).

    A documented example (`>>> f(3)` / `9` in the code's own documentation) is the author's statement of
    what the function does; a report's working call (agents/reproduce/examples.py) is the reporter's. After
    the patch it must give that value when it runs the changed lines or when it gave that value before; an
    example that failed before and never reaches the change is not the patch's doing. Unresolved examples
    (they need earlier lines of a session) count for nothing.
    """
    run = 0
    hits = 0
    failures: list[str] = []
    for key, row in sorted(after.examples.items()):
        outcome = row.get("outcome", "")
        if outcome == "unresolved":
            continue
        run += 1
        if outcome == "pass":
            hits += row.get("hit") == "1"
            continue
        was = before.examples.get(key, {}).get("outcome")
        if row.get("hit") == "1" or was == "pass":
            got = row.get("value", "") if outcome == "fail" else f"{outcome} {row.get('exc', '')}".strip()
            says = "the report shows" if row.get("origin") == "report" else "the documentation says"
            failures.append(f"{_clip(key, 80)} gives {_clip(got, 60)}, {says} {row.get('expected', '?')}")
    return run, hits, failures


def _result(row: Mapping[str, str]) -> tuple[str, ...]:
    if row.get("outcome") == "ok":
        return ("ok", row.get("value", ""), row.get("after", ""), row.get("stdout", ""))
    return (row.get("outcome", ""), row.get("exc", ""))


def disagreements(
    runs: Mapping[str, TraceRun], sizes: Mapping[str, int] | None = None, literal: Collection[str] = ()
) -> dict[str, list[str]]:
    """For each candidate, the near inputs on which another candidate's result differs from its own.

    With `sizes` (semantic size per candidate), only a candidate whose change is no larger casts doubt:
    of two fixes that pass the same checks and disagree, the smaller change is the better explanation of
    the bug, and a bigger one (typically one that builds the report's own constants into the code) does not
    outweigh it. Equal sizes doubt each other. A candidate in `literal` (its change only replaces literal
    values, `literal_only`) is doubted by any fix that disagrees with it, whatever the sizes: a number tuned
    until the reported example passes is the smallest change there is, and the commonest overfit.
    """
    out: dict[str, list[str]] = {cid: [] for cid in runs}
    ids = sorted(runs)

    def doubts(who: str, whom: str) -> bool:
        if sizes is None or whom in literal:
            return True
        a, b = sizes.get(who, -1), sizes.get(whom, -1)
        return a < 0 or b < 0 or a <= b

    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            for key, row in runs[a].probes.items():
                other = runs[b].probes.get(key)
                if other is None or row.get("outcome") == "unresolved" or other.get("outcome") == "unresolved":
                    continue
                if _result(row) != _result(other):
                    if doubts(b, a):
                        out[a].append(f"{_clip(key)}: {_describe(row)} here, {_describe(other)} with {b}")
                    if doubts(a, b):
                        out[b].append(f"{_clip(key)}: {_describe(other)} here, {_describe(row)} with {a}")
    return out


def departures(original: TraceRun, runs: Mapping[str, TraceRun]) -> dict[str, list[str]]:
    """For each candidate, the near inputs where the original returned, another candidate keeps that result,
    and this one gives another.

    Of two fixes that pass the same checks, the one that changes behaviour where the code already returned
    is the larger behavioural change. This is a tie-breaker between doubtful fixes only: the bug itself may
    be what the original returned there, so it never makes a fix confident.
    """
    out: dict[str, list[str]] = {cid: [] for cid in runs}
    for key, row in original.probes.items():
        if row.get("outcome") != "ok":
            continue
        kept = _result(row)
        results = {cid: _result(run.probes[key]) for cid, run in runs.items() if key in run.probes}
        if kept not in results.values():
            continue
        for cid, result in results.items():
            if result != kept:
                out[cid].append(f"{_clip(key)}: {_describe(runs[cid].probes[key])} here, {_describe(row)} before")
    return out


def _describe(row: Mapping[str, str]) -> str:
    if row.get("outcome") == "ok":
        return _clip(row.get("value", ""), 60)
    if row.get("outcome") == "raise":
        return f"raises {row.get('exc', '?')}"
    return str(row.get("outcome", "?"))


def _clip(text: str, size: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


@dataclass(frozen=True)
class Assessment:
    """The verdict on one candidate fix, with the numbers behind it (recorded in the JSON and the PR)."""

    verdict: Verdict
    reasons: tuple[str, ...]
    targets: tuple[str, ...] = ()
    tests_compared: int = 0
    calls_compared: int = 0
    #: Checks (passing-test calls, compared near inputs) that ran the patch's changed lines.
    exercised: int = 0
    behaviour_changes: tuple[str, ...] = ()
    probes_compared: int = 0
    probe_crashes: tuple[str, ...] = ()
    disagreements: tuple[str, ...] = ()
    semantic_size: int = 0
    #: Documented examples run, and those the patched code gets wrong (see `example_checks`).
    examples_run: int = 0
    example_failures: tuple[str, ...] = ()

    @property
    def confident(self) -> bool:
        """True when the patch may be published as a PR (a fix that could not be assessed counts too)."""
        return self.verdict != "unsure"

    def to_json(self) -> dict[str, Any]:
        """The `assessment` object of --json and results.json."""
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "targets": list(self.targets),
            "tests_compared": self.tests_compared,
            "calls_compared": self.calls_compared,
            "exercised": self.exercised,
            "behaviour_changes": list(self.behaviour_changes),
            "probes_compared": self.probes_compared,
            "probe_crashes": list(self.probe_crashes),
            "disagreements": list(self.disagreements),
            "semantic_size": self.semantic_size,
            "examples_run": self.examples_run,
            "example_failures": list(self.example_failures),
        }


_DELETION = (
    "the fix only deletes code (a check, a condition or a statement): deleting what handled another case is a "
    "common shape of a fix that fits only the reported input"
)
_RAISING = (
    "the fix raises a new exception: its type and message are the fix's own, and no test that passed before can "
    "say whether the project wants that error"
)
_SILENCING = (
    "the fix catches an exception the code raised: what it does instead is the fix's own choice, and no test that "
    "passed before can say whether the project wants that"
)
_CHANGED_ONLY = (
    "the reproduction test only checks that the reported result changed (the report states no expected value "
    "it could assert): any change passes it"
)
_ORPHANING = (
    "the fix leaves a value the function computes unused: the work no longer reaches the result, the shape of a "
    "fix that bypasses the code rather than mends it"
)


def judge(
    before: TraceRun,
    after: TraceRun,
    *,
    brt_prefix: str,
    targets: Sequence[Target],
    others_disagree: Sequence[str] = (),
    size: int = 0,
    deletion: bool = False,
    raising: bool = False,
    silencing: bool = False,
    orphaning: bool = False,
    changed_only: bool = False,
    departs: Sequence[str] = (),
) -> Assessment:
    """Combine the three checks into one verdict; every flag is a reason, and so is having no evidence."""
    names = {f"{t.file}::{t.qualname}" for t in targets}
    tests, calls, changes = behaviour_changes(before, after, exclude_prefix=brt_prefix, targets=names or None)
    compared, crashes = new_crashes(before, after)
    reasons: list[str] = []
    if after.error or before.error:
        reasons.append(f"the assessment could not run: {after.error or before.error}")
    if changes:
        reasons.append(
            f"changes behaviour on {len(changes)} test(s) that passed before: " + "; ".join(changes[:_SHOWN])
        )
    if crashes:
        reasons.append(
            f"fails on {len(crashes)} of {compared} input(s) near the report's example where the original did not: "
            + "; ".join(crashes[:_SHOWN])
        )
    examples_run, example_hits, example_failures = example_checks(before, after)
    if example_failures:
        reasons.append(
            f"disagrees with {len(example_failures)} of the code's documented example(s) or the report's working "
            "calls: " + "; ".join(example_failures[:_SHOWN])
        )
    shape = (
        (deletion, _DELETION),
        (raising, _RAISING),
        (silencing, _SILENCING),
        (orphaning, _ORPHANING),
        (changed_only, _CHANGED_ONLY),
    )
    reasons += [reason for flag, reason in shape if flag]
    if others_disagree:
        reasons.append(
            f"another validated candidate gives a different result on {len(others_disagree)} near input(s): "
            + "; ".join(others_disagree[:_SHOWN])
        )
    ran = exercised(before, after, exclude_prefix=brt_prefix, targets=names or None) + example_hits
    if not reasons and ran == 0:
        reasons.append(
            "no evidence beyond the BRT: no test that passed before, no input near the report's example "
            "on which the original returned, and no documented example runs the changed lines"
        )
    verdict: Verdict = "unsure" if reasons else "confident"
    if verdict == "unsure" and departs:
        # Only ranks a fix that is withheld anyway below one that keeps what the code returned.
        reasons.append(
            f"changes the result on {len(departs)} near input(s) where the original returned and another "
            "validated candidate keeps that result: " + "; ".join(departs[:_SHOWN])
        )
    if verdict == "confident":
        reasons.append(
            f"same behaviour on {tests} passing test(s) ({calls} call(s) of the changed functions) and "
            f"no new failure on {compared} near input(s)"
            + (f"; {examples_run} documented or reported example(s) hold" if examples_run else "")
            + f"; {ran} of these checks ran the changed lines"
        )
    return Assessment(
        verdict=verdict,
        reasons=tuple(reasons),
        targets=tuple(sorted(names)),
        tests_compared=tests,
        calls_compared=calls,
        exercised=ran,
        behaviour_changes=tuple(changes),
        probes_compared=compared,
        probe_crashes=tuple(crashes),
        disagreements=tuple(others_disagree),
        semantic_size=size,
        examples_run=examples_run,
        example_failures=tuple(example_failures),
    )


def not_assessed(reason: str) -> Assessment:
    """The verdict for a patch the assessment cannot trace (not Python, no pytest suite)."""
    return Assessment(verdict="not_assessed", reasons=(reason,))

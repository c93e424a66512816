"""Fix templates for one suspicious line: generic AST mutants, spliced back with minimal textual change."""

from __future__ import annotations

import ast
import copy
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agents.repair.mutation import calls, exprs, ops, stmts
from agents.repair.mutation.scope import build_context, find_targets, scope_at
from agents.repair.mutation.types import Edit, Env, MutationContext, make_env

__all__ = [
    "OPERATOR_TIERS",
    "Candidate",
    "MutationContext",
    "build_context",
    "estimate_count",
    "generate_candidates",
]

#: Families in the order they take turns within a tier. Tier 0: one-token operator, literal and ±1
#: changes, the most frequent single-statement bug classes; tier 1: operand-level changes (variables,
#: attributes, swapped arguments, None checks, returns); tier 2: broader rewrites that combine the
#: statement with other locals (missing term, missing loop update, call -> local); tier 3: long shots
#: (rare operators, deletion, missing container update). The prior per family is its lowest tier.
_FAMILIES: tuple[Callable[[Env], Iterator[Edit]], ...] = (
    ops.comparisons,
    ops.boolean_operators,
    ops.negations,
    ops.augmented_operators,
    ops.binary_operators,
    exprs.builtins,
    exprs.order_wraps,
    ops.off_by_one,
    ops.constants,
    ops.term_removal,
    exprs.swaps,
    exprs.slice_mirrors,
    stmts.none_guards,
    stmts.length_guards,
    stmts.returns,
    ops.comparison_with_constant,
    exprs.similar_expressions,
    exprs.attributes,
    exprs.names,
    stmts.loop_updates,
    exprs.locals_for_subexpressions,
    exprs.term_addition,
    stmts.accumulators,
    stmts.simultaneous_assignments,
    stmts.statement_guards,
    stmts.container_updates,
    stmts.flag_resets,
    stmts.deletion,
    exprs.regex_edits,
    exprs.call_arguments,
    exprs.two_names,
    stmts.early_returns,
    stmts.raise_guards,
    calls.callee_swaps,
    calls.keyword_arguments,
    stmts.loop_exits,
    calls.helper_wraps,
    ops.format_tuples,
    calls.isinstance_types,
    ops.missing_steps,
    calls.builtin_wraps,
)

#: operator name -> tiers it emits (lower is tried first).
OPERATOR_TIERS: dict[str, tuple[int, ...]] = {
    "cmpop": (0, 1),
    "boolop": (0, 1),
    "negate": (0, 1),
    "augop": (0, 2, 3),
    "binop": (0, 3),
    "builtin": (0, 1, 2),
    "off_by_one": (0, 2),
    "constant": (0, 1, 3),
    "term_removal": (0, 1),
    "swap": (1, 2),
    "none_guard": (1, 2),
    "return": (1, 2, 3),
    "cmp_const": (1, 2),
    "similar": (1, 2),
    "attribute": (1,),
    "name": (1, 2, 3),
    "insert_update": (2, 3),
    "use_local": (2, 3),
    "term_addition": (2,),
    "accumulate": (2, 3),
    "delete": (3,),
    "empty_guard": (4,),
    "regex": (1,),
    "call_args": (4,),
    "rename2": (4,),
    "early_return": (2,),
    # Found by mining small fixes (bench/edit_classes.py), tiered by how often the class occurs there:
    # callee changes 4.4% of edits, keyword arguments 1.4%, continue/break guards rarer still; a value passed
    # through the module's own helper (a call wrap) is 3 of 404 mined edits; a length term before an index is
    # in 10 fixes of 4 of 25 projects (`--all`); a raise under an input check in 30 edits of 11 projects.
    "callee": (2,),
    "keyword": (3,),
    "loop_exit": (4,),
    "helper_wrap": (4,),
    "length_guard": (2,),
    "raise_guard": (2,),
    # A lone `%` value wrapped in a 1-tuple: 2 mined fixes in one project, a known pitfall in many more; an
    # isinstance type widened or narrowed: 9 mined edits in 6 projects.
    "format_tuple": (2,),
    "isinstance_type": (2,),
    # Classic algorithmic bug classes (QuixBugs' taxonomy), rare in the mined library histories (`--all`: a
    # slice from the other end 1 of 1,880 edits, a sequential assignment made simultaneous 0), so long shots:
    # `s[1:]` for `s[:-1]`; `a = b; b = a + b` for `a, b = b, a + b`; a list that should go through
    # reversed()/sorted() first (the mirror of the builtin unwrap).
    "slice_mirror": (3,),
    "simultaneous": (3,),
    "order_wrap": (3,),
    # A flag that enables a branch and is never cleared in it (`if start and c:` without `start = False`):
    # one of the mined "assignment inserted" fixes (8.1% of edits) that the loop updates do not cover.
    "flag_reset": (3,),
    # QuixBugs' "missing arithmetic" and "missing function call" classes: a step the function applies to
    # other values (`// 60` where `% 60` was meant too, a sum never halved); a builtin call around a value
    # (`set()` inside `len()`, `abs()` around a difference). Builtins make most of the mined call wraps
    # (3.7% of edits); steps copied from the same function are rarer, so both are long shots.
    "missing_step": (3,),
    "builtin_wrap": (3,),
}


@dataclass(frozen=True)
class Candidate:
    """One rewritten file: which template, a readable summary, the line it touches, the new source."""

    operator: str
    description: str
    line: int
    new_source: str
    tier: int = 0


def _edits(source: str, line: int, context: MutationContext | None) -> tuple[MutationContext, list[Edit]]:
    ctx = context if context is not None and context.tree is not None and context.source == source else None
    ctx = ctx or build_context(source)
    if ctx.tree is None:
        return ctx, []
    found: list[Edit] = []
    for target in find_targets(ctx.tree, line):
        env = make_env(target, scope_at(target, ctx), ctx)
        for family in _FAMILIES:
            found.extend(family(env))
    return ctx, found


def estimate_count(source: str, line: int, *, context: MutationContext | None = None) -> int:
    """Upper bound on how many candidates `generate_candidates` yields for the line (before dedupe)."""
    return len(_edits(source, line, context)[1])


def generate_candidates(
    source: str,
    line: int,
    *,
    rng: random.Random | None = None,
    context: MutationContext | None = None,
) -> Iterator[Candidate]:
    """Mutants of the innermost statement(s) at `line` (1-based), most plausible tier first.

    Only the statement's source span changes (for compound statements only the header expression),
    except statement insertions (whole new lines in the enclosing loop/block) and deletions. Every
    yielded source parses and differs from `source` and from every earlier candidate. Within a tier,
    operator families take turns (round robin) so a budget cut keeps every family represented. With
    `rng`, candidates are shuffled within each tier so that seeds give different search orders.
    `context` (from `build_context(source)`) saves re-analysing the module for each line.
    """
    _, edits = _edits(source, line, context)
    tiers: dict[int, list[Edit]] = {}
    for edit in edits:
        tiers.setdefault(edit.tier, []).append(edit)
    text = _Text.of(source)
    seen = {source}
    originals: dict[int, dict[int, str]] = {}
    for tier in sorted(tiers):
        group = tiers[tier]
        if rng is not None:
            rng.shuffle(group)
        for edit in _round_robin(group):
            if id(edit.root) not in originals:
                originals[id(edit.root)] = _originals(text, edit.root)
            rendered = _render(text, edit, originals[id(edit.root)])
            if rendered is None or rendered in seen:
                continue
            seen.add(rendered)
            yield Candidate(edit.operator, _describe(edit), getattr(edit.node, "lineno", line), rendered, tier)


def _round_robin(edits: list[Edit]) -> list[Edit]:
    """Interleave operator families within a tier, so a budget cut keeps every family represented
    (a statement with many variables would otherwise spend the budget on name swaps alone)."""
    families: dict[str, list[Edit]] = {}
    for edit in edits:
        families.setdefault(edit.operator, []).append(edit)
    queues = list(families.values())
    ordered: list[Edit] = []
    for index in range(max((len(q) for q in queues), default=0)):
        ordered += [q[index] for q in queues if index < len(q)]
    return ordered


@dataclass(frozen=True)
class _Text:
    source: str
    lines: tuple[str, ...]
    starts: tuple[int, ...]

    @classmethod
    def of(cls, source: str) -> _Text:
        lines = source.split("\n")
        starts = [0]
        for text in lines[:-1]:
            starts.append(starts[-1] + len(text) + 1)
        return cls(source, tuple(lines), tuple(starts))

    def offset(self, lineno: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets.
        text = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return start, self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def indent(self, lineno: int) -> str:
        text = self.lines[lineno - 1]
        return text[: len(text) - len(text.lstrip(" \t"))]

    def line_start(self, lineno: int) -> int:
        return self.starts[lineno - 1] if lineno <= len(self.starts) else len(self.source)


def _indented(code: str, indent: str) -> str:
    """Continuation lines of multi-line code (an `if` wrapper) take the statement's indentation."""
    first, *rest = code.split("\n")
    return "\n".join([first, *(indent + r for r in rest)])


def _equal(parsed: object, orig: object, swap: tuple[ast.AST, ast.AST] | None) -> bool:
    """Structural equality of `parsed` with `orig` in which node swap[0] reads as swap[1].

    Cheaper than deep-copying and dumping the statement for every candidate.
    """
    if swap is not None and orig is swap[0]:
        orig, swap = swap[1], None  # the replacement may contain the replaced node itself
    if type(parsed) is not type(orig):
        return False
    if isinstance(parsed, ast.AST):
        return all(_equal(getattr(parsed, f, None), getattr(orig, f, None), swap) for f in parsed._fields)
    if isinstance(parsed, list):
        assert isinstance(orig, list)
        return len(parsed) == len(orig) and all(_equal(a, b, swap) for a, b in zip(parsed, orig, strict=True))
    return parsed == orig


def _same(segment: str, root: ast.AST, swap: tuple[ast.AST, ast.AST] | None) -> bool:
    """Does the rewritten segment parse to exactly the root with the swap applied?"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(root, ast.stmt):
                body = ast.parse(segment).body
                return len(body) == 1 and _equal(body[0], root, swap)
            return _equal(ast.parse(f"({segment})", mode="eval").body, root, swap)
    except (SyntaxError, ValueError, RecursionError):
        return False


def _compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # A full compile also rejects what only the symbol table sees (`break` outside a loop).
            compile(source, "<mutant>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


class _Splicer(ast._Unparser):  # type: ignore[name-defined]
    """ast.unparse that copies the original text of untouched sub-expressions (keeps quotes, spacing)."""

    def __init__(self, originals: dict[int, str] | None = None, **kwargs: bool) -> None:
        # ast builds nested unparsers for f-strings with keyword flags; those get no originals.
        super().__init__(**kwargs)
        self._originals = originals or {}

    def traverse(self, node: ast.AST | list[ast.AST]) -> None:
        if isinstance(node, list) or id(node) not in self._originals:
            super().traverse(node)
            return
        text = self._originals[id(node)]
        # Render normally into a scratch buffer only to learn whether this context needs parentheses.
        saved, self._originals = self._originals, {}
        with self.buffered() as scratch:
            super().traverse(node)
        self._originals = saved
        in_context, alone = "".join(scratch), ast.unparse(node)
        self.write(f"({text})" if in_context != alone and in_context == f"({alone})" else text)


def _splice_render(node: ast.AST, originals: dict[int, str]) -> str:
    try:
        return str(_Splicer(originals).visit(node))
    except (AttributeError, TypeError, ValueError, RecursionError):
        return ast.unparse(node)  # the private unparser changed shape: plain unparse is still correct


def _originals(text: _Text, root: ast.AST) -> dict[int, str]:
    found: dict[int, str] = {}
    for node in ast.walk(root):
        if isinstance(node, ast.expr) and node is not root:
            start, end = text.span(node)
            found[id(node)] = text.source[start:end]
    return found


def _render(text: _Text, edit: Edit, originals: dict[int, str]) -> str | None:
    if edit.mode != "replace":
        return _render_statement(text, edit, originals)
    assert edit.new is not None
    root = edit.root
    if _equal(edit.new, edit.node, None):
        return None  # a no-op mutant (e.g. a name replaced by itself)
    swap = (edit.node, edit.new)
    source = text.source
    r_start, r_end = text.span(root)
    indent = text.indent(root.lineno)  # type: ignore[attr-defined]
    n_start, n_end = text.span(edit.node)
    codes = [_indented(_splice_render(edit.new, originals), indent), _indented(ast.unparse(edit.new), indent)]
    for code in dict.fromkeys([*codes, *(f"({c})" for c in codes)]):
        segment = source[r_start:n_start] + code + source[n_end:r_end]
        if _same(segment, root, swap):
            result = source[:r_start] + segment + source[r_end:]
            # The segment alone parsed to the intended statement, so only multi-line code needs a
            # whole-file check (its indentation must fit the block).
            return result if "\n" not in code or _compiles(result) else None
    # Precedence or context defeated the minimal splice: re-render the whole statement or header.
    expected = edit.new if edit.node is root else copy.deepcopy(root, {id(edit.node): edit.new})
    segment = _indented(ast.unparse(expected), indent)
    if isinstance(expected, ast.expr) and not _same(segment, expected, None):
        segment = f"({segment})"
    result = source[:r_start] + segment + source[r_end:]
    return result if _compiles(result) else None


def _render_statement(text: _Text, edit: Edit, originals: dict[int, str]) -> str | None:
    anchor = edit.node
    assert isinstance(anchor, ast.stmt)
    source = text.source
    indent = text.indent(anchor.lineno)
    end_line = anchor.end_lineno or anchor.lineno
    if edit.mode == "merge_next":
        return _render_merge(text, edit, originals)
    if edit.mode == "delete":
        start, end = text.span(anchor)
        before = source[text.line_start(anchor.lineno) : start]
        after = source[end : text.line_start(end_line) + len(text.lines[end_line - 1])]
        if before.strip() or (after.strip() and not after.strip().startswith("#")):
            return None  # shares its line with another statement; the `pass` variant is not worth it
        result = source[: text.line_start(anchor.lineno)] + source[text.line_start(end_line + 1) :]
    else:
        assert edit.new is not None
        code = indent + _indented(_splice_render(edit.new, originals), indent) + "\n"
        at = text.line_start(anchor.lineno if edit.mode == "insert_before" else end_line + 1)
        if at >= len(source) and not source.endswith("\n"):
            code = "\n" + code
        result = source[:at] + code + source[at:]
    return result if _compiles(result) else None


def _render_merge(text: _Text, edit: Edit, originals: dict[int, str]) -> str | None:
    """Two consecutive statements, each on lines of its own, replaced by one."""
    first, second = edit.node, edit.root
    assert isinstance(first, ast.stmt) and isinstance(second, ast.stmt) and edit.new is not None
    source = text.source
    for stmt in (first, second):
        start, end = text.span(stmt)
        end_line = stmt.end_lineno or stmt.lineno
        before = source[text.line_start(stmt.lineno) : start]
        after = source[end : text.line_start(end_line) + len(text.lines[end_line - 1])]
        if before.strip() or (after.strip() and not after.strip().startswith("#")):
            return None  # shares a line with another statement (`a = b; b = a`): left alone
    indent = text.indent(first.lineno)
    code = indent + _indented(_tuple_assignment_text(edit.new, originals), indent) + "\n"
    end_line = second.end_lineno or second.lineno
    result = source[: text.line_start(first.lineno)] + code + source[text.line_start(end_line + 1) :]
    return result if _compiles(result) else None


def _tuple_assignment_text(stmt: ast.AST, originals: dict[int, str]) -> str:
    """`a, b = b, a + b` without the parentheses ast.unparse puts around the values."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Tuple) and len(stmt.targets) == 1):
        return _splice_render(stmt, originals)
    targets = stmt.targets[0]
    if not isinstance(targets, ast.Tuple):
        return _splice_render(stmt, originals)
    bare = (ast.Tuple, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Lambda, ast.Starred)

    def part(node: ast.expr) -> str:
        text = _splice_render(node, originals)
        return f"({text})" if isinstance(node, bare) else text

    return ", ".join(map(part, targets.elts)) + " = " + ", ".join(map(part, stmt.value.elts))


def _short(node: ast.AST, limit: int = 60) -> str:
    code = " ".join(ast.unparse(node).split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _describe(edit: Edit) -> str:
    line = getattr(edit.node, "lineno", 0)
    if edit.mode == "delete":
        return f"delete line {line}: `{_short(edit.node)}`"
    assert edit.new is not None
    if edit.mode == "insert_before":
        return f"insert `{_short(edit.new)}` before line {line}"
    if edit.mode == "insert_after":
        end = getattr(edit.node, "end_lineno", line)
        return f"insert `{_short(edit.new)}` after line {end}"
    if edit.mode == "merge_next":
        end = getattr(edit.root, "end_lineno", line)
        merged = " ".join(_tuple_assignment_text(edit.new, {}).split())
        return f"lines {line}-{end}: `{_short(edit.node)}; {_short(edit.root)}` -> `{merged}`"
    return f"line {line}: `{_short(edit.node)}` -> `{_short(edit.new)}`"

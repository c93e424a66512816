"""Facts the mutation operators draw on: the statement at a line, its scope's names, module attributes."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator

from agents.repair.mutation.signatures import applied_helpers, module_signatures
from agents.repair.mutation.types import COMPREHENSIONS, MutationContext, Scope, Target

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def build_context(source: str) -> MutationContext:
    """Collect attribute names, callables and module variables of `source` (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return MutationContext(source=source)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    data: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    by_base: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            (methods if id(node) in called else data)[node.attr] += 1
            if isinstance(node.value, ast.Name):
                seen = by_base.setdefault(node.value.id, [])
                if node.attr not in seen:
                    seen.append(node.attr)
    callables: set[str] = set()
    variables: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, (*_FUNCS, ast.ClassDef)):
            callables.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            callables.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in variables:
                    variables.append(node.id)
    signatures = module_signatures(tree)
    return MutationContext(
        data_attributes=tuple(a for a, _ in data.most_common()),
        method_names=tuple(a for a, _ in methods.most_common()),
        callables=frozenset(callables),
        module_variables=tuple(v for v in variables if v not in callables),
        attrs_by_base=tuple((b, tuple(a)) for b, a in by_base.items()),
        signatures=signatures,
        helpers=applied_helpers(tree, signatures),
        source=source,
        tree=tree,
    )


def header_exprs(stmt: ast.stmt) -> tuple[ast.expr, ...] | None:
    """Expressions of a compound statement's header (None for simple statements)."""
    if isinstance(stmt, (ast.If, ast.While)):
        return (stmt.test,)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return (stmt.iter,)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return tuple(item.context_expr for item in stmt.items)
    if isinstance(stmt, ast.Match):
        return (stmt.subject,)
    if isinstance(stmt, (*_FUNCS, ast.ClassDef, ast.Try, ast.TryStar)):
        return ()
    return None


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


def find_targets(tree: ast.Module, line: int) -> list[Target]:
    """Innermost statements covering `line` (several for `a; b`), with their enclosing defs and loops."""
    found: list[Target] = []

    def visit(
        block: list[ast.stmt],
        funcs: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...],
        loops: tuple[ast.stmt, ...],
    ) -> None:
        for index, stmt in enumerate(block):
            if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                continue
            header = header_exprs(stmt)
            if header is None:
                found.append(Target(stmt, None, block, index, funcs, loops))
                continue
            inner_funcs, inner_loops = funcs, loops
            if isinstance(stmt, _FUNCS):
                inner_funcs, inner_loops = (stmt, *funcs), ()
            elif isinstance(stmt, ast.ClassDef):
                inner_loops = ()
            header_end = max((e.end_lineno or e.lineno for e in header), default=stmt.lineno)
            if header and line <= header_end:
                own_loops = (stmt, *loops) if isinstance(stmt, _LOOPS) else loops
                found.append(Target(stmt, header, block, index, funcs, own_loops))
            if isinstance(stmt, _LOOPS):
                inner_loops = (stmt, *loops)
            for sub in _blocks(stmt):
                visit(sub, inner_funcs, inner_loops)

    visit(tree.body, (), ())
    return found


def _own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a def's body without descending into nested defs, classes or lambdas."""
    stack: list[ast.AST] = list(getattr(root, "body", [])) if isinstance(root, _FUNCS) else [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(node))


def function_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], set[str], set[str]]:
    """(params, assigned locals, nested callables) of a def; comprehension variables excluded."""
    args = func.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    # Comprehension targets are scoped to the comprehension, so they are not locals of the def.
    comp_targets = {
        id(n)
        for node in _own_nodes(func)
        if isinstance(node, COMPREHENSIONS)
        for gen in node.generators
        for n in ast.walk(gen.target)
    }
    assigned: set[str] = set()
    nested: set[str] = set()
    for node in _own_nodes(func):
        if isinstance(node, (*_FUNCS, ast.ClassDef)):
            nested.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            nested.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            assigned.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in comp_targets:
            assigned.add(node.id)
    return params, assigned - nested, nested


def scope_at(target: Target, ctx: MutationContext) -> Scope:
    """Names a replacement may use at `target`, ordered by distance of their nearest use to it."""
    line = target.stmt.lineno
    ordered: list[str] = []
    callables = set(ctx.callables)
    assigned: set[str] = set()
    innermost_params: set[str] = set()
    kinds: dict[str, str] = {}
    for func in reversed(target.functions):
        kinds.update(variable_kinds(func))
    for depth, func in enumerate(target.functions):
        params, local, nested = function_names(func)
        callables |= nested
        if depth == 0:
            assigned = params | local
            innermost_params = params
        distance: dict[str, int] = {}
        for node in _own_nodes(func):
            if isinstance(node, ast.Name) and node.id in params | local:
                distance[node.id] = min(distance.get(node.id, 1 << 30), abs(node.lineno - line))
        for name in params:
            distance.setdefault(name, abs(func.lineno - line))
        ordered += [n for n in sorted(distance, key=lambda n: (distance[n], n)) if n not in ordered]
    if not target.functions and ctx.tree is not None:
        assigned = set(ctx.module_variables)
        kinds = variable_kinds(ctx.tree)
    ordered += [v for v in ctx.module_variables if v not in ordered]
    return Scope(
        tuple(n for n in ordered if n not in callables),
        frozenset(assigned),
        frozenset(callables),
        frozenset(innermost_params),
        kinds,
    )


def enclosing_root(target: Target, tree: ast.Module) -> ast.AST:
    """The innermost def around the target, or the module."""
    return target.functions[0] if target.functions else tree


def subscript_shapes(root: ast.AST) -> list[ast.expr]:
    """Distinct slices `S` of `name[S]` subscripts in `root`, plus complements of one-sided slices."""
    shapes: list[ast.expr] = []
    seen: set[str] = set()

    def add(shape: ast.expr) -> None:
        key = ast.dump(shape)
        if key not in seen:
            seen.add(key)
            shapes.append(shape)

    for node in _own_nodes(root):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            sl = node.slice
            add(sl)
            if sl.step is None and (sl.lower is None) != (sl.upper is None):
                # a[:k] and a[k:] are the two halves of a split; a bug often takes the wrong half.
                add(ast.Slice(lower=sl.upper, upper=sl.lower, step=None))
    return shapes


def loop_facts(loop: ast.stmt) -> tuple[list[str], list[str], list[str]]:
    """(names read in the loop body, names assigned in it, loop variables), each in source order.

    A While loop's "loop variables" are the names its test reads.
    """
    reads: list[str] = []
    assigned: list[str] = []
    loop_vars: list[str] = []
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        loop_vars = [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    elif isinstance(loop, ast.While):
        loop_vars = [n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)]
    for stmt in getattr(loop, "body", []):
        for node in sorted(_own_nodes(stmt), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            if isinstance(node, ast.Name):
                bucket = reads if isinstance(node.ctx, ast.Load) else assigned
                if node.id not in bucket:
                    bucket.append(node.id)
    return reads, assigned, loop_vars


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split(" "))


_SEQ_CALLS = _words(
    "list dict set tuple frozenset sorted reversed str enumerate zip map filter range deque defaultdict "
    "Counter OrderedDict"
)
NUM_CALLS = _words("len int float abs sum round ord")
_CONTAINER_METHODS = _words(
    "append extend add pop popleft appendleft update items keys values get remove discard insert clear "
    "setdefault count index sort reverse copy issubset issuperset union intersection difference join "
    "split strip lstrip rstrip startswith endswith lower upper replace find rfind format"
)


def expr_kind(node: ast.AST) -> str | None:
    """ "num", "seq" (containers and strings) or None for an expression, from its syntax alone."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, bytes)):
            return "seq"
        return "num" if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
    if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr, *COMPREHENSIONS)):
        return "seq"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return "num" if node.func.id in NUM_CALLS else "seq" if node.func.id in _SEQ_CALLS else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return expr_kind(node.operand)
    if isinstance(node, ast.BinOp):
        kinds = {expr_kind(node.left), expr_kind(node.right)}
        if "seq" in kinds:
            return "seq" if isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)) else None
        return "num" if "num" in kinds else None
    return None


def _vote_loop_counter(
    loop: ast.For | ast.AsyncFor | ast.comprehension, vote: Callable[[ast.AST, str | None], None]
) -> None:
    """`for i in range(n)` and `for i, x in enumerate(xs)`: the counter is a number."""
    if not isinstance(loop.iter, ast.Call) or not isinstance(loop.iter.func, ast.Name):
        return
    if loop.iter.func.id == "range":
        vote(loop.target, "num")
    elif loop.iter.func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts:
        vote(loop.target.elts[0], "num")


def variable_kinds(root: ast.AST) -> dict[str, str]:
    """Guess "num", "seq" or "obj" for the variables of a def from how it assigns and uses them.

    Only unanimous evidence counts; conflicting or missing evidence leaves a name out. Used to order
    candidates (an `x + 1` on a list or a list standing in for a counter is rarely the fix).
    """
    votes: dict[str, set[str]] = {}

    def vote(node: ast.AST, kind: str | None) -> None:
        if isinstance(node, ast.Name) and kind:
            votes.setdefault(node.id, set()).add(kind)

    if isinstance(root, _FUNCS):
        args = root.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            votes.setdefault(arg.arg, set()).update(k for k in (expr_kind(default),) if k)
    for node in _own_nodes(root):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                vote(target, expr_kind(node.value))
                pairwise = isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                if pairwise and len(target.elts) == len(node.value.elts):  # type: ignore[attr-defined]
                    # `rows, cols = len(a), len(b)`: element by element.
                    for name, value in zip(target.elts, node.value.elts, strict=True):  # type: ignore[attr-defined]
                        vote(name, expr_kind(value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            vote(node.target, expr_kind(node.value))
        elif isinstance(node, ast.Subscript):
            vote(node.value, "seq")
        elif isinstance(node, ast.Attribute):
            vote(node.value, "seq" if node.attr in _CONTAINER_METHODS else "obj")
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            vote(node.iter, "seq")
            _vote_loop_counter(node, vote)
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)):
                    vote(right, "seq")
                elif isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                    sides = (node.left, right)
                    for side, other in (sides, sides[::-1]):
                        vote(side, "num" if expr_kind(other) == "num" else None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
            # Not range(): `range(xs)` is itself a classic bug, so it must not vouch for a number.
            for call_arg in node.args:
                vote(call_arg, "seq")
        elif isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mod):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(other, ast.Constant) and expr_kind(other) == "num":
                    vote(side, "num")
                elif isinstance(node.op, ast.Mult) and isinstance(other, (ast.List, ast.Tuple)):
                    vote(side, "num")  # [0] * n
    return {name: next(iter(kinds)) for name, kinds in votes.items() if len(kinds) == 1}

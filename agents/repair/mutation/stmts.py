"""Statement-shaped mutation templates: returns, None guards, accumulators, missing updates, deletion."""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator

from agents.repair.mutation.exprs import LATE_TIER, LOCAL_LIMIT, name_node
from agents.repair.mutation.ops import assign, conditions, int_value, is_docstring, is_literal_seq
from agents.repair.mutation.scope import enclosing_root, loop_facts
from agents.repair.mutation.types import Edit, Env

_JUMPS = (ast.Return, ast.Break, ast.Continue, ast.Raise)


def _positions(env: Env, loop: ast.stmt) -> list[tuple[str, ast.stmt]]:
    """Where a missing statement may go: around the target statement, and at both ends of the loop body."""
    body: list[ast.stmt] = getattr(loop, "body", [])
    spots: list[tuple[str, ast.stmt]] = []
    stmt = env.target.stmt
    if env.target.header is None:
        spots += [("insert_before", stmt)]
        if not isinstance(stmt, _JUMPS):
            spots.append(("insert_after", stmt))
    last = body[-1]
    spots.append(("insert_before", last) if isinstance(last, _JUMPS) else ("insert_after", last))
    spots.append(("insert_before", body[0]))
    unique: list[tuple[str, ast.stmt]] = []
    for spot in spots:
        if not any(spot[0] == u[0] and spot[1] is u[1] for u in unique):
            unique.append(spot)
    return unique


def _updated_in_place(loop: ast.stmt) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                names.add(node.func.value.id)
            names.update(a.id for a in node.args if isinstance(a, ast.Name))
        elif (
            isinstance(node, (ast.Subscript, ast.Attribute))
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
        ):
            names.add(node.value.id)
    return names


def loop_updates(env: Env) -> Iterator[Edit]:
    """Missing update in a loop: a variable the loop reads but never reassigns gets `p = <loop var/local>`;
    a while-loop counter the body never changes gets `i += 1` / `i -= 1`."""
    if not env.target.loops:
        return
    loop = env.target.loops[0]
    reads, assigned, loop_vars = loop_facts(loop)
    variables = set(env.scope.variables)
    # A variable updated in place (method call, item store, passed to a call) is not stale.
    updated = set(assigned) | _updated_in_place(loop)
    stale = [
        p for p in reads if p in env.scope.assigned - env.scope.params and p not in updated and p not in loop_vars
    ][:LOCAL_LIMIT]
    values = [v for v in [*loop_vars, *assigned] if v in variables or v in loop_vars]
    values = list(dict.fromkeys(values))[:LOCAL_LIMIT]
    spots = _positions(env, loop)
    for mode, anchor in spots:
        for stale_name in stale:
            for value in values:
                if value != stale_name and env.scope.compatible(stale_name, value):
                    new = assign(ast.Name(id=stale_name, ctx=ast.Store()), ast.Name(id=value, ctx=ast.Load()))
                    yield Edit("insert_update", 2, anchor, anchor, new, mode)
    if isinstance(loop, ast.While):
        counters = [v for v in loop_vars if v in variables and v not in assigned]
        for mode, anchor in spots[-2:]:
            for counter in counters:
                for op in (ast.Add, ast.Sub):
                    target = ast.Name(id=counter, ctx=ast.Store())
                    new_stmt = ast.AugAssign(target=target, op=op(), value=ast.Constant(1))
                    yield Edit("insert_update", 2, anchor, anchor, new_stmt, mode)


def container_updates(env: Env) -> Iterator[Edit]:
    """Missing bookkeeping: `x in seen` is tested but `seen` is never updated -> insert `seen.add(x)`."""
    root = enclosing_root(env.target, env.ctx.tree or ast.Module(body=[], type_ignores=[]))
    mutated = {
        n.func.value.id
        for n in ast.walk(root)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
    }
    pairs: list[tuple[str, str]] = []
    for node in ast.walk(root):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            left, right = node.left, node.comparators[0]
            if (
                isinstance(left, ast.Name)
                and isinstance(right, ast.Name)
                and right.id not in mutated
                and right.id in env.scope.variables
                and (left.id, right.id) not in pairs
            ):
                pairs.append((left.id, right.id))
    stmt = env.target.stmt
    anchors = [("insert_before", stmt)] if env.target.header is None else []
    body = getattr(stmt, "body", None)
    if env.target.header is not None and isinstance(body, list) and body:
        anchors.append(("insert_before", body[0]))
    for mode, anchor in anchors:
        for elem, container in pairs:
            for method in ("add", "append"):
                func = ast.Attribute(value=ast.Name(id=container, ctx=ast.Load()), attr=method, ctx=ast.Load())
                call = ast.Call(func=func, args=[ast.Name(id=elem, ctx=ast.Load())], keywords=[])
                yield Edit("insert_update", 3, anchor, anchor, ast.Expr(value=call), mode)


def statement_guards(env: Env) -> Iterator[Edit]:
    """Missing None check around a simple statement: wrap it in `if x is not None:` for derefs x."""
    stmt = env.target.stmt
    if env.target.header is not None or isinstance(stmt, (ast.Pass, ast.Break, ast.Continue, ast.Global)):
        return
    for base in deref_bases(stmt, env.scope.callables)[:LOCAL_LIMIT]:
        test = ast.Compare(left=base, ops=[ast.IsNot()], comparators=[ast.Constant(None)])
        yield Edit("none_guard", 2, stmt, stmt, ast.If(test=test, body=[stmt], orelse=[]))
    # An operand that may be None *or empty* (divided by its length, indexed, passed on): `if x:` skips both.
    for operand in empty_operands(stmt, env)[:LOCAL_LIMIT]:
        yield Edit("empty_guard", LATE_TIER, stmt, stmt, ast.If(test=operand, body=[stmt], orelse=[]))


def empty_operands(stmt: ast.stmt, env: Env) -> list[ast.expr]:
    """Variables the statement subscripts, takes len() of, or passes to a call: the ones that can be empty."""
    seen: dict[str, ast.expr] = {}
    variables = set(env.scope.variables)
    for node in ast.walk(stmt):
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Subscript):
            candidates.append(node.value)
        elif isinstance(node, ast.Call):
            candidates.extend(node.args)
        for cand in candidates:
            if isinstance(cand, ast.Name) and cand.id in variables and cand.id not in env.scope.callables:
                seen.setdefault(cand.id, ast.Name(id=cand.id, ctx=ast.Load()))
    return list(seen.values())


def deletion(env: Env) -> Iterator[Edit]:
    """Extra statement: delete it (a lone statement in its block becomes `pass`)."""
    stmt = env.target.stmt
    if env.target.header is not None or isinstance(stmt, ast.Pass) or is_docstring(stmt):
        return
    if len(env.target.block) > 1:
        yield Edit("delete", 3, stmt, stmt, None, "delete")
    else:
        yield Edit("delete", 3, stmt, stmt, ast.Pass())


def deref_bases(expr: ast.AST, callables: frozenset[str]) -> list[ast.expr]:
    """Expressions dereferenced in expr (`x` in `x.a`, `x.a` in `x.a.b`, `x` in `x[i]`), outermost first."""
    bases: list[ast.expr] = []
    seen: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            base = node.value
            if isinstance(base, (ast.Name, ast.Attribute)) and not (
                isinstance(base, ast.Name) and base.id in callables
            ):
                key = ast.dump(base)
                if key not in seen:
                    seen.add(key)
                    bases.append(base)
    return sorted(bases, key=lambda b: len(ast.dump(b)))


def none_guards(env: Env) -> Iterator[Edit]:
    """Missing None check in a condition c: `x is None or c` / `x is not None and c` for derefs x in c."""
    for cond, root in conditions(env):
        for base in deref_bases(cond, env.scope.callables):
            load = base
            is_none = ast.Compare(left=load, ops=[ast.Is()], comparators=[ast.Constant(None)])
            not_none = ast.Compare(left=load, ops=[ast.IsNot()], comparators=[ast.Constant(None)])
            yield Edit("none_guard", 1, root, cond, ast.BoolOp(op=ast.Or(), values=[is_none, cond]))
            yield Edit("none_guard", 1, root, cond, ast.BoolOp(op=ast.And(), values=[not_none, cond]))


#: Mined (bench/edit_classes.py --all, 25 projects): a length term added before an index (`len(s) > 1 and
#: s[1] == x`) in 10 small fixes of 4 projects (toml 5, parse 2, tabulate 2, sqlparse 1); after the None checks.
LENGTH_TIER = 2


def _needed_length(index: ast.expr) -> ast.expr | int | None:
    """What `len(s) >` must exceed for `s[index]` to exist: k for `k`, k-1 for `-k`, `i + k` for `i + k`, `i`
    for a plain name (`length_guards` keeps that one only for a name the function counts with)."""
    if isinstance(index, ast.Name):
        return index
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return index.value if index.value >= 0 else -index.value - 1
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant):
        value = index.operand.value
        return value - 1 if type(value) is int and value > 0 else None
    if (
        isinstance(index, ast.BinOp)
        and isinstance(index.op, ast.Add)
        and isinstance(index.left, ast.Name)
        and isinstance(index.right, ast.Constant)
        and type(index.right.value) is int
    ):
        return index
    return None


def indexed_lengths(nodes: list[ast.AST]) -> dict[str, tuple[ast.expr, ast.expr]]:
    """For each sequence the nodes index with a fixed position (`s[2]`, `s[-1]`, `s[i + 1]`): the sequence and
    the bound `len(s)` must exceed, the largest constant one per sequence (keyed by the guard's source)."""
    bounds: dict[str, tuple[ast.expr, ast.expr | int]] = {}
    for root in nodes:
        for node in ast.walk(root):
            if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name | ast.Attribute):
                continue
            bound = _needed_length(node.slice)
            if bound is None:
                continue
            key = ast.unparse(node.value) + ("" if isinstance(bound, int) else f"|{ast.unparse(bound)}")
            old = bounds.get(key)
            if old is None or (isinstance(bound, int) and isinstance(old[1], int) and bound > old[1]):
                bounds[key] = (node.value, bound)
    return {
        key: (seq, ast.Constant(bound) if isinstance(bound, int) else bound) for key, (seq, bound) in bounds.items()
    }


def _guarded_body(stmt: ast.stmt, cond: ast.expr) -> list[ast.AST]:
    """The statements a header condition guards (an if's or a while's body), without nested definitions."""
    if not isinstance(stmt, ast.If | ast.While) or stmt.test is not cond:
        return []
    return [s for s in stmt.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]


def length_guards(env: Env) -> Iterator[Edit]:
    """Missing length check: an index that can run past the end of a short sequence (an IndexError on short
    input). `c` -> `len(s) > k and c`, with the term placed just before the first operand of an `and` chain that
    indexes `s`; when only the guarded body indexes `s`, `c and len(s) > k`. Conditions are the boolean
    positions (`ops.conditions`) and every other `and` chain of the statement (`return a[0] and a[1]`)."""
    found = conditions(env)
    seen = {id(cond) for cond, _ in found}
    for node, root in env.of_type(ast.BoolOp):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and id(node) not in seen:
            found.append((node, root))
    for cond, root in found:
        measured = {ast.unparse(n.args[0]) for n in ast.walk(cond) if isinstance(n, ast.Call) and _is_len(n) and n.args}
        in_condition = indexed_lengths([cond])
        in_body = indexed_lengths(_guarded_body(env.target.stmt, cond))
        guards = [*in_condition.items(), *((k, v) for k, v in in_body.items() if k not in in_condition)]
        values = cond.values if isinstance(cond, ast.BoolOp) and isinstance(cond.op, ast.And) else [cond]
        count = 0
        for key, (seq, bound) in guards:
            # A condition that already measures the sequence has its guard; another bound is a constant edit.
            if count >= LOCAL_LIMIT or ast.unparse(seq) in measured:
                continue
            if isinstance(bound, ast.Name) and env.scope.kind(bound.id) != "num":
                continue  # `d[key]`: a lookup, not a position
            count += 1
            length = ast.Call(func=name_node("len"), args=[seq], keywords=[])
            term = ast.Compare(left=length, ops=[ast.Gt()], comparators=[bound])
            if key in in_condition:
                first = next(i for i, v in enumerate(values) if key in indexed_lengths([v]))
                chain = [*values[:first], term, *values[first:]]
            else:
                chain = [*values, term]
            yield Edit("length_guard", LENGTH_TIER, root, cond, ast.BoolOp(op=ast.And(), values=chain))


def _is_len(node: ast.Call) -> bool:
    """A call of the builtin `len`."""
    return isinstance(node.func, ast.Name) and node.func.id == "len"


def returns(env: Env) -> Iterator[Edit]:
    """`return x` -> `return [x]` / `return None`; `return [x]` -> `return x`; `return []` -> `return [v]`."""
    stmt = env.target.stmt
    if env.target.header is not None or not isinstance(stmt, ast.Return):
        return
    value = stmt.value
    if value is None or (isinstance(value, ast.Constant) and value.value is None):
        for var in env.scope.variables[:LOCAL_LIMIT]:
            yield Edit("return", 3, stmt, stmt, ast.Return(value=name_node(var)))
        return
    if isinstance(value, ast.List) and len(value.elts) == 1:
        yield Edit("return", 1, stmt, value, value.elts[0])
    elif not isinstance(value, ast.List):
        yield Edit("return", 1, stmt, value, ast.List(elts=[value], ctx=ast.Load()))
    yield Edit("return", 2, stmt, value, ast.Constant(None))
    if isinstance(value, ast.List) and not value.elts:
        for var in env.scope.variables[:LOCAL_LIMIT]:
            yield Edit("return", 2, stmt, value, ast.List(elts=[name_node(var)], ctx=ast.Load()))
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        for var in env.scope.variables[:LOCAL_LIMIT]:
            yield Edit("return", 3, stmt, value, ast.UnaryOp(op=ast.Not(), operand=name_node(var)))


def accumulators(env: Env) -> Iterator[Edit]:
    """Lost running extreme: `t = e` -> `t = max(t, e)` / `min(t, e)`; clamp `t = max(0, e)`.

    The target may be an element or an attribute (`spans[-1][1] = end` -> `= max(spans[-1][1], end)`,
    `self.best = score`): a running extreme kept in a container or on an object loses it the same way.
    """
    stmt = env.target.stmt
    if env.target.header is not None or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return
    target = stmt.targets[0]
    if not isinstance(target, (ast.Name, ast.Subscript, ast.Attribute)):
        return
    if is_literal_seq(stmt.value) or isinstance(stmt.value, ast.Constant):
        return
    for func in ("max", "min"):
        current = copy.deepcopy(target)
        for node in ast.walk(current):
            if hasattr(node, "ctx"):
                node.ctx = ast.Load()
        call = ast.Call(func=name_node(func), args=[current, stmt.value], keywords=[])
        yield Edit("accumulate", 2, stmt, stmt.value, call)
    clamp = ast.Call(func=name_node("max"), args=[ast.Constant(0), stmt.value], keywords=[])
    yield Edit("accumulate", 3, stmt, stmt.value, clamp)


#: String methods: a value they are called on, or one passed to `re.*`, is expected to be a string.
_STR_METHODS = frozenset(
    {"split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "startswith", "endswith", "replace"}
    | {"encode", "decode", "format", "join", "partition", "rpartition", "find", "rfind", "isdigit", "isalpha"}
)
#: Statements an early exit never goes before (a guard before `return x` is fine: x may be the absent value).
_NO_GUARD = (ast.Break, ast.Continue, ast.Raise, ast.Pass, ast.Global, ast.Nonlocal)
_RE_FUNCS = frozenset({"sub", "subn", "match", "fullmatch", "search", "findall", "finditer", "split"})


def early_returns(env: Env) -> Iterator[Edit]:
    """Missing early exit before a statement that cannot handle a value: the value is absent (None) or of a
    type the statement does not expect. Inserts `if v is None: return <empty>` (the empty form of what the
    function returns elsewhere: `[]`, `{}`, `''`, or None) and `if not isinstance(v, T): return v` (pass a
    value through unchanged when it already is not the type the code parses, e.g. a number given to a
    string parser)."""
    stmt = env.target.stmt
    if env.target.header is not None or not env.target.functions or isinstance(stmt, _NO_GUARD):
        return
    if is_docstring(stmt):
        return
    func = env.target.functions[0]
    empties = _empty_results(func)
    maybe_none = _maybe_none(func)
    # A divisor that may be zero: `if not d: return <empty>` before `a / d` (a ratio of nothing is no ratio).
    for divisor in _divisors(stmt, env)[:LOCAL_LIMIT]:
        is_zero = ast.UnaryOp(op=ast.Not(), operand=name_node(divisor))
        for value in empties:
            guard = ast.If(test=is_zero, body=[ast.Return(value=value)], orelse=[])
            yield Edit("early_return", 2, stmt, stmt, guard, "insert_before")
    # A sequence whose first or last item is read may be empty: `if not s: return <empty>` before `s[0]`.
    for seq in _indexed_ends(stmt, env)[:LOCAL_LIMIT]:
        is_empty = ast.UnaryOp(op=ast.Not(), operand=name_node(seq))
        for value in empties:
            guard = ast.If(test=is_empty, body=[ast.Return(value=value)], orelse=[])
            yield Edit("early_return", 2, stmt, stmt, guard, "insert_before")
    for name in _read_names(stmt, env)[:LOCAL_LIMIT]:
        is_none = ast.Compare(left=name_node(name), ops=[ast.Is()], comparators=[ast.Constant(None)])
        for value in empties if name in maybe_none else []:
            guard = ast.If(test=is_none, body=[ast.Return(value=value)], orelse=[])
            yield Edit("early_return", 2, stmt, stmt, guard, "insert_before")
        # Only a parameter comes from callers that may pass another type.
        for type_expr in _expected_types(stmt, name) if name in env.scope.params else []:
            guard = ast.If(test=_not_instance(name, type_expr), body=[ast.Return(value=name_node(name))], orelse=[])
            yield Edit("early_return", 2, stmt, stmt, guard, "insert_before")


def _divisors(stmt: ast.stmt, env: Env) -> list[str]:
    """Variables the statement divides by (`/`, `//`, `%` with a name on the right), in order."""
    names: list[str] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
            right = node.right
            usable = isinstance(right, ast.Name) and right.id in env.scope.variables and right.id not in names
            if usable and env.scope.kind(right.id) in (None, "num"):  # type: ignore[attr-defined]
                names.append(right.id)  # type: ignore[attr-defined]
    return names


def _indexed_ends(stmt: ast.stmt, env: Env) -> list[str]:
    """Variables whose first or last item the statement reads (`s[0]`, `xs[-1]`), in order."""
    names: list[str] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            name = node.value.id
            end = int_value(node.slice) in (0, -1)
            if end and name in env.scope.variables and name not in names and env.scope.kind(name) != "num":
                names.append(name)
    return names


#: Mined (bench/edit_classes.py --all): `if <bad input>: raise E(...)` is 30 of 1,880 small-fix edits in 11 of
#: 25 projects. Only tried when the BRT expects an exception (`MutationContext.raises`).
RAISE_TIER = 2


def raise_guards(env: Env) -> Iterator[Edit]:
    """Missing input check, when the test expects the call to raise `E`: `if p is None: raise E(...)` and
    `if not isinstance(p, T): raise E(...)` before a statement, for a parameter `p` it reads (`T` as in
    `early_returns`: what the statement needs `p` to be). `E` is a builtin exception or a name of the module."""
    stmt = env.target.stmt
    if not env.ctx.raises or env.target.header is not None or not env.target.functions:
        return
    if isinstance(stmt, _NO_GUARD) or is_docstring(stmt):
        return
    known = [e for e in env.ctx.raises if e in env.ctx.callables or _builtin_exception(e)]
    for name in [n for n in _read_names(stmt, env) if n in env.scope.params][:LOCAL_LIMIT]:
        is_none = ast.Compare(left=name_node(name), ops=[ast.Is()], comparators=[ast.Constant(None)])
        tests = [is_none, *(_not_instance(name, t) for t in _expected_types(stmt, name))]
        for exc in known:
            # The message names the parameter and shows the value, as a maintainer would write it.
            raise_stmt = ast.parse(f'raise {exc}(f"invalid {name}: {{{name}!r}}")').body[0]
            for test in tests:
                guard = ast.If(test=test, body=[raise_stmt], orelse=[])
                yield Edit("raise_guard", RAISE_TIER, stmt, stmt, guard, "insert_before")


def _not_instance(name: str, type_expr: ast.expr) -> ast.expr:
    """`not isinstance(name, T)`."""
    check = ast.Call(func=name_node("isinstance"), args=[name_node(name), type_expr], keywords=[])
    return ast.UnaryOp(op=ast.Not(), operand=check)


def _builtin_exception(name: str) -> bool:
    """Is `name` a builtin exception class (not any builtin, such as `int`)?"""
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


#: Calls that return None for "not found".
_MAYBE_NONE_CALLS = frozenset({"get", "getattr", "match", "search", "fullmatch", "find_spec", "pop"})


def _maybe_none(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that may hold None: parameters defaulting to None, locals assigned from a lookup that returns
    None when nothing is found (`d.get(k)`, `re.match(...)`), and names the function compares with None."""
    names: set[str] = set()
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        if isinstance(default, ast.Constant) and default.value is None:
            names.add(arg.arg)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if isinstance(kw_default, ast.Constant) and kw_default.value is None:
            names.add(arg.arg)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            call = node.value
            if isinstance(call, ast.Call):
                callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
                if callee in _MAYBE_NONE_CALLS:
                    names.add(node.targets[0].id)
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Name)
            and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        ):
            names.add(node.left.id)
    return names


def _read_names(stmt: ast.stmt, env: Env) -> list[str]:
    """Parameters and locals the statement reads, in source order."""
    names: list[str] = []
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in env.scope.assigned
            and node.id not in env.scope.callables
            and node.id not in names
        ):
            names.append(node.id)
    return names


def _own_returns(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Return]:
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _shape(value: ast.AST | None) -> str:
    """The empty literal of the value's container or string shape, or "" when unknown."""
    if isinstance(value, (ast.List, ast.ListComp)):
        return "[]"
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "{}"
    if isinstance(value, ast.Tuple):
        return "()"
    if isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return "''"
    return ""


def _empty_results(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The empty value of each shape the function returns (most common first), then None. A returned
    local has the shape of the values assigned to it."""
    assigned: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            shape = _shape(node.value)
            if shape:
                assigned.setdefault(node.targets[0].id, shape)
    shapes: dict[str, int] = {}
    for ret in _own_returns(func):
        value = ret.value
        shape = assigned.get(value.id, "") if isinstance(value, ast.Name) else _shape(value)
        if shape:
            shapes[shape] = shapes.get(shape, 0) + 1
    ordered = sorted(shapes, key=lambda s: -shapes[s])
    out: list[ast.expr] = [ast.parse(s, mode="eval").body for s in ordered]
    return [*out, ast.Constant(None)]


def _expected_types(stmt: ast.stmt, name: str) -> list[ast.expr]:
    """Types the statement needs `name` to be: a string when it calls string methods on it or passes it to re."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        on_name = isinstance(func.value, ast.Name) and func.value.id == name
        if on_name and func.attr in _STR_METHODS:
            found.setdefault("str", name_node("str"))
        regex_call = isinstance(func.value, ast.Name) and func.value.id == "re" and func.attr in _RE_FUNCS
        if regex_call and any(isinstance(a, ast.Name) and a.id == name for a in node.args[1:]):
            found.setdefault("str", name_node("str"))
    return list(found.values())


#: Conditions tried per statement by loop_exits (the function's own, nearest first).
EXIT_CONDITION_LIMIT = 4


def loop_exits(env: Env) -> Iterator[Edit]:
    """Missing early exit in a loop: insert `if c: continue` / `if c: break` (and the negated test) before a
    statement of the loop body, where c is a condition the function already tests elsewhere. Guards found by
    mining small fixes are built from the function's own vocabulary, so only its conditions are tried."""
    stmt = env.target.stmt
    if env.target.header is not None or not env.target.loops or not env.target.functions:
        return
    if is_docstring(stmt) or isinstance(stmt, _JUMPS):
        return
    loop = env.target.loops[0]
    if not any(s is stmt for s in getattr(loop, "body", [])):
        return  # only directly in the loop body: deeper blocks have their own exits to mis-order
    for test in _function_conditions(env.target.functions[0], stmt)[:EXIT_CONDITION_LIMIT]:
        for jump in (ast.Continue(), ast.Break()):
            for cond in (test, _negated(test)):
                guard = ast.If(test=cond, body=[jump], orelse=[])
                yield Edit("loop_exit", LATE_TIER, stmt, stmt, guard, "insert_before")


def _function_conditions(func: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt) -> list[ast.expr]:
    """Distinct if/while/ternary/comprehension tests of the function and their and/or operands (not the
    statement's own), nearest to the statement first."""
    found: dict[str, tuple[int, ast.expr]] = {}
    line = stmt.lineno
    for node in ast.walk(func):
        tests: list[ast.expr] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        # The operands of `a and b` are conditions of the function too (a guard often tests one of them).
        tests += [v for t in tests if isinstance(t, ast.BoolOp) for v in t.values]
        for test in tests:
            if getattr(test, "lineno", line) == line:
                continue
            key = ast.dump(test)
            distance = abs(getattr(test, "lineno", line) - line)
            if key not in found or distance < found[key][0]:
                found[key] = (distance, test)
    return [test for _, test in sorted(found.values(), key=lambda pair: pair[0])]


_INVERSE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def _negated(test: ast.expr) -> ast.expr:
    """`not test`, written as a person would: `x is not None` rather than `not x is None`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE:
        return ast.Compare(left=test.left, ops=[_INVERSE[type(test.ops[0])]()], comparators=test.comparators)
    return ast.UnaryOp(op=ast.Not(), operand=test)


def simultaneous_assignments(env: Env) -> Iterator[Edit]:
    """`a = b` then `b = a + b` -> `a, b = b, a + b`: the second assignment meant the value `a` had before.

    Tried at either statement of the pair: two consecutive single-target assignments to different targets,
    where the second's value reads the first's target and the first's value reads the second's (a swap or a
    step of a recurrence, not a computation that builds on the first result).
    """
    block, index = env.target.block, env.target.index
    if env.target.header is not None:
        return
    for first_at in (index, index - 1):
        if first_at < 0 or first_at + 1 >= len(block):
            continue
        first, second = block[first_at], block[first_at + 1]
        merged = _merged_assignment(first, second)
        if merged is not None:
            yield Edit("simultaneous", 3, second, first, merged, "merge_next")


def _merged_assignment(first: ast.stmt, second: ast.stmt) -> ast.Assign | None:
    """`x, y = e1, e2` for `x = e1; y = e2` when e2 reads x and e1 reads y; else None."""
    pair = (first, second)
    if not all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in pair):
        return None
    assert isinstance(first, ast.Assign) and isinstance(second, ast.Assign)
    x, y = first.targets[0], second.targets[0]
    simple = (ast.Name, ast.Attribute, ast.Subscript)
    if not isinstance(x, simple) or not isinstance(y, simple) or _key(x) == _key(y):
        return None
    if not _reads(second.value, x) or not _reads(first.value, y):
        return None
    targets = ast.Tuple(elts=[x, y], ctx=ast.Store())
    values = ast.Tuple(elts=[first.value, second.value], ctx=ast.Load())
    return ast.copy_location(ast.Assign(targets=[targets], value=values, type_comment=None), first)


def _key(node: ast.expr) -> str:
    """An expression's identity regardless of load/store context."""
    return ast.dump(node).replace("ctx=Store()", "ctx=Load()")


def _reads(expr: ast.expr, target: ast.expr) -> bool:
    """Whether `expr` reads the value that `target` names."""
    wanted = _key(target)
    return any(isinstance(node, ast.expr) and _key(node) == wanted for node in ast.walk(expr))


def flag_resets(env: Env) -> Iterator[Edit]:
    """A flag that enables a branch and is never cleared there: `if start and c: ...` -> `...; start = False`.

    For a name the function sets to a bool literal and the enclosing `if` tests (as `start` or `not start`),
    where that branch never assigns it: the assignment that turns the branch off again is inserted after the
    target statement (the first-item-only flags: separators, capitals, headers).
    """
    stmt = env.target.stmt
    if env.target.header is not None or not env.target.functions or isinstance(stmt, (ast.Return, ast.Raise)):
        return
    function = env.target.functions[0]
    branch = next(
        (n for n in ast.walk(function) if isinstance(n, ast.If) and any(s is stmt for s in n.body)),
        None,
    )
    if branch is None:
        return
    flags = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    cleared = {
        node.id
        for body_stmt in branch.body
        for node in ast.walk(body_stmt)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    for name, negated in _tested_names(branch.test):
        if name in flags and name not in cleared:
            new = assign(ast.Name(id=name, ctx=ast.Store()), ast.Constant(value=negated))
            yield Edit("flag_reset", 3, stmt, stmt, new, "insert_after")


def _tested_names(test: ast.expr) -> list[tuple[str, bool]]:
    """Names a condition tests for truth, directly or in an `and` chain: (name, whether under `not`)."""
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out: list[tuple[str, bool]] = []
    for term in terms:
        if isinstance(term, ast.Name):
            out.append((term.id, False))
        elif isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.Not) and isinstance(term.operand, ast.Name):
            out.append((term.operand.id, True))
    return out

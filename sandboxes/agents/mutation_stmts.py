"""Statement-shaped mutation templates: returns, None guards, accumulators, missing updates, deletion."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from sandboxes.agents.mutation_exprs import LATE_TIER, LOCAL_LIMIT, name_node
from sandboxes.agents.mutation_ops import Edit, Env, assign, conditions, is_docstring, is_literal_seq
from sandboxes.agents.mutation_scope import enclosing_root, loop_facts

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
    """Lost running extreme: `t = e` -> `t = max(t, e)` / `min(t, e)`; clamp `t = max(0, e)`."""
    stmt = env.target.stmt
    if env.target.header is not None or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return
    target = stmt.targets[0]
    if not isinstance(target, ast.Name) or is_literal_seq(stmt.value) or isinstance(stmt.value, ast.Constant):
        return
    for func in ("max", "min"):
        call = ast.Call(func=name_node(func), args=[name_node(target.id), stmt.value], keywords=[])
        yield Edit("accumulate", 2, stmt, stmt.value, call)
    clamp = ast.Call(func=name_node("max"), args=[ast.Constant(0), stmt.value], keywords=[])
    yield Edit("accumulate", 3, stmt, stmt.value, clamp)

"""Operand-level mutation templates: names, attributes, arguments, builtins, None guards and returns."""

from __future__ import annotations

import ast
import builtins as builtins_module
import copy
import re
from collections.abc import Iterator

from agents.repair.mutation.ops import call_name, is_literal_seq
from agents.repair.mutation.scope import enclosing_root, expr_kind, subscript_shapes
from agents.repair.mutation.types import Edit, Env

#: How many replacement names one occurrence tries, nearest use first.
NAME_LIMIT = 12
#: How many locals the broader (tier 2+) templates combine with.
LOCAL_LIMIT = 6
#: Tier of the broad templates that apply to almost every line (argument lists, two-name renames, empty
#: guards): after every older family, so they never push a likelier candidate out of a location's budget.
LATE_TIER = 4

_BUILTIN_SWAPS: dict[str, tuple[str, ...]] = {
    "any": ("all",),
    "all": ("any",),
    "min": ("max",),
    "max": ("min",),
    "sorted": ("reversed",),
    "reversed": ("sorted",),
    "floor": ("ceil",),
    "ceil": ("floor",),
    "round": ("int",),
    "int": ("round",),
    "bisect_left": ("bisect_right",),
    "bisect_right": ("bisect_left",),
    "nlargest": ("nsmallest",),
    "nsmallest": ("nlargest",),
    "sum": ("len",),
}
# Methods commonly confused with one another, independent of what the module happens to use.
_METHOD_SWAPS: dict[str, tuple[str, ...]] = {
    "append": ("extend", "add", "appendleft"),
    "extend": ("append", "update"),
    "add": ("append", "update"),
    "update": ("add", "extend"),
    "appendleft": ("append",),
    "pop": ("popleft", "remove"),  # by position where by value was meant, and back
    "popleft": ("pop",),
    "remove": ("discard", "pop"),
    "discard": ("remove",),
    "keys": ("values", "items"),
    "values": ("keys", "items"),
    "items": ("keys", "values"),
    # Letter case: one family, each confused with the others.
    "lower": ("upper", "casefold", "capitalize", "title"),
    "upper": ("lower", "capitalize", "title"),
    "capitalize": ("title", "upper", "lower"),
    "title": ("capitalize", "upper", "lower"),
    "casefold": ("lower",),
    "swapcase": ("upper", "lower"),
    # Character classes.
    "isdigit": ("isnumeric", "isdecimal", "isalnum"),
    "isnumeric": ("isdigit",),
    "isdecimal": ("isdigit",),
    "isalpha": ("isalnum",),
    "isalnum": ("isalpha", "isdigit"),
    "startswith": ("endswith",),
    "endswith": ("startswith",),
    "find": ("rfind", "index"),
    "rfind": ("find",),
    "index": ("rindex", "find"),
    "rindex": ("index",),
    "strip": ("lstrip", "rstrip"),
    "lstrip": ("rstrip", "strip"),
    "rstrip": ("lstrip", "strip"),
    "split": ("rsplit",),
    "rsplit": ("split",),
    "issubset": ("issuperset",),
    "issuperset": ("issubset",),
    "union": ("intersection", "difference"),
    "intersection": ("union", "difference"),
    "difference": ("symmetric_difference", "intersection"),
    "sort": ("reverse",),
    "reverse": ("sort",),
}


def name_node(name: str, ctx: ast.expr_context | None = None) -> ast.Name:
    """A Name node (Load unless told)."""
    return ast.Name(id=name, ctx=ctx or ast.Load())


def _comp_targets(env: Env) -> set[int]:
    return {
        id(n)
        for node, _ in env.of_type(ast.comprehension)
        if isinstance(node, ast.comprehension)
        for n in ast.walk(node.target)
    }


def _pool(env: Env, node: ast.AST, exclude: str = "") -> list[str]:
    """Variables a replacement at node may use: its comprehensions' names, then the scope's, nearest first."""
    local = env.comp_names(node)
    names = local + [n for n in env.scope.variables if n not in local]
    return [n for n in names if n != exclude]


def _is_variable(env: Env, node: ast.Name) -> bool:
    return node.id in env.scope.variables or node.id in env.comp_names(node)


def names(env: Env) -> Iterator[Edit]:
    """Wrong variable: each variable occurrence -> another variable in scope (stores only to locals)."""
    skip = _comp_targets(env)
    for node, root in env.of_type(ast.Name):
        assert isinstance(node, ast.Name)
        if id(node) in skip or env.is_called(node) or not _is_variable(env, node):
            continue
        if isinstance(node.ctx, ast.Load):
            for other in _pool(env, node, node.id)[:NAME_LIMIT]:
                tier = 1 if env.scope.compatible(node.id, other) else 3
                yield Edit("name", tier, root, node, name_node(other))
        elif isinstance(node.ctx, ast.Store):
            pool = [n for n in _pool(env, node, node.id) if n in env.scope.assigned]
            for other in pool[:LOCAL_LIMIT]:
                yield Edit("name", 2, root, node, name_node(other, ast.Store()))


def attributes(env: Env) -> Iterator[Edit]:
    """Wrong attribute: `.foo` -> another attribute of the same base or module, or a confusable method."""
    by_base = dict(env.ctx.attrs_by_base)
    for node, root in env.of_type(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if node.attr.startswith("__"):
            continue
        base = node.value.id if isinstance(node.value, ast.Name) else ""
        pairs = list(_METHOD_SWAPS.get(node.attr, ()))
        if env.is_called(node):
            # Calls on modules and classes (math.floor) only get the confusable pairs.
            module_pool = [] if base in env.scope.callables else list(env.ctx.method_names)
            pool = pairs + list(by_base.get(base, ())) + module_pool
            if _BUILTIN_SWAPS.get(node.attr):
                continue  # the builtin operator covers it
        else:
            pool = list(by_base.get(base, ())) + list(env.ctx.data_attributes)
        seen = {node.attr}
        for attr in pool:
            if attr in seen or attr.startswith("__"):
                continue
            seen.add(attr)
            yield Edit("attribute", 1, root, node, ast.Attribute(value=node.value, attr=attr, ctx=node.ctx))
            if len(seen) > NAME_LIMIT:
                break


def swaps(env: Env) -> Iterator[Edit]:
    """Swapped arguments `f(a, b)` -> `f(b, a)`; swapped operands of non-commutative operators; swapped
    indices `m[i, j]` -> `m[j, i]` and `m[i][j]` -> `m[j][i]`; swapped components of a tuple value."""
    for node, root in env.nodes:
        if isinstance(node, ast.Call):
            args = node.args
            if any(isinstance(a, ast.Starred) for a in args):
                continue
            pairs = [(i, j) for i in range(len(args)) for j in range(i + 1, len(args))]
            if len(args) > 4:
                pairs = [(i, i + 1) for i in range(len(args) - 1)]
            for i, j in pairs:
                swapped = list(args)
                swapped[i], swapped[j] = args[j], args[i]
                yield Edit("swap", 1, root, node, ast.Call(func=node.func, args=swapped, keywords=node.keywords))
        elif isinstance(node, ast.BinOp):
            numeric_const = any(isinstance(x, ast.Constant) for x in (node.left, node.right))
            if isinstance(node.op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)):
                # Commutative for numbers; `a + b` still matters for strings and lists.
                if isinstance(node.op, ast.Add) and not numeric_const:
                    yield Edit("swap", 2, root, node, ast.BinOp(left=node.right, op=node.op, right=node.left))
                continue
            yield Edit("swap", 1, root, node, ast.BinOp(left=node.right, op=node.op, right=node.left))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            elts = node.slice.elts
            index = ast.Tuple(elts=[elts[1], elts[0]], ctx=ast.Load())
            yield Edit("swap", 2, root, node, ast.Subscript(value=node.value, slice=index, ctx=node.ctx))
        elif (swapped_index := _swapped_nested_index(node)) is not None:
            yield Edit("swap", 2, root, node, swapped_index)
        elif isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and 2 <= len(node.elts) <= 4:
            # Swapped components of a tuple value: a sort key `(name, -score)` for `(-score, name)`, a pair
            # returned in the wrong order. Not a subscript's index tuple (handled above) nor a literal table.
            parent = env.parent(node)
            if isinstance(parent, ast.Subscript) and parent.slice is node:
                continue
            if all(isinstance(e, ast.Constant) for e in node.elts):
                continue
            count = len(node.elts)
            for i, j in [(a, b) for a in range(count) for b in range(a + 1, count)]:
                elts = list(node.elts)
                elts[i], elts[j] = elts[j], elts[i]
                yield Edit("swap", 2, root, node, ast.Tuple(elts=elts, ctx=ast.Load()))


def slice_mirrors(env: Env) -> Iterator[Edit]:
    """A slice cut from the wrong end: `s[k:]` <-> `s[:-k]`, `s[:k]` <-> `s[-k:]`, the bound counted from
    the other end in place, `s[k:]` <-> `s[-k:]`, `s[:k]` <-> `s[:-k]` (one bound, no step), and cut from both
    ends, `s[k:]` / `s[:-k]` -> `s[k:-k]`.

    `prefix[1:]` drops the first item where `prefix[:-1]` drops the last; `items[n:]` skips n items where
    `items[-n:]` keeps the last n.
    """
    for node, root in env.of_type(ast.Subscript):
        assert isinstance(node, ast.Subscript)
        bounds = node.slice
        if not isinstance(bounds, ast.Slice) or bounds.step is not None:
            continue
        if (bounds.lower is None) == (bounds.upper is None):
            continue
        bound = bounds.lower if bounds.lower is not None else bounds.upper
        assert bound is not None
        if isinstance(bound, ast.Constant) and bound.value == 0:
            continue  # `s[0:]` is all of s; `s[:-0]` would be none of it
        flipped: ast.expr = (
            bound.operand
            if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub)
            else ast.UnaryOp(op=ast.USub(), operand=bound)
        )
        lower = bounds.lower is not None
        for other_end in (True, False):
            side = (not lower) if other_end else lower
            mirrored = ast.Slice(lower=flipped) if side else ast.Slice(lower=None, upper=flipped)
            yield Edit("slice_mirror", 3, root, node, ast.Subscript(value=node.value, slice=mirrored, ctx=node.ctx))
        # Both ends: `s[1:]` -> `s[1:-1]`, `s[:-1]` -> `s[1:-1]` (a trim that only cut one end).
        negative = isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub)
        if lower != negative:  # a count from the start below, from the end above: never `s[-k:k]`
            both = ast.Slice(lower=bound, upper=flipped) if lower else ast.Slice(lower=flipped, upper=bound)
            yield Edit("slice_mirror", 3, root, node, ast.Subscript(value=node.value, slice=both, ctx=node.ctx))


def _literal(node: ast.expr) -> bool:
    """A constant, or a negated one (`-1`)."""
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def _swapped_nested_index(node: ast.AST) -> ast.Subscript | None:
    """`m[j][k]` -> `m[k][j]`: the two indices of a nested subscript (rows and columns) exchanged.

    Only plain indices (names, constants, simple arithmetic on them), never slices, and only two different ones.
    """
    if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Subscript):
        return None
    inner, outer_index, inner_index = node.value, node.slice, node.value.slice
    simple = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp)
    if not isinstance(outer_index, simple) or not isinstance(inner_index, simple):
        return None
    if ast.dump(outer_index) == ast.dump(inner_index) or (_literal(outer_index) and _literal(inner_index)):
        return None  # the same index twice, or a fixed cell of a table (`row[0][1]`), not rows against columns
    swapped_inner = ast.Subscript(value=inner.value, slice=outer_index, ctx=ast.Load())
    return ast.Subscript(value=swapped_inner, slice=inner_index, ctx=node.ctx)


def _shape_for(sibling: ast.AST, name: ast.Name) -> ast.expr | None:
    """`name` wearing the sibling's shape: y[S] -> x[S], y.a -> x.a, y + 1 -> x + 1."""
    if isinstance(sibling, ast.Subscript) and isinstance(sibling.value, ast.Name):
        return ast.Subscript(value=name, slice=sibling.slice, ctx=ast.Load())
    if isinstance(sibling, ast.Attribute) and isinstance(sibling.value, ast.Name):
        return ast.Attribute(value=name, attr=sibling.attr, ctx=ast.Load())
    if (
        isinstance(sibling, ast.BinOp)
        and isinstance(sibling.left, ast.Name)
        and isinstance(sibling.right, ast.Constant)
    ):
        return ast.BinOp(left=name, op=sibling.op, right=sibling.right)
    return None


def similar_expressions(env: Env) -> Iterator[Edit]:
    """Copy a sibling's shape (`f(a[1:], b)` -> `f(a[1:], b[1:])`), reuse a similar expression of the
    statement for an assignment target or subscript, apply the def's slices to a name, drop a slice."""
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        for arg in node.args:
            if not (isinstance(arg, ast.Name) and _is_variable(env, arg)):
                continue
            for sibling in node.args:
                shaped = None if sibling is arg else _shape_for(sibling, arg)
                if shaped is not None:
                    yield Edit("similar", 1, root, arg, shaped)
    stmt = env.target.stmt
    if env.target.header is None:
        subscripts = [n for n, _ in env.of_type(ast.Subscript, ast.Attribute)]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        for target in targets:
            if not isinstance(target, (ast.Subscript, ast.Attribute)):
                continue
            for other in subscripts:
                if type(other) is type(target) and ast.dump(other) != ast.dump(target) and other is not target:
                    copy = ast.Subscript if isinstance(other, ast.Subscript) else ast.Attribute
                    fields = {f: getattr(other, f) for f in other._fields if f != "ctx"}
                    yield Edit("similar", 1, stmt, target, copy(**fields, ctx=ast.Store()))
        for node, root in env.of_type(ast.Subscript):
            assert isinstance(node, ast.Subscript)
            if not isinstance(node.ctx, ast.Load):
                continue
            for other in subscripts:
                if (
                    isinstance(other, ast.Subscript)
                    and ast.dump(other.value) != ast.dump(node.value)
                    and ast.dump(other) != ast.dump(node)
                ):
                    yield Edit(
                        "similar",
                        2,
                        root,
                        node,
                        ast.Subscript(value=other.value, slice=other.slice, ctx=ast.Load()),
                    )
    yield from _slice_shapes(env)


def _slice_shapes(env: Env) -> Iterator[Edit]:
    shapes = subscript_shapes(enclosing_root(env.target, _module_of(env)))[:LOCAL_LIMIT]
    stmt = env.target.stmt
    sites: list[tuple[ast.AST, ast.AST]] = []
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and env.target.header is not None:
        sites.append((stmt.iter, stmt.iter))
    elif isinstance(stmt, (ast.Return, ast.Assign)) and stmt.value is not None:
        sites.append((stmt.value, stmt))
    sites += [(a, r) for n, r in env.of_type(ast.Call) if isinstance(n, ast.Call) for a in n.args]
    for site, root in sites:
        if isinstance(site, ast.Name) and _is_variable(env, site):
            for shape in shapes:
                yield Edit("similar", 2, root, site, ast.Subscript(value=site, slice=shape, ctx=ast.Load()))
    for node, root in env.of_type(ast.Subscript):
        assert isinstance(node, ast.Subscript)
        if isinstance(node.slice, ast.Slice) and isinstance(node.ctx, ast.Load):
            yield Edit("similar", 2, root, node, node.value)


def _module_of(env: Env) -> ast.Module:
    return env.ctx.tree if env.ctx.tree is not None else ast.Module(body=[], type_ignores=[])


def builtins(env: Env) -> Iterator[Edit]:
    """any<->all, min<->max, sorted<->reversed, floor<->ceil...; unwrap `f(x)` -> `x`; `x` -> `len(x)`."""
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        func = node.func
        name = call_name(node)
        shadowed = isinstance(func, ast.Name) and func.id in env.scope.variables
        for alt in _BUILTIN_SWAPS.get(name or "", ()) if not shadowed else ():
            new_func: ast.expr = (
                name_node(alt)
                if isinstance(func, ast.Name)
                else ast.Attribute(value=func.value, attr=alt, ctx=ast.Load())  # type: ignore[attr-defined]
            )
            yield Edit("builtin", 0, root, func, new_func)
        statement_call = isinstance(env.target.stmt, ast.Expr) and env.target.stmt.value is node
        if (
            len(node.args) == 1
            and not node.keywords
            and not statement_call
            and not isinstance(node.args[0], ast.Starred)
        ):
            yield Edit("builtin", 1 if name in ("len", "abs", "list", "int") else 2, root, node, node.args[0])
    for node, root in env.nodes:
        parent = env.parent(node)
        in_range = isinstance(parent, ast.Call) and call_name(parent) == "range" and any(a is node for a in parent.args)
        # A container where its size was meant: `range(xs)`, `i < xs`.
        sized = isinstance(parent, ast.Compare) and all(
            isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)) for op in parent.ops
        )
        if (
            (in_range or sized)
            and isinstance(node, ast.Name)
            and _is_variable(env, node)
            and env.scope.kind(node.id) != "num"
        ):
            yield Edit("builtin", 2, root, node, ast.Call(func=name_node("len"), args=[node], keywords=[]))


def order_wraps(env: Env) -> Iterator[Edit]:
    """A sequence consumed in the wrong order: `''.join(xs)` -> `''.join(reversed(xs))` / `sorted(xs)`;
    `ordered = xs` -> `ordered = sorted(xs)`.

    The mirror of the builtin unwrap: a list variable passed on as a call's argument, or iterated by a `for`
    header, goes through `reversed` or `sorted` first (digits collected least significant first, items
    gathered in arrival order where an order was meant). Only names the function knows as sequences.
    """
    header = env.target.header
    iterated = {id(env.target.stmt.iter)} if header is not None and isinstance(env.target.stmt, ast.For) else set()
    stmt = env.target.stmt
    # `ordered = nums`: the value is a sequence when the name it is stored in is one.
    stored_seq = (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and env.scope.kind(stmt.targets[0].id) == "seq"
    )
    for node, root in env.of_type(ast.Name):
        assert isinstance(node, ast.Name)
        if not isinstance(node.ctx, ast.Load) or not _is_variable(env, node):
            continue
        if env.scope.kind(node.id) != "seq" and not (stored_seq and getattr(stmt, "value", None) is node):
            continue
        parent = env.parent(node)
        argument = isinstance(parent, ast.Call) and any(a is node for a in parent.args)
        if argument and isinstance(parent, ast.Call) and call_name(parent) in ("reversed", "sorted", "len", "set"):
            continue
        # A whole assigned or returned value keeps its type: sorted() gives a list, reversed() an iterator.
        whole = header is None and isinstance(stmt, (ast.Assign, ast.Return)) and stmt.value is node
        if not argument and not whole and id(node) not in iterated:
            continue
        for func in ("sorted",) if whole else ("reversed", "sorted"):
            if func not in env.scope.variables:
                yield Edit("order_wrap", 3, root, node, ast.Call(func=name_node(func), args=[node], keywords=[]))


def locals_for_subexpressions(env: Env) -> Iterator[Edit]:
    """A call or subscript that should have been a local: `get(h, n) + w` -> `dist + w`."""
    stmt = env.target.stmt
    for node, root in env.of_type(ast.Call, ast.Subscript):
        if env.is_called(node) or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            continue
        if isinstance(stmt, ast.Expr) and stmt.value is node:
            continue
        kind = expr_kind(node)
        builtin = (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and hasattr(builtins_module, node.func.id)
        )
        for var in _pool(env, node)[:LOCAL_LIMIT]:
            if kind is None or env.scope.kind(var) in (None, kind):
                yield Edit("use_local", 3 if builtin else 2, root, node, name_node(var))


def term_addition(env: Env) -> Iterator[Edit]:
    """Missing term: argument, index or slice bound `x` -> `x - v` / `x + v` (`seq[start:size]` ->
    `seq[start:size + start]`); returned/assigned `e` -> `v + e` / `e + v`."""
    positions: list[tuple[ast.AST, ast.AST]] = []
    for node, root in env.nodes:
        if isinstance(node, ast.Call) and call_name(node) not in ("print", "len", "isinstance"):
            positions += [(arg, root) for arg in node.args]
        elif isinstance(node, ast.Subscript):
            bounds = node.slice
            parts = [bounds.lower, bounds.upper] if isinstance(bounds, ast.Slice) else [bounds]
            positions += [(part, root) for part in parts if part is not None]
    for arg, root in positions:
        if isinstance(arg, ast.Name) and _is_variable(env, arg) and env.scope.kind(arg.id) in (None, "num"):
            numbers = [v for v in _pool(env, arg, arg.id) if env.scope.kind(v) in (None, "num")]
            for var in numbers[:LOCAL_LIMIT]:
                for op in (ast.Sub, ast.Add):
                    yield Edit("term_addition", 2, root, arg, ast.BinOp(left=arg, op=op(), right=name_node(var)))
    stmt = env.target.stmt
    if env.target.header is None and isinstance(stmt, (ast.Return, ast.Assign)) and stmt.value is not None:
        value = stmt.value
        if isinstance(value, ast.Constant) and not is_literal_seq(value):
            return
        if isinstance(value, (ast.List, ast.Tuple, ast.Constant)) and not getattr(value, "elts", True):
            return  # `[] + v` is just `v`
        kind = expr_kind(value)
        pool = [
            v
            for v in _pool(env, value)
            if env.scope.kind(v) != "obj" and env.scope.kind(v) in (None, kind or env.scope.kind(v))
        ]
        for var in pool[:LOCAL_LIMIT]:
            yield Edit("term_addition", 2, stmt, value, ast.BinOp(left=name_node(var), op=ast.Add(), right=value))
            yield Edit("term_addition", 2, stmt, value, ast.BinOp(left=value, op=ast.Add(), right=name_node(var)))


#: Calls whose first argument is a regular expression.
_REGEX_FUNCS = frozenset({"compile", "match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"})
_QUANTIFIER_SWAPS = {"*": ("+", "?"), "+": ("*",), "?": ("*", "")}
#: Characters users most often find missing from a character class.
_CLASS_ADDITIONS = ("-", "_", ".", " ", "0-9", "A-Z", "a-z")
#: Regex syntax characters: not literal delimiters when unescaped.
_REGEX_META = frozenset(".^$*+?{}[]()|")
_GROUP_SYNTAX = re.compile(r"\(\?(?:P<\w+>|P=\w+\)|<[=!]|[=!:>]|[aiLmsux-]+\)|[aiLmsux-]+:)")


def regex_edits(env: Env) -> Iterator[Edit]:
    """Wrong regular expression in `re.X(pattern, ...)`: one quantifier changed (`*` `+` `?`), one character
    class widened by a commonly forgotten character or range, or its negation toggled."""
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _REGEX_FUNCS or not node.args:
            continue
        pattern = node.args[0]
        if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
            continue
        for new in regex_variants(pattern.value):
            yield Edit("regex", 1, root, pattern, ast.Constant(new))


def regex_variants(pattern: str) -> list[str]:
    """Small edits of a regex that still compile: quantifiers and character classes (escapes respected)."""
    out: list[str] = []
    i = 0
    in_class = -1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class < 0 and ch == "[":
            in_class = i
        elif in_class >= 0 and ch == "]" and i > in_class + 1:
            body = pattern[in_class + 1 : i]
            if body.startswith("^"):
                # A negated class that runs up to a delimiter must also stop at the pattern's other
                # delimiters: `&([^;]+;)` matches from a stray `&` over a later `&...;` unless `&` is excluded.
                for lit in _delimiters(pattern):
                    if lit not in body:
                        out.append(pattern[: in_class + 2] + _class_escape(lit) + pattern[in_class + 2 :])
            for extra in _CLASS_ADDITIONS:
                # A "-" inside a range (a-z) is not a literal dash; only one at either end is.
                present = body.strip("^").startswith("-") or body.endswith("-") if extra == "-" else extra in body
                if not present:
                    # A literal "-" goes last so it cannot form a range.
                    if extra == "-":
                        widened = body + extra
                    elif body.startswith("^"):
                        widened = "^" + extra + body[1:]
                    else:
                        widened = extra + body
                    out.append(pattern[: in_class + 1] + widened + pattern[i:])
            toggled = body[1:] if body.startswith("^") else "^" + body
            out.append(pattern[: in_class + 1] + toggled + pattern[i:])
            in_class = -1
        elif in_class < 0 and ch in _QUANTIFIER_SWAPS and i > 0 and pattern[i - 1] not in "(|":
            if ch in "*+" and pattern[i + 1 : i + 2] == "?":
                i += 1  # a lazy quantifier: leave it alone
            else:
                for repl in _QUANTIFIER_SWAPS[ch]:
                    out.append(pattern[:i] + repl + pattern[i + 1 :])
        i += 1
    valid: list[str] = []
    for candidate in dict.fromkeys(out):
        try:
            re.compile(candidate)
        except re.error:
            continue
        if candidate != pattern:
            valid.append(candidate)
    return valid


def _delimiters(pattern: str) -> list[str]:
    """Punctuation the pattern matches literally outside character classes (escaped or not), in order."""
    # Group syntax (`(?P<name>`, `(?<=`, `(?:`, `(?i)`) is not matched text.
    pattern = _GROUP_SYNTAX.sub("(", pattern)
    found: list[str] = []
    i = 0
    depth = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not depth and nxt and not nxt.isalnum() and not nxt.isspace() and nxt not in found:
                found.append(nxt)
            i += 2
            continue
        if ch == "[":
            depth = 1
        elif ch == "]" and depth:
            depth = 0
        elif not depth and ch not in _REGEX_META and not ch.isalnum() and not ch.isspace() and ch not in found:
            found.append(ch)
        i += 1
    return found


def _class_escape(ch: str) -> str:
    """A character as it must be written inside a class."""
    return "\\" + ch if ch in "\\]^-[" else ch


def call_arguments(env: Env) -> Iterator[Edit]:
    """Wrong argument list at a call site: drop one argument, move one to another position (three or more;
    two are covered by swaps), or pass one more local to a function of this module that takes more."""
    arities = _module_arities(env)
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        args = node.args
        if any(isinstance(a, ast.Starred) for a in args):
            continue
        for i in range(len(args)):
            dropped = [a for j, a in enumerate(args) if j != i]
            yield Edit(
                "call_args", LATE_TIER, root, node, ast.Call(func=node.func, args=dropped, keywords=node.keywords)
            )
        if len(args) >= 3:
            for i in range(len(args)):
                for j in range(len(args)):
                    if abs(i - j) > 1:
                        moved = list(args)
                        moved.insert(j, moved.pop(i))
                        yield Edit(
                            "call_args",
                            LATE_TIER,
                            root,
                            node,
                            ast.Call(func=node.func, args=moved, keywords=node.keywords),
                        )
        callee = node.func.id if isinstance(node.func, ast.Name) else ""
        if arities.get(callee, 0) > len(args) + len(node.keywords):
            used = {a.id for a in args if isinstance(a, ast.Name)}
            for var in [v for v in env.scope.variables if v not in used][:LOCAL_LIMIT]:
                extra = [*args, name_node(var)]
                yield Edit(
                    "call_args", LATE_TIER, root, node, ast.Call(func=node.func, args=extra, keywords=node.keywords)
                )


def _module_arities(env: Env) -> dict[str, int]:
    tree = env.ctx.tree
    if tree is None:
        return {}
    out: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = len(node.args.posonlyargs) + len(node.args.args)
    return out


#: Two-name renames are a long shot with many combinations: cap them per statement.
RENAME2_LIMIT = 40


def two_names(env: Env) -> Iterator[Edit]:
    """Two wrong variables on one line (a copy-paste slip): each of two different names -> another in scope."""
    skip = _comp_targets(env)
    loads = [
        (n, r)
        for n, r in env.of_type(ast.Name)
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and id(n) not in skip
        and not env.is_called(n)
        and _is_variable(env, n)
    ]
    ids = list(dict.fromkeys(n.id for n, _ in loads))
    count = 0
    for a_index, first in enumerate(ids):
        for second in ids[a_index + 1 :]:
            roots = {id(r) for n, r in loads if n.id in (first, second)}
            if len(roots) != 1:
                continue
            root = next(r for n, r in loads if n.id == first)
            for new_first in _pool(env, root, first)[:5]:
                for new_second in _pool(env, root, second)[:5]:
                    if new_first == new_second or count >= RENAME2_LIMIT:
                        continue
                    count += 1
                    renamed = _RenameTwo({first: new_first, second: new_second}).visit(copy.deepcopy(root))
                    yield Edit("rename2", LATE_TIER, root, root, renamed)


class _RenameTwo(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.mapping:
            return ast.Name(id=self.mapping[node.id], ctx=ast.Load())
        return node

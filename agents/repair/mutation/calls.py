"""Call-shaped mutation templates found by mining small real fixes (`bench/edit_classes.py`): the callee
changed with the arguments kept, a keyword argument forwarded or dropped, and a value passed through one of
the module's own one-argument helpers, and the type an `isinstance` check accepts widened or narrowed.

Both only use signatures the module itself defines (module functions, classes' `__init__`, the enclosing
class's methods), so a candidate never calls something with an argument list its callee cannot take.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from agents.repair.mutation.exprs import NAME_LIMIT, name_node
from agents.repair.mutation.ops import call_name, int_value
from agents.repair.mutation.signatures import Signature, signature_of
from agents.repair.mutation.types import Edit, Env

#: Mined share (bench/edit_classes.py): callee changes are the most frequent call edit the older families
#: lack, so they come right after the operand-level tier; keyword edits are rarer.
CALLEE_TIER = 2
KEYWORD_TIER = 3
#: Call wraps are 3.7% of mined edits; a module's own helper is the callee in 3 of 14 (`.strip()` and
#: builtins make most of the rest). The last tier: tried after every other edit of the same line.
HELPER_TIER = 4


def method_signatures(env: Env) -> dict[str, Signature]:
    """Plain methods of the class around the target, for `self.m(...)` calls."""
    tree = env.ctx.tree
    inner = env.target.functions[-1] if env.target.functions else None
    for node in ast.walk(tree) if tree is not None and inner is not None else []:
        if isinstance(node, ast.ClassDef) and any(s is inner for s in node.body):
            return {
                s.name: signature_of(s, bound=True)
                for s in node.body
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.decorator_list
            }
    return {}


def _callee(node: ast.Call, env: Env, functions: Mapping[str, Signature]) -> tuple[str, Signature | None]:
    """The called name and its signature when the module defines it (`f(...)` or `self.f(...)`)."""
    func = node.func
    if isinstance(func, ast.Name) and func.id not in env.scope.variables:
        return func.id, functions.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return func.attr, method_signatures(env).get(func.attr)
    return "", None


def _plain(node: ast.Call) -> bool:
    """No `*args`/`**kwargs` at the call: its argument count is known."""
    return not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords)


def callee_swaps(env: Env) -> Iterator[Edit]:
    """Wrong callee: `f(a, b)` -> `g(a, b)` for another module function (or `self.f` -> `self.g`, another
    method of the class) whose signature takes the same arguments. Names the builtins family already swaps
    (min/max, any/all...) are not module functions, so the two never overlap."""
    functions = env.ctx.signatures
    enclosing = {f.name for f in env.target.functions}
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        name, own = _callee(node, env, functions)
        if own is None or not _plain(node):
            continue
        keywords = [k.arg for k in node.keywords if k.arg]
        pool = method_signatures(env) if isinstance(node.func, ast.Attribute) else functions
        count = 0
        for other, sig in pool.items():
            # The function being defined is not a likely replacement for a call inside it.
            if other == name or other in enclosing or other.startswith("__") or count >= NAME_LIMIT:
                continue
            # A class for a function (or the reverse) changes what the value is, not which computation.
            if sig.is_class != own.is_class or not sig.accepts(len(node.args), keywords):
                continue
            count += 1
            func: ast.expr = (
                name_node(other)
                if isinstance(node.func, ast.Name)
                else ast.Attribute(value=node.func.value, attr=other, ctx=ast.Load())  # type: ignore[attr-defined]
            )
            yield Edit("callee", CALLEE_TIER, root, node.func, func)


def keyword_arguments(env: Env) -> Iterator[Edit]:
    """Forgotten or extra keyword argument: drop one keyword; forward a parameter `p` of the enclosing
    function as `p=p` to a module callee that takes a parameter of that name and is not given it yet."""
    functions = env.ctx.signatures
    func = env.target.functions[0] if env.target.functions else None
    params = [a.arg for a in [*func.args.args, *func.args.kwonlyargs]] if func is not None else []
    params = [p for p in params if p not in ("self", "cls")]
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        if not _plain(node):
            continue
        for index in range(len(node.keywords)):
            kept = [k for j, k in enumerate(node.keywords) if j != index]
            yield Edit("keyword", KEYWORD_TIER, root, node, ast.Call(func=node.func, args=node.args, keywords=kept))
        _, sig = _callee(node, env, functions)
        if sig is None:
            continue
        given = {k.arg for k in node.keywords}
        # Parameters the positional arguments already fill cannot be passed again by keyword.
        filled = set(sig.names[: len(node.args)])
        for param in params:
            if param in given or param in filled or param not in sig.names:
                continue
            extra = ast.keyword(arg=param, value=name_node(param))
            new = ast.Call(func=node.func, args=node.args, keywords=[*node.keywords, extra])
            yield Edit("keyword", KEYWORD_TIER, root, node, new)


def helper_wraps(env: Env) -> Iterator[Edit]:
    """Missing conversion: an operand `e` -> `h(e)`, for a module helper `h` the module applies elsewhere to one
    value (`MutationContext.helpers`). The operand is a variable, a subscript or an attribute that is read, not the
    object of an attribute or subscript (`x` in `x.y`), and not already the argument of a helper."""
    enclosing = {f.name for f in env.target.functions}
    helpers = env.ctx.helpers
    pool = [h for h in helpers if h not in enclosing and h not in env.scope.variables and not h.startswith("__")]
    if not pool:
        return
    for node, root in env.of_type(ast.Name, ast.Subscript, ast.Attribute):
        if not isinstance(getattr(node, "ctx", None), ast.Load) or env.is_called(node):
            continue
        if isinstance(node, ast.Name) and node.id not in env.scope.variables and node.id not in env.comp_names(node):
            continue
        parent = env.parent(node)
        if isinstance(parent, ast.Attribute | ast.Subscript) and parent.value is node:
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in helpers:
            continue
        assert isinstance(node, ast.expr)
        for helper in pool[:NAME_LIMIT]:
            yield Edit(
                "helper_wrap", HELPER_TIER, root, node, ast.Call(func=name_node(helper), args=[node], keywords=[])
            )


#: Mined (`--all`): an `isinstance` type widened to a tuple or a tuple narrowed, 9 edits in 6 of 25 projects;
#: this template makes 5 of them (5 projects): a sibling below added, or one type dropped.
TYPE_TIER = 2
#: Types a check for one builtin type most often also meant: the same family (text and binary data, numbers,
#: ordered and unordered collections). A check that should accept one of these but does not is the bug.
_SIBLING_TYPES: dict[str, tuple[str, ...]] = {
    "str": ("bytes",),
    "bytes": ("str", "bytearray"),
    "bytearray": ("bytes",),
    "int": ("float",),
    "float": ("int",),
    "list": ("tuple",),
    "tuple": ("list",),
    "set": ("frozenset",),
    "frozenset": ("set",),
}
#: The subscript protocol passes an int or a slice to these methods.
_ITEM_METHODS = frozenset({"__getitem__", "__setitem__", "__delitem__"})


def _type_names(node: ast.expr) -> list[ast.expr] | None:
    """The types an isinstance check names: one expression, or the items of a literal tuple."""
    if isinstance(node, ast.Tuple):
        return list(node.elts)
    return [node] if isinstance(node, (ast.Name, ast.Attribute)) else None


def isinstance_types(env: Env) -> Iterator[Edit]:
    """The type check accepts too little or too much: `isinstance(x, str)` -> `isinstance(x, (str, bytes))` for a
    sibling builtin type (`int` -> `(int, slice)` in the item methods), and `isinstance(x, (A, B))` -> one type fewer.
    A sibling whose name the function uses as a variable is not added."""
    inner = env.target.functions[0].name if env.target.functions else ""
    for node, root in env.of_type(ast.Call):
        assert isinstance(node, ast.Call)
        if not (isinstance(node.func, ast.Name) and node.func.id == "isinstance") or len(node.args) != 2:
            continue
        types = _type_names(node.args[1])
        if types is None:
            continue
        named = {t.id for t in types if isinstance(t, ast.Name)}
        if len(types) > 1:
            for index in range(len(types)):
                kept = [t for j, t in enumerate(types) if j != index]
                narrowed = kept[0] if len(kept) == 1 else ast.Tuple(elts=kept, ctx=ast.Load())
                yield Edit("isinstance_type", TYPE_TIER, root, node.args[1], narrowed)
        for type_name in sorted(named):
            extra = list(_SIBLING_TYPES.get(type_name, ()))
            if type_name == "int" and inner in _ITEM_METHODS:
                extra.append("slice")
            for sibling in extra:
                if sibling in named or sibling in env.scope.variables:
                    continue
                widened = ast.Tuple(elts=[*types, name_node(sibling)], ctx=ast.Load())
                yield Edit("isinstance_type", TYPE_TIER, root, node.args[1], widened)


#: A missing builtin call is a long shot (tier 3); builtins make most of the mined call wraps (3.7% of edits).
BUILTIN_WRAP_TIER = 3
#: Calls that count, order or total their argument: with `set()` around it they see each distinct item once.
_DISTINCT_CONSUMERS = frozenset({"len", "sorted", "sum", "list", "tuple"})
#: Operators that make no sense on a container, so a container operand wanted its size.
_SIZE_OPERATORS = (ast.Sub, ast.FloorDiv, ast.Div, ast.Mod, ast.Pow)


def builtin_wraps(env: Env) -> Iterator[Edit]:
    """Missing builtin call: `len(items)` -> `len(set(items))` (distinct items), `a - b` -> `abs(a - b)` (a
    distance), `total - xs` -> `total - len(xs)` (a container used as its size), `"n=" + n` -> `"n=" + str(n)`
    (a value of unknown or number kind added to text: a literal, an f-string, `str(...)`, or a sum with one).

    Only where the builtin is not shadowed, and never around an argument it already wraps.
    """
    shadowed = set(env.scope.variables) | set(env.ctx.callables)
    for node, root in env.nodes:
        parent = env.parent(node)
        if isinstance(node, ast.Call) and call_name(node) in _DISTINCT_CONSUMERS and len(node.args) == 1:
            arg = node.args[0]
            if not isinstance(arg, ast.Starred) and call_name(arg) not in ("set", "range") and "set" not in shadowed:
                yield _wrap(root, arg, "set")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and "abs" not in shadowed:
            # A distance between two values (`a - b`), not an offset (`i - 1`).
            if int_value(node.right) is None and not (isinstance(parent, ast.Call) and call_name(parent) == "abs"):
                yield _wrap(root, node, "abs")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and isinstance(parent, ast.BinOp):
            kind = env.scope.kind(node.id)
            if kind == "seq" and isinstance(parent.op, _SIZE_OPERATORS) and "len" not in shadowed:
                yield _wrap(root, node, "len")
            other = parent.right if parent.left is node else parent.left
            if kind in (None, "num") and isinstance(parent.op, ast.Add) and _textual(other) and "str" not in shadowed:
                yield _wrap(root, node, "str")


#: Calls whose result is text.
_TEXT_CALLS = frozenset({"str", "repr", "format", "join", "upper", "lower", "strip", "replace", "title"})


def _textual(node: ast.AST) -> bool:
    """Text by its syntax: a string literal, an f-string, a call that returns text, or a sum with one of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call):
        return call_name(node) in _TEXT_CALLS
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _textual(node.left) or _textual(node.right)
    return False


def _wrap(root: ast.AST, node: ast.expr, func: str) -> Edit:
    return Edit("builtin_wrap", BUILTIN_WRAP_TIER, root, node, ast.Call(func=name_node(func), args=[node], keywords=[]))

"""Operator-level mutation templates: arithmetic, comparisons, conditions, constants and off-by-one."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator

from agents.repair.mutation.scope import NUM_CALLS
from agents.repair.mutation.types import Edit, Env

_ARITH: tuple[type[ast.operator], ...] = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_BITS: tuple[type[ast.operator], ...] = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
# The operator a bug most plausibly confused with each one (same family, similar meaning).
_RELATED: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.FloorDiv, ast.Div, ast.Add),
    ast.Div: (ast.FloorDiv, ast.Mult),
    ast.FloorDiv: (ast.Div, ast.Mod, ast.Mult),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr, ast.BitXor),
    ast.BitOr: (ast.BitAnd, ast.BitXor),
    ast.BitXor: (ast.BitAnd, ast.BitOr),
    ast.LShift: (ast.RShift,),
    ast.RShift: (ast.LShift,),
    ast.MatMult: (ast.Mult,),
}
# Comparison alternatives, most plausible first: boundary shift, negation, flip, then the rest.
_CMP: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE, ast.Gt, ast.NotEq, ast.Eq),
    ast.LtE: (ast.Lt, ast.Gt, ast.GtE, ast.Eq, ast.NotEq),
    ast.Gt: (ast.GtE, ast.LtE, ast.Lt, ast.NotEq, ast.Eq),
    ast.GtE: (ast.Gt, ast.Lt, ast.LtE, ast.Eq, ast.NotEq),
    ast.Eq: (ast.NotEq, ast.Is, ast.LtE, ast.GtE, ast.Lt, ast.Gt),
    ast.NotEq: (ast.Eq, ast.IsNot, ast.Lt, ast.Gt),
    ast.Is: (ast.IsNot, ast.Eq),
    ast.IsNot: (ast.Is, ast.NotEq),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: Calls whose arguments or results are not numbers, so ±1 around them is noise.
_NON_NUMERIC = (
    "list str set dict tuple frozenset sorted reversed enumerate zip map filter range iter print repr "
    "format isinstance issubclass type bool any all hasattr getattr setattr callable id"
)
NON_NUMERIC_CALLS = frozenset(_NON_NUMERIC.split(" "))
_NUMERIC_ARG_CALLS = frozenset({"range"})  # exception: range's bounds are the classic off-by-one site


def int_value(node: ast.AST) -> int | None:
    """The value of an int literal, including a negated one; None otherwise (bools are not ints here)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_value(node.operand)
        return None if inner is None else -inner
    return None


def int_node(value: int) -> ast.expr:
    """An int literal as the parser would build it (negative numbers are a unary minus)."""
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


def is_docstring(stmt: ast.stmt) -> bool:
    """A bare string statement: documentation, never the bug."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def assign(target: ast.expr, value: ast.expr) -> ast.Assign:
    """`target = value` (unparse needs lineno and type_comment on Assign)."""
    return ast.Assign(targets=[target], value=value, type_comment=None, lineno=0)


def is_literal_seq(node: ast.AST) -> bool:
    """Sequence, mapping or string literals: arithmetic on them is string/list algebra, not numbers."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    literals = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr)
    return isinstance(node, (*literals, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))


def call_name(node: ast.AST) -> str | None:
    """`f` for `f(...)` and `obj.f(...)`."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def conditions(env: Env) -> list[tuple[ast.expr, ast.AST]]:
    """Boolean positions: if/while headers, ternary tests, comprehension filters, asserts."""
    found: list[tuple[ast.expr, ast.AST]] = []
    stmt = env.target.stmt
    if env.target.header is not None and isinstance(stmt, (ast.If, ast.While)):
        found.append((stmt.test, stmt.test))
    for node, root in env.nodes:
        if isinstance(node, ast.IfExp):
            found.append((node.test, root))
        elif isinstance(node, ast.comprehension):
            found += [(cond, root) for cond in node.ifs]
        elif isinstance(node, ast.Assert):
            found.append((node.test, root))
    return found


def binary_operators(env: Env) -> Iterator[Edit]:
    """`a + b` -> `a - b` etc.; the related operator first (tier 0), the rest of its family later."""
    for node, root in env.of_type(ast.BinOp):
        assert isinstance(node, ast.BinOp)
        if is_literal_seq(node.left) or is_literal_seq(node.right):
            continue
        for op, tier in _alternatives(type(node.op)):
            yield Edit("binop", tier, root, node, ast.BinOp(left=node.left, op=op(), right=node.right))


def _alternatives(op: type[ast.operator]) -> list[tuple[type[ast.operator], int]]:
    related = _RELATED.get(op, ())
    family = _ARITH if op in _ARITH else _BITS if op in _BITS else ()
    return [(o, 0) for o in related] + [(o, 3) for o in family if o is not op and o not in related]


def augmented_operators(env: Env) -> Iterator[Edit]:
    """`x ^= y` -> `x &= y`; `x += y` <-> `x = y`."""
    stmt = env.target.stmt
    if env.target.header is not None:
        return
    if isinstance(stmt, ast.AugAssign):
        for op, tier in _alternatives(type(stmt.op)):
            yield Edit("augop", tier, stmt, stmt, ast.AugAssign(target=stmt.target, op=op(), value=stmt.value))
        yield Edit("augop", 2, stmt, stmt, assign(stmt.target, stmt.value))
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) and not is_literal_seq(stmt.value):
            # `result = n` -> `result *= n` where the function starts `result` at 1, the product's identity.
            product = isinstance(target, ast.Name) and _starts_at_one(env, target.id)
            for op, tier in ((ast.Add, 2), (ast.Sub, 3), (ast.Mult, 2 if product else 3)):
                yield Edit("augop", tier, stmt, stmt, ast.AugAssign(target=target, op=op(), value=stmt.value))


def _starts_at_one(env: Env, name: str) -> bool:
    """Whether the enclosing function assigns the literal 1 to `name` somewhere."""
    if not env.target.functions:
        return False
    return any(
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and node.value.value == 1
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in ast.walk(env.target.functions[0])
    )


def _literal_operand(node: ast.Compare, index: int) -> bool:
    """Whether op `index` has a literal (not None/bool) operand: `is` against it warns and is wrong."""
    sides = [node.left, *node.comparators][index : index + 2]
    return any(isinstance(s, ast.Constant) and s.value not in (None, True, False) for s in sides) or any(
        is_literal_seq(s) for s in sides
    )


def comparisons(env: Env) -> Iterator[Edit]:
    """`<` -> `<=`/`>=`/..., `==` <-> `!=`, `is` <-> `is not`, `in` <-> `not in`."""
    for node, root in env.of_type(ast.Compare):
        assert isinstance(node, ast.Compare)
        for index, op in enumerate(node.ops):
            for rank, alt in enumerate(_CMP.get(type(op), ())):
                if alt in (ast.Is, ast.IsNot) and _literal_operand(node, index):
                    continue
                ops = [*node.ops[:index], alt(), *node.ops[index + 1 :]]
                new = ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
                yield Edit("cmpop", 0 if rank < 3 else 1, root, node, new)


def comparison_with_constant(env: Env) -> Iterator[Edit]:
    """Second order, comparisons only: change the operator and the int bound together (`== 0` -> `<= 1`)."""
    for node, root in env.of_type(ast.Compare):
        assert isinstance(node, ast.Compare)
        if len(node.ops) != 1:
            continue
        left, right = node.left, node.comparators[0]
        value, on_right = (int_value(right), True) if int_value(right) is not None else (int_value(left), False)
        if value is None:
            continue
        for alt in (*_ORDERING, ast.Eq, ast.NotEq):
            if isinstance(node.ops[0], alt):
                continue
            for bound in (value + 1, value - 1):
                new_left, new_right = (left, int_node(bound)) if on_right else (int_node(bound), right)
                new = ast.Compare(left=new_left, ops=[alt()], comparators=[new_right])
                yield Edit("cmp_const", 1 if alt in _ORDERING else 2, root, node, new)


def boolean_operators(env: Env) -> Iterator[Edit]:
    """`and` <-> `or` (tier 0); drop one operand of a chain (tier 1)."""
    for node, root in env.of_type(ast.BoolOp):
        assert isinstance(node, ast.BoolOp)
        flipped = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield Edit("boolop", 0, root, node, ast.BoolOp(op=flipped, values=node.values))
        for index in range(len(node.values)):
            rest = node.values[:index] + node.values[index + 1 :]
            new = rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest)
            yield Edit("boolop", 1, root, node, new)


def negations(env: Env) -> Iterator[Edit]:
    """Remove any `not`; negate whole conditions and their and/or operands (`c` -> `not c`)."""
    for node, root in env.of_type(ast.UnaryOp):
        assert isinstance(node, ast.UnaryOp)
        if isinstance(node.op, ast.Not):
            yield Edit("negate", 0, root, node, node.operand)
    for cond, root in conditions(env):
        parts = [cond, *(cond.values if isinstance(cond, ast.BoolOp) else ())]
        for part in parts:
            if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
                continue
            if isinstance(part, ast.Compare) and len(part.ops) == 1 and type(part.ops[0]) in _CMP:
                continue  # its negation is a comparison-operator mutant already
            yield Edit("negate", 1, root, part, ast.UnaryOp(op=ast.Not(), operand=part))


def _numeric_like(node: ast.AST) -> bool:
    """Could this expression be an int that is off by one? Cheap syntactic guess."""
    if isinstance(node, ast.Call):
        return call_name(node) not in NON_NUMERIC_CALLS
    if isinstance(node, ast.BinOp):
        if is_literal_seq(node.left) or is_literal_seq(node.right):
            return False
        # `i + 1` +/- 1 duplicates the constant's own ±1 mutants.
        return not (isinstance(node.op, (ast.Add, ast.Sub)) and int_value(node.right) is not None)
    return isinstance(node, (ast.Name, ast.Attribute, ast.Subscript))


def offset_sites(env: Env) -> Iterator[tuple[ast.AST, ast.AST, int]]:
    """(expression, root, tier) where `e` -> `e ± 1` is plausible: arguments, bounds, indices, counts."""
    stmt = env.target.stmt
    for node, root in env.nodes:
        if isinstance(node, ast.Call):
            name = call_name(node)
            if name in NON_NUMERIC_CALLS and name not in _NUMERIC_ARG_CALLS:
                continue
            for arg in node.args:
                yield arg, root, 0
        elif isinstance(node, ast.Subscript):
            sl = node.slice
            if isinstance(sl, ast.Slice):
                yield from ((b, root, 0) for b in (sl.lower, sl.upper) if b is not None)
            elif isinstance(sl, ast.Tuple):
                yield from ((e, root, 0) for e in sl.elts)
            else:
                yield sl, root, 0
        elif isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Sub)):
            # The count of a repetition (`n * [0]`) is a classic off-by-one spot; other factors less so.
            repetition = is_literal_seq(node.left) or is_literal_seq(node.right)
            yield from ((e, root, 0 if repetition else 2) for e in (node.left, node.right))
        elif isinstance(node, ast.Compare) and all(isinstance(op, (*_ORDERING, ast.Eq, ast.NotEq)) for op in node.ops):
            yield from ((e, root, 2) for e in (node.left, *node.comparators))
    if env.target.header is None and isinstance(stmt, (ast.Return, ast.Assign)) and stmt.value is not None:
        yield stmt.value, stmt, 2


def off_by_one(env: Env) -> Iterator[Edit]:
    """Int literals to c ± 1; `e` -> `e + 1` / `e - 1` at index, bound, argument and count positions."""
    for node, root in env.nodes:
        value = int_value(node)
        if value is None or (isinstance(node, ast.Constant) and _is_negated(env, node)):
            continue
        for new in (value + 1, value - 1):
            yield Edit("off_by_one", 0, root, node, int_node(new))
    seen: set[int] = set()
    for expr, root, tier in offset_sites(env):
        if id(expr) in seen or not _numeric_like(expr) or isinstance(expr, ast.Starred):
            continue
        if isinstance(expr, ast.Name) and env.scope.kind(expr.id) in ("seq", "obj"):
            continue
        seen.add(id(expr))
        assert isinstance(expr, ast.expr)
        for op in (ast.Add, ast.Sub):
            yield Edit("off_by_one", tier, root, expr, ast.BinOp(left=expr, op=op(), right=ast.Constant(1)))


def _is_negated(env: Env, node: ast.AST) -> bool:
    parent = env.parent(node)
    return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)


def constants(env: Env) -> Iterator[Edit]:
    """Int literals to 0/1/-1, flip bools, `[]` <-> `[[]]`, non-empty strings to ``."""
    if is_docstring(env.target.stmt):
        return
    for node, root in env.nodes:
        value = int_value(node)
        if value is not None and not (isinstance(node, ast.Constant) and _is_negated(env, node)):
            for new in (0, 1, -1):
                if abs(new - value) > 1:
                    yield Edit("constant", 1, root, node, int_node(new))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield Edit("constant", 0, root, node, ast.Constant(value=not node.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
            if not isinstance(env.parent(node), ast.JoinedStr):
                yield Edit("constant", 3, root, node, ast.Constant(value=""))
        elif isinstance(node, ast.List) and isinstance(node.ctx, ast.Load):
            if not node.elts:
                yield Edit(
                    "constant",
                    1,
                    root,
                    node,
                    ast.List(elts=[ast.List(elts=[], ctx=ast.Load())], ctx=ast.Load()),
                )
            elif len(node.elts) == 1 and isinstance(node.elts[0], ast.List) and not node.elts[0].elts:
                yield Edit("constant", 1, root, node, ast.List(elts=[], ctx=ast.Load()))


def term_removal(env: Env) -> Iterator[Edit]:
    """Drop an additive term (`1 + e` -> `e`, `e - 1` -> `e`), a factor, or a unary minus."""
    for node, root in env.nodes:
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                yield Edit("term_removal", 0, root, node, node.left)
                yield Edit("term_removal", 0, root, node, node.right)
            else:
                yield Edit("term_removal", 0 if isinstance(node.op, ast.Sub) else 1, root, node, node.left)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and int_value(node) is None:
            yield Edit("term_removal", 1, root, node, node.operand)


#: Mined (bench/edit_classes.py `--all`): `"%r" % value` -> `"%r" % (value,)` in 2 fixes of one project of 25;
#: issue threads of many other projects report it (`not all arguments converted during string formatting`).
FORMAT_TUPLE_TIER = 2
# One printf-style conversion: `%s`, `%-10r`, `%.2f`, `%(key)s`; `%%` is a literal percent sign.
_CONVERSION = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsab%])")
# Operands that can never be a tuple, so `%` never spreads them.
_NOT_TUPLE = (ast.Tuple, ast.Dict, ast.DictComp, ast.Constant, ast.JoinedStr, ast.List, ast.ListComp, ast.Set)


def format_arity(template: str) -> int | None:
    """How many values a printf-style template takes; None when it takes a mapping (`%(key)s`) or a `*` width."""
    count = 0
    for match in _CONVERSION.finditer(template):
        if match.group(5) == "%":
            continue
        if match.group(1) is not None or "*" in match.group(0):
            return None
        count += 1
    return count


def format_tuples(env: Env) -> Iterator[Edit]:
    """A lone value formatted with `%` that may itself be a tuple: `"%r" % key` -> `"%r" % (key,)`.

    `%` spreads a tuple over the template's conversions, so a tuple value raises `TypeError: not all arguments
    converted during string formatting`; wrapped, it is formatted whole. The edit changes nothing for any
    other value, and only applies to a literal template with exactly one conversion."""
    for node, root in env.of_type(ast.BinOp):
        assert isinstance(node, ast.BinOp)
        template = node.left
        if not isinstance(node.op, ast.Mod) or not isinstance(template, ast.Constant):
            continue
        if not isinstance(template.value, str) or isinstance(node.right, _NOT_TUPLE):
            continue
        if format_arity(template.value) == 1:
            wrapped = ast.Tuple(elts=[node.right], ctx=ast.Load())
            yield Edit("format_tuple", FORMAT_TUPLE_TIER, root, node.right, wrapped)


#: Missing arithmetic is a long shot (tier 3): a value used without a step the function applies elsewhere.
MISSING_STEP_TIER = 3
#: Operators whose step (`// 60`, `% n`, `* 2`, `/ total`) is copied onto a bare operand; `+`/`-` are the
#: missing-term family's (`term_addition`) and ±1 is off_by_one's.
_STEP_OPS = (ast.FloorDiv, ast.Mod, ast.Div, ast.Mult)
#: A quotient and its remainder come in pairs (divmod): where one is taken the other is often the one missing.
_DIVMOD_PAIR: dict[type[ast.operator], type[ast.operator]] = {ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv}
#: Steps per operand, at most: the function's own steps, most frequent first.
_STEP_LIMIT = 4


def _step_operand(node: ast.expr) -> bool:
    """A step's right operand: a number, a plain name or `len(name)` (`% 26`, `// size`, `% len(xs)`)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.Name):
        return True
    return call_name(node) == "len" and isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords


def function_steps(env: Env) -> list[tuple[type[ast.operator], ast.expr]]:
    """(operator, right operand) of the `x // k`, `x % k`, `x / k`, `x * k` the enclosing function applies,
    most frequent first, each divmod partner counted with its pair.
    """
    func = env.target.functions[0] if env.target.functions else None
    counts: dict[str, tuple[int, type[ast.operator], ast.expr]] = {}
    for node in ast.walk(func) if func is not None else ():
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, _STEP_OPS):
            right = node.right if isinstance(node, ast.BinOp) else node.value
            if not _step_operand(right):
                continue
            ops = [type(node.op)] + ([_DIVMOD_PAIR[type(node.op)]] if type(node.op) in _DIVMOD_PAIR else [])
            for rank, op in enumerate(ops):
                key = f"{op.__name__} {ast.dump(right)}"
                seen, _, _ = counts.get(key, (0, op, right))
                counts[key] = (seen + (2 if rank == 0 else 1), op, right)
    return [(op, right) for _, op, right in sorted(counts.values(), key=lambda c: -c[0])][:_STEP_LIMIT]


def missing_steps(env: Env) -> Iterator[Edit]:
    """Missing arithmetic: a number used without a step the function applies to others: `[t // 60, t]` ->
    `[t // 60, t % 60]`, `shift` -> `shift % 26`, `lo + hi` -> `(lo + hi) // 2`.

    Operands are numeric names (never the one a step is already applied to) and sums or differences of
    two numbers (a midpoint or span not yet halved or scaled). Steps come from `function_steps`; a sum is
    also tried `// 2`.
    """
    steps = function_steps(env)
    # A sum or difference is also tried halved: a midpoint or an average is the commonest missing step.
    halving = (ast.FloorDiv, ast.Constant(value=2))
    sum_steps = steps + ([halving] if all(ast.dump(r) != ast.dump(halving[1]) for _, r in steps) else [])
    for node, root in env.nodes:
        parent = env.parent(node)
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load) or env.is_called(node) or env.scope.kind(node.id) != "num":
                continue
            if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
                continue  # a term of a longer expression: the step belongs on the whole, its own site
        elif not (
            isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and _sum_of_numbers(env, node)
        ):
            continue
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, _STEP_OPS):
            continue  # already stepped (`t // 60`), or a step's own operand
        for op, right in steps if isinstance(node, ast.Name) else sum_steps:
            if ast.dump(right) == ast.dump(node):
                continue
            new = ast.BinOp(left=node, op=op(), right=copy.deepcopy(right))
            yield Edit("missing_step", MISSING_STEP_TIER, root, node, new)


#: Calls that give a number.
#: `max`/`min` return numbers here too: a step is only looked for where the sides already read as numbers.
_NUMBER_CALLS = NUM_CALLS | {"max", "min"}


def _sum_of_numbers(env: Env, node: ast.BinOp) -> bool:
    """`lo + hi`, `xs[i] - xs[j]`: one side a number, neither side known to be something else."""
    sides = (node.left, node.right)
    other_kind = any(
        is_literal_seq(side) or (isinstance(side, ast.Name) and env.scope.kind(side.id) not in (None, "num"))
        for side in sides
    )
    return not other_kind and any(_number(env, side) or isinstance(side, ast.Subscript) for side in sides)


def _number(env: Env, node: ast.AST) -> bool:
    """Is the expression a number by its syntax and the scope's kinds (names of unknown kind are not)?"""
    if isinstance(node, ast.Name):
        return env.scope.kind(node.id) == "num"
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.Call):
        return call_name(node) in _NUMBER_CALLS
    if isinstance(node, ast.BinOp):
        return _number(env, node.left) and _number(env, node.right)
    return False

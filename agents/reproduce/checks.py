"""The assertions a BRT can make about a reproduction: value equality, printed text, raising or not."""

from __future__ import annotations

import ast
import builtins
import re

from agents.reading import IssueFacts, quiet_literal, quiet_parse
from agents.reproduce.types import Check, Reproduction, Symptom

#: Stands for the variable holding the observed value in check lines; a control character never appears in
#: a repr, in unparsed source or in cleaned report text, so replacing it cannot touch a quoted value.
VAR = "\x01"
#: The first line of a check that only asserts the reported result changed (the report gives no expected value
#: it could assert): any change passes such a test, so the correctness assessment never trusts a fix on it alone.
CHANGED_ONLY = "# reprobot: this test only checks that the reported result changed"
_SAFE_CALLS = frozenset({"float", "set", "frozenset", "complex", "tuple", "list", "dict"})
_VALUE_NODES = (
    ast.Expression,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.USub,
    ast.UAdd,
    ast.Add,
    ast.Sub,
)
_BUILTIN_EXCS = frozenset(
    n
    for n in dir(builtins)
    if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)
)


def value_source(text: str) -> str | None:
    """Python source for a reported value when it is a literal (inf/nan and set()/float() allowed)."""
    try:
        tree = quiet_parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, _VALUE_NODES):
            return None
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return None  # "[1, 2, ...]" is a truncated value, not one to compare against
        if isinstance(node, ast.Name) and node.id not in ("inf", "nan") and node.id not in _SAFE_CALLS:
            return None
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _SAFE_CALLS):
            return None
    return ast.unparse(_SpecialFloats().visit(tree))


class _SpecialFloats(ast.NodeTransformer):
    """Bare inf/nan, as Python prints them, become float("inf")/float("nan")."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        """inf -> float("inf"); other names are left alone (value_source rejected them already)."""
        if node.id in ("inf", "nan"):
            return ast.Call(ast.Name("float", ast.Load()), [ast.Constant(node.id)], [])
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        """Rewrite inside the arguments only: the `float` in float("inf") must stay a name."""
        node.args = [self.visit(a) for a in node.args]
        return node


def checks_for(repro: Reproduction, facts: IssueFacts, symptom: Symptom) -> list[Check]:
    """Assertions for a reproduction, strongest first; weak ones are flagged in the description."""
    if facts.expected_exception and repro.observed:
        return [_raises_check(repro.observed, facts.expected_exception, same_calls(repro))]
    own = repro.expected if repro.expected is not None else facts.expected
    # Leading spaces of printed output are part of what the user expects to see; only blank lines go.
    expected = own.strip("\n").rstrip() if own is not None else None
    if expected is not None and repro.observed is not None:
        return _value_checks(repro, expected, facts, symptom)
    stdout = _stdout_check(repro, expected, symptom) if expected is not None else None
    if stdout is not None:
        # A statement that prints (a loop over continuation lines) has no value; its output is compared.
        return [stdout]
    if symptom == "exception" and facts.exception_type:
        return [_no_exception_check(repro, facts.exception_type)]
    if symptom == "hang":
        lines = ("VALUE",) if repro.observed else ()
        return [Check(lines, "hang", "runs the reproduction; it must finish within the timeout", weak=True)]
    reported = repro.actual if repro.actual is not None else facts.actual
    actual = value_source(reported) if reported is not None else None
    if actual is not None and repro.observed is not None:
        line = f'assert {VAR} != {actual}, f"still {{{VAR}!r}}, as in the report"'
        return [Check((CHANGED_ONLY, "VALUE", line), symptom, f"asserts the result is no longer {reported}", weak=True)]
    if reported and repro.program and symptom == "wrong_value":
        # A script whose pasted output is the bug, with an expectation in words the reading cannot turn into
        # a value ("the same result as str.center()"): what it printed must change.
        shown = reported.strip("\n").rstrip()
        program: tuple[str, ...] = ("PROGRAM", "captured = capsys.readouterr().out.strip('\\n').rstrip()")
        line = f'assert captured != {shown!r}, f"observed {{captured!r}}, as in the report"'
        summary = "asserts the script no longer prints what the report shows"
        return [Check((CHANGED_ONLY, *program, line), symptom, summary, fixture="capsys", weak=True)]
    return []


def _value_checks(repro: Reproduction, expected: str, facts: IssueFacts, symptom: Symptom) -> list[Check]:
    claim = assertion_check(repro, expected, symptom)
    if claim is not None:
        # "Expected: `len(x) == 3`" states a property of the value, not the value: assert the property.
        return [claim]
    checks: list[Check] = []
    stdout = _stdout_check(repro, expected, symptom)
    if stdout is not None and "\n" in expected:
        # Several printed lines: compare the whole output first, then the last print's value alone.
        checks.append(stdout)
        expected = expected.split("\n")[-1].strip()
    src = value_source(expected)
    actual = repro.actual if repro.actual is not None else facts.actual
    if src is None and repro.form == "repr" and actual and _is_str_literal(actual):
        # The REPL showed a quoted string but the user wrote the expected one bare.
        src = repr(expected.strip("'\""))
    if src is not None:
        checks.append(Check(("VALUE", _equality(src)), symptom, f"asserts the value equals {expected}"))
    # A REPL echoes repr(), print() shows str(); a value named in prose could be either.
    shows = {"repr": ["repr"], "str": ["str"], "value": ["repr", "str"]}[repro.form]
    for show in shows:
        line = f'assert {show}({VAR}) == {expected!r}, f"observed {{{show}({VAR})!r}}"'
        checks.append(Check(("VALUE", line), symptom, f"compares {show}() of the value with {expected!r}"))
    if stdout is not None and stdout not in checks:
        checks.append(stdout)
    return checks


#: An expected "value" that starts with a comparison operator is a claim about the observed value.
_COMPARISON_FRAGMENT = re.compile(r"^(?:is\s+not\b|is\b|not\s+in\b|in\b|==|!=|<=|>=|<(?!<)|>(?!>))")
_PLACEHOLDER = "reprobot_observed_value"
_PREDICATES = frozenset({"isinstance", "all", "any", "callable", "hasattr", "issubclass"})


def assertion_check(repro: Reproduction, expected: str, symptom: Symptom) -> Check | None:
    """An expected "value" that is a boolean expression about the result (`len(x) == 3`, `x is not None`).

    It must mention a name that is not a builtin: `1 == 1` or a bare literal is a value, not a claim. A name
    the reproduction does not bind stands for the observed value (the user wrote `len(result) == 3` about the
    call they showed); more than one such name means we cannot tell which is the result, so no check.
    """
    fragment = _COMPARISON_FRAGMENT.match(expected.strip())
    if fragment is not None and repro.observed is not None:
        # "Expected: `is None`" / "`> 0`": a comparison whose left side is the observed value.
        try:
            claim = quiet_parse(f"{_PLACEHOLDER} {expected.strip()}", mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        if not isinstance(claim, ast.Compare) or len(claim.ops) != 1:
            return None
        text = ast.unparse(_Rename(_PLACEHOLDER, VAR).visit(claim))
        line = f'assert {text}, f"observed {{{VAR}!r}}"'
        return Check(("VALUE", line), symptom, f"asserts the value {expected.strip()}, as the report expects")
    try:
        tree = quiet_parse(expected.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    is_claim = isinstance(tree, ast.Compare | ast.BoolOp) or (
        isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not)
    )
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in _PREDICATES:
        is_claim = True
    if not is_claim or repro.observed is None:
        return None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(dir(builtins))
    if not names:
        return None
    bound = _bound(repro)
    unbound = names - bound
    observed = repro.observed.strip()
    if len(unbound) > 1 or (not unbound and observed not in bound and observed not in expected):
        return None
    text = ast.unparse(tree)
    if unbound:
        text = ast.unparse(_Rename(unbound.pop(), VAR).visit(tree))
    line = f'assert {text}, f"observed {{{VAR}!r}}"'
    return Check(("VALUE", line), symptom, f"asserts {expected.strip()}, as the report expects")


class _Rename(ast.NodeTransformer):
    """Replace one free name with another (the observed value's placeholder)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        """Rename matching loads."""
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def _bound(repro: Reproduction) -> set[str]:
    names: set[str] = set()
    for stmt in (*repro.setup, *repro.program, *repro.imports):
        try:
            tree = quiet_parse(stmt)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        names |= {
            (a.asname or a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        names |= {
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        }
    return names


def _stdout_check(repro: Reproduction, expected: str, symptom: Symptom) -> Check | None:
    """Run the whole script and compare everything it printed (for print-based reproductions)."""
    # A script that prints from inside the code under test (no print of its own) is compared by its
    # output too when the user pasted several lines of expected output.
    if not repro.program or (repro.form != "str" and "\n" not in expected.strip()):
        return None
    # Leading whitespace is kept on both sides (indented output is output); trailing newlines are not.
    lines = ("PROGRAM", "captured = capsys.readouterr().out.strip('\\n').rstrip()")
    line = f'assert captured == {expected.strip(chr(10)).rstrip()!r}, f"observed {{captured!r}}"'
    return Check((*lines, line), symptom, "compares everything the script prints", fixture="capsys")


def _is_str_literal(text: str) -> bool:
    try:
        return isinstance(quiet_literal(text.strip()), str)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _equality(src: str) -> str:
    """`is` for singletons, approx for floats, == otherwise; the message carries the observed value.

    Numbers keep the kind the report shows: `2 == 2.0` in Python, yet a report that expects `[2.0]` is not
    answered by `[2]` (a missing `/ 2` that a doubled term makes up for), nor one that expects `2` by `2.0`
    (`//` turned into `/`). So a number, or a flat list or tuple of numbers, is also checked item by item
    for being a float exactly where the report's value is.
    """
    message = f', f"observed {{{VAR}!r}}"'
    if src in ("True", "False", "None"):
        return f"assert {VAR} is {src}{message}"
    try:
        value = quiet_literal(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return f"assert {VAR} == {src}{message}"
    flat = value if isinstance(value, list | tuple) else [value]
    numbers = bool(flat) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in flat)
    if not numbers:
        return f"assert {VAR} == {src}{message}"
    floats = [isinstance(v, float) for v in flat]
    kinds = (
        f"[isinstance(v, float) for v in {VAR}] == {floats}"
        if isinstance(value, list | tuple)
        else f"isinstance({VAR}, float) is {floats[0]}"
    )
    equal = f"{VAR} == pytest.approx({src})" if any(floats) else f"{VAR} == {src}"
    return f"assert {equal} and {kinds}{message}"


def expected_exceptions(test_source: str) -> tuple[str, ...]:
    """Exceptions a test expects its calls to raise: `pytest.raises(E)` (other than a bare Exception) and
    `type(excinfo.value).__name__ == "E"`, in source order. Empty when the test does not parse."""
    try:
        tree = quiet_parse(test_source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ()
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.raises" and node.args:
            first = node.args[0]
            name = ast.unparse(first).rsplit(".", 1)[-1] if isinstance(first, ast.Name | ast.Attribute) else None
        elif isinstance(node, ast.Compare) and ast.unparse(node.left).endswith(".__name__") and node.comparators:
            right = node.comparators[0]
            name = right.value if isinstance(right, ast.Constant) and isinstance(right.value, str) else None
        # Only identifiers: the names may come from a model's test and end up in generated code.
        if name and name.isidentifier() and name not in ("Exception", "BaseException") and isinstance(node, ast.expr):
            found.append((node.lineno, node.col_offset, name))
    return tuple(dict.fromkeys(name for _, _, name in sorted(found)))


def same_calls(repro: Reproduction) -> tuple[str, ...]:
    """Setup statements that call what the observed expression calls, value unused (`>>> parse("a")` before
    `>>> parse("b")`): a session showing one call failing on several inputs."""
    try:
        observed = quiet_parse(repro.observed or "", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ()
    if not isinstance(observed, ast.Call):
        return ()
    callee = ast.unparse(observed.func)
    found: list[str] = []
    for statement in repro.setup:
        try:
            body = quiet_parse(statement).body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        only = body[0] if len(body) == 1 else None
        if isinstance(only, ast.Expr) and isinstance(only.value, ast.Call) and ast.unparse(only.value.func) == callee:
            found.append(statement)
    return tuple(found)


def _raises_check(observed: str, exc: str, same: tuple[str, ...] = ()) -> Check:
    """`pytest.raises` around the observed call and, when the report shows the same call on other inputs
    first, around each of those too: the report expects every one of them to raise."""
    name = exc.rsplit(".", 1)[-1]
    lines: list[str] = []
    for call in (*same, observed):
        if name in _BUILTIN_EXCS:
            lines += [f"with pytest.raises({name}):", f"    {call}"]
        else:
            lines += [
                "with pytest.raises(Exception) as excinfo:",
                f"    {call}",
                f"assert type(excinfo.value).__name__ == {name!r}",
            ]
    summary = f"asserts the call raises {name}, as the report expects"
    if same:
        summary = f"asserts each of the {len(same) + 1} calls raises {name}, as the report expects"
    return Check(tuple(lines), "wrong_value", summary, runs=same)


def _no_exception_check(repro: Reproduction, exc: str) -> Check:
    name = exc.rsplit(".", 1)[-1]
    body = ("    SETUP", "    VALUE") if repro.observed else ("    SETUP",)
    handler: tuple[str, ...]
    if name in _BUILTIN_EXCS:
        handler = (f"except {name} as exc:", f'    pytest.fail(f"still raises {name}: {{exc}}")')
    else:
        handler = (
            "except Exception as exc:",
            f"    if type(exc).__name__ == {name!r}:",
            f'        pytest.fail(f"still raises {name}: {{exc}}")',
            "    raise",
        )
    summary = f"asserts the reproduction does not raise {name}"
    return Check(("try:", *body, *handler), "exception", summary, weak=True)

"""Reproductions read from a report (script, REPL, traceback, prose) and the imports they need."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from pathlib import PurePosixPath

from agents.reading import IssueFacts, ReplStep, is_expression, quiet_literal, quiet_parse
from agents.reproduce.types import NOT_SHOWN, Reproduction, Symptom, ValueForm

_BUILTINS = frozenset(dir(builtins))
_TEST_PART = re.compile(r"^(?:tests?|testing)$")
_NOT_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "manage", "__main__"})
_PARSE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError)


def parse_statements(code: str) -> tuple[list[ast.stmt], str] | None:
    """Top-level statements of code and the (dedented) text they were parsed from; None if not Python."""
    for text in (code, _dedent(code)):
        try:
            return quiet_parse(text).body, text
        except _PARSE_ERRORS:
            continue
    return None


def _dedent(code: str) -> str:
    lines = code.split("\n")
    cut = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[cut:] for x in lines)


def segment(node: ast.AST, code: str) -> str:
    """The user's own text for a node (keeping their formatting), or ast.unparse when that is unsafe."""
    text = ast.get_source_segment(code, node)
    decorators = getattr(node, "decorator_list", None)
    if text is not None and decorators:
        # A def's own position starts at `def`: its decorators are part of what the user wrote and ran.
        col = getattr(node, "col_offset", 0)
        above = code.split("\n")[min(d.lineno for d in decorators) - 1 : getattr(node, "lineno", 1) - 1]
        text = "\n".join([*(x[col:] for x in above), text])
    multiline_str = any(
        isinstance(n, ast.Constant | ast.JoinedStr) and getattr(n, "end_lineno", 0) != getattr(n, "lineno", 0)
        for n in ast.walk(node)
    )
    if text is None or multiline_str:
        return ast.unparse(node)
    col = getattr(node, "col_offset", 0)
    lines = text.split("\n")
    # Continuation lines of a nested statement keep their absolute indentation; make it relative.
    lines[1:] = [x[col:] if x[:col].isspace() else x for x in lines[1:]]
    return "\n".join(lines)


def _unwrap_main(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Inline `if __name__ == "__main__":` bodies: that is the code the user ran."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test).replace("'", '"') == '__name__ == "__main__"':
            out += _unwrap_main(stmt.body)
        else:
            out.append(stmt)
    return out


def _single_print_arg(stmt: ast.stmt) -> ast.expr | None:
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "print"
        and len(stmt.value.args) == 1
        and not stmt.value.keywords
        and not isinstance(stmt.value.args[0], ast.Starred)
    ):
        return stmt.value.args[0]
    return None


def _split_imports(stmts: list[ast.stmt], code: str) -> tuple[list[str], list[ast.stmt]]:
    imports = [segment(s, code) for s in stmts if isinstance(s, ast.Import | ast.ImportFrom)]
    return imports, [s for s in stmts if not isinstance(s, ast.Import | ast.ImportFrom)]


def _assigned_to(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id
    return None


def from_program(code: str, origin: str, subject: str | None) -> Reproduction | None:
    """A script's reproduction: the last top-level print(x), else the last expression or assignment."""
    parsed = parse_statements(code)
    if parsed is None:
        return None
    stmts, code = parsed
    imports, body = _split_imports(_unwrap_main(stmts), code)
    if not body:
        return None
    program = tuple(segment(s, code) for s in body)
    for i in range(len(body) - 1, -1, -1):
        arg = _single_print_arg(body[i])
        if arg is not None:
            return Reproduction(origin, tuple(imports), program[:i], segment(arg, code), "str", program)
    last = body[-1]
    inside = _print_in_context(last)
    if inside is not None:
        return Reproduction(origin, tuple(imports), (*program[:-1], inside), CONTEXT_RESULT, "str", program)
    if subject and is_expression(subject) and _binds(body, subject):
        return Reproduction(origin, tuple(imports), program, subject.strip(), "value", program)
    if isinstance(last, ast.Expr):
        return Reproduction(origin, tuple(imports), program[:-1], segment(last.value, code), "value", program)
    name = _assigned_to(last)
    return Reproduction(origin, tuple(imports), program, name, "value", program)


#: The name a value printed inside a `with` block is bound to, so it can be checked after the block.
CONTEXT_RESULT = "value_in_context"


class _PrintToAssign(ast.NodeTransformer):
    """Turn the one print(x) that ends a `with` body into `value_in_context = x`."""

    def __init__(self, target: ast.stmt) -> None:
        self.target = target

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        """Replace the chosen print statement; leave every other expression alone."""
        if node is self.target:
            arg = _single_print_arg(node)
            assert arg is not None
            return ast.copy_location(ast.Assign([ast.Name(CONTEXT_RESULT, ast.Store())], arg), node)
        return node


def _print_in_context(stmt: ast.stmt) -> str | None:
    """A `with` statement whose body ends by printing a value, with that print turned into an assignment.

    The pattern: the user observes a value inside a context manager (`with override(x): print(f())`).
    The context is what makes the buggy code run, so the test keeps the whole `with` and checks the
    value it bound afterwards, instead of dropping the block or calling f() outside it.
    """
    node: ast.stmt = stmt
    while isinstance(node, ast.With | ast.AsyncWith) and node.body:
        node = node.body[-1]
    if node is stmt or _single_print_arg(node) is None or isinstance(stmt, ast.AsyncWith):
        return None
    if CONTEXT_RESULT in {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}:
        return None
    return ast.unparse(_PrintToAssign(node).visit(stmt))


def _binds(stmts: list[ast.stmt], subject: str) -> bool:
    """Does subject only use names the statements define (e.g. `result`)?"""
    try:
        tree = quiet_parse(subject.strip(), mode="eval")
    except _PARSE_ERRORS:
        return False
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    bound = set().union(*(bound_names(s) for s in stmts)) if stmts else set()
    return bool(used) and used <= bound | _BUILTINS


def from_repl(steps: Sequence[ReplStep], facts: IssueFacts) -> Reproduction | None:
    """A REPL reproduction: the step whose output is the reported one (or raised), earlier steps as setup.

    The step observed is usually an expression whose echo or exception the report is about. A statement
    step (an assignment, a loop over continuation lines) that raised is the reproduction too: it runs as
    the test's setup, and a name it assigns is the value observed.
    """
    parsed = _parsed_steps(steps)
    exprs = [i for i, (_, stmts, _) in enumerate(parsed) if len(stmts) == 1 and isinstance(stmts[0], ast.Expr)]
    raised = [i for i, (step, _, _) in enumerate(parsed) if _raised_as_reported(step, facts)]
    if not exprs and not raised:
        return None
    chosen = exprs[-1] if exprs else raised[-1]
    for i in reversed(sorted(set(exprs) | set(raised))):
        if i in raised or (facts.actual is not None and _same_text(parsed[i][0].printed, facts.actual)):
            chosen = i
            break
    if chosen not in raised and facts.expected is not None:
        chosen = _contrast_step(parsed, exprs, chosen, facts.expected)
    if facts.subject:
        # The report said which call the expected value is about: compare that call, not a later one.
        named = [i for i in exprs if _same_code(parsed[i][0].source, facts.subject)]
        chosen = named[-1] if named else chosen
    imports, setup = _repl_setup(parsed[:chosen])
    step, stmts, code = parsed[chosen]
    actual = step.printed if step.printed and step.raised is None else None
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Expr):
        step_imports, body = _split_imports(stmts, code)
        program = (*setup, *(segment(s, code) for s in body))
        observed = _assigned_to(body[-1]) if body else None
        # A loop that prints shows str() of its values; an assignment's value was never shown.
        prints = any(_single_print_arg(n) is not None for n in ast.walk(stmts[-1]) if isinstance(n, ast.stmt))
        form: ValueForm = "str" if prints else "repr"
        imports += step_imports
        return Reproduction("REPL session", tuple(imports), program, observed, form, program, actual=actual)
    observed, form = _observation(stmts[0], code)
    # A traceback the call printed before returning is part of the story, but the call returned: the
    # test compares its value.
    symptom: Symptom | None = "wrong_value" if step.logged is not None else None
    return Reproduction("REPL session", tuple(imports), tuple(setup), observed, form, actual=actual, symptom=symptom)


def _contrast_step(
    parsed: Sequence[tuple[ReplStep, list[ast.stmt], str]], exprs: Sequence[int], chosen: int, expected: str
) -> int:
    """The step the expected value is about, when the chosen one already echoes it.

    The pattern: a session ends on a working case shown for contrast (the same value reached another way),
    and the prose says "I expected V here as well". The step that echoed V is no reproduction; the latest
    earlier step that echoed another value of V's type is. Without one, the chosen step stays.
    """
    if not _same_text(parsed[chosen][0].printed, expected):
        return chosen
    kind = _literal_type(expected)
    if kind is None:
        return chosen
    for i in reversed([i for i in exprs if i < chosen]):
        printed = parsed[i][0].printed
        if printed and not _same_text(printed, expected) and _literal_type(printed) is kind:
            return i
    return chosen


def _literal_type(text: str) -> type | None:
    """The type of a Python literal's value (None when the text is no literal)."""
    try:
        return type(quiet_literal(text))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


def _parsed_steps(steps: Sequence[ReplStep]) -> list[tuple[ReplStep, list[ast.stmt], str]]:
    """Steps whose source parses, with their statements and the text they were parsed from."""
    parsed: list[tuple[ReplStep, list[ast.stmt], str]] = []
    for step in steps:
        result = parse_statements(step.source)
        if result and result[0]:
            parsed.append((step, *result))
    return parsed


def _raised_as_reported(step: ReplStep, facts: IssueFacts) -> bool:
    """Did this step raise the exception the report is about?"""
    raised = step.raised
    if raised is None or not facts.exception_type:
        return False
    return raised[0].rsplit(".", 1)[-1] == facts.exception_type.rsplit(".", 1)[-1]


def aligned_repl(steps: Sequence[ReplStep], expected_values: Sequence[str]) -> list[Reproduction]:
    """One reproduction per call of a multi-call REPL session, each paired with its own expected value.

    The pattern: a session shows n calls with their echoed results, and the report lists n expected values
    in the same order. Call k is compared with value k, never with another call's value. Calls whose
    echoed result already is the expected one are working examples, not the bug, and are left out. When
    the session has more calls than values, the calls that already echo one of the listed values are
    those working examples (shown for contrast) and are set aside before pairing.
    Returns [] when the counts still differ (the pairing would be a guess).
    """
    parsed = _parsed_steps(steps)
    calls = [
        i
        for i, (step, stmts, _) in enumerate(parsed)
        if len(stmts) == 1 and isinstance(stmts[0], ast.Expr) and step.output.strip() and _has_call(stmts[0])
    ]
    if len(calls) > len(expected_values):
        calls = [i for i in calls if not any(_same_text(parsed[i][0].printed, v) for v in expected_values)]
    if len(expected_values) < 2 or len(calls) != len(expected_values):
        return []
    out: list[Reproduction] = []
    for i, expected in zip(calls, expected_values, strict=True):
        if _same_text(parsed[i][0].output, expected):
            continue
        repro = _paired_step(parsed, i, expected)
        out += [replace(repro, origin="REPL session, call by call")] if repro is not None else []
    return out


def script_session(code: str, output: str) -> list[ReplStep]:
    """A script whose top-level prints each show one line, read as the REPL session it amounts to.

    The pattern: a report's script prints several values and its output block shows one line per print, in
    order (`print(a == b)`, `print(len({a, b}))` -> `True`, `2`). Read as a session, each print is a step with
    its own shown line, so an expected list with one value per print pairs them one by one (aligned_repl), the
    other statements being setup. [] when a print is nested or takes options, when there are fewer than two
    prints, or when prints and lines do not match one to one: the pairing would then be a guess.
    """
    parsed = parse_statements(code)
    if parsed is None:
        return []
    stmts, text = parsed
    lines = [line for line in output.splitlines() if line.strip()]
    is_print = [_single_print_arg(s) is not None for s in stmts]
    others = [s for s, printing in zip(stmts, is_print, strict=True) if not printing]
    if any(_calls_print(s) for s in others) or sum(is_print) < 2 or sum(is_print) != len(lines):
        return []
    shown = iter(lines)
    return [
        ReplStep(segment(s, text), next(shown) if printing else "") for s, printing in zip(stmts, is_print, strict=True)
    ]


def script_reproduction(code: str, output: str, facts: IssueFacts) -> Reproduction | None:
    """A printing script answered by one expected value: the print whose shown line that value corrects.

    The pattern: a script prints several values, its output block shows one line each, and the prose states
    one expected value ("I'd expect the file to load as `{...}`"). Read as a session (script_session), the
    print whose line is most like the expected value is the one it is about (the user expects another version
    of what they saw); a line that already is the value is a working case for contrast (see from_repl).
    """
    expected = facts.expected
    if expected is None or "\n" in expected.strip():
        return None  # the whole output, expected as a block: compared as such (from_program)
    steps = script_session(code, output)
    if not steps:
        return None
    shown = [i for i, step in enumerate(steps) if step.output]
    target = max(shown, key=lambda i: (SequenceMatcher(None, steps[i].printed, expected).ratio(), i))
    repro = from_repl(steps[: target + 1], facts)
    return replace(repro, origin="script from the report, read as a session") if repro else None


def _calls_print(stmt: ast.stmt) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print" for n in ast.walk(stmt)
    )


def paired_reproductions(
    steps: Sequence[ReplStep], pairs: Sequence[tuple[str, str]], callees: Sequence[str] = ()
) -> list[Reproduction]:
    """One reproduction per (call, value) pair the report states as expected, the call from the session.

    The pattern: after a session, the report pairs calls with their expected values ("`q[1:3]` is
    `Q([2, 3])`", "`'a'` from `strip`", a bulleted "`f(1)` → `2`", "`'z'` for `x.y.z`"). Each pair observes
    the session step that makes that call (by its code, by its callee when the pair names only the callee,
    or as the call that takes the pair's input, picked by the callees the expected sentence is about), with
    the steps before it as setup. A pair about a call the session does not make runs after the whole
    session when the session binds its names; without a session, the call is observed on its own. A step
    whose echo already is the expected value is a working example, not the bug, and is left out.
    """
    parsed = _parsed_steps(steps)
    out: list[Reproduction] = []
    for code, expected in pairs:
        matches = [
            i
            for i, (step, stmts, _) in enumerate(parsed)
            if len(stmts) == 1 and isinstance(stmts[0], ast.Expr) and _makes_call(step.source, code)
        ]
        index = matches[-1] if matches else _step_taking(parsed, code, callees)
        if index is not None:
            repro = _paired_step(parsed, index, expected)
            out += [repro] if repro is not None else []
        elif _observes(code) and (not parsed or set(free_names([code])) <= _session_names(parsed)):
            imports, setup = _repl_setup(parsed)
            origin = "the report's expected pairs" + (", after the session" if parsed else "")
            out.append(Reproduction(origin, tuple(imports), tuple(setup), code, "value", expected=expected))
    return out


def script_pairs(code: str, pairs: Sequence[tuple[str, str]]) -> list[Reproduction]:
    """One reproduction per expected (expression, value) pair that is about the names a script binds.

    The pattern: a script sets up some objects, prints what it sees, and the report then states what an
    expression over the script's names should be ("`a == b` is False", "`c.rooted` is True"), as a list or
    in a sentence. The whole script is the setup and the expression is observed after it; an expression
    that reads a name the script does not bind is left to the other readings.
    """
    parsed_script = parse_statements(code)
    if parsed_script is None or not pairs:
        return []
    stmts, text = parsed_script
    parsed = _parsed_steps([ReplStep(segment(stmt, text), "") for stmt in stmts])
    names = _session_names(parsed)
    imports, setup = _repl_setup(parsed)
    out: list[Reproduction] = []
    for expression, expected in pairs:
        used = set(free_names([expression]))
        if not is_expression(expression) or not used or not used <= names or used <= set(_BUILTINS):
            continue
        origin = "script from the report, with the values the report expects of it"
        # The output shows what the script prints, not this expression's value: no actual value to match.
        out.append(
            Reproduction(
                origin, tuple(imports), tuple(setup), expression.strip(), "value", expected=expected, actual=NOT_SHOWN
            )
        )
    return out


def _paired_step(
    parsed: Sequence[tuple[ReplStep, list[ast.stmt], str]], index: int, expected: str
) -> Reproduction | None:
    """The session's step `index` compared with its own expected value (None: it already echoes it)."""
    step, stmts, text = parsed[index]
    if step.raised is None and _same_text(step.printed, expected):
        return None
    imports, setup = _repl_setup(parsed[:index])
    observed, form = _observation(stmts[0], text)
    actual = step.printed if step.printed and step.raised is None else None
    # A call compared on its own shows its own symptom: a value it echoed is a wrong value, even when
    # another call of the session raised (the report's exception).
    symptom: Symptom | None = "wrong_value" if actual is not None else None
    origin = "REPL session, as the report pairs calls and values"
    return Reproduction(
        origin, tuple(imports), tuple(setup), observed, form, expected=expected, actual=actual, symptom=symptom
    )


def _step_taking(
    parsed: Sequence[tuple[ReplStep, list[ast.stmt], str]], given: str, callees: Sequence[str]
) -> int | None:
    """The echo step that takes `given` as its input: it contains the text, or uses a name that a step
    containing it assigned. Several such steps are told apart by the callees the report is about; a
    choice that stays ambiguous is None."""
    needle = " ".join(given.split())
    if not needle:
        return None
    tainted: set[str] = set()
    taking: list[int] = []
    for i, (step, stmts, _) in enumerate(parsed):
        source = " ".join(step.source.split())
        uses = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if needle in source or uses & tainted:
            if len(stmts) == 1 and isinstance(stmts[0], ast.Expr):
                taking.append(i)
            tainted |= set().union(*(bound_names(s) for s in stmts)) - set(_BUILTINS)
    for callee in callees:
        calling = [i for i in taking if callee in _called(parsed[i][1][0])]
        if calling:
            return calling[0]
    return taking[0] if len(taking) == 1 else None


def _called(node: ast.AST) -> set[str]:
    """Names of the functions and methods a statement calls."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            out.add(n.func.attr if isinstance(n.func, ast.Attribute) else ast.unparse(n.func))
    return out


def _observation(stmt: ast.stmt, code: str) -> tuple[str, ValueForm]:
    """The expression an echo step observes and how it was shown: print(x) shows str, an echo repr."""
    assert isinstance(stmt, ast.Expr)
    arg = _single_print_arg(stmt)
    if arg is None:
        return segment(stmt.value, code), "repr"
    if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "repr" and len(arg.args) == 1:
        return segment(arg.args[0], code), "repr"  # print(repr(x)) shows what an echo of x shows
    return segment(arg, code), "str"


def _makes_call(source: str, code: str) -> bool:
    """Is the step `source` the expression `code`, or a call of the callee `code`?"""
    if _same_code(source, code):
        return True
    try:
        tree = quiet_parse(source.strip(), mode="eval").body
        callee = quiet_parse(code.strip(), mode="eval").body
    except _PARSE_ERRORS:
        return False
    return (
        isinstance(callee, ast.Name | ast.Attribute)
        and isinstance(tree, ast.Call)
        and ast.unparse(tree.func) == ast.unparse(callee)
    )


def _observes(code: str) -> bool:
    """A call or a subscript, which observes a value (a bare callee observes nothing)."""
    try:
        tree = quiet_parse(code.strip(), mode="eval").body
    except _PARSE_ERRORS:
        return False
    return isinstance(tree, ast.Call | ast.Subscript)


def _session_names(parsed: Sequence[tuple[ReplStep, list[ast.stmt], str]]) -> set[str]:
    names: set[str] = set(_BUILTINS)
    for _, stmts, _ in parsed:
        for stmt in stmts:
            names |= bound_names(stmt)
    return names


def _repl_setup(parsed: Sequence[tuple[ReplStep, list[ast.stmt], str]]) -> tuple[list[str], list[str]]:
    """Imports and statements of earlier REPL steps that a later step needs (echoes of plain names and
    literals and raising steps are left out: the first is noise, the second would stop the test before
    the observation)."""
    imports: list[str] = []
    setup: list[str] = []
    for step, stmts, code in parsed:
        step_imports, body = _split_imports(stmts, code)
        imports += step_imports
        if step.raised is not None:
            continue
        if len(body) == 1 and isinstance(body[0], ast.Expr) and not _runs_code(body[0]):
            continue
        setup += [segment(s, code) for s in body]
    return imports, setup


def _runs_code(node: ast.AST) -> bool:
    """Can evaluating node run the project's code? Calls can, and so can `obj.attr` and `obj[k]` (properties,
    __getitem__): a session that reads a cached property, sets an attribute and reads it again needs the
    first read too. A bare name or literal cannot."""
    return any(isinstance(n, ast.Call | ast.Attribute | ast.Subscript) for n in ast.walk(node))


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _same_code(a: str, b: str) -> bool:
    """Same expression, whatever the spacing between tokens (spacing inside strings counts)."""
    try:
        return ast.unparse(quiet_parse(a.strip(), mode="eval")) == ast.unparse(quiet_parse(b.strip(), mode="eval"))
    except _PARSE_ERRORS:
        return " ".join(a.split()) == " ".join(b.split())


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def from_prose(setup_code: str | None, subject: str | None, form: ValueForm) -> Reproduction | None:
    """A prose reproduction: "I tried `stmts`" as setup, the span the result was said of as observation."""
    parsed = parse_statements(setup_code) if setup_code else None
    stmts, code = parsed if parsed else ([], "")
    imports, body = _split_imports(stmts, code)
    if subject and is_expression(subject):
        setup = tuple(segment(s, code) for s in body)
        return Reproduction("inline code", tuple(imports), setup, subject.strip(), form)
    if body and setup_code:
        return from_program(setup_code, "inline code", None)
    return None


def bound_names(node: ast.AST) -> set[str]:
    """Names a statement binds (assignments, defs, imports, loop and with targets)."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            names.add(n.id)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.Global | ast.Nonlocal):
            names |= set(n.names)
    return names


def free_names(sources: Sequence[str]) -> list[str]:
    """Names the code reads but never binds and that are not builtins, in order of first use."""
    trees = []
    for source in sources:
        try:
            trees.append(quiet_parse(source))
        except _PARSE_ERRORS:
            continue
    bound: set[str] = set()
    for tree in trees:
        bound |= bound_names(tree)
    used: dict[str, None] = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                used.setdefault(n.id, None)
    return [n for n in used if n not in bound and n not in _BUILTINS]


def attribute_bases(sources: Sequence[str]) -> set[str]:
    """Names only ever used as `name.attr` (so likely modules), never called or passed."""
    bases: set[str] = set()
    other: set[str] = set()
    for source in sources:
        try:
            tree = quiet_parse(source)
        except _PARSE_ERRORS:
            continue
        parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                parent = parents.get(id(n))
                (bases if isinstance(parent, ast.Attribute) and parent.value is n else other).add(n.id)
    return bases - other


def is_test_file(path: str) -> bool:
    """Test modules and anything under a tests/ directory."""
    p = PurePosixPath(path)
    return (
        any(_TEST_PART.match(part) for part in p.parts[:-1])
        or p.name.startswith("test_")
        or p.name.endswith("_test.py")
        or p.name == "conftest.py"
    )


def module_index(repo_files: Sequence[str]) -> dict[str, list[str]]:
    """Importable non-test modules of the repo, keyed by last name component, as dotted paths."""
    index: dict[str, list[str]] = {}
    for path in sorted(repo_files, key=lambda f: (f.count("/"), f)):
        p = PurePosixPath(path)
        if p.suffix != ".py" or is_test_file(path) or any(part.startswith(".") for part in p.parts):
            continue
        parts = list(p.with_suffix("").parts)
        if parts and parts[0] in ("src", "lib") and len(parts) > 1:
            parts = parts[1:]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or parts[-1] in _NOT_MODULES or not all(x.isidentifier() for x in parts):
            continue
        index.setdefault(parts[-1], []).append(".".join(parts))
    return index


def snake_case(name: str) -> str:
    """CamelCase to snake_case (Node -> node, LinkedList -> linked_list)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def resolve_imports(
    names: Sequence[str],
    module_bases: Collection[str],
    repo_files: Sequence[str],
    mentioned_modules: Sequence[str],
    repo_symbols: Mapping[str, Collection[str]] | None,
    callables: Collection[str] = (),
    dotted: Collection[str] = (),
) -> tuple[list[str], list[str]]:
    """Import statements for names the code uses but never imports, and the names left unresolved.

    Only names the report calls may fall back to "the module the report mentions": a stray variable
    (from a partial snippet) must stay unresolved rather than become a bogus import. A dotted path the
    report writes out (`pkg.mod.func`) says where `func` lives, when `pkg.mod` is a module of the repo.
    """
    index = module_index(repo_files)
    all_modules = sorted({m for mods in index.values() for m in mods}, key=lambda m: (m.count("."), m))
    defined = _definers(repo_symbols, index) if repo_symbols else {}
    homes = dotted_homes(dotted, all_modules)
    library_homes = dotted_homes(dotted, standard_modules(dotted))
    imports: list[str] = []
    unresolved: list[str] = []
    for name in names:
        if name in module_bases and name in index:
            imports.append(f"import {index[name][0]}")
            continue
        module = _pick(defined.get(name, []), name, mentioned_modules)
        if module is None and name in homes:
            module = homes[name]
        # `operator.add` written in the report, bare `add` in its call: the standard library's name (the repo's
        # own modules and symbols came first). Checked inside the sandbox, where a wrong guess fails to import.
        if module is None and name in library_homes:
            module = library_homes[name]
        if module is None and name in module_bases and _public_standard(name) and name not in _PROCESS_MODULES:
            imports.append(f"import {name}")  # `datetime.date(...)` in a report that never imports datetime
            continue
        if module is None and (name in callables or name[:1].isupper()):
            module = common_library_home(name)
        if module is None and not defined:
            module = _guess(name, index, mentioned_modules if name in callables else (), all_modules)
            if module is not None and name not in callables and module.rsplit(".", 1)[-1] not in _stems(name):
                module = None
        if module is None:
            unresolved.append(name)
        else:
            imports.append(f"from {module} import {name}")
    return imports, unresolved


_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w.])")


def dotted_homes(texts: Collection[str], modules: Collection[str]) -> dict[str, str]:
    """name -> module for each `module.name` path in texts whose module is one of the repo's modules."""
    known = set(modules)
    homes: dict[str, str] = {}
    for text in texts:
        for m in _DOTTED.finditer(text):
            module, _, name = m.group(0).rpartition(".")
            if module in known:
                homes.setdefault(name, module)
    return homes


def standard_modules(texts: Collection[str]) -> list[str]:
    """The dotted prefixes in texts (`os.path` of `os.path.join`) that are public standard-library modules.

    Nothing is imported here: the names come from the report, and importing one may have effects.
    """
    found: set[str] = set()
    for text in texts:
        for m in _DOTTED.finditer(text):
            parts = m.group(0).split(".")[:-1]
            if _public_standard(parts[0]):
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(found)


#: Standard-library modules whose classes and functions reports use without showing the import
#: (`datetime(2015, 1, 31)`, `Decimal("1.10")`, `defaultdict(list)`), most common first: the first that has the
#: name wins, after the repo's own modules and symbols.
COMMON_LIBRARY_MODULES = (
    "datetime",
    "decimal",
    "fractions",
    "collections",
    "pathlib",
    "io",
    "uuid",
    "functools",
    "enum",
)


#: Modules whose state is the user's process, not the code's: `sys.argv[1]` in a report is the script's
#: argument, which a test that imports `sys` would replace by pytest's own.
_PROCESS_MODULES = frozenset({"sys"})


def _public_standard(name: str) -> bool:
    """Is `name` a public top-level module of the standard library?"""
    return name in sys.stdlib_module_names and not name.startswith("_")


def common_library_home(name: str) -> str | None:
    """The first of COMMON_LIBRARY_MODULES with a public class or function called `name`, or None.

    Only the standard library is imported here, never anything the report names as a module.
    """
    if name.startswith("_"):
        return None
    for module_name in COMMON_LIBRARY_MODULES:
        value = getattr(importlib.import_module(module_name), name, None)
        if value is not None and (inspect.isclass(value) or inspect.isroutine(value)):
            return module_name
    return None


def _definers(symbols: Mapping[str, Collection[str]], index: dict[str, list[str]]) -> dict[str, list[str]]:
    """Name -> dotted modules defining it, from a path -> names map."""
    out: dict[str, list[str]] = {}
    for path, names in symbols.items():
        dotted = module_index([path])
        mods = [m for ms in dotted.values() for m in ms]
        if not mods:
            continue
        for name in names:
            out.setdefault(name, []).append(mods[0])
    return out


def _stems(name: str) -> tuple[str, str, str]:
    return name, snake_case(name), name.lower()


def _pick(modules: list[str], name: str, mentioned: Sequence[str]) -> str | None:
    if not modules:
        return None
    stems = {m: m.rsplit(".", 1)[-1] for m in modules}
    return min(
        modules,
        key=lambda m: (
            stems[m] not in (name, snake_case(name), name.lower()),
            stems[m] not in mentioned,
            m.count("."),
            m,
        ),
    )


def _guess(name: str, index: dict[str, list[str]], mentioned: Sequence[str], all_modules: list[str]) -> str | None:
    """Without symbol tables: a module named after the name, else the one module the report mentions."""
    for stem in _stems(name):
        if stem in index:
            return index[stem][0]
    present = [index[m][0] for m in mentioned if m in index]
    if len(present) == 1:
        return present[0]
    if len(all_modules) == 1:
        return all_modules[0]
    return None

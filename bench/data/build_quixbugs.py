"""Rebuild the QuixBugs benchmark cases (the format of ../shared/bench/quixbugs) from QuixBugs' public repo.

    QUIXBUGS_URL=... QUIXBUGS_REF=... python bench/data/build_quixbugs.py --out bench/data/quixbugs [--split all]

The one I/O point is `main`: it clones QUIXBUGS_URL (a URL or a local path) at QUIXBUGS_REF, runs each program's
test inputs on the buggy and the correct version in a sandbox (5 s each, like the upstream tests' budget) and
writes the case folders. Everything in between is pure: reading the JSON test cases, choosing the minimal fix,
sorting inputs into regression tests (pass on both versions) and oracle BRT cases (fail on buggy, pass on fixed),
and rendering case.toml, issue.md and the test files.

The issue text is derived from the first BRT case only: the call, what the *buggy* program did with it (the
wrong value, the exception with its traceback, or the hang), and the expected value the test asserts. It never
reads the correct program. Programs without JSON test cases (the graph programs, whose upstream tests are pytest
functions) get one self-contained test per upstream function, the module's shared setup copied into each.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.base import WORKSPACE_MOUNT, ExecResult, SandboxSpec
from sandboxes.factory import make_sandbox
from sandboxes.workspace import SAFE_GIT

#: The public repository and the commit the shared bench was built from.
DEFAULT_URL = "https://github.com/jkoppel/QuixBugs"
DEFAULT_REF = "4257f44b0ff1181dedaedee6a447e133219fcebf"
#: Seconds one test input may run (the bench's tests carry @pytest.mark.timeout(5)).
CASE_TIMEOUT = 5.0
#: Issue styles, rotated by the program's position in its half (the shared bench's order).
STYLES = ("snippet", "repl", "traceback", "prose")
#: Helper modules programs import (copied into every repo that imports them).
HELPERS = ("node",)

#: Runs inside the subprocess: call the program on one JSON input, report the outcome as one JSON line.
_PROBE = r"""
import importlib, json, sys, types


def shaped(expected, like):
    # JSON has no tuples: give the expected value the tuples the program's result has where it has them.
    if isinstance(like, (list, tuple)) and isinstance(expected, list):
        if len(like) == len(expected):
            items = [shaped(e, l) for e, l in zip(expected, like)]
        else:
            items = [shaped(e, like[0]) for e in expected] if like else expected
        return tuple(items) if isinstance(like, tuple) else items
    return expected


spec = json.loads(sys.stdin.read())
module = importlib.import_module(spec["program"])
try:
    result = getattr(module, spec["program"])(*spec["args"])
    generator = isinstance(result, types.GeneratorType)
    if generator:
        result = list(result)
except BaseException as exc:  # the program's own failure is the measurement
    print(json.dumps({"kind": "exception", "type": type(exc).__name__, "message": str(exc)[:300]}))
else:
    expected = shaped(spec["expected"], result)
    print(json.dumps({"kind": "ok", "repr": repr(result), "equal": result == expected,
                      "generator": generator, "expected": repr(expected)}))
"""


@dataclass(frozen=True)
class Outcome:
    """What one call did: returned (its repr, whether it equals the expected value), raised, or hung."""

    kind: str  # ok | exception | hang
    repr: str = ""
    equal: bool = False
    generator: bool = False
    exc_type: str = ""
    message: str = ""
    #: The expected value's repr, shaped like the result (tuples where it has tuples; JSON has none).
    expected: str = ""

    @property
    def passed(self) -> bool:
        """The test's assertion holds."""
        return self.kind == "ok" and self.equal

    @property
    def symptom(self) -> str:
        """wrong_value, exception or hang."""
        return {"ok": "wrong_value"}.get(self.kind, self.kind)


@dataclass(frozen=True)
class JsonCase:
    """One upstream JSON test case: the arguments and the expected value."""

    case_id: str
    args: list[Any]
    expected: Any


@dataclass
class Program:
    """One QuixBugs program as read from the checkout."""

    name: str
    buggy: str
    correct: str
    inputs: list[JsonCase]
    helpers: dict[str, str] = field(default_factory=dict)
    #: The upstream pytest module, for a program without JSON test cases (then `inputs` is empty).
    test_source: str = ""


@dataclass
class BuiltCase:
    """The files of one case folder, relative to it."""

    name: str
    files: dict[str, str]


#: (program folder, program name, test input) -> Outcome.
Runner = Callable[[Path, str, JsonCase], Outcome]
#: (program folder, script text) -> what `python repro.py` printed (stdout + stderr), whether it hung, exit code.
ScriptRunner = Callable[[Path, str], tuple[str, bool, int]]


def parse_json_cases(text: str) -> list[JsonCase]:
    """QuixBugs' json_testcases file: one `[[args...], expected]` JSON document per line."""
    cases: list[JsonCase] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        args, expected = json.loads(line)
        cases.append(JsonCase(f"case{len(cases)}", args if isinstance(args, list) else [args], expected))
    return cases


def _code_lines(lines: Iterable[str]) -> list[str]:
    """Lines with comments and blank lines left out (what a comment-only difference does not change)."""
    out = []
    for line in lines:
        code = line.split("#", 1)[0].rstrip() if "#" in line and "'" not in line and '"' not in line else line.rstrip()
        if code.strip():
            out.append(code)
    return out


def minimal_fix(buggy: str, correct: str) -> str:
    """The buggy file with the code of each function replaced by the correct version's, nothing else.

    Only top-level functions the buggy file defines are taken from the correct file (its alternative solutions
    under other names and its docstrings stay out), and a changed region whose code is the same once comments
    and blank lines are dropped keeps the buggy text.
    """
    correct_tree = ast.parse(correct)
    correct_lines = correct.splitlines(keepends=True)
    replacement = {
        node.name: "".join(correct_lines[node.lineno - 1 - len(node.decorator_list) : node.end_lineno])
        for node in correct_tree.body
        if isinstance(node, ast.FunctionDef)
    }
    buggy_lines = buggy.splitlines(keepends=True)
    fixed = list(buggy_lines)
    for node in sorted(ast.parse(buggy).body, key=lambda n: -n.lineno):
        if isinstance(node, ast.FunctionDef) and node.name in replacement:
            start = node.lineno - 1 - len(node.decorator_list)
            fixed[start : node.end_lineno] = replacement[node.name].splitlines(keepends=True)
    result: list[str] = []
    matcher = difflib.SequenceMatcher(a=buggy_lines, b=fixed, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        before, after = buggy_lines[a1:a2], fixed[b1:b2]
        if op == "equal" or _code_lines(before) == _code_lines(after):
            result.extend(before)
        else:
            # A comment the correct version adds next to the changed code is not part of the fix.
            result.extend(line for line in after if not line.lstrip().startswith("#") or line in before)
    return "".join(result)


def unified_diff(path: str, before: str, after: str) -> str:
    """A git-style diff (a/ b/ prefixes) of one file; `git apply` takes it in the repo."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
    )
    body = "".join(lines)
    return f"diff --git a/{path} b/{path}\n{body}" if body else ""


def split_inputs(
    inputs: list[JsonCase], buggy: list[Outcome], fixed: list[Outcome]
) -> tuple[list[tuple[JsonCase, Outcome]], list[JsonCase]]:
    """(BRT cases with their buggy outcome, regression cases); an input the fixed code fails is dropped."""
    brt, regression = [], []
    for case, on_buggy, on_fixed in zip(inputs, buggy, fixed, strict=True):
        if not on_fixed.passed:
            continue
        if on_buggy.passed:
            regression.append(case)
        else:
            brt.append((case, on_buggy))
    return brt, regression


def call_text(name: str, args: list[Any], generator: bool) -> str:
    """The call as a user types it (`list(...)` around a generator, so it prints its values)."""
    call = f"{name}({', '.join(repr(a) for a in args)})"
    return f"list({call})" if generator else call


def render_tests(name: str, cases: list[tuple[JsonCase, str]], generator: bool, purpose: str) -> str:
    """A pytest module with one parametrized test over `cases` (each with its expected value's repr)."""
    params = "\n".join(f"    pytest.param({c.args!r}, {want}, id={c.case_id!r})," for c, want in cases)
    call = f"list({name}(*input_data))" if generator else f"{name}(*input_data)"
    return (
        f'"""{purpose} for {name}."""\nimport pytest\n\nfrom {name} import {name}\n\n\nCASES = [\n{params}\n]\n\n\n'
        f'@pytest.mark.timeout({int(CASE_TIMEOUT)})\n@pytest.mark.parametrize("input_data,expected", CASES)\n'
        f"def test_{name}(input_data, expected):\n    assert {call} == expected\n"
    )


def render_issue(name: str, case: JsonCase, outcome: Outcome, style: str, script_output: str) -> str:
    """The bug report for the first BRT case, written from what the buggy program did (never from the fix)."""
    call = call_text(name, case.args, outcome.generator)
    # The value the test expects, in the shape the buggy result has (a list of tuples, not of lists).
    expected = outcome.expected or repr(case.expected)
    imports = f"from {name} import {name}"
    if outcome.kind == "hang":
        title, actual = f"{name}() never returns for `{call}`", "it never returns, the call just hangs forever"
    elif outcome.kind == "exception":
        title, actual = f"{name}() raises {outcome.exc_type} for `{call}`", f"it raises `{outcome.exc_type}`"
        if outcome.message:
            actual = f"it raises `{outcome.exc_type}: {outcome.message}`"
    else:
        title, actual = f"Wrong result from {name}() for `{call}`", f"`{outcome.repr}`"
    if style == "repl":
        shown = outcome.repr if outcome.kind == "ok" else as_typed_in_repl(script_output)
        if outcome.kind == "hang":
            shown = "^CTraceback (most recent call last):\n  ...\nKeyboardInterrupt"
        return f"# {title}\n\n```\n>>> {imports}\n>>> {call}\n{shown}\n```\n\nI expected `{expected}` here.\n"
    if style == "traceback":
        ran = script_output.strip() if outcome.kind != "hang" else "(no output; it runs until I press Ctrl-C)"
        return (
            f"# {title}\n\nI saved this as `repro.py` and ran it:\n```python\n{imports}\nprint({call})\n```\n"
            f"```\n$ python repro.py\n{ran}\n```\n\nIt should print `{expected}`.\n"
        )
    if style == "prose":
        verb = "returns" if outcome.kind == "ok" else "hangs" if outcome.kind == "hang" else actual.removeprefix("it ")
        said = f"returns {actual}" if outcome.kind == "ok" else verb
        return (
            f"# {title}\n\nCalling `{call}` {said}, but I expected `{expected}`.\n\n"
            f"This is with the current `{name}.py`; the input satisfies the preconditions in its docstring.\n"
        )
    return (
        f"# {title}\n\nI'm using `{name}` from `{name}.py`. Minimal example:\n```python\n{imports}\nprint({call})\n```"
        f"\n\nExpected: `{expected}`\nActual: {actual}\n"
    )


def as_typed_in_repl(output: str) -> str:
    """A script's traceback as the interactive interpreter prints it: the script's frame is `<stdin>`."""
    lines = output.strip().splitlines()
    out: list[str] = []
    skipping = False
    for line in lines:
        if line.strip().startswith('File "repro.py"'):
            out.append('  File "<stdin>", line 1, in <module>')
            skipping = True
            continue
        if skipping and line.startswith("    "):
            continue  # the script's source line and its carets: the session above shows the call
        skipping = False
        out.append(line)
    return "\n".join(out)


def trim_output(text: str, folder: Path, head: int = 8, tail: int = 12) -> str:
    """Script output with the run folder's paths made relative, and a long traceback cut in the middle."""
    text = text.replace(f"{folder}/", "").replace(str(folder), ".")
    lines = text.rstrip().splitlines()
    if len(lines) > head + tail + 1:
        lines = [*lines[:head], "  ...", *lines[-tail:]]
    return "\n".join(lines)


def toml_value(value: Any) -> str:
    """A TOML literal for the simple values case.toml holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def build_case(
    program: Program,
    buggy: list[Outcome],
    fixed: list[Outcome],
    *,
    style: str,
    split: str,
    url: str,
    ref: str,
    script_output: str,
) -> BuiltCase | None:
    """The case folder's files, or None when no input fails on the buggy code and passes on the fixed."""
    brt, regression = split_inputs(program.inputs, buggy, fixed)
    if not brt:
        return None
    name = program.name
    generator = any(o.generator for o in [*buggy, *fixed])
    first, first_outcome = brt[0]
    files = _common_files(program)
    # Tests assert the expected value in the shape the correct program returns it (tuples where it has them).
    want = {c.case_id: f.expected or repr(c.expected) for c, f in zip(program.inputs, fixed, strict=True)}
    brt_cases = [(c, want[c.case_id]) for c, _ in brt]
    files["oracle/test_brt.py"] = render_tests(name, brt_cases, generator, "Bug reproduction tests").replace(
        f"tests for {name}.", f"tests for {name} (oracle; copy into tests/)."
    )
    files["issue.md"] = render_issue(name, first, first_outcome, style, script_output)
    if regression:
        kept = [(c, want[c.case_id]) for c in regression]
        files[f"repo/tests/test_{name}.py"] = render_tests(name, kept, generator, "Regression tests")
    meta = _meta(
        name, split, [o for _, o in brt], len(regression), first_outcome, style, f"test_{name}[{first.case_id}]"
    )
    tests = [f"json_testcases/{name}.json"]
    return BuiltCase(name, {**files, "case.toml": _case_toml(meta, _source(name, url, ref, tests))})


def _common_files(program: Program) -> dict[str, str]:
    """The buggy program, its helpers, the project file and the oracle fix."""
    name = program.name
    files = {
        f"repo/{name}.py": program.buggy,
        "repo/pyproject.toml": (
            f'[project]\nname = "{name.replace("_", "-")}"\nversion = "0.1.0"\nrequires-python = ">=3.8"\n\n'
            '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
        ),
        "oracle/fix.diff": unified_diff(f"{name}.py", program.buggy, minimal_fix(program.buggy, program.correct)),
    }
    files.update({f"repo/{helper}.py": text for helper, text in program.helpers.items()})
    return files


def _meta(
    name: str, split: str, brt: list[Outcome], regression: int, first: Outcome, style: str, issue_case: str
) -> dict[str, Any]:
    symptoms: dict[str, int] = {}
    for outcome in brt:
        symptoms[outcome.symptom] = symptoms.get(outcome.symptom, 0) + 1
    return {
        "id": f"quixbugs/{name}",
        "suite": "quixbugs",
        "language": "python",
        "split": split,
        "test_command": "python -m pytest -q",
        "deps": ["pytest", "pytest-timeout"],
        "brt_path": "tests/test_brt.py",
        "failing_cases": len(brt),
        "regression_cases": regression,
        "regression_origin": "quixbugs" if regression else "none",
        "symptom": first.symptom,
        "failing_symptoms": symptoms,
        "issue_style": style,
        "issue_case": issue_case,
    }


def _source(name: str, url: str, ref: str, tests: list[str]) -> dict[str, Any]:
    return {
        "repo": url,
        "commit": ref,
        "path": f"python_programs/{name}.py",
        "fixed_path": f"correct_python_programs/{name}.py",
        "tests": tests,
        "license": "MIT",
    }


def _case_toml(meta: dict[str, Any], source: dict[str, Any]) -> str:
    body = "".join(f"{k} = {toml_value(v)}\n" for k, v in meta.items())
    return body + "\n[source]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in source.items())


@dataclass(frozen=True)
class FunctionCase:
    """One upstream pytest function made self-contained: the module's setup statements, then its body."""

    case_id: str
    name: str
    docstring: str
    setup: str
    body: str


def _slug(text: str) -> str:
    """`Case 1: One path` -> `case1_one_path` (the shared bench's test names)."""
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    if len(words) >= 2 and words[0] == "case" and words[1].isdigit():
        words = [f"case{words[1]}", *words[2:]]
    return "_".join(words)


def function_cases(test_source: str) -> tuple[list[str], list[FunctionCase]]:
    """The imports an upstream pytest module keeps, and each `test*` function with the module's setup inlined.

    The `if pytest.use_correct:` block that picks the buggy or the correct program is dropped (the case imports
    the program itself); other module-level statements (shared fixtures such as linked nodes) are copied into
    every test, so each test runs alone and no test sees another's changes to them.
    """
    tree = ast.parse(test_source)
    imports, setup, cases = [], [], []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if not (isinstance(node, ast.Import) and [a.name for a in node.names] == ["pytest"]):
                imports.append(ast.get_source_segment(test_source, node) or "")
        elif isinstance(node, ast.If) and "use_correct" in ast.unparse(node.test):
            continue
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            doc = ast.get_docstring(node) or ""
            body = node.body[1:] if doc else node.body
            title = doc.splitlines()[0] if doc else node.name
            case_id = f"test_{_slug(title)}" if doc else node.name
            lines = test_source.splitlines()
            text = "\n".join(lines[body[0].lineno - 1 : body[-1].end_lineno]) if body else "pass"
            cases.append(FunctionCase(case_id, node.name, doc, "", textwrap.dedent(text)))
        else:
            setup.append(ast.get_source_segment(test_source, node) or "")
    shared = "\n".join(setup)
    return imports, [FunctionCase(c.case_id, c.name, c.docstring, shared, c.body) for c in cases]


def render_function_tests(program: str, imports: list[str], cases: list[FunctionCase], purpose: str) -> str:
    """A pytest module of self-contained tests (the shared bench's layout for the graph programs)."""
    parts = [f'"""{purpose} for {program}."""\nimport pytest\n\n' + "\n".join(imports)]
    for case in cases:
        docstring = textwrap.indent(case.docstring, "    ").strip()
        doc = f'    """{docstring}\n    """\n\n' if case.docstring else ""
        code = "\n".join(x for x in (case.setup, case.body) if x)
        parts.append(
            f"@pytest.mark.timeout({int(CASE_TIMEOUT)})\ndef {case.case_id}():\n{doc}" + textwrap.indent(code, "    ")
        )
    return "\n\n\n".join(parts) + "\n"


def function_script(imports: list[str], case: FunctionCase) -> tuple[str, str, str] | None:
    """(script, expected, how) for a function case whose last statement asserts on one value, else None.

    The script is the test's code with its final `assert` turned into a `print` of the value it checks;
    `expected` is what the assertion wants: the right side of `==` (`how` = "value", its source or, when not a
    literal, a Python expression whose repr the caller evaluates), or `True`/`False` for `assert x`/`assert not x`.
    """
    tree = ast.parse(case.body)
    if not tree.body or not isinstance(tree.body[-1], ast.Assert):
        return None
    test = tree.body[-1].test
    head = "\n".join(ast.get_source_segment(case.body, n) or "" for n in tree.body[:-1])
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        shown, expected = ast.unparse(test.left), ast.unparse(test.comparators[0])
        try:
            expected, how = repr(ast.literal_eval(test.comparators[0])), "value"
        except ValueError:
            how = "expression"
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        shown, expected, how = ast.unparse(test.operand), "False", "value"
    else:
        shown, expected, how = ast.unparse(test), "True", "value"
    script = "\n".join(x for x in ("\n".join(imports), case.setup, head, f"print({shown})") if x) + "\n"
    return script, expected, how


def program_names(checkout: Path) -> list[str]:
    """Every QuixBugs program, sorted (helpers and the old `*_test.py` scripts left out): the split's order."""
    names = (p.stem for p in (checkout / "python_programs").glob("*.py"))
    return sorted(n for n in names if n not in HELPERS and not n.endswith("_test"))


def _outcome_of(output: str, hung: bool, code: int) -> Outcome:
    """How a self-contained test ended: passed (exit 0), assertion (wrong value), another exception, or hang."""
    if hung:
        return Outcome("hang")
    if code == 0:
        return Outcome("ok", equal=True)
    last = output.strip().splitlines()[-1] if output.strip() else "Crash"
    exc_type, _, message = last.partition(":")
    if exc_type == "AssertionError":
        return Outcome("ok", equal=False)
    return Outcome("exception", exc_type=exc_type.strip().rsplit(".", 1)[-1], message=message.strip()[:300])


def _folder(workdir: Path, version: str, program: Program, text: str) -> Path:
    folder = workdir / version / program.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{program.name}.py").write_text(text)
    for helper, helper_text in program.helpers.items():
        (folder / f"{helper}.py").write_text(helper_text)
    return folder


def build_function_case(
    program: Program, *, style: str, split: str, url: str, ref: str, script: ScriptRunner, workdir: Path
) -> BuiltCase | None:
    """A case from a program whose upstream tests are pytest functions (each made self-contained and rerun)."""
    name = program.name
    imports, functions = function_cases(program.test_source)
    imports = [*imports, f"from {name} import {name}"]
    folders = {
        "buggy": _folder(workdir, "buggy", program, program.buggy),
        "fixed": _folder(workdir, "fixed", program, minimal_fix(program.buggy, program.correct)),
    }
    brt: list[tuple[FunctionCase, Outcome]] = []
    regression: list[FunctionCase] = []
    for case in functions:
        code = "\n".join(x for x in ("\n".join(imports), case.setup, case.body) if x) + "\n"
        on_buggy = _outcome_of(*script(folders["buggy"], code))
        on_fixed = _outcome_of(*script(folders["fixed"], code))
        if not on_fixed.passed:
            continue
        if on_buggy.passed:
            regression.append(case)
        else:
            brt.append((case, on_buggy))
    issue = None
    for case, outcome in brt:
        issue = _function_issue(name, imports, case, outcome, style, script, folders["buggy"])
        if issue is not None:
            first, first_outcome = case, outcome
            break
    if issue is None:
        return None
    files = _common_files(program)
    files["oracle/test_brt.py"] = render_function_tests(
        name, imports, [c for c, _ in brt], "Bug reproduction tests"
    ).replace(f"tests for {name}.", f"tests for {name} (oracle; copy into tests/).")
    files["issue.md"] = issue
    if regression:
        files[f"repo/tests/test_{name}.py"] = render_function_tests(name, imports, regression, "Regression tests")
    tests = [f"python_testcases/test_{name}.py"]
    # A multi-statement example reads as a script: the REPL and prose styles become pasted output and a snippet.
    used = "traceback" if style in ("repl", "traceback") else "snippet"
    meta = _meta(name, split, [o for _, o in brt], len(regression), first_outcome, used, first.case_id)
    return BuiltCase(name, {**files, "case.toml": _case_toml(meta, _source(name, url, ref, tests))})


def _function_issue(
    name: str,
    imports: list[str],
    case: FunctionCase,
    outcome: Outcome,
    style: str,
    script: ScriptRunner,
    folder: Path,
) -> str | None:
    """The report for a function case: its code ending in a print, what that printed on the buggy code."""
    made = function_script(imports, case)
    if made is None:
        return None
    text, expected, how = made
    if how == "expression":
        probe = text.rsplit("print(", 1)[0] + f"print(repr({expected}))\n"
        printed, hung, code = script(folder, probe)
        if not hung and code == 0 and printed.strip():
            expected = printed.strip().splitlines()[-1]
    output, hung, _ = script(folder, text)
    output = trim_output(output, folder)
    about = case.docstring.splitlines()[0].split(":", 1)[-1].strip().lower() if case.docstring else case.name
    if outcome.kind == "hang":
        title, actual, ran = f"{name} never returns ({about})", "it never returns", "(no output; it hangs)"
    elif outcome.kind == "exception":
        title, actual, ran = (
            f"{name} crashes with {outcome.exc_type} ({about})",
            f"it raises `{outcome.exc_type}`",
            output,
        )
    else:
        title, actual, ran = f"{name} gives an incorrect answer ({about})", f"`{output.strip()}`", output
    if style in ("repl", "traceback"):
        return (
            f"# {title}\n\nI saved this as `repro.py` and ran it:\n```python\n{text}```\n"
            f"```\n$ python repro.py\n{ran.strip()}\n```\n\nIt should print `{expected}`.\n"
        )
    return (
        f"# {title}\n\nI'm using `{name}` from `{name}.py`. Minimal example:\n```python\n{text}```\n\n"
        f"Expected: `{expected}`\nActual: {actual}\n"
    )


def read_programs(checkout: Path) -> tuple[list[Program], list[str]]:
    """Every program with JSON test cases and a correct version, sorted by name; the names skipped, and why."""
    programs, skipped = [], []
    for name in program_names(checkout):
        path = checkout / "python_programs" / f"{name}.py"
        correct = checkout / "correct_python_programs" / path.name
        cases = checkout / "json_testcases" / f"{name}.json"
        if not correct.is_file():
            skipped.append(f"{name}: no correct version")
            continue
        tests = checkout / "python_testcases" / f"test_{name}.py"
        if not cases.is_file() and not tests.is_file():
            skipped.append(f"{name}: no test cases")
            continue
        buggy = path.read_text()
        test_source = "" if cases.is_file() else tests.read_text()
        imported = _imported_modules(buggy) | _imported_modules(test_source)
        helpers = {h: (checkout / "python_programs" / f"{h}.py").read_text() for h in HELPERS if h in imported}
        inputs = parse_json_cases(cases.read_text()) if cases.is_file() else []
        programs.append(Program(name, buggy, correct.read_text(), inputs, helpers, test_source))
    return programs, skipped


def _imported_modules(source: str) -> set[str]:
    """Top-level module names a program imports (a docstring that says "from node to ..." imports nothing)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def split_of(index: int) -> str:
    """Even positions in the sorted list are the development half, odd ones the held-out half."""
    return "development" if index % 2 == 0 else "held-out"


def sandbox_runner(kind: str, python: str) -> tuple[Runner, ScriptRunner]:
    """Run one test input, or one script, with `python` in a sandbox of `kind` over the program folder.

    The programs are code fetched from a repository: like every repo's code, they run only in a sandbox (no
    network, the folder as the only writable place), never on the host; CASE_TIMEOUT bounds each run.
    """

    def execute(folder: Path, argv: list[str], stdin: str | None) -> ExecResult:
        async def go() -> ExecResult:
            spec = SandboxSpec(workspace=folder, env={"PYTHONPATH": WORKSPACE_MOUNT, "LANG": "C.UTF-8"})
            async with make_sandbox(kind, spec) as sb:
                data = None if stdin is None else stdin.encode()
                return await sb.run(argv, timeout=CASE_TIMEOUT, cwd=WORKSPACE_MOUNT, stdin=data)

        return asyncio.run(go())

    def run(folder: Path, name: str, case: JsonCase) -> Outcome:
        payload = json.dumps({"program": name, "args": case.args, "expected": case.expected})
        result = execute(folder, [python, "-c", _PROBE], payload)
        # A loop that never ends either runs out its time or, appending as it goes, the sandbox's memory first.
        if result.timed_out or result.oom_killed:
            return Outcome("hang")
        try:
            data = json.loads(result.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            return Outcome("exception", exc_type="Crash", message=result.stderr.strip()[-200:])
        if data["kind"] == "ok":
            return Outcome("ok", data["repr"], bool(data["equal"]), bool(data["generator"]), expected=data["expected"])
        return Outcome("exception", exc_type=data["type"], message=data["message"])

    def script(folder: Path, text: str) -> tuple[str, bool, int]:
        (folder / "repro.py").write_text(text)
        try:
            result = execute(folder, [python, "repro.py"], None)
        finally:
            (folder / "repro.py").unlink(missing_ok=True)
        if result.timed_out or result.oom_killed:
            return "", True, -1
        return result.stdout + result.stderr, False, result.exit_code

    return run, script


def build_all(
    checkout: Path, *, url: str, ref: str, split: str, run: Runner, script: ScriptRunner, workdir: Path
) -> tuple[list[BuiltCase], list[str]]:
    """Every case of the chosen half ("development", "held-out" or "all") and the programs skipped."""
    programs, skipped = read_programs(checkout)
    # The halves and the issue styles follow every program's position, built or not (as in the shared bench).
    index = {name: i for i, name in enumerate(program_names(checkout))}
    built: list[BuiltCase] = []
    for program in programs:
        half = split_of(index[program.name])
        position = index[program.name] // 2
        if split != "all" and half != split:
            continue
        if program.test_source:
            case = build_function_case(program, style=STYLES[position % len(STYLES)], split=half, url=url, ref=ref,
                                       script=script, workdir=workdir)  # fmt: skip
            if case is None:
                skipped.append(f"{program.name}: no upstream test fails on the buggy code and passes on the fixed")
            else:
                built.append(case)
            continue
        outcomes = {}
        for version, text in (("buggy", program.buggy), ("fixed", minimal_fix(program.buggy, program.correct))):
            folder = workdir / version / program.name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{program.name}.py").write_text(text)
            for helper, helper_text in program.helpers.items():
                (folder / f"{helper}.py").write_text(helper_text)
            outcomes[version] = [run(folder, program.name, case) for case in program.inputs]
        brt, _ = split_inputs(program.inputs, outcomes["buggy"], outcomes["fixed"])
        style = STYLES[position % len(STYLES)]
        output = ""
        if brt:
            first, outcome = brt[0]
            call = call_text(program.name, first.args, outcome.generator)
            text, _hung, _code = script(
                workdir / "buggy" / program.name, f"from {program.name} import {program.name}\nprint({call})\n"
            )
            output = trim_output(text, workdir / "buggy" / program.name)
        case = build_case(
            program, outcomes["buggy"], outcomes["fixed"], style=style, split=half, url=url, ref=ref,
            script_output=output,
        )  # fmt: skip
        if case is None:
            skipped.append(f"{program.name}: no test input fails on the buggy code and passes on the fixed")
        else:
            built.append(case)
    return built, skipped


def write_cases(out: Path, cases: list[BuiltCase]) -> None:
    """Write each case folder under `out` (an existing folder of the same name is replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        root = out / case.name
        shutil.rmtree(root, ignore_errors=True)
        for rel, text in case.files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def fetch(url: str, ref: str, dest: Path) -> str:
    """Clone `url` (a URL or a local path) into `dest`, check out `ref` (a commit, tag or branch): its commit id."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1"}
    # SAFE_GIT: no hooks, no external diff or filters from the fetched repository run here.
    subprocess.run([*SAFE_GIT, "clone", "--quiet", url, str(dest)], check=True, env=env, timeout=600)
    subprocess.run(
        [*SAFE_GIT, "-c", "advice.detachedHead=false", "checkout", "--quiet", ref], cwd=dest, check=True, env=env
    )
    head = subprocess.run(
        [*SAFE_GIT, "rev-parse", "HEAD"], cwd=dest, check=True, env=env, capture_output=True, text=True
    )
    return head.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    """Fetch QuixBugs, build the cases into --out, print what was built and skipped."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/data/quixbugs"))
    parser.add_argument("--split", choices=("development", "held-out", "all"), default="all")
    parser.add_argument(
        "--python", default="/usr/bin/python3", help="interpreter the programs run with, in the sandbox"
    )
    parser.add_argument("--sandbox", default="bwrap", help="sandbox backend the programs run in (bwrap or docker)")
    args = parser.parse_args(argv)
    url = os.environ.get("QUIXBUGS_URL", DEFAULT_URL)
    ref = os.environ.get("QUIXBUGS_REF", DEFAULT_REF)
    with tempfile.TemporaryDirectory(prefix="quixbugs-") as tmp:
        checkout = Path(tmp) / "checkout"
        try:
            commit = fetch(url, ref, checkout)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            print(f"could not fetch {url} at {ref}: {exc}", file=sys.stderr)
            return 1
        run, script = sandbox_runner(args.sandbox, args.python)
        # case.toml records the commit itself, whatever name QUIXBUGS_REF gave it.
        cases, skipped = build_all(
            checkout, url=url, ref=commit, split=args.split, run=run, script=script, workdir=Path(tmp) / "work"
        )
        licence = checkout / "LICENSE"
        write_cases(args.out, cases)
        if licence.is_file():
            shutil.copyfile(licence, args.out / "LICENSE")
    print(f"built {len(cases)} cases into {args.out} from {url} at {ref} ({commit})")
    for line in skipped:
        print(f"skipped {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

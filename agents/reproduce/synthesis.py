"""Synthesize pytest bug reproduction tests (BRTs) from the facts of a bug report, best candidate first."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from agents.reading import IssueFacts, is_expression, quiet_parse
from agents.reproduce.checks import VAR, checks_for, value_source
from agents.reproduce.code import (
    aligned_repl,
    attribute_bases,
    free_names,
    from_program,
    from_prose,
    from_repl,
    is_test_file,
    paired_reproductions,
    parse_statements,
    resolve_imports,
    script_pairs,
    script_reproduction,
    script_session,
)
from agents.reproduce.console import commands_with_args, console_brts
from agents.reproduce.files import files_for_program, write_lines
from agents.reproduce.symptom import symptom_matches
from agents.reproduce.types import BrtCandidate, Check, Reproduction, Symptom, ValueForm

__all__ = [
    "BrtCandidate",
    "Symptom",
    "choose_test_path",
    "symptom_matches",
    "synthesize_brts",
    "value_source",
]

#: A hang report gets a short timeout; every other BRT still gets one so a fix that hangs fails fast.
HANG_TIMEOUT = 5
DEFAULT_TIMEOUT = 10
MAX_CANDIDATES = 8
TEST_STEM = "test_reprobot_issue"
_PRINT_VERBS = frozenset({"print", "output", "show", "display"})


def synthesize_brts(
    facts: IssueFacts,
    repo_files: Sequence[str],
    *,
    repo_symbols: Mapping[str, Collection[str]] | None = None,
    scripts: Mapping[str, str] | None = None,
) -> list[BrtCandidate]:
    """Complete pytest files that should fail on the buggy code the way the report says, best first.

    repo_files are repo-relative paths; repo_symbols (optional) maps a module path to the names it
    defines, which makes the imports the test adds exact instead of guessed from module names; scripts
    (optional) maps the project's console script names to their entry points, so a report that runs the
    project's command by that name is replayed.
    """
    symptom = report_symptom(facts)
    path = choose_test_path(repo_files)
    resolved: list[BrtCandidate] = []
    unresolved: list[BrtCandidate] = []
    seen: set[str] = set()
    for repro in reproductions(facts):
        imports, missing = _imports_for(repro, facts, repo_files, repo_symbols)
        for check in checks_for(repro, facts, repro.symptom or symptom):
            cand = _render(facts, repro, check, imports, missing, path)
            if cand is None or cand.source in seen:
                continue
            seen.add(cand.source)
            (unresolved if missing else resolved).append(cand)
    # Candidates whose names all resolve come first; the rest would most likely die with a NameError.
    # A run of the project's command line (weak: it only checks the error is gone) comes after the
    # Python reproductions, which can assert what the user expected.
    commands = [c for c in console_brts(facts, repo_files, path, scripts) if c.source not in seen]
    # A check that asserts what the user expected comes before one that cannot (stable: order kept within each).
    resolved.sort(key=lambda c: c.weak)
    return (resolved + commands + unresolved)[:MAX_CANDIDATES]


def report_symptom(facts: IssueFacts) -> Symptom:
    """What the report says the buggy code does: hang, raise, or give a wrong value."""
    if facts.hang:
        return "hang"
    if facts.exception_type:
        return "exception"
    return "wrong_value"


def choose_test_path(repo_files: Sequence[str]) -> str:
    """Where the BRT goes: the repo's main tests folder (tests/ when unsure), never over an existing file."""
    existing = set(repo_files)
    dirs: dict[str, int] = {}
    for f in repo_files:
        p = PurePosixPath(f)
        if p.suffix == ".py" and is_test_file(f) and p.name != "conftest.py":
            parent = str(p.parent)
            dirs[parent] = dirs.get(parent, 0) + 1
    if "tests" in dirs or any(f.startswith("tests/") for f in repo_files):
        folder = "tests"
    elif dirs:
        # The folder with the most test modules, shallowest on ties.
        folder = min(dirs, key=lambda d: (-dirs[d], d.count("/"), d))
    else:
        folder = "tests"
    folder = "" if folder == "." else folder + "/"
    candidate, n = f"{folder}{TEST_STEM}.py", 2
    while candidate in existing:
        candidate, n = f"{folder}{TEST_STEM}_{n}.py", n + 1
    return candidate


def reproductions(facts: IssueFacts) -> list[Reproduction]:
    """Every reproduction the report offers, most concrete first: script, REPL, traceback, prose, title."""
    found: list[Reproduction] = []
    # A script the report runs as a command with arguments reads them (sys.argv, argparse, click): run
    # in-process it would see pytest's arguments instead; the command's own test replays it.
    argv_scripts = {text.rstrip() for name, text in facts.named_files if name in commands_with_args(facts)}
    programs = [b for b in facts.python_blocks if b.rstrip() not in argv_scripts]
    parsed = [(b, p[0]) for b in programs if (p := parse_statements(b))]
    calling = [b for b, stmts in parsed if any(isinstance(n, ast.Call) for s in stmts for n in ast.walk(s))]
    blocks = [b for b, _ in parsed]
    if calling and facts.actual and len(facts.expected_values) < 2 and not facts.repl_sessions:
        # Read as the session it amounts to, the script names the print its one expected value is about.
        found += [r for r in [script_reproduction(calling[-1], facts.actual, facts)] if r]
    for code in ([calling[-1]] if calling else []) + (["\n\n".join(map(_dedent, blocks))] if len(blocks) > 1 else []):
        repro = from_program(code, "script from the report", facts.subject)
        found += [repro] if repro else []
    steps = [step for session in facts.repl_sessions for step in session.steps]
    found += paired_reproductions(steps, facts.expected_pairs, facts.expected_callees)
    if not steps and calling:
        # "`a == b` is False" after a script: the expression is observed after the whole script.
        found += script_pairs(calling[-1], facts.expected_pairs)
    found += aligned_repl(steps, facts.expected_values) if steps else []
    if not steps and calling and facts.actual and len(facts.expected_values) > 1:
        # A script that prints several values, answered by one expected value per print.
        found += aligned_repl(script_session(calling[-1], facts.actual), facts.expected_values)
    repl = from_repl(steps, facts) if steps else None
    found += [repl] if repl else []
    if not blocks and facts.tracebacks:
        lines = [f.source for f in facts.tracebacks[-1].frames if f.function == "<module>" and f.source]
        repro = from_program("\n".join(lines), "traceback's top-level line", facts.subject) if lines else None
        found += [repro] if repro else []
    form: ValueForm = "str" if facts.expected_verb in _PRINT_VERBS else "value"
    prose = from_prose(facts.setup_code, facts.subject, form)
    found += [prose] if prose else []
    if not found:
        # Last resort: a call the user quoted (or wrote bare) anywhere, title included.
        for code in facts.inline_code + facts.title_code + facts.plain_calls:
            if is_expression(code) and isinstance(quiet_parse(code.strip(), mode="eval").body, ast.Call):
                found += [r for r in [from_prose(None, code, form)] if r]
                break
    listings = tuple(b.code for b in facts.code_blocks if b.kind == "output")
    return [_with_files(r, listings) for r in found]


def _with_files(repro: Reproduction, listings: tuple[str, ...]) -> Reproduction:
    """Attach the report's folder listing when the reproduction reads that folder."""
    text = "\n".join((*repro.setup, *repro.program, repro.observed or ""))
    files = files_for_program(listings, text) if listings else ()
    return replace(repro, files=files) if files else repro


def _dedent(code: str) -> str:
    lines = code.split("\n")
    cut = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[cut:] for x in lines)


def _imports_for(
    repro: Reproduction,
    facts: IssueFacts,
    repo_files: Sequence[str],
    repo_symbols: Mapping[str, Collection[str]] | None,
) -> tuple[list[str], list[str]]:
    sources = [
        *repro.imports,
        *repro.setup,
        *(repro.program or ()),
        *([repro.observed] if repro.observed else []),
    ]
    names = free_names(["\n".join(sources)])
    scripts = {PurePosixPath(s).name for s in facts.script_files}
    mentioned = [PurePosixPath(f).stem for f in facts.mentioned_files if PurePosixPath(f).name not in scripts]
    extra, missing = resolve_imports(
        names,
        attribute_bases(sources),
        repo_files,
        mentioned,
        repo_symbols,
        callables=facts.identifiers,
        dotted=(*facts.inline_code, *facts.title_code, facts.title),
    )
    return list(repro.imports) + extra, missing


def _render(
    facts: IssueFacts,
    repro: Reproduction,
    check: Check,
    imports: list[str],
    missing: list[str],
    path: str,
) -> BrtCandidate | None:
    observed = repro.observed or ""
    if check.runs:
        repro = replace(repro, setup=tuple(s for s in repro.setup if s not in check.runs))
    # A plain name (`result`) is asserted on directly; any other expression is bound to a fresh name,
    # unless the check never looks at the value (then it is just evaluated).
    direct = observed.isidentifier()
    var = observed if direct else _fresh_name(repro)
    uses_value = any(VAR in line for line in check.lines)
    value_lines = [] if not observed or direct else [f"{var} = {observed}" if uses_value else observed]
    body: list[str] = []
    has_setup = any("SETUP" in line for line in check.lines)
    if not has_setup and "PROGRAM" not in check.lines:
        body += list(repro.setup)
    for line in check.lines:
        indent = line[: len(line) - len(line.lstrip())]
        key = line.strip()
        if key == "SETUP":
            body += [indent + s for s in _lines(repro.setup)] or ([] if repro.observed else [indent + "pass"])
        elif key == "VALUE":
            body += [indent + s for s in value_lines]
        elif key == "PROGRAM":
            body += list(repro.program)
        else:
            body.append(line.replace(VAR, var))
    fixtures = [check.fixture] if check.fixture else []
    if repro.files:
        # Listed files are usually run (scripts, hooks) by child processes, whose output reaches the
        # file descriptors and not sys.stdout: capfd sees both.
        body = [line.replace("capsys.", "capfd.") for line in write_lines(repro.files) + body]
        fixtures = [f.replace("capsys", "capfd") for f in fixtures] + ["tmp_path", "monkeypatch"]
    func = _test_name(repro, facts)
    timeout = HANG_TIMEOUT if check.symptom == "hang" or facts.hang else DEFAULT_TIMEOUT
    doc = _doc_line(repro, facts, check)
    head = [
        '"""Reproduces the reported bug: ' + _escape_doc(facts.title or "untitled issue") + "\n",
        "Generated by reprobot from the issue text; it fails while the bug is present.",
        '"""',
        "",
    ]
    future = [i for i in imports if i.startswith("from __future__")]
    others = [i for i in imports if i not in future]
    others = [i for i in others if i != "import pytest"]
    head += [*future, "import pytest", *([""] if others else []), *others, "", ""]
    signature = f"def {func}({', '.join(fixtures)}):"
    test = [f"@pytest.mark.timeout({timeout})", signature, f'    """{_escape_doc(doc)}"""']
    test += ["    " + line if line else "" for line in _lines(body)]
    source = "\n".join(head + test) + "\n"
    if not _compiles(source, path):
        return None
    description = f"{repro.origin}: {check.summary}"
    if check.weak:
        description += " (weak: the report gives no expected value to assert)"
    if missing:
        description += f" (unresolved names: {', '.join(missing)})"
    expected = repro.expected if repro.expected is not None else facts.expected
    return BrtCandidate(
        path, source, check.symptom, expected, func, description, reported_actual=repro.actual, weak=check.weak
    )


def _compiles(source: str, path: str) -> bool:
    """Full compile, not just parse: `await` or `yield` in a pasted script only fails here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # invalid escapes, before Python 3.12
        try:
            code = compile(source, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    # A `yield` from the user's script would turn the test into a generator pytest never runs.
    return not any(isinstance(c, type(code)) and c.co_flags & inspect.CO_GENERATOR for c in code.co_consts)


def _lines(statements: Sequence[str]) -> list[str]:
    return [line for stmt in statements for line in stmt.split("\n")]


def _fresh_name(repro: Reproduction) -> str:
    used = set(free_names(list(repro.setup))) | set(re.findall(r"\w+", " ".join(repro.setup + repro.program)))
    for name in ("actual", "observed", "actual_value", "reprobot_actual"):
        if name not in used and name != repro.observed:
            return name
    return "reprobot_actual_value"


def _test_name(repro: Reproduction, facts: IssueFacts) -> str:
    """Named after the function under test: called in the observation, else the last call of the setup."""
    calls = _calls(repro.observed or "")
    for stmt in reversed(repro.setup):
        calls += _calls(stmt)
    names = [n for n in calls + list(facts.identifiers) if n not in dir(builtins) and n.isidentifier()]
    # Lower-case names are functions; capitalized ones are usually fixtures such as Node.
    names.sort(key=lambda n: n[:1].isupper())
    if names:
        return f"test_{_slug(names[0])}_reported_bug"
    words = re.findall(r"[a-z0-9]+", facts.title.lower())[:5]
    return f"test_{'_'.join(words) or 'issue'}_reported_bug"


def _calls(code: str) -> list[str]:
    try:
        tree = quiet_parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    return [ast.unparse(n.func).rsplit(".", 1)[-1] for n in nodes]


def _slug(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _doc_line(repro: Reproduction, facts: IssueFacts, check: Check) -> str:
    what = _clip(repro.observed or "the reproduction")
    # A call compared on its own (call by call) is described by its own reported and expected values.
    actual = repro.actual if repro.actual is not None else facts.actual
    expected = repro.expected if repro.expected is not None else facts.expected
    if facts.hang:
        reported = "it hangs"
    elif facts.exception_type:
        reported = f"it raises {facts.exception_type}"
    elif actual:
        reported = f"it gives {_clip(actual)}"
    else:
        reported = "the behaviour described"
    if facts.expected_exception:
        return f"{what} should raise {facts.expected_exception} (reported: {reported})."
    if expected is not None:
        return f"{what} should give {_clip(expected)} (reported: {reported})."
    return f"{what} should not fail as reported ({reported})."


def _clip(text: str, size: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 3] + "..."


def _escape_doc(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return text[:-1] + '\\"' if text.endswith('"') else text

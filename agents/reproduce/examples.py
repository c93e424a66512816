"""The report's working examples: calls of a `>>>` session whose shown result the reporter says is right.

A report often shows calls that behave beside the one that does not, and names the right result:

    >>> from shapes import area
    >>> area(2, 3)
    6
    >>> area(-2, 3)
    -6

    Expected: `6` for both, the size does not depend on the sign.

`area(2, 3)` shows `6`, a value the reporter expects, and is not the reported call: the reporter's own
statement of what the code does, which a fix must keep. A shown result that is not an expected value may be the
bug itself (reports often show several wrong calls), so it is no example. With no test suite in the repo,
these examples and the inputs near the report's call are what can show a fix breaking something (the
correctness assessment runs them before and after the fix).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from agents.reading import IssueFacts, ReplStep
from agents.reproduce.code import _has_call, _repl_setup, _same_code, _same_text, parse_statements
from agents.reproduce.synthesis import reproductions

#: At most this many of the report's examples are run.
MAX_REPORT_EXAMPLES = 12
_TRACEBACK = "Traceback (most recent call last)"


def report_examples(facts: IssueFacts) -> list[dict[str, str]]:
    """The report's working calls, as `{"setup", "source", "expected"}` rows for the assessment's harness.

    A step counts when it is one call expression whose shown output is a single-line Python literal equal to
    a value the report expects. It is left out when it is what a reproduction observes (the reported call),
    when its output is the report's actual (wrong) value, or when it is the call the report says the expected
    value is about. `setup` is the session's imports and statements before the step, so the call runs as it
    did for the user.
    """
    expected = [v for v in (facts.expected, *facts.expected_values) if v]
    if not expected:
        return []
    disputed = [r.observed for r in reproductions(facts) if r.observed]
    if facts.subject:
        disputed.append(facts.subject)
    found: list[dict[str, str]] = []
    for session in facts.repl_sessions:
        found += _session_examples(session.steps, facts, expected, disputed)
    unique = {(e["setup"], e["source"], e["expected"]): e for e in found}
    return list(unique.values())[:MAX_REPORT_EXAMPLES]


def _session_examples(
    steps: Sequence[ReplStep], facts: IssueFacts, expected: list[str], disputed: list[str]
) -> list[dict[str, str]]:
    parsed: list[tuple[ReplStep, list[ast.stmt], str]] = []
    for step in steps:
        result = parse_statements(step.source)
        if result and result[0]:
            parsed.append((step, *result))
    found: list[dict[str, str]] = []
    for index, (step, stmts, code) in enumerate(parsed):
        output = step.output.strip()
        if len(stmts) != 1 or not isinstance(stmts[0], ast.Expr) or not _has_call(stmts[0]):
            continue
        if not output or "\n" in output or _TRACEBACK in output:
            continue
        if facts.actual is not None and _same_text(output, facts.actual):
            continue  # the reported wrong value, whichever call showed it
        if not any(_same_text(output, value) for value in expected) or not _literal(output):
            continue  # a shown result nobody calls right may be the bug itself
        if any(_same_code(code, d) for d in disputed):
            continue
        imports, setup = _repl_setup(parsed[:index])
        found.append({"setup": "\n".join([*imports, *setup]), "source": code.strip(), "expected": output})
    return found


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return False
    return True

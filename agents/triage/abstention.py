"""Rule-based abstention: should the bot act on this issue? A score, the features behind it, and reasons."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from agents.chat import ChatModel, LLMError, tool_schema, verdict_from_reply
from agents.reading import IssueFacts, is_expression, quiet_parse
from agents.reproduce import project_commands
from agents.trajectory import FormatError, LimitsExceeded

DEFAULT_THRESHOLD = 0.5

#: What each kind of evidence adds to the score; they sum to 1.0 for a complete, anchored bug report.
WEIGHTS: Mapping[str, float] = {
    "reproduction": 0.30,
    "expected": 0.15,
    "observed": 0.15,
    "traceback": 0.05,
    "anchor": 0.25,
    "bug": 0.10,
}
#: Caps that override the sum: these reports are not actionable however detailed they are.
CAP_NOT_A_BUG = 0.2
CAP_EMPTY = 0.1
CAP_FOREIGN_FILES = 0.2
_DOTTED_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)+\s*\(")
#: Below this many words a report with no code or traceback is too thin to act on.
MIN_WORDS = 8


@dataclass(frozen=True)
class AbstentionDecision:
    """Whether to act, the score against the threshold, why (human-readable), and the raw features."""

    act: bool
    score: float
    threshold: float
    reasons: list[str] = field(default_factory=list)
    features: dict[str, bool | float] = field(default_factory=dict)
    #: Set when a model estimate was combined in: the rule-based score alone and the model's probability.
    rule_score: float | None = None
    llm_score: float | None = None


def python_symbols(sources: Mapping[str, str]) -> set[str]:
    """Names of the functions, methods and classes defined in the given Python sources (path -> text)."""
    names: set[str] = set()
    for text in sources.values():
        try:
            tree = quiet_parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue  # a file that does not parse defines nothing we can check against
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
    return names


def score_issue(
    facts: IssueFacts,
    repo_files: Sequence[str],
    repo_symbols: Collection[str] = (),
    *,
    threshold: float = DEFAULT_THRESHOLD,
    scripts: Mapping[str, str] | None = None,
) -> AbstentionDecision:
    """Score how actionable a report is for this repo; below threshold the bot abstains, with reasons.

    scripts maps the project's console script names to their entry points: a report that runs one of
    them (or the project's package with `python -m`) reproduces the bug with the project's own command.
    """
    features = issue_features(facts, repo_files, repo_symbols, scripts)
    reasons: list[str] = []
    score = 0.0

    def add(key: str, present: bool, yes: str, no: str | None) -> None:
        nonlocal score
        if present:
            score += WEIGHTS[key]
            reasons.append(yes)
        elif no:
            reasons.append(no)

    has_repro = bool(features["has_code"] or features["has_repl"] or features["has_traceback"])
    has_repro = has_repro or bool(features["has_inline_call"] or features["has_command"])
    add(
        "reproduction",
        has_repro,
        _repro_reason(features),
        "no reproduction: no code block, REPL session or traceback",
    )
    add("expected", bool(features["has_expected"]), "states the expected result", "no expected result stated")
    observed = bool(features["has_actual"] or features["has_exception"] or features["has_hang"])
    add("observed", observed, _observed_reason(facts), "no observed symptom (wrong value, exception or hang)")
    add("traceback", bool(features["has_traceback"]), "includes a traceback", None)
    # A run of the project's own command names its code as surely as a file or a function does.
    anchored = features["mentions_repo_file"] or features["mentions_repo_symbol"] or features["runs_project_command"]
    anchored = bool(anchored)
    add(
        "anchor",
        anchored,
        "names code that exists in the repository",
        "names no file or function of the repository",
    )
    add("bug", facts.kind == "bug", "reads as a bug report", None)

    if facts.kind != "bug":
        score = min(score, CAP_NOT_A_BUG)
        reasons.append(f"reads as a {'feature request' if facts.kind == 'feature' else 'question'}, not a bug report")
    if features["empty_body"]:
        score = min(score, CAP_EMPTY)
        reasons.append("the issue body is empty")
    elif not has_repro and features["body_words"] < MIN_WORDS:
        score = min(score, CAP_EMPTY)
        reasons.append(f"too short to act on ({int(features['body_words'])} words, no code)")
    foreign = _foreign_files(facts, repo_files)
    if foreign and not anchored:
        score = min(score, CAP_FOREIGN_FILES)
        reasons.append("mentions files not in the repository: " + ", ".join(foreign[:5]))

    score = round(min(max(score, 0.0), 1.0), 3)
    act = score >= threshold
    comparison = "≥" if act else "<"
    verdict = f"{'acting' if act else 'abstaining'}: score {score:.2f} {comparison} threshold {threshold:.2f}"
    return AbstentionDecision(act, score, threshold, [verdict, *reasons], features)


def issue_features(
    facts: IssueFacts,
    repo_files: Sequence[str],
    repo_symbols: Collection[str] = (),
    scripts: Mapping[str, str] | None = None,
) -> dict[str, bool | float]:
    """The observable features of a report the score is built from."""
    body_words = float(len(facts.body.split()))
    # Only commands known to be the project's: triage does not guess that an unknown name is its package.
    commands = project_commands(facts, repo_files, scripts, guess=False)
    symbols = set(repo_symbols) | _module_names(repo_files)
    return {
        "is_bug": facts.kind == "bug",
        "is_feature_request": facts.kind == "feature",
        "is_question": facts.kind == "question",
        "empty_body": not facts.body.strip(),
        "body_words": body_words,
        "has_code": bool(facts.python_blocks),
        "has_repl": bool(facts.repl_sessions),
        "has_traceback": bool(facts.tracebacks),
        "has_inline_call": _has_inline_call(facts),
        "has_command": bool(commands),
        # The project's own command (a console script, `python -m pkg`), not the user's script using it.
        "runs_project_command": any(argv[0] in ("-m", "-c") for _, argv, _ in commands),
        "has_expected": facts.expected is not None
        or facts.expected_exception is not None
        or bool(facts.expected_values or facts.expected_pairs),
        "has_actual": facts.actual is not None,
        "has_exception": facts.exception_type is not None,
        "has_hang": facts.hang,
        "mentions_repo_file": bool(_present_files(facts, repo_files)),
        "mentions_missing_file": bool(_foreign_files(facts, repo_files)),
        "mentions_repo_symbol": any(name in symbols for name in facts.identifiers)
        or bool(_dotted_bases(facts) & _module_names(repo_files)),
    }


def _dotted_bases(facts: IssueFacts) -> set[str]:
    """Names called through as `base.func(...)`: often the module itself (`mod.f(1)`)."""
    texts = [*facts.inline_code, *facts.title_code, *facts.plain_calls, *facts.python_blocks]
    texts += [step.source for session in facts.repl_sessions for step in session.steps]
    return {m.group(1) for text in texts for m in _DOTTED_CALL.finditer(text)}


def _has_inline_call(facts: IssueFacts) -> bool:
    spans = (*facts.inline_code, *facts.title_code, *facts.plain_calls)
    calls = [c for c in spans if is_expression(c) and "(" in c]
    return bool(facts.subject or facts.setup_code or calls)


def _repro_reason(features: Mapping[str, bool | float]) -> str:
    kinds = [
        label
        for key, label in (
            ("has_code", "a code block"),
            ("has_repl", "a REPL session"),
            ("has_traceback", "a traceback"),
            ("has_inline_call", "an inline call"),
            ("has_command", "a run of the project's command"),
        )
        if features[key]
    ]
    return "has a reproduction: " + ", ".join(kinds)


def _observed_reason(facts: IssueFacts) -> str:
    if facts.hang:
        return "reports a hang"
    if facts.exception_type:
        return f"reports an exception ({facts.exception_type})"
    return "states the actual result"


def _module_names(repo_files: Sequence[str]) -> set[str]:
    """Module stems and package names (folders with an __init__.py): `pkg.f(1)` names the package `pkg`."""
    names = {PurePosixPath(f).stem for f in repo_files if f.endswith(".py")}
    return names | {PurePosixPath(f).parent.name for f in repo_files if PurePosixPath(f).name == "__init__.py"}


def _candidate_files(facts: IssueFacts) -> list[str]:
    """Mentioned files that should be in the repo: not the user's scripts, the stdlib or site-packages."""
    scripts = {PurePosixPath(s).name for s in facts.script_files}
    out: list[str] = []
    for f in facts.mentioned_files:
        if PurePosixPath(f).name in scripts or f.startswith("<"):
            continue
        if "site-packages" in f or "dist-packages" in f or "/lib/python" in f:
            continue
        out.append(f)
    return out


def _exists(mention: str, repo_files: Sequence[str]) -> bool:
    mention = mention.lstrip("./")
    name = PurePosixPath(mention).name
    for f in repo_files:
        # Tracebacks show absolute paths and users shorten them, so either may be a suffix of the other.
        if f == mention or mention.endswith("/" + f) or f.endswith("/" + mention) or PurePosixPath(f).name == name:
            return True
    return False


def _present_files(facts: IssueFacts, repo_files: Sequence[str]) -> list[str]:
    return [f for f in _candidate_files(facts) if _exists(f, repo_files)]


def _foreign_files(facts: IssueFacts, repo_files: Sequence[str]) -> list[str]:
    """Files the report is about that the repo does not have, when it has none of the ones mentioned."""
    mentioned = _candidate_files(facts)
    present = [f for f in mentioned if _exists(f, repo_files)]
    return [] if present else mentioned


#: Weight of the model's estimate in the combined score (the rule-based score gets the rest).
LLM_WEIGHT = 0.5
_ESTIMATE_TOOL = tool_schema(
    "estimate",
    "Report how likely an automated repair agent is to reproduce and fix this bug from the report alone.",
    {
        "probability": {"type": "number", "description": "Probability of success, from 0 to 1."},
        "reason": {"type": "string", "description": "The main evidence for the estimate, one sentence."},
    },
    ["probability", "reason"],
)
_ESTIMATE_PROMPT = (
    "You triage bug reports for an automated repair agent that works only from the report and the repository. "
    "Judge from the report alone: does it say how to trigger the problem, what happens and what should happen "
    "instead, and does it point at code? Reports that are questions, feature requests, vague or about another "
    "project are unlikely to succeed. Answer by calling `estimate`."
)


async def combine_with_model(decision: AbstentionDecision, model: ChatModel, issue_text: str) -> AbstentionDecision:
    """Blend the rule-based score with the model's success estimate; both are kept, with the model's reason.

    A model that cannot answer (error, budget, unusable reply) leaves the rule-based decision unchanged and
    says so in the reasons.
    """
    messages = [
        {"role": "system", "content": _ESTIMATE_PROMPT},
        {"role": "user", "content": f"Bug report:\n\n{issue_text.strip()[:8000]}"},
    ]
    try:
        reply = await model.complete(messages, [_ESTIMATE_TOOL], trajectory="triage", purpose="abstention")
        answer = verdict_from_reply(reply, "estimate")
        prob = float(answer["probability"])
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"probability {prob} is outside [0, 1]")
        why = str(answer.get("reason") or "").strip()[:300]
    except (LLMError, FormatError, LimitsExceeded, KeyError, TypeError, ValueError) as exc:
        note = f"model estimate unavailable ({type(exc).__name__}: {str(exc)[:120]}); rule-based score used"
        return replace(decision, reasons=[*decision.reasons, note], rule_score=decision.score)
    score = round((1 - LLM_WEIGHT) * decision.score + LLM_WEIGHT * prob, 3)
    act = score >= decision.threshold
    verdict = (
        f"{'acting' if act else 'abstaining'}: combined score {score:.2f} {'≥' if act else '<'} threshold "
        f"{decision.threshold:.2f} (rules {decision.score:.2f}, model {prob:.2f})"
    )
    reasons = [verdict, *decision.reasons[1:], f"model: {why or 'no reason given'} (p={prob:.2f})"]
    return replace(decision, act=act, score=score, reasons=reasons, rule_score=decision.score, llm_score=prob)

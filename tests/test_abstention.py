"""Tests for rule-based abstention: bench bugs act; requests, questions, vague and foreign reports abstain."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.reading.facts import parse_issue
from agents.triage.abstention import AbstentionDecision, issue_features, python_symbols, score_issue

SHARED = Path(__file__).resolve().parents[2] / "shared"
BENCH = SHARED / "bench" / "quixbugs"
SAMPLES = Path(__file__).parent / "samples" / "issues"
CASES = sorted(p.parent.name for p in BENCH.glob("*/issue.md")) if BENCH.is_dir() else []
REPO = ["mod.py", "textutil.py", "tests/test_mod.py"]
SYMBOLS = {"f", "add", "double", "spin", "parse", "clamp", "fib", "load_config", "normalize", "sort_items"}


def _decide(name: str, files: list[str] = REPO, symbols: set[str] = SYMBOLS) -> AbstentionDecision:
    return score_issue(parse_issue((SAMPLES / name).read_text()), files, symbols)


def _repo(case: str) -> tuple[list[str], set[str]]:
    repo = BENCH / case / "repo"
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())
    sources = {f: (repo / f).read_text() for f in files if f.endswith(".py")}
    return files, python_symbols(sources)


@pytest.mark.shared
@pytest.mark.skipif(not BENCH.is_dir(), reason=f"bench cases not found at {BENCH} (../shared is absent)")
@pytest.mark.parametrize("case", CASES or ["<none>"])
def test_every_bench_issue_acts(case: str) -> None:
    files, symbols = _repo(case)
    decision = score_issue(parse_issue((BENCH / case / "issue.md").read_text()), files, symbols)
    assert decision.act, decision.reasons
    assert decision.score >= 0.8
    assert decision.features["mentions_repo_symbol"] is True
    assert decision.reasons[0].startswith("acting: score")


def test_feature_request_abstains_with_reason() -> None:
    decision = _decide("feature_request.md")
    assert not decision.act
    assert any("feature request" in r for r in decision.reasons)
    assert decision.features["is_feature_request"] is True


def test_question_abstains_with_reason() -> None:
    decision = _decide("question.md")
    assert not decision.act
    assert any("question" in r for r in decision.reasons)


def test_vague_report_abstains() -> None:
    decision = _decide("vague.md")
    assert not decision.act
    assert "no reproduction: no code block, REPL session or traceback" in decision.reasons
    assert any("no observed symptom" in r for r in decision.reasons)


def test_empty_body_abstains() -> None:
    decision = _decide("empty_body.md")
    assert not decision.act
    assert "the issue body is empty" in decision.reasons
    assert decision.features["empty_body"] is True


def test_report_about_files_not_in_repo_abstains() -> None:
    decision = _decide("missing_file.md")
    assert not decision.act
    assert "mentions files not in the repository: frobnicator.py" in decision.reasons


def test_user_script_and_site_packages_are_not_foreign_files() -> None:
    text = (
        "# f crashes\n\n```\n$ python repro.py\nTraceback (most recent call last):\n"
        '  File "repro.py", line 2, in <module>\n    f(1)\n'
        '  File "/usr/lib/python3.11/site-packages/x/y.py", line 3, in g\n    h()\n'
        '  File "/home/u/proj/src/pkg/mod.py", line 9, in f\n    return 1 / 0\n'
        "ZeroDivisionError: division by zero\n```\nIt should return `1`.\n"
    )
    decision = score_issue(parse_issue(text), ["src/pkg/mod.py"], {"f"})
    assert decision.act, decision.reasons
    assert decision.features["mentions_repo_file"] is True
    assert decision.features["mentions_missing_file"] is False


@pytest.mark.parametrize(
    "name",
    [
        "snippet_bold_labels.md",
        "repl_string.md",
        "traceback_ctrl_c.md",
        "prose_should_return.md",
        "hidden_chars.md",
        "ipython.md",
        "quoted_traceback.md",
        "chained_traceback.md",
        "unfenced_repl.md",
        "non_ascii.md",
    ],
)
def test_concrete_bug_samples_act(name: str) -> None:
    decision = _decide(name)
    assert decision.act, decision.reasons


def test_threshold_is_respected() -> None:
    facts = parse_issue((SAMPLES / "prose_should_return.md").read_text())
    low = score_issue(facts, REPO, SYMBOLS, threshold=0.1)
    high = score_issue(facts, REPO, SYMBOLS, threshold=0.99)
    assert low.act and not high.act
    assert low.score == high.score and high.threshold == 0.99


def test_module_names_count_as_symbols_without_a_symbol_table() -> None:
    facts = parse_issue("# bad\n\n`mod.f(1)` returns `2`, but I expected `1`.\n")
    assert issue_features(facts, ["mod.py"])["mentions_repo_symbol"] is True


def test_python_symbols_collects_defs_and_skips_broken_files() -> None:
    sources = {
        "a.py": "def f():\n    pass\n\nclass C:\n    def m(self):\n        pass\n\nasync def g():\n    pass\n",
        "b.py": "def broken(:\n",
    }
    assert python_symbols(sources) == {"f", "C", "m", "g"}


@pytest.mark.parametrize("name", sorted(p.name for p in (SAMPLES / "repos").iterdir() if p.is_dir()))
def test_synthetic_repo_reports_act(name: str) -> None:
    case = SAMPLES / "repos" / name
    source = (case / f"{name}.py.txt").read_text()
    decision = score_issue(
        parse_issue((case / "issue.md").read_text()), [f"{name}.py"], python_symbols({f"{name}.py": source})
    )
    assert decision.act, decision.reasons

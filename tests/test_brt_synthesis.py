"""Tests for BRT synthesis: generated tests compile and fail on every bench case with the reported symptom."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.reading.facts import IssueFacts, parse_issue
from agents.reproduce import expected_exceptions
from agents.reproduce.synthesis import (
    BrtCandidate,
    choose_test_path,
    symptom_matches,
    synthesize_brts,
    value_source,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
BENCH = SHARED / "bench" / "quixbugs"
SAMPLES = Path(__file__).parent / "samples" / "issues"
CASES = sorted(p.parent.name for p in BENCH.glob("*/issue.md")) if BENCH.is_dir() else []


def _repo_files(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _run_pytest(workdir: Path, test_path: str) -> tuple[str, bool]:
    """Run one test file with the venv's pytest on the host (the sandbox is not this module's concern)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_path],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return out, True
    return proc.stdout + proc.stderr, False


def _first_reproducing(candidates: list[BrtCandidate], facts: IssueFacts, repo: Path, tmp: Path) -> list[str]:
    """Try candidates in order, like the classic agent; return the reasons, the last one being the match."""
    reasons: list[str] = []
    for i, cand in enumerate(candidates):
        work = tmp / f"c{i}"
        shutil.copytree(repo, work)
        target = work / cand.path
        assert not target.exists(), "a BRT must never overwrite a repo file"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(cand.source)
        output, timed_out = _run_pytest(work, cand.path)
        ok, reason = symptom_matches(cand, facts, output, timed_out)
        reasons.append(f"{cand.description}: {reason}")
        if ok:
            return reasons
    pytest.fail("no candidate reproduced the report:\n" + "\n".join(reasons))


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(not BENCH.is_dir(), reason=f"bench cases not found at {BENCH} (../shared is absent)")
@pytest.mark.parametrize("case", CASES or ["<none>"])
def test_bench_brt_fails_with_reported_symptom(case: str, tmp_path: Path) -> None:
    """The first synthesized BRT fails on the buggy repo, and the failure is the one the issue reports."""
    case_dir = BENCH / case
    facts = parse_issue((case_dir / "issue.md").read_text())
    repo = case_dir / "repo"
    candidates = synthesize_brts(facts, _repo_files(repo))
    assert candidates, "no BRT synthesized"
    for cand in candidates:
        compile(cand.source, cand.path, "exec")
        assert "@pytest.mark.timeout(" in cand.source
        assert facts.title.split("`")[0].strip()[:20] in cand.source
    reasons = _first_reproducing(candidates, facts, repo, tmp_path)
    # The best candidate itself must be the one that reproduces: later ones are fallbacks, not the plan.
    assert len(reasons) == 1, reasons


def _facts(name: str) -> IssueFacts:
    return parse_issue((SAMPLES / name).read_text())


def test_snippet_hang_gets_short_timeout_and_literal_assert() -> None:
    facts = parse_issue(
        "# f hangs\n\n```python\nfrom mod import f\nprint(f(3))\n```\n\nExpected: `3`\nActual: it hangs forever.\n"
    )
    best = synthesize_brts(facts, ["mod.py", "tests/test_mod.py"])[0]
    assert best.symptom == "hang"
    assert "@pytest.mark.timeout(5)" in best.source
    assert "actual = f(3)" in best.source and "assert actual == 3" in best.source
    assert best.path == "tests/test_reprobot_issue.py"


def test_repl_string_output_compares_literal_then_repr() -> None:
    facts = _facts("repl_string.md")
    cands = synthesize_brts(facts, ["textutil.py"])
    assert cands[0].symptom == "wrong_value"
    assert "assert actual == 'Hello World'" in cands[0].source
    assert any("repr(actual) ==" in c.source for c in cands[1:])
    assert "from textutil import title_case" in cands[0].source


def test_print_of_unquoted_text_compares_str() -> None:
    facts = parse_issue(
        "# greet\n\n```python\nfrom greet import greet\nprint(greet('bob'))\n```\n\n"
        "Expected output: Hello, Bob!\nActual output: hello, bob!\n"
    )
    cands = synthesize_brts(facts, ["greet.py"])
    assert cands, facts
    assert "assert str(actual) == 'Hello, Bob!'" in cands[0].source


def test_exception_without_expected_value_is_weak_no_raise_test() -> None:
    facts = parse_issue(
        "# crash\n\nCalling `parse_row('')` raises `IndexError: list index out of range`. Please fix.\n"
    )
    cands = synthesize_brts(facts, ["rows.py"])
    assert cands[0].symptom == "exception"
    assert "weak" in cands[0].description
    assert "except IndexError as exc:" in cands[0].source
    assert "pytest.fail(" in cands[0].source


def test_expected_exception_uses_pytest_raises() -> None:
    facts = parse_issue("# no error\n\n`check_age(-1)` returns `True`, but it should raise `ValueError`.\n")
    cands = synthesize_brts(facts, ["ages.py"])
    assert cands and "with pytest.raises(ValueError):" in cands[0].source
    assert "check_age(-1)" in cands[0].source


def test_custom_exception_matched_by_name() -> None:
    facts = parse_issue("# boom\n\n`load('x')` raises `cfg.errors.ConfigError: bad` instead of returning `{}`.\n")
    cands = synthesize_brts(facts, ["cfg/__init__.py", "cfg/errors.py", "cfg/load.py"])
    assert cands[0].symptom == "exception"
    assert "assert actual == {}" in cands[0].source
    assert "from cfg.load import load" in cands[0].source


def test_imports_resolved_from_repo_symbols_in_src_layout() -> None:
    facts = parse_issue("# bad\n\nCalling `Matrix([[1]]).det()` returns `0`, but I expected `1`.\n")
    files = ["src/linalg/__init__.py", "src/linalg/core.py", "tests/test_core.py"]
    cands = synthesize_brts(facts, files, repo_symbols={"src/linalg/core.py": {"Matrix"}})
    assert "from linalg.core import Matrix" in cands[0].source
    assert "(unresolved" not in cands[0].description


def test_unresolved_names_are_flagged_and_ranked_last() -> None:
    facts = parse_issue("# bad\n\n```python\nprint(mystery(2))\n```\nExpected: `4`\nActual: `5`\n")
    cands = synthesize_brts(facts, ["a.py", "b.py"])
    assert cands and all("unresolved names: mystery" in c.description for c in cands)


def test_test_path_follows_repo_convention_and_never_clobbers() -> None:
    assert choose_test_path(["pkg/mod.py"]) == "tests/test_reprobot_issue.py"
    assert choose_test_path(["mod.py", "test/test_mod.py"]) == "test/test_reprobot_issue.py"
    assert choose_test_path(["mod.py", "test_mod.py"]) == "test_reprobot_issue.py"
    taken = ["tests/test_reprobot_issue.py", "tests/test_reprobot_issue_2.py"]
    assert choose_test_path(taken) == "tests/test_reprobot_issue_3.py"


def test_value_source_handles_specials() -> None:
    assert value_source("[1, 2]") == "[1, 2]"
    assert value_source("inf") == "float('inf')"
    assert value_source("-inf") == "-float('inf')"
    assert value_source("[1, ...]") is None
    assert value_source("Node(3)") is None
    assert value_source("set()") == "set()"
    assert value_source("os.system('x')") is None


def test_float_expected_uses_approx() -> None:
    facts = parse_issue(
        "# avg\n\n```\n>>> from stats import mean\n>>> mean([0.1, 0.2])\n0.1\n```\nI expected `0.15`.\n"
    )
    cands = synthesize_brts(facts, ["stats.py"])
    assert "pytest.approx(0.15)" in cands[0].source


@pytest.mark.parametrize(
    ("expected", "good", "bad"),
    [("[2.0]", [2.0], [2]), ("2", 2, 2.0), ("[1, 2.5]", [1, 2.5], [1.0, 2.5]), ("1", 1, True)],
)
def test_numbers_keep_the_kind_the_report_shows(expected: str, good: object, bad: object) -> None:
    from agents.reproduce.checks import VAR, _equality

    line = _equality(expected).replace(VAR, "actual")

    def holds(actual: object) -> bool:
        try:
            exec(line, {"pytest": pytest, "actual": actual})
        except AssertionError:
            return False
        return True

    assert holds(good)
    # `2 == 2.0` and `[2] == [2.0]`: only the kinds tell them apart. True == 1 and True is no float: it passes.
    assert holds(bad) is (expected == "1")


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.md")))
def test_every_sample_synthesizes_valid_python(name: str) -> None:
    facts = _facts(name)
    for cand in synthesize_brts(facts, ["mod.py", "tests/test_mod.py"]):
        compile(cand.source, cand.path, "exec")
        assert cand.source.startswith('"""Reproduces the reported bug: ')


def test_title_with_quotes_and_backslashes_is_escaped() -> None:
    facts = parse_issue(
        '# f("\\x") returns """ oops"\n\n```\n>>> from mod import f\n>>> f(1)\n2\n```\nI expected `1`.\n'
    )
    cands = synthesize_brts(facts, ["mod.py"])
    assert cands
    compile(cands[0].source, "t.py", "exec")


def _cand(symptom: str, expected: str | None = None) -> BrtCandidate:
    return BrtCandidate("tests/t.py", "", symptom, expected, "test_x", "")  # type: ignore[arg-type]


def test_symptom_matches_wrong_value_compares_actual() -> None:
    facts = parse_issue("# x\n\n`f(1)` returns `[1, 2]`, but I expected `[2, 1]`.\n")
    out = (
        "E       AssertionError: observed [1, 2]\nE       assert [1, 2] == [2, 1]\nFAILED t.py::test_x - AssertionError"
    )
    assert symptom_matches(_cand("wrong_value"), facts, out, False)[0]
    other = out.replace("[1, 2]", "[3]")
    ok, reason = symptom_matches(_cand("wrong_value"), facts, other, False)
    assert not ok and "[3]" in reason


def test_symptom_matches_str_form_and_inf() -> None:
    facts = parse_issue("# x\n\n```python\nprint(g())\n```\nExpected: `1`\nActual: `inf`\n")
    out = "E       AssertionError: observed inf\nE       assert inf == 1\n"
    assert symptom_matches(_cand("wrong_value"), facts, out, False)[0]
    out = "E       AssertionError: observed 'inf'\nE       assert 'inf' == '1'\n"
    assert symptom_matches(_cand("wrong_value"), facts, out, False)[0]


def test_symptom_matches_exception_and_hang() -> None:
    facts = parse_issue("# x\n\nCalling `f(1)` raises `KeyError: 1` instead of returning `2`.\n")
    out = "E   KeyError: 1\nFAILED tests/t.py::test_x - KeyError: 1\n1 failed"
    assert symptom_matches(_cand("exception"), facts, out, False)[0]
    ok, reason = symptom_matches(_cand("exception"), facts, out.replace("KeyError", "TypeError"), False)
    assert not ok and "TypeError" in reason
    assert not symptom_matches(_cand("exception"), facts, "1 passed in 0.01s", False)[0]
    hang = parse_issue("# x\n\n`f(1)` never returns.\n")
    timeout_out = "E   Failed: Timeout >5.0s\nFAILED tests/t.py::test_x - Failed: Timeout >5.0s"
    assert symptom_matches(_cand("hang"), hang, timeout_out, False)[0]
    assert symptom_matches(_cand("hang"), hang, "", True)[0]
    assert not symptom_matches(_cand("wrong_value"), facts, timeout_out, False)[0]


def test_symptom_matches_rejects_collection_errors() -> None:
    facts = parse_issue("# x\n\n`f(1)` returns `1`, expected `2`.\n")
    out = (
        "==================================== ERRORS ====================================\n"
        "_______________ ERROR collecting tests/t.py _______________\n"
        "ImportError while importing test module '/w/tests/t.py'.\n"
        "E   ModuleNotFoundError: No module named 'nope'\n"
    )
    ok, reason = symptom_matches(_cand("wrong_value"), facts, out, False)
    assert not ok and "collect" in reason


# Small buggy programs written for these tests (not bench cases), one report per style and symptom, so
# synthesis is checked end to end on phrasings and values the bench does not use. Each folder holds the
# program as <name>.py.txt (so linters leave the deliberate bugs alone), issue.md and symptom.txt.
SYNTHETIC = sorted(p.name for p in (SAMPLES / "repos").iterdir() if p.is_dir())


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_reports_reproduce(name: str, tmp_path: Path) -> None:
    """Reports in the bench's styles about programs written here: the best BRT shows the reported symptom."""
    case = SAMPLES / "repos" / name
    symptom = (case / "symptom.txt").read_text().strip()
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / f"{name}.py").write_text((case / f"{name}.py.txt").read_text())
    (repo / "tests" / f"test_{name}.py").write_text("def test_placeholder():\n    pass\n")
    facts = parse_issue((case / "issue.md").read_text())
    candidates = synthesize_brts(facts, _repo_files(repo))
    assert candidates and candidates[0].symptom == symptom, candidates
    reasons = _first_reproducing(candidates, facts, repo, tmp_path / "runs")
    assert len(reasons) == 1, reasons


def test_multiline_printed_output_compares_stdout_first() -> None:
    facts = parse_issue(
        "# t\n\n```python\nfrom mod import walk\nfor x in walk(3):\n    print(x)\nprint('done')\n```\n\n"
        "Expected output:\n```\n0\n1\n2\ndone\n```\nActual output:\n```\n0\n1\ndone\n```\n"
    )
    cands = synthesize_brts(facts, ["mod.py"])
    assert "def test_walk_reported_bug(capsys):" in cands[0].source
    assert "assert captured == '0\\n1\\n2\\ndone'" in cands[0].source
    assert any("assert str(actual) == 'done'" in c.source for c in cands[1:])
    out = "E       AssertionError: observed '0\\n1\\ndone'\nE       assert '0\\n1\\ndone' == '0'\n"
    assert symptom_matches(cands[0], facts, out, False)[0]


def test_expected_expression_about_the_value_is_asserted_not_compared() -> None:
    # "what the user wrote as expected is what the test asserts": `len(result) == 3` is a claim about the
    # result, not the value the result should equal.
    facts = parse_issue(
        "# uniq keeps duplicates\n\n```python\nfrom seqs import uniq\nresult = uniq([1, 1, 2, 3])\n"
        "print(result)\n```\n\nExpected: `len(result) == 3`\nActual: `[1, 1, 2, 3]`\n"
    )
    cands = synthesize_brts(facts, ["seqs.py"])
    assert cands, facts
    assert "assert len(result) == 3" in cands[0].source
    assert "== 'len(result) == 3'" not in cands[0].source
    compile(cands[0].source, "t.py", "exec")


def test_expected_expression_naming_an_unbound_result_refers_to_the_observed_call() -> None:
    facts = parse_issue(
        "# tokens\n\nCalling `split_words('a  b')` returns `['a', '', 'b']`.\n\nExpected: `'' not in out`\n"
    )
    cands = synthesize_brts(facts, ["words.py"])
    assert cands, facts
    assert "actual = split_words('a  b')" in cands[0].source
    assert "assert '' not in actual" in cands[0].source


def test_snippet_decorators_are_kept_in_the_test() -> None:
    # A decorator in the report can be what triggers the bug (it wraps the function under test).
    facts = parse_issue(
        "# memo forgets arguments\n\n```python\nfrom memo import memoize\n\n@memoize\ndef square(x):\n"
        "    return x * x\n\nsquare(2)\nprint(square(3))\n```\n\nExpected: `9`\nActual: `4`\n"
    )
    cands = synthesize_brts(facts, ["memo.py"])
    assert cands, facts
    assert "@memoize\n    def square(x):" in cands[0].source


def test_symptom_matches_the_exception_shown_where_another_is_expected() -> None:
    """A call that raises the wrong exception: the report shows one raised and expects another (made up)."""
    facts = parse_issue(
        "# parse_size(None) gives a confusing error\n\n"
        "```pycon\n>>> parse_size(None)\nAttributeError: 'NoneType' object has no attribute 'strip'\n```\n\n"
        "It should raise a proper `ValueError` for anything that is not a string.\n"
    )
    assert facts.expected_exception == "ValueError"
    out = "E   AttributeError: 'NoneType' object has no attribute 'strip'\nFAILED t.py::test_x - AttributeError: x\n"
    ok, reason = symptom_matches(_cand("wrong_value"), facts, out, False)
    assert ok and "AttributeError" in reason and "ValueError" in reason
    # An exception the report never shows is another failure, not the reported one.
    ok, reason = symptom_matches(_cand("wrong_value"), facts, out.replace("AttributeError", "KeyError"), False)
    assert not ok and "KeyError" in reason


def test_expected_exception_after_a_possessive() -> None:
    """ "to raise its `E`": the expected exception, not the actual one (made up)."""
    facts = parse_issue(
        "# Truncated input is accepted\n\n`load('[1, {2')` returns `[1]`. I expect `load` to raise its own "
        "`LoaderError` here.\n"
    )
    assert facts.expected_exception == "LoaderError"
    assert facts.exception_type is None


SIZES_BUGGY = (
    "def parse_size(text):\n    digits = ''.join(c for c in text if c.isdigit())\n    return int(digits or 0)\n"
)
SIZES_FIXED = (
    "def parse_size(text):\n"
    "    if not text or not text.isdigit():\n"
    "        raise ValueError(text)\n"
    "    return int(text)\n"
)


def test_a_session_of_the_same_call_on_several_inputs_checks_each_for_the_expected_exception(tmp_path: Path) -> None:
    """Every shown call is expected to raise, so none of them runs as setup outside `pytest.raises` (made up)."""
    facts = parse_issue(
        "# Bad sizes are accepted\n\n```pycon\n>>> import units\n>>> units.parse_size('12 parsecs')\n12\n"
        ">>> units.parse_size('')\n0\n```\n\nBoth should raise `ValueError`.\n"
    )
    brt = synthesize_brts(facts, ["units.py"])[0]
    assert brt.source.count("with pytest.raises(ValueError):") == 2
    assert "each of the 2 calls" in brt.description
    for code, fails in ((SIZES_BUGGY, True), (SIZES_FIXED, False)):
        (tmp_path / "units.py").write_text(code)
        (tmp_path / "test_units.py").write_text(brt.source)
        out, _ = _run_pytest(tmp_path, "test_units.py")
        assert ("1 failed" in out) is fails, out
        assert ("1 passed" in out) is not fails, out


def test_expected_exceptions_read_from_a_test() -> None:
    """The exceptions a BRT expects, for the raise-guard template: builtin and project ones, not `Exception`."""
    source = (
        "import pytest\n\ndef test_x():\n    with pytest.raises(ValueError):\n        f(1)\n"
        "    with pytest.raises(Exception) as excinfo:\n        g(2)\n"
        "    assert type(excinfo.value).__name__ == 'ParseError'\n"
        "    with pytest.raises(mod.ValueError):\n        f(3)\n"
    )
    assert expected_exceptions(source) == ("ValueError", "ParseError")
    assert expected_exceptions("def broken(:\n") == ()
    assert expected_exceptions("assert type(e).__name__ == 'X(); import os'\n") == ()

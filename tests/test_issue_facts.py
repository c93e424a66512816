"""Tests for parse_issue: structure, phrasing variants, symptoms, kinds, and hostile or broken markdown."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest

from agents.reading.facts import IssueFacts, parse_issue
from agents.reading.markdown import parse_repl, parse_tracebacks
from sandboxes.text import clean_text

SHARED = Path(__file__).resolve().parents[2] / "shared"
BENCH = SHARED / "bench" / "quixbugs"
SAMPLES = Path(__file__).parent / "samples" / "issues"
CASES = sorted(p.parent.name for p in BENCH.glob("*/issue.md")) if BENCH.is_dir() else []


def _sample(name: str) -> IssueFacts:
    return parse_issue((SAMPLES / name).read_text())


@pytest.mark.shared
@pytest.mark.skipif(not BENCH.is_dir(), reason=f"bench cases not found at {BENCH} (../shared is absent)")
@pytest.mark.parametrize("case", CASES or ["<none>"])
def test_bench_issue_states_symptom_and_expectation(case: str) -> None:
    """Every bench report yields a bug with an expected value, a reproduction and its case.toml symptom."""
    text = (BENCH / case / "issue.md").read_text()
    facts = parse_issue(text)
    assert facts.kind == "bug"
    assert facts.title and facts.title == text.split("\n", 1)[0][2:].strip()
    assert facts.expected is not None
    assert facts.has_reproduction
    toml = (BENCH / case / "case.toml").read_text()
    symptom = "hang" if facts.hang else "exception" if facts.exception_type else "wrong_value"
    assert f'symptom = "{symptom}"' in toml
    if symptom == "wrong_value":
        assert facts.actual is not None


def test_snippet_expected_actual_labels() -> None:
    facts = parse_issue(
        "# levenshtein() wrong\n\nMinimal example:\n"
        "```python\nfrom lev import lev\nprint(lev('a', 'b'))\n```\n\n"
        "Expected: `1`\nActual: `2`\n"
    )
    assert (facts.expected, facts.actual) == ("1", "2")
    assert facts.code_blocks[0].language == "python" and facts.code_blocks[0].kind == "python"
    assert facts.identifiers == ("lev", "levenshtein")  # the title's "levenshtein()" counts too


def test_snippet_exception_in_actual_label() -> None:
    facts = parse_issue(
        "# gcd\n\n```python\nprint(gcd(1, 1))\n```\n\nExpected: `1`\n"
        "Actual: it raises `RecursionError: maximum recursion depth exceeded`\n"
    )
    assert facts.expected == "1" and facts.actual is None
    assert facts.exception_type == "RecursionError"
    assert facts.exception_message == "maximum recursion depth exceeded"


def test_repl_session_with_continuation_lines() -> None:
    sessions = parse_repl(">>> def f(x):\n...     return x + 1\n...\n>>> f(1)\n3\n>>> print('a')\na\n")
    steps = sessions[0].steps
    assert [s.source for s in steps] == ["def f(x):\n    return x + 1", "f(1)", "print('a')"]
    assert [s.output for s in steps] == ["", "3", "a"]


def test_repl_facts_and_expected_phrase() -> None:
    facts = _sample("repl_string.md")
    assert facts.repl_sessions[0].steps[-1].output == "'Hello world'"
    assert facts.expected == "'Hello World'" and facts.actual == "'Hello world'"


def test_ipython_session() -> None:
    facts = _sample("ipython.md")
    steps = facts.repl_sessions[0].steps
    assert [s.source for s in steps] == ["from mod import fib", "fib(10)"]
    assert steps[1].output == "89"
    assert facts.expected == "55"


def test_unfenced_indented_repl_and_plain_expected() -> None:
    facts = _sample("unfenced_repl.md")
    assert facts.repl_sessions[0].steps[1].source == "clamp(15, 0, 10)"
    assert facts.expected == "10" and facts.actual == "15"


def test_traceback_frames_and_repeats() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "repro.py", line 2, in <module>\n    print(m([1]))\n'
        '  File "m.py", line 21, in m\n    left = m(arr[:1])\n'
        "  [Previous line repeated 993 more times]\n"
        '  File "m.py", line 20, in m\n    if len(arr) == 0:\n'
        "           ^^^^^^^^\n"
        "RecursionError: maximum recursion depth exceeded\n"
    )
    (tb,) = parse_tracebacks(text)
    assert [(f.file, f.line, f.function) for f in tb.frames] == [
        ("repro.py", 2, "<module>"),
        ("m.py", 21, "m"),
        ("m.py", 20, "m"),
    ]
    assert tb.frames[1].source == "left = m(arr[:1])" and tb.frames[1].repeated == 993
    assert tb.frames[2].source == "if len(arr) == 0:"
    assert tb.repeated == 993
    assert (tb.exc_type, tb.exc_message) == ("RecursionError", "maximum recursion depth exceeded")


def test_traceback_style_report() -> None:
    facts = parse_issue(
        "# crash\n\nI saved this as `repro.py` and ran it:\n```python\nfrom d import d\nprint(d(1))\n```\n"
        "```\n$ python repro.py\nTraceback (most recent call last):\n"
        '  File "repro.py", line 2, in <module>\n    print(d(1))\n'
        '  File "d.py", line 5, in d\n    return x.y\n'
        "AttributeError: 'NoneType' object has no attribute 'y'\n```\n\n"
        "The input looks valid to me; I expected it to print `False`.\n"
    )
    assert facts.exception_type == "AttributeError"
    assert facts.expected == "False" and facts.expected_verb == "print"
    assert facts.script_files == ("repro.py",)
    assert facts.mentioned_files == ("repro.py", "d.py")
    assert [b.kind for b in facts.code_blocks] == ["python", "console"]
    assert 'File "d.py", line 5' in facts.traceback_text


def test_traceback_style_printed_output_is_actual() -> None:
    facts = parse_issue(
        "# wrong\n\n```python\nprint(k([2, 1]))\n```\n```\n$ python repro.py\n[2, 2, 1]\n```\n\n"
        "It should print `[1, 2]`.\n"
    )
    assert facts.printed_output == "[2, 2, 1]" and facts.actual == "[2, 2, 1]"
    assert facts.expected == "[1, 2]"


def test_ctrl_c_traceback_means_hang() -> None:
    facts = _sample("traceback_ctrl_c.md")
    assert facts.hang and facts.exception_type is None
    assert facts.tracebacks[0].exc_type == "KeyboardInterrupt"
    assert facts.actual is None


def test_chained_traceback_uses_final_exception() -> None:
    facts = _sample("chained_traceback.md")
    assert [tb.exc_type for tb in facts.tracebacks] == ["KeyError", "mod.ConfigError"]
    assert facts.exception_type == "mod.ConfigError" and facts.exception_message == "name missing"
    assert facts.expected == "None"


def test_blockquoted_repl_traceback() -> None:
    facts = _sample("quoted_traceback.md")
    assert facts.exception_type == "ValueError"
    assert facts.repl_sessions[0].steps[1].source == 'parse("")'
    assert facts.expected == "0"


@pytest.mark.parametrize(
    ("sentence", "subject", "actual", "expected"),
    [
        ("Calling `f(1)` returns `[1]`, but I expected `[2]`.", "f(1)", "[1]", "[2]"),
        ("`f(1)` should return `2` but it returns `3` here.", "f(1)", "3", "2"),
        ("`f(1)` gives 3 instead of 2.", "f(1)", "3", "2"),
        ("For `f(1)` I expected 2, got 3.", None, "3", "2"),
        ("`f(1)` currently returns `None`; the correct result is `0`.", "f(1)", "None", "0"),
        ("I'd expect `f(1)` to be `2`, but I get `3`.", "f(1)", "3", "2"),
        ("Expected output is `ok` but actual output is `ko`.", None, "ko", "ok"),
        ("`f(1)` evaluates to `1.5` rather than `2.0` as expected.", "f(1)", "1.5", "2.0"),
        ("`f(3)` → `8` (expected `7`)", "f(3)", "8", "7"),
        ("Output is `8` but should be `7`", None, "8", "7"),
        ("should output [1, 2] but outputs [2, 1]", None, "[2, 1]", "[1, 2]"),
        ("f(3) gives me 8, I was expecting 7.", None, "8", "7"),
        (
            "### Expected behavior\n\n`f(3)` should return 7.\n\n### Actual behavior\n\n`f(3)` returns 8.",
            "f(3)",
            "8",
            "7",
        ),
        ("The result of `f(3)` is `8` when it should be `7`.", "f(3)", "8", "7"),
        ("I expected the output to be `7` but it is `8`.", None, "8", "7"),
        ("`f(3)` is supposed to return 7 but returns 8", None, "8", "7"),
        ("This prints 8 rather than 7", None, "8", "7"),
        ("It returned 8, while the correct answer is 7.", None, "8", "7"),
        ("Expected result: 7, but got 8", None, "8", "7"),
    ],
)
def test_prose_phrasings(sentence: str, subject: str | None, actual: str, expected: str | None) -> None:
    facts = parse_issue("# t\n\n" + sentence + "\n")
    assert facts.actual == actual
    assert facts.expected == expected
    if subject is not None:
        assert facts.subject == subject


def test_prose_raises_instead_of() -> None:
    facts = parse_issue(
        "# IndexError in kth\n\nCalling `kth([1, 2], 1)` raises `IndexError: list index out of range` "
        "instead of giving `2`.\n"
    )
    assert facts.subject == "kth([1, 2], 1)"
    assert facts.exception_type == "IndexError" and facts.exception_message == "list index out of range"
    assert facts.expected == "2" and facts.expected_verb == "give"
    assert facts.actual is None


def test_prose_setup_statements_and_result_variable() -> None:
    facts = parse_issue(
        "# t\n\nI tried this: `a = [3, 1]; result = srt(a)`. After that, `result` is `[3, 1]`, "
        "but I expected `[1, 3]`.\n"
    )
    assert facts.setup_code == "a = [3, 1]; result = srt(a)"
    assert facts.subject == "result"
    assert (facts.actual, facts.expected) == ("[3, 1]", "[1, 3]")
    assert facts.identifiers == ("srt",)


def test_expected_exception_is_not_the_symptom() -> None:
    facts = parse_issue("# t\n\n`check(-1)` returns `True`, but it should raise `ValueError`.\n")
    assert facts.expected_exception == "ValueError"
    assert facts.exception_type is None
    assert facts.actual == "True"
    facts = parse_issue("# t\n\n`f(-1)` should raise ValueError but returns -1.\n")
    assert (facts.expected_exception, facts.actual, facts.subject) == ("ValueError", "-1", "f(-1)")


def test_unquoted_exception_with_message_and_subject() -> None:
    facts = parse_issue("# t\n\n`f('a')` throws a TypeError: bad operand; I expected it to return `'A'`.\n")
    assert (facts.exception_type, facts.exception_message) == ("TypeError", "bad operand")
    assert facts.subject == "f('a')" and facts.expected == "'A'"
    assert parse_issue("# t\n\nf(3) keeps raising ZeroDivisionError\n").exception_type == "ZeroDivisionError"


@pytest.mark.parametrize(
    "phrase",
    [
        "it never returns",
        "the call hangs",
        "it gets into an infinite loop",
        "the loop never terminates",
        "the test times out after 10 minutes",
        "it runs forever",
        "the function doesn't return",
    ],
)
def test_hang_phrasings(phrase: str) -> None:
    assert parse_issue(f"# t\n\nWith `f(3)` {phrase}.\n").hang


def test_no_hang_in_ordinary_report() -> None:
    assert not parse_issue("# t\n\n`f(3)` returns `4`, expected `3`.\n").hang


def test_kinds() -> None:
    assert _sample("feature_request.md").kind == "feature"
    assert _sample("question.md").kind == "question"
    assert _sample("vague.md").kind == "bug"
    assert parse_issue("# Why does f(2) return 5?\n\n`f(2)` returns `5`, I expected `4`.\n").kind == "bug"


def test_empty_body() -> None:
    facts = _sample("empty_body.md")
    assert facts.title == "Something is broken" and facts.body == ""
    assert not facts.has_reproduction and facts.expected is None and facts.kind == "bug"


def test_empty_text() -> None:
    facts = parse_issue("")
    assert facts.title == "" and facts.body == "" and not facts.has_reproduction


def test_malformed_markdown_without_title_and_unclosed_fence() -> None:
    facts = _sample("malformed.md")
    assert facts.title == ""
    assert facts.python_blocks == ("from mod import f\nprint(f(1))",)
    assert facts.identifiers == ("f",)


def test_title_comment_inside_code_is_not_the_title() -> None:
    facts = parse_issue("```python\n# not a title\nx = 1\n```\n# Real title\nbody\n")
    assert facts.title == "Real title"


def test_non_ascii() -> None:
    facts = _sample("non_ascii.md")
    assert facts.expected == "café" and facts.actual == "cafe"
    assert facts.title.startswith("normalize() mangles accents — café")


def test_hidden_characters_and_html_comments_are_removed() -> None:
    facts = _sample("hidden_chars.md")
    assert facts.subject == "double(2)"
    assert (facts.actual, facts.expected) == ("5", "4")  # the commented-out "Expected: `999`" is ignored
    assert "999" not in facts.body
    assert all(ch not in facts.body for ch in "\u200b\u202e\u2066\u2069\u00a0")
    assert facts.title == "double() is wrong"


def test_clean_text_keeps_visible_text() -> None:
    assert clean_text("a\u200bb\r\nc<!-- x -->d\u00a0e<details><summary>log</summary>z</details>") == "ab\ncd elogz"


def test_unterminated_html_comment_hides_the_rest() -> None:
    facts = parse_issue("# t\n\n`f(1)` returns `2`.\n<!-- template\nExpected: `3`\n")
    assert facts.actual == "2" and facts.expected is None


def test_mentioned_files_and_identifiers() -> None:
    facts = parse_issue(
        "# t\n\nIn `pkg/core.py` the helper `compute()` breaks; see also utils.py. "
        "Calling `compute(2)` returns `1`, expected `2`.\n"
    )
    assert facts.mentioned_files == ("pkg/core.py", "utils.py")
    assert facts.identifiers == ("compute",)


def test_plain_unquoted_call() -> None:
    facts = _sample("got_instead.md")
    assert facts.plain_calls == ("mod.mul(3, 4)",)
    assert (facts.expected, facts.actual) == ("12", "7")


def test_bold_labels_with_output_blocks() -> None:
    facts = _sample("snippet_bold_labels.md")
    assert (facts.expected, facts.actual) == ("[1, 2, 3, 3]", "[1, 2, 3]")
    assert [b.kind for b in facts.code_blocks] == ["python", "output", "output"]


def test_free_text_label_values() -> None:
    facts = parse_issue("# t\n\n```python\nprint(greet('bob'))\n```\nExpected output: Hello, Bob!\nGot: hello, bob!\n")
    assert (facts.expected, facts.actual) == ("Hello, Bob!", "hello, bob!")


def test_random_markdown_never_crashes() -> None:
    """Seeded fuzz over report fragments: parsing, synthesis and scoring never raise, tests always compile."""
    from agents.reproduce.synthesis import synthesize_brts
    from agents.triage.abstention import score_issue

    pieces = [
        *("# ", "```", "```python\n", ">>> ", "... ", "`", "``", "\n", "    ", "> ", "~~~", "\t", "\r\n"),
        *("Traceback (most recent call last):\n", '  File "a.py", line 3, in f\n', "    x = 1\n", "^^^^\n"),
        *("ValueError: bad\n", "KeyboardInterrupt", "[Previous line repeated 3 more times]\n"),
        *("Expected: ", "Actual: ", "returns ", "raises ", "instead of ", "I expected ", "should print "),
        *("f(1)", "[1, 2", "]", "(", ")", "'", '"', "print(", "result", " = ", "; ", "yield ", "await "),
        *("<!-- ", "-->", "\u200b", "é", "never returns", "$ python a.py\n", "In [1]: ", "Out[1]: "),
        *("0x1", "inf", "\\"),
    ]
    rng = random.Random(1234)
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        facts = parse_issue(text)
        for cand in synthesize_brts(facts, ["mod.py", "a.py", "tests/test_a.py"]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                compile(cand.source, cand.path, "exec", dont_inherit=True)  # as pytest compiles it
        score_issue(facts, ["a.py"], {"f"})

"""Reading as a class (issue 27): cut tracebacks, continuation lines, attributes set between calls, expected
values in prose after a session, output printed after an exception, bulleted expected values, runs of the
project's own command, and calls named in prose.

Every report and every program here is made up for the rule it tests; none comes from a benchmark. The
end-to-end tests write a small buggy program and its fix, and check that the synthesized test fails on the
first with the reported symptom (the way the reproduce stage picks it) and passes on the second.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from agents.reading.facts import IssueFacts, parse_issue
from agents.reading.markdown import classify_block, parse_repl
from agents.reproduce.checks import CHANGED_ONLY
from agents.reproduce.console import command_argv, entry_point_launcher, output_pattern
from agents.reproduce.symptom import symptom_matches
from agents.reproduce.synthesis import BrtCandidate, synthesize_brts
from agents.triage.abstention import score_issue
from sandboxes.setup_meta import console_scripts


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _run(root: Path, cand: BrtCandidate) -> subprocess.CompletedProcess[str]:
    _write(root, {cand.path: cand.source})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cand.path],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _reproduce(
    facts: IssueFacts, buggy: dict[str, str], fixed: dict[str, str], tmp: Path, scripts: dict[str, str] | None = None
) -> BrtCandidate:
    """The first candidate that fails on `buggy` the reported way (as the reproduce stage picks it); it must
    pass on `fixed`."""
    cands = synthesize_brts(facts, sorted(buggy), scripts=scripts)
    assert cands, "no test synthesized"
    reasons = []
    for i, cand in enumerate(cands):
        root = tmp / f"buggy{i}"
        _write(root, buggy)
        run = _run(root, cand)
        ok, why = symptom_matches(cand, facts, run.stdout, False)
        if ok and run.returncode == 1:
            fixed_root = tmp / f"fixed{i}"
            _write(fixed_root, fixed)
            after = _run(fixed_root, cand)
            assert after.returncode == 0, after.stdout
            return cand
        reasons.append(f"{cand.description}: {why}")
    raise AssertionError("no candidate reproduced the report:\n" + "\n".join(reasons))


# --- Cut tracebacks and statements over continuation lines -------------------------------------------------

_SHAPES = "def area(side):\n    if side % 2:\n        raise ValueError('odd side')\n    return side * side\n"
_SHAPES_FIXED = "def area(side):\n    return side * side\n"


def test_statement_step_whose_traceback_is_cut_is_the_reproduction(tmp_path: Path) -> None:
    # Pattern: `>>> name = call(...)` followed by a traceback the user cut to "...": the session has no
    # expression step, yet the assignment is the reproduction and its name the observed value.
    facts = parse_issue(
        "# area() rejects odd sides\n\n```pycon\n>>> from shapes import area\n>>> result = area(3)\n"
        "Traceback (most recent call last):\n  ...\nValueError: odd side\n```\n\nExpected: `9`\n"
    )
    assert facts.exception_type == "ValueError"
    cand = _reproduce(facts, {"shapes.py": _SHAPES}, {"shapes.py": _SHAPES_FIXED}, tmp_path)
    assert "result = area(3)" in cand.source and "assert result == 9" in cand.source


def test_exception_line_after_a_cut_without_traceback_header_is_the_exception(tmp_path: Path) -> None:
    # Pattern: the whole traceback replaced by "..." right under the prompt, only the exception line left.
    facts = parse_issue(
        "# area() rejects odd sides\n\n```\n>>> from shapes import area\n>>> area(5)\n...\nValueError: odd side\n```\n"
    )
    assert (facts.exception_type, facts.exception_message) == ("ValueError", "odd side")
    step = facts.repl_sessions[0].steps[-1]
    assert step.raised == ("ValueError", "odd side") and step.printed == ""
    _reproduce(facts, {"shapes.py": _SHAPES}, {"shapes.py": _SHAPES_FIXED}, tmp_path)


def test_loop_over_continuation_lines_that_raises_midway(tmp_path: Path) -> None:
    # Pattern: a `for` statement typed over `...` lines prints a value, then raises on the next item.
    facts = parse_issue(
        "# area() rejects odd sides\n\n```python\n>>> from shapes import area\n>>> for side in (2, 3):\n"
        '...     print(area(side))\n...\n4\nTraceback (most recent call last):\n  File "<stdin>", line 2, in '
        "<module>\n  ...\nValueError: odd side\n```\n"
    )
    step = facts.repl_sessions[0].steps[-1]
    assert step.source == "for side in (2, 3):\n    print(area(side))"
    assert step.printed == "4" and step.raised == ("ValueError", "odd side")
    cand = _reproduce(facts, {"shapes.py": _SHAPES}, {"shapes.py": _SHAPES_FIXED}, tmp_path)
    assert "for side in (2, 3):" in cand.source


def test_cut_forms_inside_a_traceback_are_skipped() -> None:
    # "[...]", "(...)", "<snip>" and "... 12 frames ..." are all the user's cuts, not the exception line.
    for cut in ("[...]", "(...)", "<snip>", "... 12 frames omitted ...", "…"):
        facts = parse_issue(
            f'# t\n\n```\nTraceback (most recent call last):\n  File "a.py", line 1, in <module>\n{cut}\n'
            "KeyError: 'port'\n```\n"
        )
        assert facts.exception_type == "KeyError", cut


# --- Sessions that set attributes between calls -----------------------------------------------------------

_METER = (
    "class Meter:\n"
    "    def __init__(self):\n"
    "        self.unit = 'm'\n"
    "        self._factor = None\n"
    "    @property\n"
    "    def scale(self):\n"
    "        if self._factor is None{fix}:\n"
    "            self._factor = 1000 if self.unit == 'km' else 1\n"
    "            self._unit_seen = self.unit\n"
    "        return self._factor\n"
)


def test_property_read_before_an_attribute_is_set_stays_in_the_setup(tmp_path: Path) -> None:
    # Pattern: `>>> obj.prop` (a property that caches), `>>> obj.attr = x`, `>>> obj.prop` again: the
    # first read runs code the bug depends on, so it is part of the setup, not an echo to drop.
    facts = parse_issue(
        "# Meter.scale is stale after changing the unit\n\n```pycon\n>>> from meter import Meter\n"
        ">>> m = Meter()\n>>> m.unit = 'km'\n>>> m.scale\n1000\n>>> m.unit = 'm'\n>>> m.scale\n1000\n```\n\n"
        "Expected: `1` after switching back to metres.\n"
    )
    buggy = {"meter.py": _METER.format(fix="")}
    fixed = {"meter.py": _METER.format(fix=" or self.unit != self._unit_seen")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert cand.source.index("m.scale\n") < cand.source.index("m.unit = 'm'")


# --- Output Python printed after an exception --------------------------------------------------------------

_LOADER = (
    "import json, logging\n"
    "def load_all(texts):\n"
    "    out = []\n"
    "    for text in texts:\n"
    "        try:\n"
    "            out.append(json.loads(text{fix}))\n"
    "        except ValueError:\n"
    "            logging.exception('skipping a record')\n"
    "    return out\n"
)


def test_value_echoed_after_a_printed_traceback_means_the_call_returned(tmp_path: Path) -> None:
    # Pattern: the code under test logs a traceback and goes on; the REPL then echoes the call's value.
    # The step did not raise: the value is the symptom, and the test compares it.
    facts = parse_issue(
        "# load_all skips records with a BOM\n\n```pycon\n>>> from loader import load_all\n"
        ">>> load_all(['{\"a\": 1}', '\\ufeff{\"b\": 2}'])\nERROR:root:skipping a record\n"
        'Traceback (most recent call last):\n  File "loader.py", line 6, in load_all\n'
        "json.decoder.JSONDecodeError: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)\n"
        "[{'a': 1}]\n```\n\nExpected: `[{'a': 1}, {'b': 2}]`\n"
    )
    step = facts.repl_sessions[0].steps[-1]
    assert step.raised is None and step.logged is not None
    assert step.printed.endswith("[{'a': 1}]")
    buggy = {"loader.py": _LOADER.format(fix="")}
    fixed = {"loader.py": _LOADER.format(fix=".lstrip('\\ufeff')")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert cand.symptom == "wrong_value"


def test_printed_lines_around_a_traceback_are_the_output() -> None:
    # Pattern: stdout flushed after the traceback (piped runs) or printed before it: both are output.
    steps = parse_repl(
        '>>> run()\nstarting\nTraceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n'
        "RuntimeError: stopped\n"
    )[0].steps
    assert steps[0].printed == "starting" and steps[0].raised == ("RuntimeError", "stopped")
    facts = parse_issue(
        '# t\n\n```\n$ python job.py\nTraceback (most recent call last):\n  File "job.py", line 3, in <module>\n'
        "    main()\nKeyError: 'total'\n\nDuring handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "job.py", line 5, in <module>\nRuntimeError: no total\n'
        "rows read: 3\n```\n"
    )
    assert facts.exception_type == "RuntimeError"
    assert facts.printed_output == "rows read: 3"


# --- Expected values in prose after the session ----------------------------------------------------------

_WEEKDAY = (
    "class Day:\n"
    "    def __init__(self, n):\n"
    "        self.n = n\n"
    "    def __repr__(self):\n"
    "        return f'<Day {self.n}>'\n"
    "NAMES = {'Mon': 1, 'Tue': 2}\n"
    "def day(name):\n"
    "    return Day(NAMES[name{fix}])\n"
)


def test_result_verb_and_value_later_in_the_expected_paragraph(tmp_path: Path) -> None:
    # Pattern: "Expected: <what should happen>, so both calls return `V`": the value comes after a result
    # verb in the label's paragraph, not right after the label.
    facts = parse_issue(
        "# day() is case sensitive\n\n```pycon\n>>> from weekday import day\n>>> day('Mon')\n<Day 1>\n"
        ">>> day('MON')\nTraceback (most recent call last):\n  ...\nKeyError: 'MON'\n```\n\n"
        "Expected: the name is matched regardless of case, like month names are, so both calls return "
        "`<Day 1>` (the same for `'mon'`).\n"
    )
    assert facts.expected == "<Day 1>"
    buggy = {"weekday.py": _WEEKDAY.replace("{fix}", "")}
    fixed = {"weekday.py": _WEEKDAY.replace("{fix}", ".title()")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = day('MON')" in cand.source


_QUEUE = (
    "class Q:\n"
    "    def __init__(self, items):\n"
    "        self.items = list(items)\n"
    "    def __getitem__(self, index):\n"
    "        if isinstance(index, slice) and index.stop is not None{fix}:\n"
    "            index = slice(index.start, index.stop - 1)\n"
    "        return Q(self.items[index])\n"
    "    def __repr__(self):\n"
    "        return f'Q({self.items!r})'\n"
)


def test_call_value_pairs_in_the_expected_paragraph_each_check_their_call(tmp_path: Path) -> None:
    # Pattern: "Expected: ..., i.e. `q[1:3]` is `Q([2, 3])` and `q[-1:]` is `Q([4])`": each call has its own
    # expected value; a pair about today's working behaviour ("like ... today") is not an expectation, and
    # none of these verbs is what happened.
    facts = parse_issue(
        "# Q slices lose the last item\n\n```pycon\n>>> from queues import Q\n>>> q = Q([1, 2, 3, 4])\n"
        ">>> q[1:3]\nQ([2])\n>>> q[-1:]\nQ([4])\n```\n\n"
        "Expected: slicing works like a list, i.e. `q[1:3]` is `Q([2, 3])` and `q[-1:]` is `Q([4])`, like "
        "`q[0:4]` gives `Q([1, 2, 3])` today.\n"
    )
    assert facts.expected_pairs == (("q[1:3]", "Q([2, 3])"), ("q[-1:]", "Q([4])"))
    assert (facts.expected, facts.subject) == ("Q([2, 3])", "q[1:3]")
    assert facts.actual != "Q([2, 3])"
    buggy = {"queues.py": _QUEUE.replace("{fix}", "")}
    fixed = {"queues.py": _QUEUE.replace("{fix}", " and False")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = q[1:3]" in cand.source and cand.reported_actual == "Q([2])"
    # q[-1:] already echoed its expected value: a working example, compared by no candidate.
    assert not any("actual = q[-1:]" in c.source for c in synthesize_brts(facts, ["queues.py"]))


def test_value_from_a_callee_named_after_the_session(tmp_path: Path) -> None:
    # Pattern: "`V` from `mod.f`": the value the session's call of that callee should give.
    facts = parse_issue(
        "# squeeze keeps a trailing newline\n\n```pycon\n>>> import textkit\n>>> textkit.squeeze('  a\\n')\n"
        "'a\\n'\n```\n\nExpected: no whitespace is left at either end, i.e. `'a'` from `textkit.squeeze`.\n"
    )
    assert facts.expected_pairs == (("textkit.squeeze", "'a'"),)
    buggy = {"textkit/__init__.py": "def squeeze(text):\n    return text.lstrip(' ')\n"}
    fixed = {"textkit/__init__.py": "def squeeze(text):\n    return text.strip()\n"}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = textkit.squeeze('  a\\n')" in cand.source


# --- An `Expected:` given as a bulleted list --------------------------------------------------------------

_CONV = "def to_int(text):\n    return int(text{fix})\n"


def test_bulleted_expected_values_pair_with_the_sessions_calls(tmp_path: Path) -> None:
    facts = parse_issue(
        "# to_int ignores prefixes\n\n```pycon\n>>> from conv import to_int\n>>> to_int('0x10')\n0\n"
        ">>> to_int('0o10')\n0\n```\n\nExpected:\n\n- `16`\n- `8`\n"
    )
    assert facts.expected_values == ("16", "8")
    decision = score_issue(facts, ["conv.py"], {"to_int"})
    assert decision.features["has_expected"] is True, decision.reasons
    buggy = {"conv.py": "def to_int(text):\n    return int(text[2:] if text[1:2].isalpha() else text, 10) * 0\n"}
    fixed = {"conv.py": "def to_int(text):\n    return int(text, 0)\n"}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "call by call" in cand.description


def test_a_scripts_prints_pair_with_one_expected_value_each(tmp_path: Path) -> None:
    """A script prints three values, the output shows three lines, and the expected list answers each: the
    prints are compared one by one, and the one already right is a working example."""
    facts = parse_issue(
        "# Equal tags are kept twice\n\n```python\nfrom tags import Tag\n\na, b = Tag('x', 1), Tag('x', 2)\n"
        "print(a == b)\nprint(len({a, b}))\nprint(sorted(t.name for t in {a, b}))\n```\n\nOutput:\n\n"
        "```\nTrue\n2\n['x', 'x']\n```\n\nExpected:\n\n- `True`\n- `1`\n- `['x']`\n"
    )
    buggy = {
        "tags.py": "class Tag:\n    def __init__(self, name, n):\n        self.name, self.n = name, n\n\n"
        "    def __eq__(self, other):\n        return self.name == other.name\n\n"
        "    def __hash__(self):\n        return hash((self.name, self.n))\n"
    }
    fixed = {"tags.py": buggy["tags.py"].replace("hash((self.name, self.n))", "hash(self.name)")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "call by call" in cand.description
    assert "len({a, b})" in cand.source and "print(a == b)" in cand.source  # the earlier print is setup


def test_bulleted_call_value_pairs_under_a_heading_without_colon(tmp_path: Path) -> None:
    # Pattern: "**Expected behaviour**" then items "`call` → `value`", "`call` returns `value`",
    # "`call`: `value`"; a numbered item's number is never the value.
    facts = parse_issue(
        "# to_int ignores prefixes\n\n`to_int` gives 0 for prefixed numbers.\n\n**Expected behaviour**\n\n"
        "- `to_int('0x10')` → `16`\n- `to_int('0o10')` returns `8`\n- `to_int('10')`: `10`\n"
    )
    assert facts.expected_pairs == (("to_int('0x10')", "16"), ("to_int('0o10')", "8"), ("to_int('10')", "10"))
    assert facts.actual is None  # "→" and "returns" in the list are expectations, not what happened
    assert score_issue(facts, ["conv.py"], {"to_int"}).features["has_expected"] is True
    buggy = {"conv.py": "def to_int(text):\n    return 0 if text[:1] == '0' else int(text)\n"}
    fixed = {"conv.py": "def to_int(text):\n    return int(text, 0)\n"}
    _reproduce(facts, buggy, fixed, tmp_path)
    numbered = parse_issue("# mean\n\n`mean([1, 2])` returns `1`.\n\nExpected:\n\n1. 1.5\n2. 2.5\n")
    assert numbered.expected is None and numbered.expected_values == ("1.5", "2.5")


# --- Prose that names the call, the argument and the exception apart --------------------------------------

_SIZES = (
    "def parse_size(text):\n"
    "    number, unit = text{fix}[:-2], text[-2:]\n"
    "    if not number.isdigit() or unit != 'KB':\n"
    "        raise ValueError(f'bad size: {text!r}')\n"
    "    return int(number) * 1024\n"
)


def test_callee_and_argument_named_apart_make_the_call(tmp_path: Path) -> None:
    # Pattern: "`mod.f` raises E when passed `x`": the test must call mod.f(x); observing the bare callee
    # `mod.f` would pass on the buggy code.
    facts = parse_issue(
        "# parse_size chokes on a space\n\n`sizes.parse_size` raises `ValueError` when passed `'10 KB'` "
        "(with a space between number and unit). It should return `10240`.\n"
    )
    assert facts.subject == "sizes.parse_size('10 KB')"
    buggy = {"sizes.py": _SIZES.replace("{fix}", "")}
    fixed = {"sizes.py": _SIZES.replace("{fix}", ".replace(' ', '')")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "sizes.parse_size('10 KB')" in cand.source


def test_argument_passed_to_a_function_named_after_it(tmp_path: Path) -> None:
    # Pattern: "passing `x` to `f()` raises E", with `f()` marking the function, not a call without arguments.
    facts = parse_issue(
        "# render crashes on None\n\nPassing `None` to `render()` raises `AttributeError: 'NoneType' object "
        "has no attribute 'strip'`.\n"
    )
    assert facts.subject == "render(None)"
    buggy = {"views.py": "def render(text):\n    return '<p>' + text.strip() + '</p>'\n"}
    fixed = {"views.py": "def render(text):\n    return '<p>' + (text or '').strip() + '</p>'\n"}
    _reproduce(facts, buggy, fixed, tmp_path)
    # `f(...)` names the function too; an exception name is never the callee.
    facts = parse_issue("# t\n\n`load(...)` raises `KeyError` with the argument `{}`.\n")
    assert facts.subject == "load({})"


# --- A shell session of the project's own command ---------------------------------------------------------

_WC_PYPROJECT = '[project]\nname = "wclite"\nversion = "0.1"\n\n[project.scripts]\nwc-lite = "wclite.cli:main"\n'
_WC_CLI = (
    "import sys\n"
    "def count(text):\n"
    "    return len(text.split({sep}))\n"
    "def main(argv=None):\n"
    "    argv = sys.argv[1:] if argv is None else argv\n"
    "    with open(argv[0]) as f:\n"
    "        print(f'{{count(f.read().strip())}} words')\n"
    "    return 0\n"
)
_WC_REPORT = (
    "# wc-lite undercounts words across lines\n\nCounting a two-line file:\n\n```console\n$ cat words.txt\n"
    "alpha beta\ngamma\n$ wc-lite words.txt\n2 words\n```\n\nExpected: `3 words`.\n"
)


def test_run_of_the_projects_console_script_is_a_reproduction(tmp_path: Path) -> None:
    # Pattern: `$ tool args` and its wrong output, where `tool` is a console script the project declares
    # (here with no __main__.py, so `python -m` could not run it) and `$ cat file` showed its input.
    facts = parse_issue(_WC_REPORT)
    assert facts.named_files == (("words.txt", "alpha beta\ngamma\n"),)
    scripts = console_scripts({"pyproject.toml": _WC_PYPROJECT})
    assert scripts == {"wc-lite": "wclite.cli:main"}
    files = ["pyproject.toml", "wclite/__init__.py", "wclite/cli.py"]
    decision = score_issue(facts, files, {"count", "main"}, scripts=scripts)
    assert decision.act and decision.features["has_command"] is True, decision.reasons
    buggy = {"pyproject.toml": _WC_PYPROJECT, "wclite/__init__.py": "", "wclite/cli.py": _WC_CLI.format(sep="' '")}
    fixed = {**buggy, "wclite/cli.py": _WC_CLI.format(sep="")}
    cand = _reproduce(facts, buggy, fixed, tmp_path, scripts)
    assert "the reported command" in cand.description and "'words.txt': 'alpha beta\\ngamma\\n'" in cand.source


_TOOL_SCRIPT = "import sys\nfrom inventory import parse_qty\n\nprint(parse_qty(sys.argv[1]))\n"


def test_run_of_a_script_the_report_gives_by_name(tmp_path: Path) -> None:
    # Pattern: "`tool.py`:" above the user's script, then `$ python tool.py ARG` and the error it printed.
    facts = parse_issue(
        "# parse_qty rejects a plus sign\n\n`tool.py`:\n\n```python\n" + _TOOL_SCRIPT + "```\n\n"
        '```\n$ python tool.py +3\nTraceback (most recent call last):\n  File "tool.py", line 4, in <module>\n'
        "    print(parse_qty(sys.argv[1]))\n  ...\nValueError: not a quantity: '+3'\n```\n"
    )
    assert facts.named_files == (("tool.py", _TOOL_SCRIPT),)
    buggy = {
        "inventory.py": "def parse_qty(text):\n    if not text.isdigit():\n"
        "        raise ValueError(f'not a quantity: {text!r}')\n    return int(text)\n"
    }
    fixed = {"inventory.py": "def parse_qty(text):\n    return int(text)\n"}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "[sys.executable, *['tool.py', '+3']]" in cand.source


def test_console_scripts_are_read_from_every_packaging_file() -> None:
    setup_py = "setup(name='t', entry_points={'console_scripts': ['t-run = t.cli:app.main', \"t2=t.x:go\"]})\n"
    setup_cfg = "[options.entry_points]\nconsole_scripts =\n    t-cfg = t.cfg:main\n"
    assert console_scripts({"setup.py": setup_py, "setup.cfg": setup_cfg}) == {
        "t-cfg": "t.cfg:main",
        "t-run": "t.cli:app.main",
        "t2": "t.x:go",
    }
    assert console_scripts({"pyproject.toml": "not [toml"}) == {}
    launcher = entry_point_launcher("t-run", "t.cli:app.main")
    assert launcher == "import sys; sys.argv[0] = 't-run'; from t.cli import app as _entry; sys.exit(_entry.main())"
    # A name the project declares runs its entry point, even when another package has a __main__.py.
    assert command_argv("t-run --x", ["other"], {"t-run": "t.cli:app.main"})[:1] == ["-c"]  # type: ignore[index]
    assert command_argv("python -m tmod a", [], None, (), ["tmod"]) == ["-m", "tmod", "a"]


def test_reported_output_with_a_cut_matches_any_lines() -> None:
    pattern = output_pattern("HTTP/1.1 200 OK  \n...\ndone")
    assert re.fullmatch(pattern, "HTTP/1.1 200 OK\nA: 1\nB: 2\ndone", re.S)
    assert not re.fullmatch(pattern, "HTTP/1.1 500 ERR\ndone", re.S)


def test_a_paired_call_that_echoed_a_value_shows_a_wrong_value_even_when_another_call_raised(
    tmp_path: Path,
) -> None:
    # Pattern: the session's slices echo wrong values and a later call raises; the report's exception is
    # the later call's, but each paired slice is compared on its own and fails with its own wrong value.
    facts = parse_issue(
        "# Q slices lose the last item\n\n```pycon\n>>> from queues import Q\n>>> q = Q([1, 2, 3, 4])\n"
        ">>> q[1:3]\nQ([2])\n>>> q.pop(9)\nTraceback (most recent call last):\n  ...\nIndexError: pop index out of "
        "range\n```\n\nExpected: like a list, i.e. `q[1:3]` is `Q([2, 3])`.\n"
    )
    assert facts.exception_type == "IndexError"
    buggy = {"queues.py": _QUEUE.replace("{fix}", "")}
    fixed = {"queues.py": _QUEUE.replace("{fix}", " and False")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert cand.symptom == "wrong_value" and "actual = q[1:3]" in cand.source


def test_listed_values_skip_the_calls_that_already_echo_one_of_them() -> None:
    # Pattern: four calls, two of them working examples that already echo a listed value, and "Expected:
    # `a` and `b`": the two others pair with the two values, in order.
    facts = parse_issue(
        "# chunk adds an empty tail\n\n```pycon\n>>> from seqs import chunk\n>>> chunk([1, 2], 2)\n[[1, 2], []]\n"
        ">>> chunk([1, 2], 3)\n[[1, 2]]\n>>> chunk([1], 1)\n[[1], []]\n>>> chunk([1, 2], 5)\n[[1, 2]]\n```\n\n"
        "Expected: `[[1, 2]]` and `[[1]]`.\n"
    )
    cands = [c for c in synthesize_brts(facts, ["seqs.py"]) if "call by call" in c.description]
    pairs = {(c.source.split("actual = ")[1].split("\n")[0], c.expected) for c in cands}
    assert pairs == {("chunk([1, 2], 2)", "[[1, 2]]"), ("chunk([1], 1)", "[[1]]")}


def test_ipython_traceback_names_the_exception_and_its_frames() -> None:
    # Pattern: IPython/Jupyter print "ValueError   Traceback (most recent call last)" with "File path:N, in f"
    # frames and "---->" source lines; the exception line repeats the type.
    facts = parse_issue(
        "# area fails\n\n```\nIn [1]: from shapes import area\n\nIn [2]: area(3)\n" + "-" * 75 + "\n"
        "ValueError                                Traceback (most recent call last)\nCell In[2], line 1\n"
        "----> 1 area(3)\n\nFile ~/src/shapes.py:3, in area(side)\n      2 def area(side):\n"
        "----> 3     raise ValueError('odd side')\n\nValueError: odd side\n```\n"
    )
    assert (facts.exception_type, facts.exception_message) == ("ValueError", "odd side")
    frames = facts.tracebacks[0].frames
    assert [(f.file, f.line, f.function) for f in frames] == [
        ("<ipython-input>", 1, "<module>"),
        ("~/src/shapes.py", 3, "area"),
    ]
    assert frames[1].source == "raise ValueError('odd side')"
    step = facts.repl_sessions[0].steps[-1]
    assert step.raised == ("ValueError", "odd side") and step.printed == ""


def test_triage_does_not_guess_that_an_unknown_command_is_the_project() -> None:
    # Synthesis may try an unknown command name as the repo's only runnable package (users install tools
    # under other names), but triage gives credit only for commands known to be the project's.
    facts = parse_issue("# build fails\n\nIt breaks for me:\n\n```\n$ make docs\nmake: *** [docs] Error 2\n```\n")
    files = ["greet/__init__.py", "greet/__main__.py"]
    decision = score_issue(facts, files, {"main"})
    assert decision.features["has_command"] is False and not decision.act
    facts = parse_issue("# greet crashes\n\n```\n$ python -m greet --loud\ngreet: error: KeyError: '--name'\n```\n")
    assert score_issue(facts, files, {"main"}).features["runs_project_command"] is True


_PATHS = (
    "class Name:\n"
    "    def __init__(self, text):\n"
    "        self.parts = text.split('.')\n"
    "    def last(self):\n"
    "        return self.parts[{index}]\n"
    "    def first(self):\n"
    "        return self.parts[0]\n"
)


def test_value_for_an_input_pairs_with_the_call_that_takes_it(tmp_path: Path) -> None:
    # Pattern: "Expected: `name()` should be the last part, `'d'` for `a.b.c.d`, the same way it is `'b'` for
    # `a.b`": the call the sentence is about (its first span, the subject, not the value) picks, among the
    # session's calls on that input, the one to compare; the working example is not what happened.
    facts = parse_issue(
        "# last() picks the wrong part\n\n```pycon\n>>> from dotted import Name\n>>> n = Name('a.b.c.d')\n"
        ">>> n.first()\n'a'\n>>> n.last()\n'b'\n>>> Name('a.b').last()\n'b'\n```\n\n"
        "Expected: `last()` (for any number of parts) should be the last part, `'d'` for `a.b.c.d`, the same "
        "way it is `'b'` for `a.b`.\n"
    )
    assert facts.expected is None  # `last()` is what the sentence is about, not the expected value
    assert facts.expected_pairs == (("a.b.c.d", "'d'"),) and facts.expected_callees == ("last",)
    buggy = {"dotted.py": _PATHS.replace("{index}", "1")}
    fixed = {"dotted.py": _PATHS.replace("{index}", "-1")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = n.last()" in cand.source and "assert actual == 'd'" in cand.source


def test_files_named_by_a_first_line_comment_or_a_heredoc() -> None:
    facts = parse_issue(
        "# t\n\n```python\n# job.py\nfrom jobs import run\nrun()\n```\n\n```console\n$ cat > jobs.toml <<'EOF'\n"
        "> [job]\n> name = 'x'\n> EOF\n$ python job.py --dry\n```\n"
    )
    assert dict(facts.named_files) == {
        "job.py": "# job.py\nfrom jobs import run\nrun()\n",
        "jobs.toml": "[job]\nname = 'x'\n",
    }


def test_a_call_through_a_package_name_anchors_the_report() -> None:
    # `pkg.f(...)` names the package `pkg`, a folder with an __init__.py, even when no module is named so.
    facts = parse_issue("# t\n\n`textkit.squeeze('  a')` returns `' a'`, but I expected `'a'`.\n")
    decision = score_issue(facts, ["textkit/__init__.py", "textkit/core.py"], set())
    assert decision.features["mentions_repo_symbol"] is True


def test_a_clause_showing_a_working_case_is_not_the_actual_value() -> None:
    # "the same way it returns `2` on Linux" shows a working case for contrast; it is not what went wrong.
    facts = parse_issue(
        "# t\n\n`count('a b')` is wrong on Windows. I expected `2` there, the same way it returns `2` on Linux.\n"
    )
    assert facts.actual is None and facts.expected == "2"


_UNITS = (
    "def fmt(meters):\n"
    "    if meters >= 1000:\n"
    "        return f'{meters {op} 1000:g} km'\n"
    "    return f'{meters:g} m'\n\n\n"
    "def to_meters(text):\n"
    "    number, unit = text.split()\n"
    "    return float(number) * (1000 if unit == 'km' else 1)\n"
)


def test_a_session_ending_on_a_working_case_checks_the_step_before_it(tmp_path: Path) -> None:
    # Pattern: the session's last call shows the value reached another way, and the prose says "I expected V
    # here as well": the step that already echoes V is the contrast; the one that echoed another V-typed value
    # is the bug.
    facts = parse_issue(
        "# fmt() loses the fraction of a kilometre\n\n```pycon\n>>> from units import fmt, to_meters\n"
        ">>> text = fmt(1500.0)\n>>> text\n'1 km'\n>>> to_meters(text)\n1000.0\n"
        '>>> to_meters("1.5 km")\n1500.0\n```\n\n'
        "Formatting is only supposed to change how a distance is written, not its value, so I expected "
        "`1500.0` here as well.\n"
    )
    assert facts.expected == "1500.0"
    buggy = {"units.py": _UNITS.replace("{op}", "//")}
    fixed = {"units.py": _UNITS.replace("{op}", "/")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = to_meters(text)" in cand.source


# --- A printing script answered by one expected value in prose -----------------------------------------------

_INI = (
    "def load(text):\n"
    "    pairs = {}\n"
    "    for line in text.splitlines(){strip}:\n"
    "        key, _, value = line.partition('=')\n"
    "        pairs[key] = value\n"
    "    return pairs\n"
)


def test_a_column_of_shown_values_is_output_not_a_program() -> None:
    assert classify_block("", "'<b>'\n''\n") == "output"
    assert classify_block("", "Counter({'a': 2})\nNone\n") == "output"
    assert classify_block("", "Point(1, 2)\n") == "python"  # a lone constructor call may be the reproduction
    assert classify_block("", "load('a=1')\nsave()\n") == "python"


def test_an_expected_object_and_its_infinitive_lead_to_the_value_and_the_closest_print_is_checked(
    tmp_path: Path,
) -> None:
    # Pattern: "I'd expect <the thing> to <verb> as `V`" after a script whose output block shows one line per
    # print: V corrects the line most like it, not the script's last print.
    facts = parse_issue(
        "# load() keeps the byte-order mark\n\n```python\nfrom ini import load\n\n"
        "pairs = load('\\ufeffname=x\\nsize=2')\nprint(pairs)\nprint(pairs.get('name'))\n```\n\n"
        "Output:\n\n```\n{'\\ufeffname': 'x', 'size': '2'}\nNone\n```\n\n"
        "I'd expect the text to load as\n`{'name': 'x', 'size': '2'}`, as it does without the mark.\n"
    )
    assert facts.expected == "{'name': 'x', 'size': '2'}"
    buggy = {"ini.py": _INI.replace("{strip}", "")}
    fixed = {"ini.py": _INI.replace("text.splitlines(){strip}", "text.lstrip('\\ufeff').splitlines()")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "pairs == {'name': 'x', 'size': '2'}" in cand.source


_TAGS = "def render(tags):\n{listed}    if not tags:\n        return ''\n    return '<ul>' + ''.join(tags) + '</ul>'\n"


def test_a_printed_working_case_that_is_what_the_user_expected_points_at_the_print_before_it(
    tmp_path: Path,
) -> None:
    # Pattern: "`V`, which is what I expected for <the other input>": V is the expected value, the print that
    # shows it is the contrast, and print(repr(x)) shows what an echo of x would.
    facts = parse_issue(
        "# render() of an empty generator is not empty\n\n```python\nfrom tags import render\n\n"
        "print(repr(render(['<li>a</li>'])))\nprint(repr(render(t for t in [] if t)))\nprint(repr(render([])))\n"
        "```\n\nOutput:\n\n```\n'<ul><li>a</li></ul>'\n'<ul></ul>'\n''\n```\n\n"
        "An empty list gives `''`, which is what I expected for the generator with nothing in it as well.\n"
    )
    assert facts.expected == "''"
    buggy = {"tags.py": _TAGS.replace("{listed}", "")}  # an empty generator is truthy
    fixed = {"tags.py": _TAGS.replace("{listed}", "    tags = list(tags)\n")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "actual = render(t for t in [] if t)" in cand.source


_BADGE = (
    "import html\nimport sys\n\n\n"
    "def badge(label):\n"
    "    title = {title}\n"
    "    return f'<span title=\"{{title}}\">{{html.escape(label)}}</span>'\n\n\n"
    "if __name__ == '__main__':\n"
    "    print(badge(sys.argv[1]))\n"
)


def test_a_commands_output_corrected_in_prose_is_asserted_not_only_changed(tmp_path: Path) -> None:
    # Pattern: `$ python -m tool ARG` and its output, then "I'd expect `FRAGMENT`" where the fragment is a
    # corrected part of that output: the test asserts the fragment, so a fix that merely changes the output
    # does not pass it.
    facts = parse_issue(
        "# Badge titles are escaped twice\n\n```\n$ python -m badges 'R&D'\n"
        '<span title="R&amp;amp;D">R&amp;D</span>\n\n$ python -m badges plain\n'
        '<span title="plain">plain</span>\n```\n\n'
        'The label itself is fine. I\'d expect `title="R&amp;D"`.\n'
    )
    assert facts.expected == 'title="R&amp;D"'
    buggy = {"badges/__init__.py": "", "badges/__main__.py": _BADGE.format(title="html.escape(html.escape(label))")}
    fixed = {**buggy, "badges/__main__.py": _BADGE.format(title="html.escape(label)")}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "prints 'title=\"R&amp;D\"'" in cand.description
    wrong = {**buggy, "badges/__main__.py": _BADGE.format(title="label.upper()")}  # changed, still not right
    _write(tmp_path / "wrong", wrong)
    assert _run(tmp_path / "wrong", cand).returncode == 1


def test_expected_values_of_a_scripts_expressions_are_checked_after_the_script(tmp_path: Path) -> None:
    """A script prints several values per line; the expected list says what expressions over its names should be
    ("`a == b` is False (...)", "`c.open` is True: ..."): each is observed after the whole script."""
    report = (
        "# Ranges compare equal across open and closed ends\n\n```python\nfrom spans import Span\n"
        "a = Span(1, 3)\nb = a.closed()\nprint(a.text(), b.text(), a == b)\nc = Span(2, 2)\nprint(c.empty, c.text())\n"
        "```\n\nOutput:\n\n```\n[1, 3) [1, 3] True\nFalse [2, 2)\n```\n\nExpected:\n\n"
        "- `a == b` is False (one includes 3, the other does not)\n"
        "- `c.empty` is True: a half-open range with equal ends holds nothing\n"
    )
    facts = parse_issue(report)
    assert facts.expected_pairs == (("a == b", "False"), ("c.empty", "True"))
    buggy = {
        "spans.py": "class Span:\n    def __init__(self, lo, hi, closed=False):\n"
        "        self.lo, self.hi, self.is_closed = lo, hi, closed\n\n"
        "    def closed(self):\n        return Span(self.lo, self.hi, True)\n\n"
        "    def text(self):\n        return f'[{self.lo}, {self.hi}' + (']' if self.is_closed else ')')\n\n"
        "    @property\n    def empty(self):\n        return self.lo == self.hi and self.is_closed\n\n"
        "    def __eq__(self, other):\n        return (self.lo, self.hi) == (other.lo, other.hi)\n"
    }
    fixed = {
        "spans.py": buggy["spans.py"]
        .replace(
            "(self.lo, self.hi) == (other.lo, other.hi)",
            "(self.lo, self.hi, self.is_closed) == (other.lo, other.hi, other.is_closed)",
        )
        .replace("self.lo == self.hi and self.is_closed", "self.lo == self.hi and not self.is_closed")
    }
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "values the report expects" in cand.description
    assert "print(a.text(), b.text(), a == b)" in cand.source  # the whole script is the setup
    # An expression over a name the script never binds is not one of these.
    other = parse_issue(report.replace("`c.empty` is True", "`zz.empty` is True"))
    assert ("zz.empty", "True") in other.expected_pairs
    assert all("zz.empty" not in c.source.split("def test", 1)[-1] for c in synthesize_brts(other, ["spans.py"]))


def test_a_scripts_pasted_output_must_change_when_the_expectation_is_in_words(tmp_path: Path) -> None:
    """The script's output is the bug and the expectation is a sentence no value can be read from: the test
    asserts the output changes, flagged as the weak check it is (the assessment never trusts it alone)."""
    facts = parse_issue(
        "# `pad()` differs from `str.ljust()`\n\n```python\nfrom pads import pad\nfor w in (3, 4):\n"
        "    print(repr(pad('ab', w)), repr('ab'.ljust(w)))\n```\n\nOutput:\n\n```\n' ab' 'ab '\n'  ab' 'ab  '\n```\n\n"
        "Expected: the same padding as the standard library's method for plain text.\n"
    )
    assert facts.expected is None and facts.actual
    buggy = {"pads.py": "def pad(text, width):\n    return text.rjust(width)\n"}
    fixed = {"pads.py": "def pad(text, width):\n    return text.ljust(width)\n"}
    cand = _reproduce(facts, buggy, fixed, tmp_path)
    assert "no longer prints what the report shows" in cand.description and "weak" in cand.description
    assert CHANGED_ONLY in cand.source

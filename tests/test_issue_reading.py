"""Reading rules for reports as users write them (issue 14): what the user wrote as expected is asserted.

Every example here is made up for the rule it tests; none comes from a benchmark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agents.reading.facts import parse_issue
from agents.reproduce.code import dotted_homes, resolve_imports
from agents.reproduce.console import command_argv
from agents.reproduce.files import files_for_program, listed_files
from agents.reproduce.symptom import symptom_matches
from agents.reproduce.synthesis import BrtCandidate, synthesize_brts


def test_actual_label_outranks_a_value_phrase_in_the_description() -> None:
    # Pattern: prose says "`flag` is `False`" while describing the bug; the "Actual:" label with a block is
    # what the program printed.
    facts = parse_issue(
        "# toggles\n\nA switch whose `enabled` is `False` counts as on.\n\n"
        "```python\nfrom sw import is_on\nprint(is_on({'enabled': False}))\nprint(is_on({}))\n```\n\n"
        "Expected:\n\n```\nFalse\nFalse\n```\n\nActual:\n\n```\nTrue\nFalse\n```\n"
    )
    assert facts.expected == "False\nFalse"
    assert facts.actual == "True\nFalse"


def test_expected_label_with_call_then_verb_takes_the_value_after_the_verb() -> None:
    # Pattern: "Expected: `call` returns `value`": the call is the subject, not the expected value, and
    # "returns" inside the expected sentence is not what happened.
    facts = parse_issue(
        "# parse_size fails on units\n\n`parse_size('2 KB')` raises ValueError.\n\n"
        "Expected: `parse_size('2 KB')` returns `2048`, like `parse_size('2KB')` gives `2048` today.\n"
    )
    assert facts.expected == "2048"
    assert facts.subject == "parse_size('2 KB')"
    assert facts.actual is None
    cands = synthesize_brts(facts, ["sizes.py"])
    assert cands and "actual = parse_size('2 KB')" in cands[0].source
    assert "assert actual == 2048" in cands[0].source


def test_expected_sentence_leading_into_a_block_takes_the_block() -> None:
    # Pattern: "Expected: <sentence> ... the output is" + fenced block on the next paragraph.
    facts = parse_issue(
        "# merge drops keys\n\n```python\nfrom dicts import merge\nprint(merge({'a': 1}, {'b': 2}))\n```\n\n"
        "Expected: both keys survive the merge, so the output is\n\n```\n{'a': 1, 'b': 2}\n```\n\n"
        "Actual:\n\n```\n{'b': 2}\n```\n"
    )
    assert facts.expected == "{'a': 1, 'b': 2}"
    assert facts.actual == "{'b': 2}"


def test_expected_by_reference_to_another_call_then_a_block_takes_the_block() -> None:
    # Pattern: "should return the same as `g(x)`:" followed by the value in a block.
    facts = parse_issue(
        "# pad ignores width\n\n```python\nfrom fmt import pad\nprint(pad(7, width=3))\n```\n\n"
        "Expected: it should print the same as `pad(7, 3)`:\n\n```\n007\n```\n"
    )
    assert facts.expected == "007"


def test_a_sentence_ending_in_a_full_stop_does_not_claim_the_next_block() -> None:
    facts = parse_issue("# t\n\nExpected: it works like before.\n\n```python\nfrom m import f\nprint(f(1))\n```\n")
    assert facts.expected is None


def test_listed_expected_values_pair_with_repl_calls_in_order() -> None:
    # Pattern: a `>>>` session with several calls and "Expected: `a` and `b`": call k gets value k, and a
    # call whose echo already is its expected value is a working example, not the bug.
    facts = parse_issue(
        "# squash collapses too much\n\n```python\n>>> from text import squash\n>>> squash('a  b')\n'a b'\n"
        ">>> squash('a \\n b')\n'ab'\n```\n\nExpected: `'a b'` and `'a b'`.\n"
    )
    assert facts.expected_values == ("'a b'", "'a b'")
    cands = synthesize_brts(facts, ["text.py"])
    first = cands[0]
    assert "actual = squash('a \\n b')" in first.source
    assert "assert actual == 'a b'" in first.source
    assert first.reported_actual == "'ab'"
    # The first call echoed its expected value, so no candidate compares it.
    assert not any("actual = squash('a  b')" in c.source for c in cands if "call by call" in c.description)
    out = "E       AssertionError: observed 'ab'\nE       assert 'ab' == 'a b'\n"
    assert symptom_matches(first, facts, out, False)[0]


def test_a_later_call_is_not_compared_with_an_earlier_calls_value() -> None:
    facts = parse_issue(
        "# t\n\n```python\n>>> from conv import to_int\n>>> to_int('0x10')\n0\n>>> to_int('10')\n10\n```\n\n"
        "Expected: `16` and `10`\n"
    )
    cands = [c for c in synthesize_brts(facts, ["conv.py"]) if "call by call" in c.description]
    assert len({c.source.split("actual = ")[1].split("\n")[0] for c in cands}) == 1
    assert "actual = to_int('0x10')" in cands[0].source and "assert actual == 16" in cands[0].source


def test_repl_observation_is_the_call_the_report_names() -> None:
    # The expected value is stated of one call; a later working call must not be the one compared.
    facts = parse_issue(
        "# t\n\n```python\n>>> from cal import days\n>>> days(2024, 2)\n28\n>>> days(2023, 2)\n28\n```\n\n"
        "Expected: `days(2024, 2)` returns `29`.\n"
    )
    cands = synthesize_brts(facts, ["cal.py"])
    assert "actual = days(2024, 2)" in cands[0].source
    assert "assert actual == 29" in cands[0].source


def test_exception_subject_beats_a_contrasting_value_of_another_call() -> None:
    # Pattern: "`f(a)` raises E instead of returning `x`. `f(b)` returns `y`": f(b) is a working contrast.
    facts = parse_issue(
        "# ints\n\nPassing a number, e.g. `to_count(12)`, raises `AttributeError: 'int' object has no "
        "attribute 'strip'` instead of returning `12`. `to_count(None)` returns `None`, so numbers should "
        "pass through too.\n"
    )
    assert facts.subject == "to_count(12)"
    assert facts.exception_type == "AttributeError"
    assert facts.actual is None
    cands = synthesize_brts(facts, ["counts.py"])
    assert cands and "actual = to_count(12)" in cands[0].source
    assert "assert actual == 12" in cands[0].source


def test_dotted_path_in_the_report_says_where_a_name_lives() -> None:
    homes = dotted_homes(["`acme.tools.helpers.slug` is broken", "acme.tools"], ["acme", "acme.tools.helpers"])
    assert homes["slug"] == "acme.tools.helpers"
    assert "helpers" not in homes  # `acme.tools` is not a module of this repo
    imports, missing = resolve_imports(
        ["slug"],
        set(),
        ["acme/__init__.py", "acme/tools/__init__.py", "acme/tools/helpers.py", "acme/other.py"],
        [],
        None,
        dotted=["acme.tools.helpers.slug"],
    )
    assert imports == ["from acme.tools.helpers import slug"] and not missing


def test_printed_output_keeps_its_leading_whitespace() -> None:
    facts = parse_issue(
        "# indent lost\n\n```python\nfrom tree import show\nshow({'a': {'b': 1}})\n```\n\n"
        "Expected output:\n\n```\na\n  b: 1\n```\n\nActual output:\n\n```\na\nb: 1\n```\n"
    )
    cands = synthesize_brts(facts, ["tree.py"])
    stdout = [c for c in cands if "capsys" in c.source]
    assert stdout and "assert captured == 'a\\n  b: 1'" in stdout[0].source


def test_value_printed_inside_a_with_block_is_checked_with_the_context_kept() -> None:
    # Pattern: the buggy code only runs inside the user's context manager.
    facts = parse_issue(
        "# override is ignored\n\n```python\nfrom settings import override, get\n\n"
        "with override(debug=True):\n    print(get('debug'))\n```\n\nExpected: `True`\n\nActual: `False`\n"
    )
    cands = synthesize_brts(facts, ["settings.py"])
    assert cands
    src = cands[0].source
    assert "with override(debug=True):\n        value_in_context = get('debug')" in src
    assert "assert value_in_context is True" in src
    compile(src, "t.py", "exec")


def test_exception_named_in_prose_with_errno_message() -> None:
    facts = parse_issue(
        "# save fails\n\nSaving with a long title fails with `OSError: [Errno 36] File name too long`.\n"
    )
    assert facts.exception_type == "OSError"
    assert facts.exception_message == "[Errno 36] File name too long"


def test_command_argv_maps_the_projects_command_to_python_dash_m() -> None:
    packages = ["greet"]
    assert command_argv("greet --name 'A B' -v", packages) == ["-m", "greet", "--name", "A B", "-v"]
    assert command_argv("python3 -m greet x", packages) == ["-m", "greet", "x"]
    # The repo's only runnable package is the command the user installed under another name.
    assert command_argv("hello x", packages) == ["-m", "greet", "x"]
    assert command_argv("hello x", ["greet", "other"]) is None
    # Shell syntax cannot be replayed as an argv, and other tools are not the project.
    assert command_argv("greet $(cat name.txt)", packages) is None
    assert command_argv("greet x | head", packages) is None
    assert command_argv("pip install greet", packages) is None
    assert command_argv("python -m pip list", packages) is None


_CLI = (
    "import sys\n"
    "def main(argv):\n"
    "    opts = dict(a.split('=', 1) for a in argv if '=' in a)\n"
    "    try:\n"
    "        print('hello ' + opts['--name'].upper(){fix})\n"
    "    except Exception as exc:\n"
    "        print(f'greet: error: {{type(exc).__name__}}: {{exc}}', file=sys.stderr)\n"
    "        return 1\n"
    "    return 0\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _run_brt(repo: Path, cand: BrtCandidate) -> subprocess.CompletedProcess[str]:
    (repo / cand.path).parent.mkdir(parents=True, exist_ok=True)
    (repo / cand.path).write_text(cand.source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = str(repo)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cand.path],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_reported_command_is_rerun_and_fails_while_the_error_shows(tmp_path: Path) -> None:
    facts = parse_issue(
        "# greet crashes without a name\n\n```\n$ greet --loud\ngreet: error: KeyError: '--name'\n```\n\n"
        "Expected: a greeting for nobody.\n"
    )
    cands = synthesize_brts(facts, ["greet/__init__.py", "greet/__main__.py", "tests/test_greet.py"])
    cand = next(c for c in cands if "reported command" in c.description)
    assert "[sys.executable, *['-m', 'greet', '--loud']]" in cand.source
    buggy = tmp_path / "buggy"
    (buggy / "greet").mkdir(parents=True)
    (buggy / "greet" / "__init__.py").write_text("")
    (buggy / "greet" / "__main__.py").write_text(_CLI.format(fix=""))
    run = _run_brt(buggy, cand)
    assert run.returncode == 1, run.stdout
    assert symptom_matches(cand, facts, run.stdout, False)[0], run.stdout
    fixed = tmp_path / "fixed"
    (fixed / "greet").mkdir(parents=True)
    (fixed / "greet" / "__init__.py").write_text("")
    (fixed / "greet" / "__main__.py").write_text(
        _CLI.format(fix="").replace("opts['--name']", "opts.get('--name', 'nobody')")
    )
    assert _run_brt(fixed, cand).returncode == 0


def test_folder_listing_is_read_with_contents_nesting_and_tree_drawing() -> None:
    plain = listed_files(
        'site/\n  config.json        {"name": "demo"}\n  pages/\n    index.md\n  hooks/\n'
        "    build.sh           (executable) echo built\n  notes.txt  two  spaces inside\n"
    )
    assert [f.path for f in plain] == [
        "site/config.json",
        "site/pages/index.md",
        "site/hooks/build.sh",
        "site/notes.txt",
    ]
    assert plain[0].text == '{"name": "demo"}\n' and plain[1].text == ""
    assert plain[2].text == "#!/bin/sh\necho built\n" and plain[2].executable
    assert plain[3].text == "two  spaces inside\n"
    drawn = listed_files("site/\n├── a.txt   x\n└── sub/\n    └── b.txt   y\n")
    assert [(f.path, f.text) for f in drawn] == [("site/a.txt", "x\n"), ("site/sub/b.txt", "y\n")]
    # Printed output, code and prose are not listings.
    assert listed_files("['a', 'b']\n") == ()
    assert listed_files("total 2\n-rw-r--r-- 1 me me 0 a.txt\n") == ()
    assert files_for_program(("site/\n  a.txt  x\n  b.txt  y\n",), "build('elsewhere')") == ()


def test_listed_folder_is_created_before_the_snippet_runs(tmp_path: Path) -> None:
    # Pattern: the snippet reads a folder that the report shows as a listing; without it the snippet
    # fails for another reason (no such folder) and never reaches the bug.
    facts = parse_issue(
        "# pack skips underscore files\n\nFolder:\n\n```\nproj/\n  a.txt     alpha\n  _b.txt    beta\n```\n\n"
        "```python\nfrom bundle import pack\nprint(pack('proj'))\n```\n\n"
        "Expected: `['_b.txt', 'a.txt']`\n\nActual: `['a.txt']`\n"
    )
    cands = synthesize_brts(facts, ["bundle.py"])
    cand = cands[0]
    assert "monkeypatch.chdir(tmp_path)" in cand.source and "'proj/_b.txt': 'beta\\n'" in cand.source
    buggy = tmp_path / "buggy"
    buggy.mkdir()
    pack = "import os\ndef pack(folder):\n    return [f for f in sorted(os.listdir(folder)) if {keep}]\n"
    (buggy / "bundle.py").write_text(pack.format(keep="not f.startswith('_')"))
    run = _run_brt(buggy, cand)
    assert run.returncode == 1 and symptom_matches(cand, facts, run.stdout, False)[0], run.stdout
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "bundle.py").write_text(pack.format(keep="True"))
    assert _run_brt(fixed, cand).returncode == 0


def test_expected_comparison_fragment_is_a_claim_about_the_observed_value() -> None:
    # Pattern: "Expected: `is None`" / "`> 0`" completes a sentence about the result; it is not a value.
    facts = parse_issue(
        "# lookup invents a default\n\n```python\nfrom registry import lookup\nprint(lookup('missing'))\n```\n\n"
        "Expected: `is None`\n\nActual: `''`\n"
    )
    cands = synthesize_brts(facts, ["registry.py"])
    assert cands and "assert actual is None" in cands[0].source
    assert "== 'is None'" not in cands[0].source
    facts = parse_issue("# t\n\n`count_rows('t.csv')` returns `-1`.\n\nExpected: `>= 0`\n")
    cands = synthesize_brts(facts, ["rows.py"])
    assert cands and "assert actual >= 0" in cands[0].source


def test_a_standard_library_name_the_report_qualifies_elsewhere_is_imported_from_there() -> None:
    # The report writes `operator.mul` once and then calls with a bare `mul`: the test imports it from there.
    facts = parse_issue(
        "# product() fails on an empty list\n\nI fold my factors with `acme.stats.product(operator.mul, factors)`."
        " When `factors` is empty, `product(mul, [])` raises `TypeError: reduce() of empty iterable with no"
        " initial value`.\n\nI would expect `product(mul, [])` to be `1`, the empty product.\n"
    )
    cands = synthesize_brts(facts, ["acme/__init__.py", "acme/stats.py"], repo_symbols={"acme/stats.py": {"product"}})
    assert cands and "from operator import mul" in cands[0].source
    assert "from acme.stats import product" in cands[0].source
    files = ["acme/__init__.py", "acme/paths.py"]
    imports, missing = resolve_imports(["join"], set(), files, [], {"acme/paths.py": {"slug"}}, dotted=["os.path.join"])
    assert imports == ["from os.path import join"] and not missing
    # The repo's own definition wins; a module outside the standard library, or a private one, is no home.
    imports, _ = resolve_imports(["join"], set(), files, [], {"acme/paths.py": {"join"}}, dotted=["os.path.join"])
    assert imports == ["from acme.paths import join"]
    _, missing = resolve_imports(
        ["frob"], set(), files, [], {"acme/paths.py": set()}, dotted=["numpy.frob", "_thread.frob"]
    )
    assert missing == ["frob"]


def test_common_standard_library_names_a_report_uses_without_importing_them_are_imported() -> None:
    # Reports paste the call and leave out `from datetime import datetime`, `import decimal` and the like.
    facts = parse_issue(
        "# day_name() is a day late\n\nI label my calendar with `acme.clock.day_name(datetime(2020, 5, 1))`."
        " `day_name(datetime(2020, 5, 1))` returns `'Saturday'`.\n\nI would expect"
        " `day_name(datetime(2020, 5, 1))` to be `'Friday'`.\n"
    )
    cands = synthesize_brts(facts, ["acme/__init__.py", "acme/clock.py"], repo_symbols={"acme/clock.py": {"day_name"}})
    assert cands and "from datetime import datetime" in cands[0].source
    files = ["acme/__init__.py", "acme/money.py"]
    symbols = {"acme/money.py": {"total"}}
    imports, missing = resolve_imports(["decimal", "Decimal", "deque"], {"decimal"}, files, [], symbols)
    assert imports == ["import decimal", "from decimal import Decimal"] and missing == ["deque"]
    imports, missing = resolve_imports(["deque"], set(), files, [], symbols, callables=["deque"])
    assert imports == ["from collections import deque"] and not missing
    # The repo's own name wins, a plain lower-case variable is never taken for a library name, and only public
    # names of the standard library are looked up.
    imports, _ = resolve_imports(["Decimal"], set(), files, [], {"acme/money.py": {"Decimal"}})
    assert imports == ["from acme.money import Decimal"]
    _, missing = resolve_imports(["partial", "_Decimal", "frobnicate"], {"frobnicate"}, files, [], symbols)
    assert missing == ["partial", "_Decimal", "frobnicate"]
    # `sys.argv[1]` is the user's script argument: importing sys in a test would read pytest's own.
    _, missing = resolve_imports(["sys"], {"sys"}, files, [], symbols)
    assert missing == ["sys"]

"""`make bench-data`: QuixBugs cases rebuilt from a repo laid out like QuixBugs (tiny programs of our own here)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bot.evaluate.run import load_cases, run_eval
from bot.settings.config import Settings
from tests.conftest import REPO_ROOT, load_script, make_git_repo

B = load_script("bench/data/build_quixbugs.py")

# Buggy and correct programs in QuixBugs' layout. The correct `scale` differs by a comment too and carries an
# alternative solution under another name, which the minimal fix leaves out.
_SCALE = "def scale(xs, k):\n    return [x * k for x in xs[1:]]\n\n\n'''\nMultiply every item by k.\n'''\n"
_SCALE_OK = (
    "def scale(xs, k):\n    # every item, the first one too\n    return [x * k for x in xs]\n\n\n"
    "def scale_alt(xs, k):\n    return list(map(lambda x: x * k, xs))\n"
)
_COUNTDOWN = (
    "def countdown(n):\n    out = []\n    while n != 0:\n        out.append(n)\n        n -= 2\n    return out\n"
)
_COUNTDOWN_OK = _COUNTDOWN.replace("while n != 0:", "while n > 0:")
_LAST = "def last_item(xs):\n    return xs[len(xs)]\n"
_LAST_OK = "def last_item(xs):\n    return xs[len(xs) - 1]\n"
_TOTALS = "def running_total(xs):\n    total = 0\n    for x in xs:\n        yield total\n        total += x\n"
_TOTALS_OK = "def running_total(xs):\n    total = 0\n    for x in xs:\n        total += x\n        yield total\n"
_NODE = (
    "class Node:\n    def __init__(self, value=None, successor=None):\n"
    "        self.value = value\n        self.successor = successor\n"
)
_LENGTH = (
    "def list_length(node):\n    count = 0\n    while node.successor is not None:\n        count += 1\n"
    "        node = node.successor\n    return count\n"
)
_LENGTH_OK = (
    "def list_length(node):\n    count = 0\n    while node is not None:\n        count += 1\n"
    "        node = node.successor\n    return count\n"
)
# Upstream's graph tests: pytest functions sharing module-level nodes, which one test changes.
_LENGTH_TESTS = """\
import pytest
from node import Node

if pytest.use_correct:
    from correct_python_programs.list_length import list_length
else:
    from python_programs.list_length import list_length

tail = Node(3)
middle = Node(2, tail)


def test1():
    \"\"\"Case 1: one node
    Output: 1
    \"\"\"
    assert list_length(Node(1)) == 1


def test2():
    \"\"\"Case 2: three nodes\"\"\"
    head = Node(1, middle)
    assert list_length(head) == len([1, 2, 3])


def test3():
    \"\"\"Case 3: the middle node after its successor is cut\"\"\"
    middle.successor = None
    assert list_length(middle) <= 1
"""
_CHAIN = "from node import Node\n\n\ndef chain(n):\n    return Node(n)\n"


def _quixbugs_like(path: Path) -> Path:
    def cases(*rows: object) -> str:
        return "".join(json.dumps(row) + "\n" for row in rows)

    files = {
        "LICENSE": "MIT License (test fixture)\n",
        "python_programs/scale.py": _SCALE,
        "correct_python_programs/scale.py": _SCALE_OK,
        "json_testcases/scale.json": cases([[[], 3], []], [[[1, 2], 3], [3, 6]], [[[5], 2], [10]]),
        "python_programs/countdown.py": _COUNTDOWN,
        "correct_python_programs/countdown.py": _COUNTDOWN_OK,
        "json_testcases/countdown.json": cases([[4], [4, 2]], [[3], [3, 1]]),
        "python_programs/last_item.py": _LAST,
        "correct_python_programs/last_item.py": _LAST_OK,
        "json_testcases/last_item.json": cases([[[1, 2, 3]], 3], [[[7]], 7]),
        "python_programs/running_total.py": _TOTALS,
        "correct_python_programs/running_total.py": _TOTALS_OK,
        "json_testcases/running_total.json": cases([[[]], []], [[[1, 2]], [1, 3]]),
        # A graph program: pytest-function tests only, no JSON cases.
        "python_programs/node.py": _NODE,
        "python_programs/list_length.py": _LENGTH,
        "correct_python_programs/list_length.py": _LENGTH_OK,
        "python_testcases/test_list_length.py": _LENGTH_TESTS,
        # Returns tuples, which JSON writes as lists.
        "python_programs/swap_pairs.py": "def swap_pairs(pairs):\n    return [(a, b) for a, b in pairs]\n",
        "correct_python_programs/swap_pairs.py": "def swap_pairs(pairs):\n    return [(b, a) for a, b in pairs]\n",
        "json_testcases/swap_pairs.json": cases([[[]], []], [[[[1, 2]]], [[2, 1]]]),
        # No tests at all: skipped.
        "python_programs/chain.py": _CHAIN,
        "correct_python_programs/chain.py": _CHAIN,
    }
    return make_git_repo(path, files)


def test_minimal_fix_takes_only_the_functions_code() -> None:
    fixed = B.minimal_fix(_SCALE, _SCALE_OK)
    # The buggy file's docstring stays; the comment-only line and the alternative solution stay out.
    assert fixed == _SCALE.replace("xs[1:]", "xs")
    diff = B.unified_diff("scale.py", _SCALE, fixed)
    assert diff.startswith("diff --git a/scale.py b/scale.py\n--- a/scale.py\n+++ b/scale.py\n")
    assert [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("---", "+++"))] == [
        "-    return [x * k for x in xs[1:]]",
        "+    return [x * k for x in xs]",
    ]


def test_helper_modules_are_found_by_their_imports_not_by_words_in_a_docstring() -> None:
    program = 'import heapq\nfrom node import Node\n"""graph: a dict from node to its edges"""\n'
    assert B._imported_modules(program) == {"heapq", "node"}
    assert B._imported_modules('"""from node to node, import nodes"""\n') == set()
    assert B._imported_modules("def broken(:\n") == set()


def test_json_cases_and_their_split() -> None:
    inputs = B.parse_json_cases("[[1, 2], 3]\n\n[[[4]], [4]]\n")
    assert [(c.case_id, c.args, c.expected) for c in inputs] == [("case0", [1, 2], 3), ("case1", [[4]], [4])]
    ok, wrong, hang = B.Outcome("ok", "3", True), B.Outcome("ok", "5", False), B.Outcome("hang")
    third = B.JsonCase("case2", [0], 0)
    brt, regression = B.split_inputs([*inputs, third], [ok, wrong, hang], [ok, ok, wrong])
    # Passes on both: regression; fails on buggy only: BRT; fails on the fixed code too: dropped.
    assert [c.case_id for c in regression] == ["case0"] and [(c.case_id, o) for c, o in brt] == [("case1", wrong)]


@pytest.mark.parametrize("style", B.STYLES)
def test_issue_says_what_the_buggy_code_did_and_what_the_test_expects(style: str) -> None:
    case = B.JsonCase("case1", [[1, 2], 3], [3, 6])
    wrong = B.Outcome("ok", "[6]", False)
    text = B.render_issue("scale", case, wrong, style, "[6]")
    assert text.startswith("# ") and "scale([1, 2], 3)" in text and "[3, 6]" in text and "[6]" in text
    raised = B.Outcome("exception", exc_type="IndexError", message="list index out of range")
    trace = 'Traceback (most recent call last):\n  File "repro.py", line 2, in <module>\nIndexError: list index'
    text = B.render_issue("last_item", B.JsonCase("case0", [[7]], 7), raised, style, trace)
    assert "IndexError" in text and "last_item([7])" in text and "`7`" in text
    hung = B.render_issue("countdown", B.JsonCase("case1", [3], [3, 1]), B.Outcome("hang"), style, "")
    assert "countdown(3)" in hung and "[3, 1]" in hung
    assert any(w in hung for w in ("never returns", "hangs", "Ctrl-C", "KeyboardInterrupt"))


def _build(tmp_path: Path, split: str = "all") -> tuple[Path, str, Path]:
    upstream = _quixbugs_like(tmp_path / "upstream")
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=upstream, capture_output=True, text=True, check=True
    ).stdout.strip()
    # A later commit must not leak in: the builder checks out the pinned one.
    (upstream / "python_programs" / "scale.py").write_text(_SCALE_OK)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-qam", "later"], cwd=upstream)
    out = tmp_path / "bench"
    env = {**os.environ, "QUIXBUGS_URL": str(upstream), "QUIXBUGS_REF": commit}
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "data" / "build_quixbugs.py"), "--out", str(out), "--split", split],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout, upstream


def _pytest(repo: Path, *args: str) -> int:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=repo, capture_output=True
    ).returncode


# Builds four cases, running every input on both versions (a hanging one takes its 5 s budget twice).
@pytest.mark.timeout(300)
def test_builder_writes_cases_the_eval_loads_and_the_oracle_checks_hold(tmp_path: Path) -> None:
    out, printed, upstream = _build(tmp_path)
    assert "skipped chain: no test cases" in printed
    cases = {c.name: c for c in load_cases(out)}
    assert set(cases) == {"countdown", "last_item", "list_length", "running_total", "scale", "swap_pairs"}
    # JSON has no tuples: the expected value takes the result's shape, in the tests and in the report.
    assert "pytest.param([[[1, 2]]], [(2, 1)], id='case1')" in (out / "swap_pairs/oracle/test_brt.py").read_text()
    assert "`[(2, 1)]`" in cases["swap_pairs"].issue_text and "[(1, 2)]" in cases["swap_pairs"].issue_text
    # The graph program: each upstream function became a self-contained test with the shared nodes inlined.
    length = tomllib.loads((out / "list_length" / "case.toml").read_text())
    assert length["failing_cases"] == 2 and length["regression_cases"] == 1
    assert length["issue_case"] == "test_case1_one_node" and length["symptom"] == "wrong_value"
    issue = cases["list_length"].issue_text
    assert "print(list_length(Node(1)))" in issue and "middle = Node(2, tail)" in issue
    assert "It should print `1`" in issue and "$ python repro.py\n0\n" in issue
    assert (out / "LICENSE").read_text().startswith("MIT")
    scale = cases["scale"]
    meta = tomllib.loads((scale.root / "case.toml").read_text())
    assert meta["failing_cases"] == 2 and meta["regression_cases"] == 1 and meta["symptom"] == "wrong_value"
    assert meta["source"]["repo"] == str(upstream) and meta["issue_case"] == "test_scale[case1]"
    assert (scale.repo / "scale.py").read_text() == _SCALE  # the pinned commit, not the later one
    assert tomllib.loads((out / "countdown" / "case.toml").read_text())["symptom"] == "hang"
    last = tomllib.loads((out / "last_item" / "case.toml").read_text())
    assert last["symptom"] == "exception" and last["regression_cases"] == 0
    assert not (out / "last_item" / "repo" / "tests").exists()
    # The issue shows what the buggy code did; no line of the fix appears in it.
    for case in cases.values():
        fix_lines = [
            line[1:].strip()
            for line in (case.oracle / "fix.diff").read_text().splitlines()
            if line.startswith("+") and not line.startswith("+++")
        ]
        assert fix_lines and not any(line in case.issue_text for line in fix_lines), case.name
    assert "`[6]`" in scale.issue_text or "[6]\n" in scale.issue_text
    # The bench README's three checks: regression tests pass, the oracle BRT fails, and passes with the fix.
    for case in cases.values():
        work = tmp_path / "check" / case.name
        shutil.copytree(case.repo, work)
        if (work / "tests").is_dir():
            assert _pytest(work) == 0, case.name
        (work / "tests").mkdir(exist_ok=True)
        shutil.copyfile(case.oracle / "test_brt.py", work / "tests" / "test_brt.py")
        assert _pytest(work, "tests/test_brt.py") == 1, case.name
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        subprocess.run(["git", "apply", str(case.oracle / "fix.diff")], cwd=work, check=True)
        assert _pytest(work) == 0, case.name


@pytest.mark.timeout(300)
def test_builder_builds_one_half(tmp_path: Path) -> None:
    out, _, _ = _build(tmp_path, split="held-out")
    # Sorted: chain (skipped), countdown, last_item, list_length, running_total, scale: odd positions are held out.
    assert {c.name for c in load_cases(out)} == {"countdown", "list_length", "scale"}
    assert all(tomllib.loads((c.root / "case.toml").read_text())["split"] == "held-out" for c in load_cases(out))


@pytest.mark.slow
# Building the cases, then a whole eval of two of them (environments, one trajectory each, oracle scoring).
@pytest.mark.timeout(900)
def test_eval_runs_built_cases_with_the_classic_agent(tmp_path: Path, settings: Settings) -> None:
    out, _, _ = _build(tmp_path)
    doc = asyncio.run(
        run_eval(out, settings, trajectories=1, ks=[1], out=tmp_path / "eval", only={"scale", "running_total"})
    )
    cases = {c["name"]: c for c in doc["cases"]}
    assert set(cases) == {"scale", "running_total"}
    for name, case in cases.items():
        # The report reproduces and the baseline ran the case's regression tests: the case is well formed.
        assert case["status"] not in ("error", "abstained"), (name, case["reasons"])
        assert case["baseline"].get("passed", 0) >= 1, (name, case["baseline"])
        assert case["trajectories"], name
    # The oracle scored what was generated: a patch for `scale` (a dropped first item) is judged by its BRT.
    scored = [t for c in cases.values() for t in c["trajectories"] if "plausible_fix" in t]
    assert scored and any(t["plausible_fix"] for t in scored)

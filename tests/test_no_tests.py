"""Repos without tests: the job goes on with an empty baseline, and what it delivers says the repo has no tests.

End to end with `reprobot fix|reproduce` (real git, the bwrap sandbox, the classic agent), plus the pieces:
detecting a plain Python project, the report's working calls, and the renderers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.reading import parse_issue
from agents.reproduce import report_examples
from agents.trajectory import BrtEvidence
from bot.render.report import (
    PrContext,
    ReproductionContext,
    SuggestionContext,
    render_pr_body,
    render_reproduction_comment,
    render_suggestion,
)
from sandboxes.base import ExecResult
from sandboxes.envspec import detect_spec
from sandboxes.testrun import TestRun, collected_nothing
from tests.conftest import make_git_repo
from tests.test_cli import branches, data_dir, run_cli  # noqa: F401 (data_dir is a fixture)

# A made-up module: the discount is applied the wrong way round above the threshold.
PRICES = '''"""Shop prices."""


def discounted(price, percent):
    """The price after taking `percent` per cent off."""
    if percent > 100:
        raise ValueError("at most 100 per cent off")
    return price * (100 + percent) // 100
'''

# The reporter shows a call that works (0 per cent off), then the wrong one, and says what is right.
SESSION = """# discounted() adds the discount instead of taking it off

```
>>> from prices import discounted
>>> discounted(200, 0)
200
>>> discounted(200, 25)
250
```

Expected: `200` and `150` (no discount leaves the price as it is).
"""

NO_TESTS_SECTION = "### This repository has no tests"


def test_a_plain_python_project_without_tests_or_build_file_is_tested_with_pytest(tmp_path: Path) -> None:
    spec = detect_spec(make_git_repo(tmp_path / "plain", {"prices.py": PRICES, "README.md": "shop\n"}))
    assert spec.language == "python" and spec.report_format == "junit-xml"
    assert spec.sources == ("python files",) and any("without a build file or tests" in n for n in spec.notes)
    # Tests there, run some other way (a unittest `tests.py`, a `test/` folder): the setup agent's case.
    for index, layout in enumerate(({"tests.py": "import unittest\n"}, {"test/check_prices.py": "x = 1\n"})):
        with pytest.raises(ValueError, match="no test setup found"):
            detect_spec(make_git_repo(tmp_path / f"other{index}", {"prices.py": PRICES, **layout}))


def test_only_a_clean_empty_collection_means_no_tests() -> None:
    def run(
        code: int, output: str, tests: dict[str, str] | None = None, errors: dict[str, str] | None = None
    ) -> TestRun:
        result = ExecResult(exit_code=code, stdout=output, stderr="", duration=0.1)
        return TestRun(tests=tests or {}, result=result, collection_errors=errors or {})

    assert collected_nothing(run(5, "no tests ran in 0.01s"))
    assert collected_nothing(run(0, "collected 0 items"))
    assert not collected_nothing(run(0, "1 passed", {"tests/test_a.py::test_a": "passed"}))
    # A module that does not import is a broken suite, not an absent one.
    assert not collected_nothing(
        run(2, "1 error", {"tests/test_a.py": "error"}, {"tests/test_a.py": "E   ImportError"})
    )
    assert not collected_nothing(run(4, "ERROR: usage: pytest"))


def test_the_report_working_calls_are_examples_and_the_reported_call_is_not() -> None:
    facts = parse_issue(SESSION)
    assert report_examples(facts) == [
        {"setup": "from prices import discounted", "source": "discounted(200, 0)", "expected": "200"}
    ]
    # A shown result nobody calls right may be the bug itself: no example.
    unconfirmed = SESSION.replace("`200` and `150` (no discount leaves the price as it is)", "`150`")
    assert parse_issue(unconfirmed).expected == "150" and report_examples(parse_issue(unconfirmed)) == []


def test_the_harness_runs_a_report_example_after_its_session_setup(tmp_path: Path) -> None:
    from patch_selectors.probe_harness import run_examples

    (tmp_path / "prices.py").write_text(PRICES)
    root = f"{tmp_path}/"
    setup = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom prices import discounted"
    rows = run_examples(
        [
            {"setup": setup, "source": "discounted(200, 0)", "expected": "200"},
            {"setup": setup, "source": "discounted(200, 10)", "expected": "180"},
            {"setup": "from nowhere import nothing", "source": "nothing()", "expected": "1"},
        ],
        root,
    )
    assert [(r["key"], r["outcome"], r["origin"]) for r in rows] == [
        ("the report: >>> discounted(200, 0)", "pass", "report"),
        ("the report: >>> discounted(200, 10)", "fail", "report"),
        ("the report: >>> nothing()", "unresolved", "report"),
    ]
    assert rows[1]["value"] == "220"


BRT = BrtEvidence(
    path="tests/test_issue.py",
    source="def test_x():\n    assert discounted(200, 25) == 150\n",
    symptom="wrong_value",
    fails_before=True,
    before_output="E   assert 250 == 150\n1 failed in 0.01s",
    passes_after=True,
    after_output="1 passed in 0.01s",
)
WHY = "pytest collected no tests: no test file matches"


def test_pr_suggestion_and_reproduction_say_the_repo_has_no_tests() -> None:
    assessment = {"verdict": "confident", "probes_compared": 9, "examples_run": 1, "reasons": []}
    pr = PrContext(
        "#4", "discounted adds", BRT, ["prices.py"], [BRT.path], "ranked", "only group", assessment=assessment
    )
    assert NO_TESTS_SECTION not in render_pr_body(pr)
    body = render_pr_body(PrContext(**{**pr.__dict__, "no_tests": WHY}))
    assert NO_TESTS_SECTION in body and WHY in body
    assert "- 9 input(s) near the report's example" in body and "- 1 working example(s)" in body
    assert "The BRT this pull request adds is the project's first test." in body
    suggestion = render_suggestion(SuggestionContext("#4", BRT, "diff", ["unsure"], "pytest", assessment, WHY))
    assert NO_TESTS_SECTION in suggestion and "pull request adds" not in suggestion
    comment = render_reproduction_comment(ReproductionContext("#4", BRT, "pytest", no_tests=WHY))
    assert NO_TESTS_SECTION in comment and "can be the project's first test" in comment
    assert NO_TESTS_SECTION not in render_reproduction_comment(ReproductionContext("#4", BRT, "pytest"))


def test_fix_on_a_repo_without_tests_opens_a_pr_with_the_brt(tmp_path: Path, data_dir: Path) -> None:  # noqa: F811
    repo = make_git_repo(tmp_path / "shop", {"prices.py": PRICES})
    issue = tmp_path / "issue.md"
    issue.write_text(SESSION)
    code, doc, err = run_cli(
        "fix", "--repo", repo, "--issue", issue, "-M", "2", "--out", tmp_path / "out", data=data_dir
    )
    assert code == 0 and doc["status"] == "fixed", (doc["reasons"], err[-2000:])
    assert "pytest collected no tests" in doc["environment"]["no_tests"]
    assert doc["baseline"] == {"passed": 0, "failed": 0, "error": 0}
    assert doc["fix_files"] == ["prices.py"] and doc["test_files"] == [doc["brt"]["path"]]
    assert doc["brt"]["fails_before"] and doc["brt"]["passes_after"]
    # The report's working call ran before and after the fix, with the near inputs.
    assert doc["assessment"]["examples_run"] == 1 and doc["assessment"]["probes_compared"] > 0
    branch = doc["branch"]
    assert branch in branches(repo)
    shown = subprocess.run(["git", "show", f"{branch}:{doc['brt']['path']}"], cwd=repo, capture_output=True, text=True)
    assert "discounted(200, 25)" in shown.stdout
    pr = (tmp_path / "out" / "pr.md").read_text()
    assert NO_TESTS_SECTION in pr and doc["brt"]["path"] in pr and "Fixes" in pr


def test_reproduce_on_a_suite_that_collects_nothing(tmp_path: Path, data_dir: Path) -> None:  # noqa: F811
    pyproject = '[project]\nname = "shop"\nversion = "0"\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    files = {"prices.py": PRICES, "pyproject.toml": pyproject, "tests/__init__.py": "", "tests/helpers.py": "X = 1\n"}
    repo = make_git_repo(tmp_path / "shop", files)
    issue = tmp_path / "issue.md"
    issue.write_text(SESSION)
    code, doc, err = run_cli("reproduce", "--repo", repo, "--issue", issue, "--out", tmp_path / "out", data=data_dir)
    assert code == 0 and doc["status"] == "reproduced", (doc["reasons"], err[-2000:])
    assert doc["brt"]["fails_before"] and "discounted(200, 25)" in doc["brt"]["source"]
    assert "pytest collected no tests" in doc["environment"]["no_tests"]
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert NO_TESTS_SECTION in comment and doc["brt"]["path"] in comment
    assert branches(repo) == ["main"]

"""bench/data/mine.py: cases built from a recipe and a local git repo of our own, verified in a sandbox; no network."""

from __future__ import annotations

import asyncio
import subprocess
import tomllib
from pathlib import Path

import pytest

from bot.settings.config import Settings
from sandboxes.factory import available_backends
from tests.conftest import REPO_ROOT, load_script, make_git_repo

pytestmark = pytest.mark.timeout(300)


M = load_script("bench/data/mine.py")

BUGGY = "def clamp(x, low, high):\n    return max(low, min(x, high - 1))\n"
FIXED = "def clamp(x, low, high):\n    return max(low, min(x, high))\n"
TESTS = "from calc import clamp\n\n\ndef test_low():\n    assert clamp(-5, 0, 10) == 0\n"
NEW_TEST = (
    "\n\ndef test_high():\n    assert clamp(50, 0, 10) == 10\n\n\n"
    "class TestMiddle:\n    def test_inside(self):\n        assert clamp(5, 0, 10) == 5\n"
)
ISSUE = "# clamp is off by one at the top\n\n```python\n>>> clamp(50, 0, 10)\n9\n```\n\nExpected `10`.\n"


def git(cwd: Path, *argv: str) -> str:
    """Run git in cwd; its stdout."""
    cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    return subprocess.run(["git", *cfg, *argv], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str, str]:
    """A tiny project: a buggy commit (with a passing test and a docs folder), then a fix commit with a test."""
    repo = make_git_repo(
        tmp_path / "mirrors" / "someone+calc",
        {"calc.py": BUGGY, "tests/test_calc.py": TESTS, "docs/index.md": "# calc\n", "LICENSE": "MIT\n"},
    )
    buggy = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(FIXED)
    (repo / "tests" / "test_calc.py").write_text(TESTS + NEW_TEST)
    git(repo, "commit", "-qam", "clamp: include the upper bound")
    return repo, buggy, git(repo, "rev-parse", "HEAD")


def write_recipe(folder: Path, buggy: str, fixed: str, brt: list[str], issue: str = ISSUE) -> Path:
    """A recipe for the tiny project, written as a person would."""
    path = folder / "calc-test.toml"
    lines = [
        'project = "calc"',
        'repo = "https://example.invalid/calc"',
        'mirror = "someone+calc"',
        f'buggy = "{buggy}"',
        f'fixed = "{fixed}"',
        'source_paths = ["calc.py"]',
        f"brt_tests = {brt!r}".replace("'", '"'),
        'trims = ["docs"]',
        'license = "MIT"',
        f"issue = '''\n{issue}'''",
        "[case]",
        'difficulty = "easy"',
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_select_tests_keeps_chosen_tests_and_helpers() -> None:
    """The oracle keeps the module's other code, the chosen functions and methods, nothing else of the tests."""
    source = TESTS + NEW_TEST + "\n\ndef helper():\n    return 1\n"
    kept = M.select_tests(source, {"test_high", "TestMiddle::test_inside"}, keep=True)
    assert "def test_high" in kept and "def test_inside" in kept and "def helper" in kept
    assert "def test_low" not in kept and "from calc import clamp" in kept
    dropped = M.select_tests(source, {"test_low"}, keep=False)
    assert "def test_low" not in dropped and "def test_high" in dropped


def test_leaked_lines_finds_a_fix_line_in_the_report() -> None:
    """A report that quotes an added line of the fix is caught; one that shows behaviour only is not."""
    diff = "--- a/calc.py\n+++ b/calc.py\n-    return max(low, min(x, high - 1))\n+    return max(low, min(x, high))\n"
    assert M.leaked_lines(ISSUE, diff) == []
    assert M.leaked_lines(ISSUE + "\nJust use `return max(low, min(x, high))`.\n", diff) == [
        "return max(low, min(x, high))"
    ]


def test_candidates_lists_the_fix_commit(upstream: tuple[Path, str, str]) -> None:
    """The fix commit changes source and a test: it is a candidate, with its line counts; the root is not."""
    repo, buggy, fixed = upstream
    found = M.candidates(repo)
    assert [c.commit for c in found] == [fixed]
    assert found[0].parent == buggy and found[0].source == {"calc.py": (1, 1)}
    assert list(found[0].tests) == ["tests/test_calc.py"]


def test_draft_names_the_fix_and_its_new_tests(upstream: tuple[Path, str, str]) -> None:
    """A draft recipe for the fix commit: its parent, the source path, the tests it adds as the BRT."""
    repo, buggy, fixed = upstream
    text = M.draft(repo, fixed[:10], "someone+calc")
    assert f'buggy = "{buggy}"' in text and f'fixed = "{fixed}"' in text
    assert 'source_paths = ["calc.py"]' in text
    assert 'brt_tests = ["tests/test_calc.py::test_high", "tests/test_calc.py::TestMiddle::test_inside"]' in text


def test_recipe_brt_replaces_the_extracted_one(upstream: tuple[Path, str, str], tmp_path: Path) -> None:
    """A BRT written in the recipe (for table-driven upstream tests) is the oracle as it is."""
    repo, buggy, fixed = upstream
    path = write_recipe(tmp_path, buggy, fixed, ["tests/test_calc.py::test_high"])
    own = "from calc import clamp\n\n\ndef test_top():\n    assert clamp(11, 0, 10) == 10\n"
    path.write_text(path.read_text().replace("[case]", f"brt = '''\n{own}'''\n[case]"))
    assert M.oracle_brt(repo, M.load_recipe(path)) == own


def test_load_recipe_names_what_is_missing(tmp_path: Path) -> None:
    """A recipe without its commits is refused with the missing keys named."""
    bad = tmp_path / "x.toml"
    bad.write_text('project = "calc"\n')
    with pytest.raises(M.RecipeError, match="missing repo, mirror, buggy, fixed"):
        M.load_recipe(bad)


def _sandbox() -> str:
    if available_backends()["bwrap"] is not None:
        pytest.skip(f"bwrap unavailable: {available_backends()['bwrap']}")
    return "bwrap"


def test_build_writes_a_verified_case(upstream: tuple[Path, str, str], tmp_path: Path, settings: Settings) -> None:
    """The case has the realbugs layout; the BRT fails on buggy, the kept test passes, the fix makes all pass."""
    repo, buggy, fixed = upstream
    recipe = M.load_recipe(write_recipe(tmp_path, buggy, fixed, ["tests/test_calc.py::test_high"]))
    built = asyncio.run(M.build_case(recipe, repo, tmp_path / "out", settings, _sandbox()))
    assert built.verdict.ok, built.verdict.reasons
    case = tmp_path / "out" / "calc-test"
    assert sorted(p.name for p in case.iterdir()) == ["case.toml", "issue.md", "oracle", "repo"]
    assert sorted(p.name for p in (case / "repo").iterdir()) == ["LICENSE", "calc.py", "tests"]
    assert (case / "repo" / "calc.py").read_text() == BUGGY
    assert "+    return max(low, min(x, high))" in (case / "oracle" / "fix.diff").read_text()
    brt = (case / "oracle" / "test_brt.py").read_text()
    assert "def test_high" in brt and "def test_low" not in brt and "timeout(" in brt
    meta = tomllib.loads((case / "case.toml").read_text())
    assert meta["brt_path"] == "tests/test_brt.py" and meta["failing_cases"] == 1
    assert meta["regression_cases"] == 1 and meta["failing_symptoms"] == {"wrong_value": 1}
    assert meta["source"]["commit"] == buggy and meta["source"]["fixed_commit"] == fixed
    assert meta["source"]["trimmed"] == ["docs"]
    assert (case / "issue.md").read_text() == ISSUE


def test_build_rejects_a_brt_that_passes_on_buggy(
    upstream: tuple[Path, str, str], tmp_path: Path, settings: Settings
) -> None:
    """A BRT test that already passes on the buggy commit is no oracle: the case is rejected, saying which."""
    repo, buggy, fixed = upstream
    brt = ["tests/test_calc.py::test_high", "tests/test_calc.py::TestMiddle::test_inside"]
    recipe = M.load_recipe(write_recipe(tmp_path, buggy, fixed, brt))
    built = asyncio.run(M.build_case(recipe, repo, tmp_path / "out", settings, _sandbox()))
    assert not built.verdict.ok and built.folder is None
    assert any(
        r.startswith("the BRT does not fail on the buggy commit") and "TestMiddle::test_inside passed" in r
        for r in built.verdict.reasons
    ), built.verdict.reasons
    assert not (tmp_path / "out" / "calc-test").exists()


def test_build_rejects_a_report_that_gives_the_fix_away(
    upstream: tuple[Path, str, str], tmp_path: Path, settings: Settings
) -> None:
    """A report quoting the fix's added line fails the case even though the tests verify."""
    repo, buggy, fixed = upstream
    issue = ISSUE + "\nPatch: `return max(low, min(x, high))`\n"
    recipe = M.load_recipe(write_recipe(tmp_path, buggy, fixed, ["tests/test_calc.py::test_high"], issue))
    built = asyncio.run(M.build_case(recipe, repo, tmp_path / "out", settings, _sandbox()))
    assert [r for r in built.verdict.reasons if "repeats added lines" in r]


def test_cli_build_reports_a_missing_mirror(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`build` with no mirror for a recipe fetches nothing: it says which mirror to fetch, and fails."""
    recipe = write_recipe(tmp_path, "a" * 40, "b" * 40, ["tests/test_calc.py::test_high"])
    (tmp_path / "empty").mkdir()
    assert M.main(["build", str(recipe), "--mirrors", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 1
    assert "no mirror someone+calc" in capsys.readouterr().out
    args = ["build", str(recipe), "--mirrors", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]
    assert M.main([*args, "--allow-missing"]) == 0


def test_recipes_in_the_repo_load() -> None:
    """Every committed recipe parses, names a mirror and a BRT, and its report is not empty."""
    recipes = sorted((REPO_ROOT / "bench" / "data" / "recipes").glob("*.toml"))
    assert recipes
    for path in recipes:
        recipe = M.load_recipe(path)
        assert recipe.brt_tests and "+" in recipe.mirror and len(recipe.issue) > 80, path.name

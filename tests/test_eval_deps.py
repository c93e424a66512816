"""`reprobot eval` installs a case's own `deps` in its environment; unmet deps are an error, not a crash."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from bot.evaluate.run import BenchCase, load_cases, run_eval
from bot.settings.config import Settings
from sandboxes.envspec import EnvironmentSpec, with_extra_deps

# A project whose code needs `six` but declares nothing: only the case's `deps` bring it.
_BUGGY = '''\
import six


def mean_length(words):
    """The average length of the text items of `words` (other items are ignored)."""
    lengths = [len(w) for w in words if isinstance(w, six.string_types)]
    return sum(lengths) / (len(lengths) - 1)
'''
_FIXED = _BUGGY.replace("(len(lengths) - 1)", "len(lengths)")
_REGRESSION = """\
from words import mean_length


def test_non_text_items_are_ignored():
    assert mean_length(["ab", "cd", 7]) > 0
"""
_BRT = """\
from words import mean_length


def test_mean_of_two_words():
    assert mean_length(["ab", "abcd"]) == 3.0
"""
_ISSUE = """\
# mean_length() gives the wrong average for `mean_length(["ab", "abcd"])`

```python
from words import mean_length
print(mean_length(["ab", "abcd"]))
```

Expected: `3.0`
Actual: `6.0`
"""
_PYPROJECT = """\
[project]
name = "words"
version = "0.1.0"

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
"""


def _fix_diff(tmp: Path) -> str:
    """The oracle fix as `git diff` writes it (a/ b/ prefixes, paths relative to repo/)."""
    tmp.mkdir()
    (tmp / "words.py").write_text(_BUGGY)
    cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run(["git", "init", "-q"], cwd=tmp, check=True)
    subprocess.run(["git", *cfg, "add", "-A"], cwd=tmp, check=True)
    subprocess.run(["git", *cfg, "commit", "-qm", "buggy"], cwd=tmp, check=True)
    (tmp / "words.py").write_text(_FIXED)
    return subprocess.run(["git", "diff"], cwd=tmp, check=True, capture_output=True, text=True).stdout


def write_case(bench: Path, name: str, deps: list[str], fix_diff: str) -> Path:
    """One case folder in the bench format (case.toml, issue.md, repo/, oracle/)."""
    root = bench / name
    (root / "repo" / "tests").mkdir(parents=True)
    (root / "oracle").mkdir()
    (root / "repo" / "words.py").write_text(_BUGGY)
    (root / "repo" / "pyproject.toml").write_text(_PYPROJECT)
    (root / "repo" / "tests" / "test_words.py").write_text(_REGRESSION)
    (root / "oracle" / "test_brt.py").write_text(_BRT)
    (root / "oracle" / "fix.diff").write_text(fix_diff)
    (root / "issue.md").write_text(_ISSUE)
    listed = ", ".join(f'"{d}"' for d in deps)
    (root / "case.toml").write_text(
        f'id = "local/{name}"\ntest_command = "python -m pytest -q"\n'
        f'deps = [{listed}]\nbrt_path = "tests/test_brt.py"\n'
    )
    return root


def test_extra_deps_join_the_detected_ones_without_repeating_them() -> None:
    spec = EnvironmentSpec(deps=("pytest<8", "pytest-timeout", "coverage", "Requests>=2"))
    # Bare names the spec already has add nothing: the spec, and so its cached environment, is unchanged.
    assert with_extra_deps(spec, ["pytest", "pytest_timeout", "requests"]) == spec
    merged = with_extra_deps(spec, ["pytest", "six>=1.10", "requests[socks]"])
    assert merged.deps == ("pytest<8", "pytest-timeout", "coverage", "Requests>=2", "six>=1.10", "requests[socks]")
    assert "extra-deps" in merged.sources and any("six>=1.10" in n for n in merged.notes)
    with pytest.raises(ValueError, match="not a valid PEP 508"):
        with_extra_deps(spec, ["six >>> 1"])
    with pytest.raises(ValueError, match="node project"):
        with_extra_deps(EnvironmentSpec(language="node", deps=()), ["six"])


def test_case_deps_are_checked_when_read(tmp_path: Path) -> None:
    write_case(tmp_path, "ok", ["pytest", "six>=1.10"], "")
    write_case(tmp_path, "bad", ["six >>> 1"], "")
    cases = {c.name: c for c in load_cases(tmp_path)}
    assert cases["ok"].deps() == ("pytest", "six>=1.10")
    with pytest.raises(ValueError, match="six >>> 1"):
        cases["bad"].deps()
    assert BenchCase("none", tmp_path, {}).deps() == ()
    with pytest.raises(ValueError, match="list of requirement strings"):
        BenchCase("str", tmp_path, {"deps": "six"}).deps()


@pytest.mark.slow
# A whole eval (environment builds, one trajectory, oracle scoring) runs in this test.
@pytest.mark.timeout(900)
def test_eval_installs_case_deps_and_reports_unmet_ones_as_errors(tmp_path: Path, settings: Settings) -> None:
    bench = tmp_path / "bench"
    diff = _fix_diff(tmp_path / "fix")
    write_case(bench, "needs-six", ["pytest", "pytest-timeout", "six>=1.10"], diff)
    write_case(bench, "missing-dist", ["six", "reprobot-no-such-dist==1.0"], diff)
    write_case(bench, "bad-requirement", ["six >>> 1"], diff)
    doc = asyncio.run(run_eval(bench, settings, trajectories=1, ks=[1], out=tmp_path / "out"))
    cases = {c["name"]: c for c in doc["cases"]}
    six_case = cases["needs-six"]
    # six came from the case's deps (the repo declares nothing): the suite ran and the oracle scored the patch.
    assert six_case["status"] != "error", six_case["reasons"]
    assert six_case["baseline"].get("passed", 0) >= 1, six_case["baseline"]
    assert any("six>=1.10" in n for n in six_case["environment"]["notes"])
    assert six_case["trajectories"] and all("plausible_fix" in t for t in six_case["trajectories"])
    missing = cases["missing-dist"]
    assert missing["status"] == "error" and "reprobot-no-such-dist" in " ".join(missing["reasons"])
    bad = cases["bad-requirement"]
    assert bad["status"] == "error" and "six >>> 1" in bad["error"]
    assert doc["summary"]["statuses"]["error"] == 2

"""`reprobot eval` per project: a case's project, `--leave-out` / `--all-but`, and the per-project rows."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.evaluate.projects import ProjectSelection, case_project
from bot.evaluate.run import CaseResult, load_cases, run_eval, summarize
from bot.evaluate.summary import render_report
from bot.settings.config import Settings
from patch_selectors.metrics import TrajectoryOutcome
from tests.test_eval_deps import _fix_diff, write_case

REPROBOT = str(Path(sys.executable).with_name("reprobot"))


def _bench(root: Path, names: list[str], diff: str = "") -> Path:
    for name in names:
        write_case(root, name, ["pytest", "pytest-timeout"], diff)
    return root


def test_a_case_project_comes_from_its_metadata_or_its_folder_name() -> None:
    upstream = {"source": {"repo": "https://github.com/acme/Widget-Kit.git/"}}
    # Mined cases are <project>-<fix commit>, BugsInPy ones <project>-<bug number>.
    assert case_project("widgetkit-0a1b2c3", upstream) == "widgetkit"
    assert case_project("some-tool-12", {}) == "some-tool"
    assert case_project("some-tool-0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", {}) == "some-tool"
    # A folder named for its program (every QuixBugs case): the upstream repository is the project.
    assert case_project("merge_sort", upstream) == "widget-kit"
    assert case_project("merge-sort", {"suite": "toys"}) == "toys"
    assert case_project("merge-sort", {}) == "merge-sort"
    # An explicit `project` wins over every guess.
    assert case_project("widgetkit-0a1b2c3", {**upstream, "project": "kit"}) == "kit"


def test_leave_out_runs_one_project_and_all_but_the_others(tmp_path: Path) -> None:
    bench = _bench(tmp_path, ["alpha-1", "alpha-0a1b2c3", "beta-2", "gamma-deadbee"])
    names = [c.name for c in load_cases(bench, projects=ProjectSelection(leave_out="alpha"))]
    assert names == ["alpha-0a1b2c3", "alpha-1"]
    names = [c.name for c in load_cases(bench, projects=ProjectSelection(all_but="alpha"))]
    assert names == ["beta-2", "gamma-deadbee"]
    assert [c.project for c in load_cases(bench)] == ["alpha", "alpha", "beta", "gamma"]
    # A misspelt project is an error naming the real ones, not a run of nothing (or of everything).
    with pytest.raises(ValueError, match=r"'alpah'.*alpha, beta, gamma"):
        load_cases(bench, projects=ProjectSelection(all_but="alpah"))
    with pytest.raises(ValueError, match="cannot be combined"):
        ProjectSelection(leave_out="alpha", all_but="beta")


def _result(name: str, project: str, status: str, fix: bool, brt: bool) -> CaseResult:
    """A scored case whose job delivered trajectory `t` (published when status is fixed)."""
    outcome = TrajectoryOutcome(fix, brt, brt, True, finished=True, patch_id="t")
    res = CaseResult(name, status=status, project=project, seconds=1.0, outcomes=[outcome])
    res.picked = "t" if status in ("fixed", "suggested") else None
    res.reproduction_brt = brt
    res.selections = dict.fromkeys(("default", "dual-level", "ranked", "reject-no-test"), res.picked)
    return res


def test_per_project_rows_and_the_held_out_line_in_the_report() -> None:
    results = [
        _result("alpha-1", "alpha", "fixed", fix=True, brt=True),
        _result("alpha-2", "alpha", "fixed", fix=False, brt=True),  # published, yet wrong
        _result("alpha-3", "alpha", "suggested", fix=True, brt=False),  # plausible, not published
        _result("beta-1", "beta", "abstained", fix=False, brt=False),
    ]
    summary = summarize(results, m=1, ks=[1], selection=ProjectSelection(all_but="gamma"))
    assert summary["projects"] == {
        "alpha": {"cases": 3, "plausible_fix": 2, "plausible_brt": 2, "published": 2, "published_wrong": ["alpha-2"]},
        "beta": {"cases": 1, "plausible_fix": 0, "plausible_brt": 0, "published": 0, "published_wrong": []},
    }
    assert summary["selection"] == {"held_out": "gamma", "runs": "every project but the held-out one"}
    report = render_report(summary, [r.to_json() for r in results])
    assert "**Held-out project: gamma.** This run covers every project but the held-out one." in report
    assert "| alpha | 3 | 2/3 | 2/3 | 2 | 1 (alpha-2) |" in report
    assert "| beta | 1 | 0/1 | 0/1 | 0 | 0 |" in report
    assert "| **all** | 4 | 2/4 | 2/4 | 2 | 1 (alpha-2) |" in report
    assert [c["project"] for c in (r.to_json() for r in results)] == ["alpha", "alpha", "alpha", "beta"]
    # A run over every project says nothing about a held-out one.
    assert "Held-out" not in render_report(summarize(results, m=1, ks=[1]), [])


def test_cli_refuses_an_unknown_project_before_running_anything(tmp_path: Path) -> None:
    bench = _bench(tmp_path / "bench", ["alpha-1", "beta-2"])
    env = {**os.environ, "REPROBOT_DATA_DIR": str(tmp_path / "data")}
    args = [REPROBOT, "eval", "--bench", str(bench), "--out", str(tmp_path / "out")]
    proc = subprocess.run([*args, "--leave-out", "gamma"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "no case of project 'gamma'" in proc.stdout and "alpha, beta" in proc.stdout
    assert not (tmp_path / "out" / "results.json").exists()
    both = subprocess.run(
        [*args, "--leave-out", "alpha", "--all-but", "beta"], capture_output=True, text=True, env=env, timeout=120
    )
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


@pytest.mark.slow
# One small case runs through the whole pipeline and the oracle scorer.
@pytest.mark.timeout(900)
def test_a_held_out_run_scores_only_that_project(tmp_path: Path, settings: Settings) -> None:
    bench = _bench(tmp_path / "bench", ["words-1", "other-2"], _fix_diff(tmp_path / "fix"))
    selection = ProjectSelection(leave_out="words")
    out = tmp_path / "out"
    doc = asyncio.run(run_eval(bench, settings, trajectories=1, ks=[1], out=out, projects=selection))
    assert [c["name"] for c in doc["cases"]] == ["words-1"]
    row = doc["summary"]["projects"]["words"]
    case = doc["cases"][0]
    assert list(doc["summary"]["projects"]) == ["words"] and row["cases"] == 1
    # The row follows from the case: its delivered patch and test, scored by the oracle.
    assert row["plausible_fix"] == int(case["picked_plausible_fix"])
    assert row["plausible_brt"] == int(bool(case["reproduction_brt_plausible"]))
    assert row["published"] == int(case["status"] == "fixed")
    report = (out / "report.md").read_text()
    assert "**Held-out project: words.** This run covers the held-out project only." in report
    assert "| words | 1 |" in report and "other" not in report
    assert json.loads((out / "results.json").read_text())["summary"]["selection"]["held_out"] == "words"


@pytest.mark.slow
# One small case runs the reproduction only: the job makes no patch, and its BRT is scored by the oracle.
@pytest.mark.timeout(900)
def test_a_reproduce_run_scores_the_brt_alone(tmp_path: Path, settings: Settings) -> None:
    bench = tmp_path / "bench"
    write_case(bench, "words-1", ["pytest", "pytest-timeout", "six>=1.10"], _fix_diff(tmp_path / "fix"))
    doc = asyncio.run(run_eval(bench, settings, trajectories=2, ks=[1], out=tmp_path / "out", mode="reproduce"))
    case = doc["cases"][0]
    assert case["status"] == "reproduced", case
    assert case["trajectories"] == [] and not case["picked_plausible_fix"]
    # The written test fails on the buggy code and passes with the oracle fix.
    assert case["reproduction_brt_plausible"] is True
    assert doc["summary"]["projects"]["words"]["plausible_brt"] == 1
    assert doc["summary"]["projects"]["words"]["published"] == 0

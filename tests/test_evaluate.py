"""`reprobot eval`: tables computed from per-case rows, and a real run on bench cases scored by their oracles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.evaluate.run import CaseResult, assessment_summary, parse_ks, summarize
from bot.evaluate.summary import render_report
from patch_selectors.metrics import TrajectoryOutcome
from tests.conftest import QUIXBUGS, require_shared


def outcome(pid: str, fix: bool, brt: bool, test: bool = True) -> TrajectoryOutcome:
    """One scored trajectory."""
    return TrajectoryOutcome(fix, brt, brt, test, finished=True, patch_id=pid)


def case(name: str, outcomes: list[TrajectoryOutcome], picked: str | None) -> CaseResult:
    """A finished case where every selector picked `picked`."""
    res = CaseResult(name, status="fixed" if picked else "not_fixed", seconds=1.0, outcomes=outcomes)
    res.selections = dict.fromkeys(("default", "dual-level", "ranked", "reject-no-test"), picked)
    res.trajectories = [
        {"id": o.patch_id, "plausible_fix": o.plausible_fix, "plausible_brt": o.plausible_brt} for o in outcomes
    ]
    return res


def test_parse_ks() -> None:
    assert parse_ks("1,5,M", 8) == [1, 5, 8]
    assert parse_ks("1,5,M", 3) == [1, 3]
    assert parse_ks("M,1,1", 2) == [1, 2]


def test_summary_tables_follow_from_the_case_rows() -> None:
    results = [
        # 1 of 2 trajectories right, and the selector picked the right one.
        case("a", [outcome("a0", True, True), outcome("a1", False, False)], "a0"),
        # Both right, selector picked one.
        case("b", [outcome("b0", True, True), outcome("b1", True, False)], "b1"),
        # Nothing right; selector picked a wrong one.
        case("c", [outcome("c0", False, False), outcome("c1", False, True)], "c0"),
        # Crashed before generating: counts as M failed samples.
        CaseResult("d", status="error", error="boom"),
    ]
    s = summarize(results, m=2, ks=[1, 2])
    assert s["cases"] == 4
    # pass@1 = mean(1/2, 1, 0, 0); pass@2 = mean(1, 1, 0, 0).
    assert s["success_at_k"]["pass"] == {"1": pytest.approx(0.375), "2": pytest.approx(0.5)}
    assert s["success_at_k"]["plausibleBRT"]["2"] == pytest.approx(0.75)
    assert s["success_curves"]["pass"]["1"] <= s["success_curves"]["pass"]["2"]
    assert s["selected_counts"]["ranked"] == {"plausible_fix": 2, "plausible_brt": 1}
    ranked_fix = s["selectors"]["ranked"]["plausible fix"]
    assert ranked_fix["precision"] == pytest.approx(2 / 3) and ranked_fix["recall"] == pytest.approx(1.0)
    signals = {row["signal"]: row for row in s["brt_signals"]}
    assert signals["no filter"]["with_signal"] == 6 and signals["no filter"]["plausible_with_signal"] == 3
    assert signals["candidate BRT"]["precision"] == pytest.approx(2 / 3)
    assert s["statuses"] == {"fixed": 3, "error": 1}
    report = render_report(s, [r.to_json() for r in results])
    assert "| pass@k | 0.375 | 0.500 |" in report
    assert "| ranked | 0.67 | 1.00 |" in report
    assert "| candidate BRT | 3 | 2 | 0.667 |" in report


@pytest.mark.slow
@pytest.mark.shared
# The whole eval runs as a subprocess with its own 900 s cap; the default per-test limit would cut it first.
@pytest.mark.timeout(960)
def test_eval_runs_real_cases_and_reports_consistently(tmp_path: Path, env_cache: Path) -> None:
    bench = tmp_path / "bench"
    for name in ("gcd", "topological_ordering"):
        shutil.copytree(require_shared(QUIXBUGS / name), bench / name)
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    out = tmp_path / "out"
    reprobot = Path(sys.executable).with_name("reprobot")
    proc = subprocess.run(
        [str(reprobot), "eval", "--bench", str(bench), "-M", "2", "--k", "1,M", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "REPROBOT_DATA_DIR": str(data)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "results.json").read_text())
    s = doc["summary"]
    assert s["cases"] == 2 and {c["name"] for c in doc["cases"]} == {"gcd", "topological_ordering"}
    for metric, row in s["success_at_k"].items():
        assert row["1"] <= row["2"], metric
    # Every figure is recomputable from the per-case rows.
    per_case = {c["name"]: c for c in doc["cases"]}
    fixed_any = sum(any(t.get("plausible_fix") for t in c["trajectories"]) for c in per_case.values())
    assert s["success_at_k"]["pass"]["2"] == pytest.approx(fixed_any / 2)
    picked = sum(c["selections"]["ranked"]["plausible_fix"] for c in per_case.values())
    assert s["selected_counts"]["ranked"]["plausible_fix"] == picked
    gcd = per_case["gcd"]
    # gcd's fix is plausible; whether it is published or only suggested is the correctness assessment's call
    # (its passing tests never reach the changed line), and the report says which.
    assert gcd["status"] in ("fixed", "suggested") and gcd["selections"]["ranked"]["plausible_fix"]
    assert (out / "success_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert report in proc.stdout and f"| gcd | {gcd['status']} |" in report
    # The correctness assessment's figures follow from the rows too.
    wrong = sorted(n for n, c in per_case.items() if c["status"] == "fixed" and not c["picked_plausible_fix"])
    assert s["assessment"]["published_wrong"] == wrong
    assert s["assessment"]["published"] == sum(c["status"] == "fixed" for c in per_case.values())
    assert "Correctness assessment" in report


def test_assessment_precision_recall_and_the_cases_it_got_wrong() -> None:
    published_wrong = case("w", [outcome("w0", False, True), outcome("w1", True, True)], "w0")
    published_wrong.picked, published_wrong.verdicts = "w0", {"w0": "confident", "w1": "confident"}
    withheld_right = case("h", [outcome("h0", True, True)], "h0")
    withheld_right.status, withheld_right.picked, withheld_right.verdicts = "suggested", "h0", {"h0": "unsure"}
    withheld_wrong = case("x", [outcome("x0", False, True)], "x0")
    withheld_wrong.status, withheld_wrong.picked, withheld_wrong.verdicts = "suggested", "x0", {"x0": "unsure"}
    a = assessment_summary([published_wrong, withheld_right, withheld_wrong])
    assert a["published"] == 1 and a["published_wrong"] == ["w"]
    assert a["withheld"] == 2 and a["withheld_plausible"] == ["h"]
    assert a["patches"] == {"confident_plausible": 1, "confident_wrong": 1, "unsure_plausible": 1, "unsure_wrong": 1}
    assert a["precision"] == pytest.approx(0.5) and a["recall"] == pytest.approx(0.5)
    report = render_report(summarize([published_wrong, withheld_right], m=1, ks=[1]), [])
    assert "of them NOT a plausible fix: 1 ['w']" in report

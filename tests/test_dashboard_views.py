"""The job page's pure parts: the charts (labelled, escaped, with a text alternative), the outcome sentence, the
distinct patches and why they lost, the step titles and filter, and the job link of PR bodies and comments."""

from __future__ import annotations

import re
from pathlib import Path

from bot.dashboard.render import (
    candidate_points,
    distinct_patches,
    filter_steps,
    outcome_sentence,
    step_view,
)
from bot.evaluate.summary import write_charts
from bot.pipeline.record import candidate_entries, lost_reason
from bot.render.charts import CandidatePoint, candidates_svg, ranking_svg, timeline_svg
from bot.render.report import job_page_url, render_job_link
from patch_selectors.records import Review, make_record
from patch_selectors.selectors import select

DIFF_A = """--- a/m.py
+++ b/m.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x - 1
+    return x + 1
"""
DIFF_B = DIFF_A.replace("x + 1", "1 + x")


def test_charts_have_a_text_alternative_and_labelled_points_and_escape_labels() -> None:
    stages = [{"name": "baseline", "start": 0.0, "end": 1.5}, {"name": "search", "start": 1.5, "end": 9.0}]
    trajs = [{"id": "1-t0", "start": 1.5, "end": 8.0, "status": "fixed"}, {"id": "1-t1", "start": 1.5, "end": 9.0}]
    svg = timeline_svg(stages, trajs)
    assert svg.startswith("<svg") and 'role="img"' in svg and "<title" in svg and "<desc" in svg
    assert svg.count('class="point"') == 4 and "trajectory 1-t0: 1.5–8.0 s (6.5 s), fixed" in svg
    ranking = ranking_svg([{"file": "<script>x.py", "line": 3, "score": 0.5}])
    assert "<script>" not in ranking and "&lt;script&gt;x.py:3" in ranking and "score 0.500" in ranking
    pts = [CandidatePoint(1.0, 1, False), CandidatePoint(2.0, 2, True, "line 3: `-` -> `+`")]
    cands = candidates_svg({"1-t0": pts})
    assert 'class="point validated"' in cands and "candidate 2 validated at 2.0 s" in cands
    assert timeline_svg([], []) == "" and ranking_svg([]) == "" and candidates_svg({}) == ""


def test_step_titles_carry_the_candidate_and_the_brt_and_the_filter_keeps_what_is_asked() -> None:
    tried = {"file": "m.py", "line": 12, "operator": "return", "description": "line 12: `0.0` -> `[0.0]`"}
    failed = step_view(0, "try_candidate", tried | {"brt_passed": False})
    passed = step_view(1, "try_candidate", tried | {"brt_passed": True})
    tests = step_view(2, "run_regression_tests", {"ok": True})
    assert failed.title == "try_candidate — m.py:12 line 12: `0.0` -> `[0.0]` → BRT failed"
    assert passed.title.endswith("BRT passed") and tests.title.endswith("regression tests pass")
    steps = [failed, passed, tests]
    assert filter_steps(steps, "all") == steps
    assert filter_steps(steps, "key") == [passed, tests]
    assert filter_steps(steps, "passed") == [passed]
    assert filter_steps(steps, "tests") == [tests]
    assert filter_steps(steps, "all", "REGRESSION") == [tests]
    timed = [
        (1.0, "try_candidate", tried | {"brt_passed": False}),
        (2.0, "try_candidate", tried | {"brt_passed": True}),
        (2.5, "run_regression_tests", {"ok": True}),
    ]
    points = candidate_points(timed)
    assert [(p.count, p.validated) for p in points] == [(1, False), (2, True)]


def test_every_patch_says_why_it_lost_and_keeps_its_record_id() -> None:
    brt = Review(True, "brt", "fails before, passes after")
    a1 = make_record("1-t0", DIFF_A, [brt], trajectory_id="1-t0")
    a2 = make_record("1-t1", DIFF_A, [brt], trajectory_id="1-t1")
    b = make_record("1-t2", DIFF_B, [brt], trajectory_id="1-t2")
    bad = make_record("1-t3", DIFF_B, [Review(False, "smell", "touches a denied path")], trajectory_id="1-t3")
    records = [a1, a2, b, bad]
    selections = {"ranked": select("ranked", records), "default": select("default", records)}
    chosen = selections["ranked"]
    assert chosen.selected is not None and chosen.selected.id == "1-t0"
    assert lost_reason(a2, chosen, chosen.selected) == "the same fix as 1-t0, which ranks ahead of it inside the group"
    assert lost_reason(b, chosen, chosen.selected) == "its fix was found 1 time(s), the selected fix 2 time(s)"
    assert lost_reason(bad, chosen, chosen.selected).startswith("rejected by review: smell: touches a denied path")
    entries = candidate_entries(records, selections, chosen, {})
    assert entries[0]["id"] == "1-t0" and entries[0]["selected"] and entries[0]["votes"] == ["default", "ranked"]
    patches = distinct_patches(entries)
    assert [p["name"] for p in patches] == ["1-t0", "1-t2"]
    assert patches[0]["trajectories"] == "1-t0, 1-t1" and patches[0]["lost"] == ""
    assert patches[1]["lost"] == "its fix was found 1 time(s), the selected fix 2 time(s)"
    record = {
        "candidates": entries,
        "reproduction": {"path": "tests/test_r.py", "passes_after": True},
        "fix_summary": "x - 1 -> x + 1",
        "publication": {"pr": 12},
    }
    sentence = outcome_sentence("done", {"status": "fixed"}, record)
    assert sentence.startswith("Fixed in pull request #12: patch 1-t0 changes m.py (x - 1 -> x + 1)")
    assert "2 of 4 candidate(s) found this fix" in sentence
    triage = {"abstention": {"score": 0.3, "threshold": 0.5}}
    assert outcome_sentence("done", {"status": "abstained", "reasons": ["no reproduction"]}, triage) == (
        "Abstained: triage scored 0.30 against a threshold of 0.50: no reproduction."
    )


def test_the_job_link_needs_an_http_public_url() -> None:
    assert job_page_url(None, 4) is None and job_page_url("", 4) is None and job_page_url("ftp://x", 4) is None
    url = job_page_url("https://bot.example/", 4)
    assert url == "https://bot.example/dashboard/jobs/4"
    assert re.search(r"\]\(https://bot\.example/dashboard/jobs/4\)", render_job_link(url))
    assert render_job_link(None) == ""


def test_eval_reports_reuse_the_dashboards_charts(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# reprobot eval\n")
    case = {
        "name": "gcd/1",
        "charts": {
            "stages": [{"name": "search", "start": 1.0, "end": 4.0}],
            "trajectories": [{"id": "1-t0", "start": 1.0, "end": 3.0, "status": "fixed"}],
            "localization": [{"file": "gcd.py", "line": 3, "score": 0.7}],
        },
    }
    written = write_charts(tmp_path, [case, {"name": "empty", "charts": {}}])
    assert sorted(p.name for p in written) == ["gcd_1-ranking.svg", "gcd_1-timeline.svg"]
    assert (
        (tmp_path / "charts" / "gcd_1-timeline.svg").read_text().startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    )
    assert "[timeline](charts/gcd_1-timeline.svg)" in (tmp_path / "report.md").read_text()

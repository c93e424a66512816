"""Tests for success@k, selector precision/recall and the BRT-signal tables, against hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patch_selectors.metrics import (
    SelectionCase,
    TrajectoryOutcome,
    candidate_brt_at_k,
    cogeneration_success,
    conditional_probability,
    estimate_pass_at_k,
    pass_and_plausible_brt_at_k,
    pass_at_k,
    plausible_brt_at_k,
    selector_precision_recall,
    selector_table,
    signal_table,
    success_table,
)


def out(
    fix: bool = False, brt: bool = False, cand: bool = False, test: bool = False, pid: str = ""
) -> TrajectoryOutcome:
    return TrajectoryOutcome(plausible_fix=fix, plausible_brt=brt, candidate_brt=cand, has_test=test, patch_id=pid)


NONE = out()
FIX = out(fix=True)


@pytest.mark.parametrize(
    ("n", "c", "k", "want"),
    [
        (5, 2, 1, 2 / 5),  # one draw: the success rate
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # only 3 failures, so any 4 draws include a success
        (5, 2, 5, 1.0),  # k = n: any success at all
        (5, 0, 5, 0.0),  # k = n, c = 0
        (20, 0, 1, 0.0),  # c = 0
        (20, 1, 10, 0.5),  # 1 - C(19,10)/C(20,10) = 1 - 10/20
        (20, 20, 1, 1.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_by_hand(n: int, c: int, k: int, want: float) -> None:
    assert estimate_pass_at_k(n, c, k) == pytest.approx(want, abs=1e-12)


@given(st.integers(1, 60), st.data())
def test_pass_at_k_matches_the_binomial_form(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert estimate_pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-9)


def test_pass_at_k_rejects_bad_arguments() -> None:
    for n, c, k in [(5, 2, 6), (5, 2, 0), (5, 6, 1), (5, -1, 1)]:
        with pytest.raises(ValueError):
            estimate_pass_at_k(n, c, k)


def test_success_at_k_averages_over_cases() -> None:
    cases = [
        [FIX, NONE, NONE, NONE],  # k=2: 1 - C(3,2)/C(4,2) = 0.5
        [NONE, NONE, NONE, NONE],  # 0
        [FIX, FIX, NONE, NONE],  # k=2: 1 - C(2,2)/C(4,2) = 5/6
    ]
    assert pass_at_k(cases, 2) == pytest.approx((0.5 + 0 + 5 / 6) / 3)
    assert pass_at_k(cases, 1) == pytest.approx((1 / 4 + 0 + 2 / 4) / 3)
    assert pass_at_k(cases, 4) == pytest.approx(2 / 3)  # k = n: fraction of cases with any success
    assert pass_at_k([], 1) == 0.0


def test_k_larger_than_a_case_is_an_error_unless_clamped() -> None:
    cases = [[FIX, NONE], [NONE, NONE, NONE, FIX]]
    with pytest.raises(ValueError):
        pass_at_k(cases, 3)
    # Clamped: case 1 scores at k=2 (has a success: 1.0); case 2 at k=3: 1 - C(3,3)/C(4,3) = 0.75.
    assert pass_at_k(cases, 3, clamp_k=True) == pytest.approx((1.0 + 0.75) / 2)
    assert pass_at_k([[]], 1, clamp_k=True) == 0.0


def test_the_four_success_metrics_use_their_own_criteria() -> None:
    case = [
        out(fix=True, brt=False, cand=True, test=True),
        out(fix=False, brt=True, cand=False, test=True),
        out(),
        out(fix=True, brt=True, cand=True, test=True),
    ]
    cases = [case]
    assert pass_at_k(cases, 1) == pytest.approx(2 / 4)
    assert plausible_brt_at_k(cases, 1) == pytest.approx(2 / 4)
    assert candidate_brt_at_k(cases, 1) == pytest.approx(2 / 4)
    assert pass_and_plausible_brt_at_k(cases, 1) == pytest.approx(1 / 4)
    assert pass_and_plausible_brt_at_k(cases, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    table = success_table(cases, [1, 4])
    assert table["pass&plausibleBRT"] == {1: pytest.approx(0.25), 4: 1.0}
    assert set(table) == {"pass", "plausibleBRT", "candidateBRT", "pass&plausibleBRT"}


def test_selector_precision_and_recall_follow_the_seed_definitions() -> None:
    good = out(fix=True, brt=True, pid="g")
    fix_only = out(fix=True, pid="f")
    bad = out(pid="b")
    cases = [
        SelectionCase([good, bad], "g"),  # selected: plausible fix and BRT
        SelectionCase([fix_only, bad], "b"),  # selected an implausible patch though a plausible one existed
        SelectionCase([fix_only, bad], None),  # abstained though a plausible fix existed
        SelectionCase([bad, out(pid="b2")], None),  # abstained, nothing plausible: counts nowhere
        SelectionCase([fix_only, bad], "f"),  # selected a plausible fix without a BRT
    ]
    table = selector_table(cases)
    fix = table["plausible fix"]
    # precision: plausible selections / selections = 2/3 ; recall: cases with a plausible selection / cases
    # with any plausible patch = 2/4.
    assert (fix.precision, fix.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 4))
    assert (fix.selected, fix.correct, fix.eligible, fix.cases) == (3, 2, 4, 5)
    both = table["both"]
    assert (both.precision, both.recall) == (pytest.approx(1 / 3), pytest.approx(1 / 1))
    brt = table["plausible BRT"]
    assert (brt.precision, brt.recall) == (pytest.approx(1 / 3), 1.0)
    nothing = selector_precision_recall([SelectionCase([bad], None)], lambda o: o.plausible_fix)
    assert (nothing.precision, nothing.recall) == (0.0, 0.0)
    with pytest.raises(KeyError):
        SelectionCase([bad], "missing").selected()


def test_signal_table_matches_hand_counts() -> None:
    outcomes = [
        out(fix=True, brt=True, cand=True, test=True),
        out(fix=True, brt=False, cand=True, test=True),
        out(fix=False, brt=False, cand=True, test=True),
        out(fix=False, brt=False, cand=False, test=True),
        out(fix=True, test=False),
        out(fix=False, test=False),
        out(fix=False, test=False),
        out(fix=False, test=False),
    ]
    rows = {r.signal: r for r in signal_table(outcomes)}
    assert set(rows) == {"no filter", "no test", "test", "candidate BRT", "plausible BRT*"}  # no LLM data
    assert rows["no filter"].precision == pytest.approx(3 / 8) and rows["no filter"].recall == 1.0
    assert rows["no test"].precision == pytest.approx(1 / 4)
    assert rows["test"].precision == pytest.approx(2 / 4) and rows["test"].recall == pytest.approx(2 / 3)
    cand = rows["candidate BRT"]
    assert (cand.with_signal, cand.plausible_with_signal) == (3, 2)
    assert cand.precision == pytest.approx(2 / 3) and cand.recall == pytest.approx(2 / 3)
    assert cand.f_score == pytest.approx(2 / 3)
    plaus = rows["plausible BRT*"]
    assert (plaus.precision, plaus.recall) == (1.0, pytest.approx(1 / 3))
    assert plaus.f_score == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))

    reviewed = [
        TrajectoryOutcome(True, False, True, True, llm_reviewed_candidate_brt=True),
        TrajectoryOutcome(False, False, True, True, llm_reviewed_candidate_brt=False),
    ]
    rows = {r.signal: r for r in signal_table(reviewed)}
    assert rows["LLM-reviewed candidate BRT"].precision == 1.0
    assert rows["candidate BRT"].precision == 0.5


def test_cogeneration_success_rates_use_finished_trajectories() -> None:
    outcomes = [
        out(fix=True, brt=True, cand=True, test=True),
        out(fix=False, brt=False, cand=True, test=True),
        out(fix=True, brt=False, cand=False, test=False),
        TrajectoryOutcome(True, True, True, True, finished=False),  # hit the step limit: ignored
    ]
    rates = cogeneration_success(outcomes)
    assert rates["P(plausible BRT | candidate BRT)"] == pytest.approx(1 / 2)
    assert rates["P(plausible fix | candidate BRT)"] == pytest.approx(1 / 2)
    assert rates["P(plausible fix | plausible BRT)"] == 1.0
    assert rates["P(plausible BRT | plausible fix)"] == pytest.approx(1 / 2)
    assert conditional_probability([], lambda o: True, lambda o: True) == 0.0

"""Pure renderers: the PR body and the reproduction comment carry the evidence and nothing unsafe."""

from __future__ import annotations

from agents.trajectory import BrtEvidence
from bot.render.report import (
    PrContext,
    ReproductionContext,
    ReviewLine,
    SuggestionContext,
    render_abstention,
    render_pr_body,
    render_reproduction_comment,
    render_suggestion,
)

BRT = BrtEvidence(
    path="tests/test_issue.py",
    source="def test_x():\n    assert f(1) == 2\n",
    symptom="wrong_value",
    fails_before=True,
    before_output="E   assert 3 == 2\n1 failed in 0.01s",
    passes_after=True,
    after_output="1 passed in 0.01s",
)


def _ctx(**kw: object) -> PrContext:
    base = dict(
        issue_ref="#12",
        issue_title="f is off by one",
        brt=BRT,
        fix_files=["pkg/f.py"],
        test_files=["tests/test_issue.py"],
        selector="ranked",
        selection_explanation="group A (3 patches, with test) won over group B (1 patch)",
        reviews=[ReviewLine("brt", True, "fails before, passes after")],
        trajectories=[{"status": "fixed", "steps": 10}, {"status": "not_fixed", "steps": 30}],
    )
    base.update(kw)
    return PrContext(**base)  # type: ignore[arg-type]


def test_pr_body_carries_evidence_selection_and_closing_line() -> None:
    body = render_pr_body(_ctx())
    assert "<!-- reprobot:pr:#12 -->" in body
    assert "assert 3 == 2" in body and "1 passed" in body
    assert "group A (3 patches, with test) won" in body
    assert "| brt | accepted |" in body
    assert "trajectories: 2 (1 found a validated fix)" in body
    assert body.rstrip().splitlines()[-3] == "Fixes #12" or "Fixes #12" in body


def test_pr_body_without_closing_line_when_policy_says_so() -> None:
    assert "Fixes #12" not in render_pr_body(_ctx(closes_issue=False))


def test_output_with_fences_cannot_break_out_of_its_block() -> None:
    evil = BrtEvidence(**{**BRT.__dict__, "before_output": "```\n# injected heading\n```"})
    body = render_pr_body(_ctx(brt=evil))
    assert "````\n```\n# injected heading\n```\n````" in body


def test_ansi_codes_are_stripped_and_long_output_clipped() -> None:
    noisy = BrtEvidence(**{**BRT.__dict__, "before_output": "\x1b[31mred\x1b[0m" + "x" * 10000})
    body = render_pr_body(_ctx(brt=noisy))
    assert "\x1b[" not in body
    assert "earlier output omitted" in body


def test_reproduction_comment_shows_test_output_and_rerun() -> None:
    text = render_reproduction_comment(ReproductionContext("#3", BRT, "python -m pytest -q tests/test_issue.py"))
    assert "## Reproduced" in text
    assert "assert f(1) == 2" in text
    assert "python -m pytest -q tests/test_issue.py" in text


def test_abstention_lists_reasons() -> None:
    text = render_abstention("#4", ["no reproduction steps"], 0.2, 0.5)
    assert "no reproduction steps" in text and "0.20" in text


ASSESSMENT = {
    "verdict": "unsure",
    "reasons": ["changes behaviour on 1 test(s) that passed before: t::a: f(3,) returned 10 instead of 9"],
    "tests_compared": 4,
    "calls_compared": 7,
    "probes_compared": 12,
    "semantic_size": 5,
}


def test_pr_body_shows_the_correctness_assessment() -> None:
    body = render_pr_body(_ctx(assessment={**ASSESSMENT, "verdict": "confident", "reasons": ["all agree"]}))
    assert "### Correctness assessment" in body and "Verdict: **confident**" in body
    assert "passing tests compared before/after: 4 (7 call(s)" in body and "- all agree" in body
    assert "Correctness assessment" not in render_pr_body(_ctx())


def test_suggestion_carries_the_reproduction_the_patch_and_why_no_pr() -> None:
    patch = "diff --git a/pkg/f.py b/pkg/f.py\n-    return x + 2\n+    return x + 1\n"
    text = render_suggestion(
        SuggestionContext(
            issue_ref="#12",
            brt=BRT,
            patch=patch,
            reasons=["not published as a pull request: the correctness assessment is unsure"],
            rerun_command="python -m pytest -q tests/test_issue.py",
            assessment=ASSESSMENT,
        )
    )
    assert "<!-- reprobot:reproduction:#12 -->" in text
    assert "not verified enough for a pull request" in text
    assert "- not published as a pull request: the correctness assessment is unsure" in text
    assert "assert f(1) == 2" in text and "assert 3 == 2" in text
    assert "```diff\n" + patch.rstrip() + "\n```" in text
    assert "returned 10 instead of 9" in text and "Fixes #12" not in text

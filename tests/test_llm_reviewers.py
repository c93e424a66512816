"""LLM reviewers and abstention over real HTTP: verdicts, rejections, and a model that cannot answer."""

from __future__ import annotations

from pathlib import Path

from agents.triage.abstention import AbstentionDecision, combine_with_model
from bot.llm import Ledger, LLMClient, client_from_settings
from bot.settings.config import Settings
from patch_selectors.llm_reviewers import BrtRelevanceReviewer, SpecReviewer
from patch_selectors.records import Review, make_record
from patch_selectors.reviewers import ReviewSubject
from tests.fakes.llm_server import ScriptedLLM
from tests.llm_helpers import llm_settings

DIFF = """diff --git a/m.py b/m.py
--- a/m.py
+++ b/m.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 3
diff --git a/tests/test_m.py b/tests/test_m.py
new file mode 100644
--- /dev/null
+++ b/tests/test_m.py
@@ -0,0 +1,3 @@
+from m import f
+def test_f():
+    assert f() == 2
"""
ISSUE = "# f() returns 1\n\nf() should return 2 but returns 1."


async def _client(tmp_path: Path, srv: ScriptedLLM) -> LLMClient:
    async def no_sleep(_: float) -> None:
        return None

    return client_from_settings(llm_settings(Settings(data_dir=tmp_path), srv.base_url), Ledger(), sleep=no_sleep)


async def test_spec_reviewer_derives_requirements_then_rejects(tmp_path: Path) -> None:
    steps = [
        {"tool": "requirements", "args": {"items": ["f() returns 2"]}},
        {"tool": "verdict", "args": {"accepted": False, "reason": "f() now returns 3, the report asks for 2"}},
    ]
    async with ScriptedLLM(steps) as srv:
        review = await SpecReviewer(await _client(tmp_path, srv), ISSUE).review(
            ReviewSubject(make_record("p", DIFF)), None
        )
    assert not review.accepted and "returns 3" in review.reason
    assert review.evidence["requirements"] == ["f() returns 2"]
    assert "f() returns 2" in srv.requests[1]["messages"][-1]["content"]  # requirements fed to the verdict
    assert "return 3" in srv.requests[1]["messages"][-1]["content"]  # and the patch


async def test_model_that_cannot_answer_does_not_sink_the_patch(tmp_path: Path) -> None:
    async with ScriptedLLM([{"error": 400, "message": "context too long"}]) as srv:
        review = await SpecReviewer(await _client(tmp_path, srv), ISSUE).review(
            ReviewSubject(make_record("p", DIFF)), None
        )
    assert review.accepted and review.reason.startswith("not judged") and "400" in review.reason


async def test_brt_relevance_reads_the_brt_reviewers_output(tmp_path: Path) -> None:
    brt = Review(True, "brt", "fails before", {"before_output": "E   assert 1 == 2"})
    steps = [{"tool": "verdict", "args": {"accepted": True, "reason": "fails with 1 instead of 2, as reported"}}]
    async with ScriptedLLM(steps) as srv:
        client = await _client(tmp_path, srv)
        review = await BrtRelevanceReviewer(client, ISSUE).review(
            ReviewSubject(make_record("p", DIFF), prior=(brt,)), None
        )
        skipped = await BrtRelevanceReviewer(client, ISSUE).review(ReviewSubject(make_record("p", DIFF)), None)
    assert review.accepted and "as reported" in review.reason
    assert "assert 1 == 2" in srv.requests[0]["messages"][-1]["content"]
    assert skipped.accepted and "no BRT failure output" in skipped.reason and len(srv.requests) == 1


async def test_llm_abstention_keeps_rules_when_model_answers_nonsense(tmp_path: Path) -> None:
    rules = AbstentionDecision(True, 0.7, 0.5, ["acting: score 0.70 ≥ threshold 0.50", "has code"])
    async with ScriptedLLM([{"tool": "estimate", "args": {"probability": 7, "reason": "?"}}]) as srv:
        decision = await combine_with_model(rules, await _client(tmp_path, srv), ISSUE)
    assert decision.act and decision.score == 0.7 and decision.llm_score is None and decision.rule_score == 0.7
    assert "model estimate unavailable" in decision.reasons[-1]
    async with ScriptedLLM([{"tool": "estimate", "args": {"probability": 0.1, "reason": "vague"}}]) as srv:
        low = await combine_with_model(rules, await _client(tmp_path, srv), ISSUE)
    assert not low.act and low.score == 0.4 and low.llm_score == 0.1
    assert low.reasons[0].startswith("abstaining: combined score 0.40")

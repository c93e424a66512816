"""Model-backed reviewers: the spec reviewer and the BRT relevance judge, behind the Reviewer protocol."""

from __future__ import annotations

import logging
from typing import Any

from agents.chat import ChatModel, LLMError, tool_schema, verdict_from_reply
from agents.trajectory import FormatError, LimitsExceeded
from patch_selectors.records import Review

log = logging.getLogger(__name__)

_REQUIREMENTS_TOOL = tool_schema(
    "requirements",
    "List what a correct fix must satisfy, derived from the bug report.",
    {"items": {"type": "array", "items": {"type": "string"}, "description": "One testable requirement each."}},
    ["items"],
)
_VERDICT_TOOL = tool_schema(
    "verdict",
    "Accept or reject, with the reason.",
    {
        "accepted": {"type": "boolean", "description": "True when the patch (or test) meets the bar."},
        "reason": {"type": "string", "description": "One or two sentences naming the deciding evidence."},
    },
    ["accepted", "reason"],
)
_CLIP = 12000


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text[:_CLIP]}


async def _ask(model: ChatModel, messages: list[dict[str, Any]], tool: dict[str, Any], purpose: str) -> dict[str, Any]:
    reply = await model.complete(messages, [tool], trajectory="review", purpose=purpose)
    return verdict_from_reply(reply, tool["function"]["name"])


def _unavailable(name: str, exc: Exception) -> Review:
    # A model that cannot answer must not sink a patch the executable reviewers accepted; it is recorded.
    return Review(True, name, f"not judged: the model gave no usable answer ({type(exc).__name__}: {str(exc)[:150]})")


class SpecReviewer:
    """Derive requirements from the report, then judge the patch against them."""

    name = "spec"
    #: Model calls go one at a time, after the sandboxed reviewers.
    independent = False

    def __init__(self, model: ChatModel, issue_text: str) -> None:
        self.model = model
        self.issue = issue_text

    async def review(self, subject: Any, env: Any) -> Review:
        """Two model calls: requirements from the report alone, then a verdict on the diff."""
        system = {
            "role": "system",
            "content": "You review bug fixes. Be strict about behaviour the report asks for; ignore style.",
        }
        try:
            reqs = await _ask(
                self.model,
                [system, _user(f"Bug report:\n\n{self.issue}\n\nList the requirements a correct fix must meet.")],
                _REQUIREMENTS_TOOL,
                "spec-requirements",
            )
            items = [str(i) for i in reqs.get("items") or []][:12]
            listing = "\n".join(f"- {i}" for i in items) or "- (none derived)"
            answer = await _ask(
                self.model,
                [
                    system,
                    _user(
                        f"Bug report:\n\n{self.issue}\n\nRequirements:\n{listing}\n\n"
                        f"Patch:\n```diff\n{subject.record.patch.render()}\n```\nDoes the patch meet every requirement?"
                    ),
                ],
                _VERDICT_TOOL,
                "spec-verdict",
            )
        except (LLMError, FormatError, LimitsExceeded) as exc:
            return _unavailable(self.name, exc)
        return Review(
            bool(answer.get("accepted")), self.name, str(answer.get("reason", ""))[:500], {"requirements": items}
        )


class BrtRelevanceReviewer:
    """Does the BRT's failure on the buggy code show the symptom the report describes?"""

    name = "brt-relevance"
    #: Reads the verdicts before it: the BRT reviewer's output.
    independent = False

    def __init__(self, model: ChatModel, issue_text: str) -> None:
        self.model = model
        self.issue = issue_text

    async def review(self, subject: Any, env: Any) -> Review:
        """Judge the failing output the BRT reviewer recorded against the report."""
        brt = next((r for r in subject.prior if r.reviewer == "brt"), None)
        before = str(brt.evidence.get("before_output", "")) if brt is not None else ""
        if not subject.record.has_test or not before:
            return Review(True, self.name, "no BRT failure output to judge")
        try:
            answer = await _ask(
                self.model,
                [
                    {"role": "system", "content": "You check whether a failing test reproduces a bug report."},
                    _user(
                        f"Bug report:\n\n{self.issue}\n\n"
                        f"The test's output on the buggy code:\n```\n{before[-4000:]}\n```\n"
                        "Accept only if it fails with the symptom the report describes, not for an unrelated reason."
                    ),
                ],
                _VERDICT_TOOL,
                "brt-relevance",
            )
        except (LLMError, FormatError, LimitsExceeded) as exc:
            return _unavailable(self.name, exc)
        return Review(bool(answer.get("accepted")), self.name, str(answer.get("reason", ""))[:500])

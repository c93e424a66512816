"""The triage stage: decide whether to act on the report (abstention), from the report and the repo."""

from __future__ import annotations

from pathlib import Path

from agents.reading import IssueFacts
from agents.triage import AbstentionDecision, combine_with_model, python_symbols, score_issue
from bot.pipeline.state import JobState
from bot.pipeline.stops import Abstained
from sandboxes.setup_meta import read_console_scripts
from sandboxes.workspace import tracked_files


def decide(facts: IssueFacts, workspace: Path, threshold: float) -> AbstentionDecision:
    """Decide whether to act, from the report and the repo's files and symbols."""
    files = tracked_files(workspace)
    sources: dict[str, str] = {}
    for rel in files:
        if rel.endswith(".py"):
            try:
                sources[rel] = (workspace / rel).read_text(errors="replace")
            except OSError:
                continue
    scripts = read_console_scripts(workspace)
    return score_issue(facts, files, python_symbols(sources), threshold=threshold, scripts=scripts)


async def run(state: JobState) -> None:
    """Score the report (with the model's estimate when the request asks for it); raise Abstained below the bar."""
    ctx, request = state.ctx, state.request
    await ctx.stage("triage")
    decision = decide(state.facts, state.base, request.abstain_threshold)
    if request.llm_abstention and ctx.model is not None:
        decision = await combine_with_model(decision, ctx.model, request.issue_text)
    state.decision = decision
    if not decision.act:
        raise Abstained(*decision.reasons)

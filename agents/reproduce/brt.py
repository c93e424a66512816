"""The reproduction every job starts from: a synthesized BRT that fails the reported way, and where to look.

Every job runs it once, before any repair agent: the classic agent searches from its ranked locations, the LLM
agent falls back on its BRT, and a reproduce job reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.localize import Location, localize_in_sandbox, parse_traceback_frames
from agents.reading import IssueFacts
from agents.reproduce.synthesis import BrtCandidate, symptom_matches, synthesize_brts
from agents.trajectory import BrtEvidence, Trajectory
from sandboxes.base import Sandbox
from sandboxes.environment import TestRun, TestSuite
from sandboxes.setup_meta import read_console_scripts


class NotReproduced(Exception):
    """No synthesized BRT failed on the buggy code with the reported symptom."""


@dataclass
class Reproduction:
    """The shared result of the reproduction stage: a BRT that fails the reported way, and where to look."""

    brt: BrtCandidate
    before: TestRun
    locations: list[Location]
    tried: list[tuple[BrtCandidate, str]] = field(default_factory=list)


async def reproduce(
    facts: IssueFacts,
    sandbox: Sandbox,
    runner: TestSuite,
    repo_files: Sequence[str],
    trajectory: Trajectory,
    *,
    localize: bool = True,
    brt_timeout: float = 60.0,
) -> Reproduction:
    """Find a synthesized BRT that fails on the buggy code with the reported symptom, then rank suspects."""
    scripts = read_console_scripts(sandbox.spec.workspace)
    candidates = synthesize_brts(facts, repo_files, scripts=scripts)
    await trajectory.step("synthesize_brt", candidates=[c.description for c in candidates])
    if not candidates:
        raise NotReproduced("the report has no code, REPL session or call that a test can be built from")
    tried: list[tuple[BrtCandidate, str]] = []
    chosen: tuple[BrtCandidate, TestRun] | None = None
    for cand in candidates:
        sandbox.write_file(cand.path, cand.source)
        run = await runner.run(sandbox, [cand.path], timeout=brt_timeout)
        ok, reason = symptom_matches(cand, facts, run.result.output, run.result.timed_out)
        await trajectory.step(
            "run_brt_on_buggy_code",
            path=cand.path,
            description=cand.description,
            exit_code=run.result.exit_code,
            timed_out=run.result.timed_out,
            matches_report=ok,
            reason=reason,
            output=run.result.output[-4000:],
        )
        if run.all_passed:
            reason = "the test passes on the buggy code, so it does not reproduce the report"
        elif not run.collected:
            reason = "pytest could not collect the test: " + run.result.output[-300:]
        if ok and not run.all_passed and run.collected:
            chosen = (cand, run)
            break
        tried.append((cand, reason))
        _remove(sandbox, cand.path)
    if chosen is None:
        reasons = "; ".join(r for _, r in tried) or "no candidate"
        raise NotReproduced(f"no synthesized test reproduced the reported symptom ({reasons})")
    brt, before = chosen
    locations: list[Location] = []
    if localize:
        frames = parse_traceback_frames(facts.traceback_text) + parse_traceback_frames(before.result.output)
        mentioned = (*facts.mentioned_files, *facts.identifiers)
        locations = await localize_in_sandbox(sandbox, runner, brt.path, repo_files, frames, mentioned=mentioned)
        await trajectory.step(
            "fault_localization",
            top=[{"file": loc.file, "line": loc.line, "score": round(loc.score, 4)} for loc in locations[:10]],
        )
    return Reproduction(brt=brt, before=before, locations=locations, tried=tried)


def _remove(sandbox: Sandbox, relpath: str) -> None:
    path = sandbox.spec.workspace / relpath
    path.unlink(missing_ok=True)


def brt_evidence(repro: Reproduction, after: TestRun | None) -> BrtEvidence:
    """The BRT with its failing run on the buggy code and, when there is one, its run after a fix."""
    return BrtEvidence(
        path=repro.brt.path,
        source=repro.brt.source,
        symptom=repro.brt.symptom,
        fails_before=True,
        before_output=repro.before.result.output[-4000:],
        passes_after=None if after is None else after.all_passed,
        after_output="" if after is None else after.result.output[-4000:],
        description=repro.brt.description,
    )


def reproduction_evidence(repro: Reproduction) -> BrtEvidence:
    """Evidence for a reproduce-only job: the BRT and its failing output on the buggy code."""
    return brt_evidence(repro, None)

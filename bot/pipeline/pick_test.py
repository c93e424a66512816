"""The pick-test stage of a reproduce job: which failing test the job reports as its reproduction.

It is to a reproduce job what select is to a fix job. A test an agent wrote (the LLM agent's brt-only
trajectory) comes first; the synthesized BRT is the fallback; a test that does not fail reproduces nothing.
"""

from __future__ import annotations

from dataclasses import replace

from agents.reproduce import reproduction_evidence
from bot.pipeline.state import JobState, Verdict, need
from bot.pipeline.stops import NotReproduced


async def run(state: JobState) -> None:
    """Set the reproduced verdict, or raise NotReproduced when no test fails on the current code."""
    if state.generated is None:
        # No agent ran: the reproduce stage's synthesized BRT is the reproduction.
        repro = need(state.repro, "reproduction")
        state.trajectories = [need(state.shared, "reproduction trajectory").summary()]
        reason = f"the test fails on the current code with the reported symptom ({repro.brt.symptom})"
        state.verdict = Verdict("reproduced", [reason], brt=reproduction_evidence(repro), test_files=[repro.brt.path])
        return
    for traj in state.generated:
        if traj.brt is not None and traj.brt.fails_before:
            # Nothing was fixed: the evidence is the failing run alone, as for a synthesized reproduction.
            evidence = replace(traj.brt, passes_after=None, after_output="")
            reason = f"the model's test `{traj.brt.path}` fails on the current code ({traj.id})"
            state.verdict = Verdict("reproduced", [reason], brt=evidence, test_files=[traj.brt.path])
            return
    if state.repro is not None:
        repro = state.repro
        reason = f"the synthesized test fails on the current code ({repro.brt.symptom}); the model's did not"
        state.verdict = Verdict("reproduced", [reason], brt=reproduction_evidence(repro), test_files=[repro.brt.path])
        return
    raise NotReproduced("no test written by the model fails on the current code")

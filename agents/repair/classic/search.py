"""The classic agent's fix search (no LLM): from a reproduction's ranked suspects, try fix templates, validate."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice

from agents.localize import NAMED_NOTE, Location, select_tests
from agents.repair.mutation import (
    Candidate,
    MutationContext,
    build_context,
    generate_candidates,
    missing_protocols,
    special_method_candidates,
)
from agents.reproduce import Reproduction, brt_evidence, expected_exceptions
from agents.trajectory import LimitsExceeded, Submitted, Trajectory
from sandboxes.base import Sandbox
from sandboxes.environment import Baseline, TestRun, TestSuite
from sandboxes.workspace import workspace_diff

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchLimits:
    """Budgets for one classic trajectory's fix search."""

    max_candidates: int = 400
    max_locations: int = 8
    #: Traceback-frame locations tried beyond the top `max_locations`.
    max_frame_locations: int = 4
    #: Statements of a function the report names (covered, but ranked below the top) tried after the frames.
    max_named_locations: int = 4
    per_location: int = 80
    seconds: float = 600.0
    brt_timeout: float = 60.0
    #: After a validated fix, how many more candidates to try for alternative validated fixes, and how many
    #: to keep. Two fixes that pass the same tests but disagree elsewhere cannot both be right.
    alternative_candidates: int = 80
    max_alternatives: int = 3
    #: Of those, at most this many at any one location: the rest go to the next-ranked locations. A wrong
    #: fix that makes the reported example pass is most often at another line than the bug, and the fixes
    #: found near it tend to agree with it; a validated fix at another line is the one that can disagree.
    alternatives_per_location: int = 6
    #: Run the regression tests covering a candidate's changed lines before the full suite (agents/impact).
    test_impact: bool = True
    #: A candidate's BRT run may take this many times the buggy code's BRT run (at least
    #: `candidate_min_timeout`, at most `brt_timeout`): an edit that turns a fast failing test into a slow one
    #: has almost always made a loop that never ends or a list that never stops growing. 0: the full timeout.
    candidate_timeout_factor: float = 5.0
    candidate_min_timeout: float = 2.0
    #: Candidates cut off by that shorter timeout are re-run with the full one, these many at most, when the
    #: search ends without a validated fix: a slow correct fix is found late, never lost.
    slow_rechecks: int = 4


def candidate_timeout(buggy_seconds: float, limits: SearchLimits) -> float:
    """The wall timeout for one candidate's BRT run, given how long the BRT ran on the buggy code."""
    if limits.candidate_timeout_factor <= 0:
        return limits.brt_timeout
    scaled = max(limits.candidate_min_timeout, limits.candidate_timeout_factor * buggy_seconds)
    return min(limits.brt_timeout, scaled)


@dataclass
class _Progress:
    """Where one trajectory's search stands."""

    tried: int = 0
    #: The first validated fix's description, once there is one; the search then looks for alternatives.
    submitted: str | None = None
    alt_tried: int = 0
    #: (location, the file's original source, candidate) of checks cut off by the shorter timeout.
    slow: list[tuple[Location, str, Candidate]] = field(default_factory=list)


class CandidateCache:
    """Memoizes candidate checks across the trajectories of one job (same edit, same verdict)."""

    def __init__(self) -> None:
        #: Per edit and timeout: (the BRT passed, the run timed out).
        self._futures: dict[str, asyncio.Future[tuple[bool, bool]]] = {}
        #: Regression verdicts (the impacted tests, then the full suite) of an edit, shared the same way.
        self.suites: dict[str, asyncio.Future[tuple[bool, str, TestRun]]] = {}
        #: How many candidates each test has rejected so far in this job (see `killers_first`).
        self.kills: Counter[str] = Counter()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: str) -> str:
        """A stable key for a candidate edit plus the test it is checked against."""
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def killers_first(self, tests: Iterable[str]) -> list[str]:
        """`tests` with the ones that rejected most earlier candidates first, the rest in their given order.

        The order mutation testing tools use: a wrong edit near a line tends to break the same few tests, so
        the run that stops at the first failure stops after one test instead of after the whole selection.
        """
        return sorted(tests, key=lambda t: -self.kills[t])

    def get(self, key: str) -> asyncio.Future[tuple[bool, bool]] | None:
        """The pending or finished check for key, counting hits."""
        fut = self._futures.get(key)
        if fut is not None:
            self.hits += 1
        return fut

    def start(self, key: str) -> asyncio.Future[tuple[bool, bool]]:
        """Register a check this caller will complete."""
        self.misses += 1
        fut: asyncio.Future[tuple[bool, bool]] = asyncio.get_running_loop().create_future()
        self._futures[key] = fut
        return fut


class ClassicSearch:
    """One fix-search trajectory over ranked locations and mutation templates."""

    def __init__(
        self,
        reproduction: Reproduction,
        runner: TestSuite,
        baseline: Baseline,
        cache: CandidateCache,
        limits: SearchLimits,
        *,
        settled: asyncio.Event | None = None,
    ) -> None:
        self.repro = reproduction
        self.runner = runner
        self.baseline = baseline
        self.cache = cache
        self.limits = limits
        #: Set by the job when its vote is settled: the search stops at its next candidate.
        self.settled = settled

    def _location_order(self, seed: int) -> list[Location]:
        locs = self._ranked_locations(seed)
        # Every in-repo traceback frame is a suspect, callers included: the faulty line is often a caller
        # that passed a bad value, ranked below many covered lines of the crash site.
        extra = [
            loc
            for loc in self.repro.locations[self.limits.max_locations :]
            if any(r.startswith("traceback") for r in loc.reasons) and loc not in locs
        ]
        locs += extra[: self.limits.max_frame_locations]
        # The function the user calls in the report is the entry point; when its own lines rank below helpers
        # that the failing test alone reaches, they are still worth a try before giving up.
        named = [
            loc
            for loc in self.repro.locations[self.limits.max_locations :]
            if NAMED_NOTE in loc.reasons and loc not in locs
        ]
        locs += named[: self.limits.max_named_locations]
        if seed == 0 or len(locs) < 2:
            return locs
        # Later trajectories explore a perturbed order: scores jittered, so near-ties swap places.
        rng = random.Random(seed)
        return sorted(locs, key=lambda loc: -(loc.score * (1.0 + rng.uniform(-0.25, 0.25))))

    def _ranked_locations(self, seed: int) -> list[Location]:
        """The top `max_locations` lines; for a later trajectory, a tie at the cut is drawn by its seed.

        In a small program every test runs most lines, so many share one score, and the cut would always
        keep the same first few of them (by line number): each trajectory instead draws its own from the tie.
        """
        ranked = list(self.repro.locations)
        cut = self.limits.max_locations
        if seed == 0 or len(ranked) <= cut:
            return ranked[:cut]
        edge = ranked[cut - 1].score
        above = [loc for loc in ranked[:cut] if loc.score > edge]
        tied = [loc for loc in ranked if loc.score == edge]
        picked = random.Random(seed * 7919).sample(tied, min(len(tied), cut - len(above)))
        return above + [loc for loc in tied if loc in picked]

    def _search_plan(self, seed: int) -> list[Location]:
        """Where to search: first each suspicious file as a whole (line 0) when the failure names a special
        method a class lacks, then the ranked lines."""
        order = self._location_order(seed)
        if not missing_protocols(self.repro.before.result.output):
            return order
        files = list(dict.fromkeys(loc.file for loc in order if loc.file.endswith(".py")))
        return [
            Location(file=f, line=0, score=1.0, reasons=("the failure names a missing special method",)) for f in files
        ] + order

    def _protocol_candidates(self, source: str) -> Iterator[Candidate]:
        for fix in special_method_candidates(source, self.repro.before.result.output):
            yield Candidate(fix.operator, fix.description, fix.line, fix.new_source)

    async def _check(self, sandbox: Sandbox, relpath: str, new_source: str, timeout: float) -> tuple[bool, bool]:
        """Run the BRT against one edit: (passed, timed out); memoized across trajectories."""
        key = CandidateCache.key("brt", relpath, new_source, self.repro.brt.source, repr(timeout))
        cached = self.cache.get(key)
        if cached is not None:
            return await cached
        fut = self.cache.start(key)
        try:
            sandbox.write_file(relpath, new_source)
            run = await self.runner.run(sandbox, [self.repro.brt.path], timeout=timeout)
            verdict = (run.all_passed, run.result.timed_out)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved; the raising caller handles it
            raise
        fut.set_result(verdict)
        return verdict

    async def _regressions(
        self, sandbox: Sandbox, edit: tuple[str, str, str] | None = None
    ) -> tuple[bool, str, TestRun]:
        """Run the whole suite; every test that passed at baseline, and the BRT, must pass.

        With baseline coverage, the tests that executed the edit's (path, old, new) changed lines run first:
        a candidate breaking one of them is rejected without the full suite; a survivor still runs it all.
        """
        if edit is None or not self.limits.test_impact:
            # Impact selection off is the previous method: the full suite for every candidate, nothing shared.
            return await self._regressions_uncached(sandbox, edit)
        # Every trajectory's workspace is the base plus the BRT plus this one edit: same edit, same verdict.
        key = CandidateCache.key("suite", *edit, self.repro.brt.source)
        cached = self.cache.suites.get(key)
        if cached is not None:
            self.cache.hits += 1
            return await cached
        self.cache.misses += 1
        fut: asyncio.Future[tuple[bool, str, TestRun]] = asyncio.get_running_loop().create_future()
        self.cache.suites[key] = fut
        try:
            verdict = await self._regressions_uncached(sandbox, edit)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved; the raising caller handles it
            del self.cache.suites[key]
            raise
        fut.set_result(verdict)
        return verdict

    async def _regressions_uncached(
        self, sandbox: Sandbox, edit: tuple[str, str, str] | None
    ) -> tuple[bool, str, TestRun]:
        coverage = self.baseline.coverage
        if edit is not None and self.limits.test_impact and coverage is not None:
            impact = select_tests(coverage, *edit, sorted(self.baseline.passing))
            if not impact.full and impact.tests:
                # Every impacted test passed at baseline, so the first failure rejects the candidate: stop there.
                ordered = self.cache.killers_first(impact.tests)
                first = await self.runner.run(sandbox, ordered, extra_args=["--exitfirst"])
                if first.result.timed_out:
                    return False, "the impacted tests timed out", first
                failed = [t for t in ordered if first.tests.get(t) not in (None, "passed")]
                # Without a failure, a test that did not run at all is still broken (it no longer collects).
                broken = failed or [t for t in ordered if first.tests.get(t) != "passed"]
                if broken:
                    self.cache.kills.update(broken)
                    return False, "broke: " + ", ".join(broken[:10]), first
        run = await self.runner.run(sandbox, [])
        broken = sorted(t for t in self.baseline.passing if run.tests.get(t) != "passed")
        brt_failed = [t for t, s in run.tests.items() if t.startswith(self.repro.brt.path) and s != "passed"]
        if run.result.timed_out:
            return False, "the test suite timed out", run
        if broken or brt_failed:
            return False, "broke: " + ", ".join((broken + brt_failed)[:10]), run
        return True, "all baseline-passing tests and the BRT pass", run

    async def run(self, sandbox: Sandbox, trajectory: Trajectory) -> None:
        """Search until a validated fix is found (raises Submitted) or a budget runs out.

        After the first validated fix the search goes on a little, for alternative validated fixes at this
        and the next locations (recorded in `trajectory.alternatives`); the first fix is what the trajectory
        submits.
        """
        rng = random.Random(trajectory.seed)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.seconds
        progress = _Progress()
        short = candidate_timeout(self.repro.before.result.duration, self.limits)
        sandbox.write_file(self.repro.brt.path, self.repro.brt.source)
        contexts: dict[str, MutationContext] = {}  # module facts per file: many locations share one file
        raises = expected_exceptions(self.repro.brt.source)  # what the BRT expects raised, for raise guards
        for loc in self._search_plan(trajectory.seed):
            original = sandbox.read_file(loc.file)
            if loc.line == 0:
                cands: Iterator[Candidate] = self._protocol_candidates(original)
            else:
                if original not in contexts:
                    contexts[original] = replace(build_context(original), raises=raises)
                context = contexts[original]
                cands = generate_candidates(original, loc.line, rng=rng if trajectory.seed else None, context=context)
            alternatives_before = progress.alt_tried
            for cand in islice(cands, self.limits.per_location):
                if progress.alt_tried - alternatives_before >= self.limits.alternatives_per_location:
                    break  # enough alternatives here: look at the other suspects
                self._within_budget(progress, loop.time() > deadline)
                await self._try(sandbox, trajectory, progress, loc, original, cand, short)
            sandbox.write_file(loc.file, original)
        if progress.submitted is None:
            # Nothing validated in time: the edits cut off by the short timeout get the full one.
            for loc, original, cand in progress.slow[: self.limits.slow_rechecks]:
                self._within_budget(progress, loop.time() > deadline)
                await self._try(sandbox, trajectory, progress, loc, original, cand, self.limits.brt_timeout)
                sandbox.write_file(loc.file, original)
        if progress.submitted is not None:
            raise Submitted(progress.submitted)
        raise LimitsExceeded(f"no template fixed the bug at the top {self.limits.max_locations} locations")

    def _within_budget(self, progress: _Progress, past_deadline: bool) -> None:
        """Raise Submitted (with a fix) or LimitsExceeded (without) once a budget is spent or the vote settled."""
        if progress.tried >= self.limits.max_candidates or past_deadline:
            why = f"tried {progress.tried} candidates without a validated fix"
        elif self.settled is not None and self.settled.is_set():
            why = "stopped early: the job's other trajectories settled the vote on a fix"
        elif progress.submitted is not None and progress.alt_tried >= self.limits.alternative_candidates:
            why = "enough alternatives tried"
        else:
            return
        if progress.submitted is not None:
            raise Submitted(progress.submitted)
        raise LimitsExceeded(why)

    async def _try(
        self,
        sandbox: Sandbox,
        trajectory: Trajectory,
        progress: _Progress,
        loc: Location,
        original: str,
        cand: Candidate,
        timeout: float,
    ) -> None:
        """Check one candidate: its BRT, then the regression tests; record a validated fix or alternative.

        The candidate's source may be left in the workspace; the caller restores the original.
        """
        progress.tried += 1
        if progress.submitted is not None:
            progress.alt_tried += 1
        passed, timed_out = await self._check(sandbox, loc.file, cand.new_source, timeout)
        if timed_out and timeout < self.limits.brt_timeout:
            progress.slow.append((loc, original, cand))
        await trajectory.step(
            "try_candidate" if progress.submitted is None else "try_alternative",
            file=loc.file,
            line=cand.line,
            operator=cand.operator,
            description=cand.description,
            brt_passed=passed,
            **({"timed_out_after": round(timeout, 2)} if timed_out else {}),
        )
        if not passed:
            return
        sandbox.write_file(loc.file, cand.new_source)
        ok, reason, run = await self._regressions(sandbox, (loc.file, original, cand.new_source))
        if progress.submitted is not None:
            if ok:
                trajectory.alternatives.append(await workspace_diff(sandbox.spec.workspace))
                await trajectory.step("alternative_fix", file=loc.file, line=cand.line, operator=cand.operator)
            sandbox.write_file(loc.file, original)
            if len(trajectory.alternatives) >= self.limits.max_alternatives:
                raise Submitted(progress.submitted)
            return
        trajectory.last_test_passed = ok
        await trajectory.step(
            "run_regression_tests",
            ok=ok,
            reason=reason,
            summary=run.summary(),
            output=run.result.output[-2000:],
        )
        if ok:
            trajectory.diff = await workspace_diff(sandbox.spec.workspace)
            brt_out = await self.runner.run(sandbox, [self.repro.brt.path])
            trajectory.brt = brt_evidence(self.repro, brt_out)
            trajectory.status = "fixed"
            progress.submitted = f"{cand.operator} at {loc.file}:{cand.line}: {cand.description}"
            if self.limits.max_alternatives <= 0:
                raise Submitted(progress.submitted)
        sandbox.write_file(loc.file, original)

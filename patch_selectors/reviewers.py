"""Reviewers: accept or reject a candidate patch, with a reason and evidence, by re-running it in a sandbox."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from agents.chat import ChatModel
from patch_selectors.llm_reviewers import BrtRelevanceReviewer, SpecReviewer
from patch_selectors.patch import Patch
from patch_selectors.paths import denied_path_problems
from patch_selectors.records import PatchRecord, Review
from sandboxes.base import Sandbox
from sandboxes.environment import Baseline, TestSuite
from sandboxes.pathpolicy import DEFAULT_DENIED
from sandboxes.workspace import GitError, apply_patch, copy_workspace

log = logging.getLogger(__name__)

_OUTPUT_TAIL = 3000


@dataclass(frozen=True)
class ReviewSubject:
    """A patch record plus what its trajectory reported about itself."""

    record: PatchRecord
    last_test_passed: bool | None = None
    #: Verdicts of the reviewers that ran before this one (the BRT relevance judge reads the BRT's output).
    prior: tuple[Review, ...] = ()


@dataclass(frozen=True)
class ReviewEnv:
    """What reviewers need: a clean base checkout to copy, a test runner, the baseline, a sandbox factory.

    Every review run has its own copy and its own sandbox, so runs are independent; `open_sandbox` bounds how
    many run at once (bot/pipeline/review.py gives it a slot per core), and reviews and assessments may then run
    their sandboxes concurrently.
    """

    base: Path
    scratch: Path
    runner: TestSuite
    baseline: Baseline
    open_sandbox: Callable[[Path], AbstractAsyncContextManager[Sandbox]]
    denied_paths: tuple[str, ...] = DEFAULT_DENIED
    max_lines: int = 500
    #: The report's working calls (`setup`, `source`, `expected`), which the correctness assessment runs
    #: before and after each fix like the code's documented examples.
    report_examples: tuple[dict[str, str], ...] = ()

    async def fresh_copy(self, label: str) -> Path:
        """A private copy of the base checkout for one review run."""
        return await copy_workspace(self.base, self.scratch / f"{label}-{uuid.uuid4().hex[:8]}")


class Reviewer(Protocol):
    """A reviewer: async, side-effect free on the base, returns one Review.

    LLM reviewers (spec, BRT relevance) implement this same protocol and are enabled by policy.
    """

    name: str
    #: True for a reviewer that does not read earlier verdicts (`ReviewSubject.prior`): it may run at the
    #: same time as its independent neighbours.
    independent: bool

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        """Judge one patch."""
        ...


class SmellReviewer:
    """Cheap checks that need no sandbox: empty, binary, denied paths, too large, last test run failed."""

    name = "smell"
    #: The gate: a smell rejection spares the sandboxed reviewers.
    independent = False

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        """Reject patches that smell before spending a sandbox run on them."""
        patch = subject.record.patch
        if patch.is_empty:
            return Review(False, self.name, "the patch is empty")
        binary = [f.path for f in patch.files if f.is_binary]
        if binary:
            return Review(False, self.name, f"the patch contains binary files: {', '.join(binary)}")
        denied = denied_path_problems(patch, env.denied_paths, base=env.base)
        if denied:
            return Review(False, self.name, f"the patch breaks the path policy: {'; '.join(denied)}")
        if subject.record.total_lines > env.max_lines:
            return Review(
                False,
                self.name,
                f"the patch changes {subject.record.total_lines} lines (limit {env.max_lines})",
            )
        if subject.last_test_passed is False:
            return Review(False, self.name, "the last test run in the trajectory failed")
        return Review(True, self.name, "not empty, no binary or denied files, size within limits")


class BuildTestReviewer:
    """Apply the whole patch to a fresh copy and run the suite; what passed at baseline must still pass."""

    name = "build-test"
    independent = True

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        """Regression check in a fresh sandbox."""
        workspace = await env.fresh_copy("build-test")
        try:
            await apply_patch(workspace, subject.record.patch.render())
        except GitError as exc:
            return Review(False, self.name, f"the patch does not apply to the base commit: {exc}")
        async with env.open_sandbox(workspace) as sb:
            run = await env.runner.run(sb, [])
        if run.result.timed_out:
            return Review(False, self.name, "the test suite timed out", {"output": run.result.output[-_OUTPUT_TAIL:]})
        broken = sorted(t for t in env.baseline.passing if run.tests.get(t) != "passed")
        evidence = {"summary": run.summary(), "output": run.result.output[-_OUTPUT_TAIL:]}
        if broken:
            shown = ", ".join(broken[:8]) + (" …" if len(broken) > 8 else "")
            return Review(False, self.name, f"{len(broken)} test(s) that passed before now fail: {shown}", evidence)
        new_failures = sorted(run.failed_ids - env.baseline.failing)
        if new_failures:
            return Review(False, self.name, f"new failing tests: {', '.join(new_failures[:8])}", evidence)
        s = run.summary()
        return Review(
            True, self.name, f"{s['passed']} passed, {len(env.baseline.failing)} failing before too", evidence
        )


def _test_files(test_part: Patch) -> list[str]:
    return [f.new_path for f in test_part.files if f.new_path and f.new_path.endswith(".py") and not f.is_deleted]


class BrtReviewer:
    """The BRT must fail on the buggy code (test part alone) and pass with the whole patch."""

    name = "brt"
    independent = True

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        """Run the patch's tests before and after its fix, each in a fresh sandbox."""
        record = subject.record
        if not record.has_test:
            return Review(True, self.name, "no test in the patch: nothing to check")
        files = _test_files(record.test_part)
        if not files:
            return Review(True, self.name, "the test part changes no runnable Python test file")
        before_ws = await env.fresh_copy("brt-before")
        try:
            await apply_patch(before_ws, record.test_part.render())
        except GitError as exc:
            return Review(False, self.name, f"the test part does not apply to the base commit: {exc}")
        async with env.open_sandbox(before_ws) as sb:
            before = await env.runner.run(sb, files)
        before_out = before.result.output[-_OUTPUT_TAIL:]
        if not before.collected or _import_error(before.result.output):
            return Review(
                False,
                self.name,
                "the BRT errors at import or collection on the buggy code, so it does not show the bug",
                {"before_output": before_out},
            )
        if before.all_passed:
            return Review(
                False,
                self.name,
                "the BRT passes on the buggy code, so it does not reproduce the bug",
                {"before_output": before_out},
            )
        after_ws = await env.fresh_copy("brt-after")
        try:
            await apply_patch(after_ws, record.patch.render())
        except GitError as exc:
            return Review(False, self.name, f"the patch does not apply to the base commit: {exc}")
        async with env.open_sandbox(after_ws) as sb:
            after = await env.runner.run(sb, files)
        evidence = {
            "before_output": before_out,
            "after_output": after.result.output[-_OUTPUT_TAIL:],
            "failing_before": sorted(before.failed_ids),
        }
        if not after.all_passed:
            return Review(False, self.name, "the BRT still fails with the fix applied", evidence)
        return Review(
            True,
            self.name,
            f"fails before ({len(before.failed_ids)} failing), passes after the fix",
            evidence,
        )


def _import_error(output: str) -> bool:
    # pytest reports a module that cannot be imported as a collection error, not as a test failure.
    return "ERROR collecting" in output or "ImportError while importing test module" in output


DEFAULT_REVIEWERS: tuple[Reviewer, ...] = (SmellReviewer(), BuildTestReviewer(), BrtReviewer())


async def review_patch(subject: ReviewSubject, env: ReviewEnv, reviewers: Sequence[Reviewer]) -> list[Review]:
    """Run reviewers in order; a smell rejection stops the costly sandboxed ones.

    Neighbouring independent reviewers run at the same time; verdicts keep the reviewers' order, and a
    reviewer that reads earlier verdicts sees every one before it.
    """
    reviews: list[Review] = []
    batch: list[Reviewer] = []

    async def run_batch() -> None:
        prior = tuple(reviews)
        reviews.extend(await asyncio.gather(*(r.review(replace(subject, prior=prior), env) for r in batch)))
        batch.clear()

    for reviewer in reviewers:
        if reviewer.independent:
            batch.append(reviewer)
            continue
        await run_batch()
        verdict = await reviewer.review(replace(subject, prior=tuple(reviews)), env)
        reviews.append(verdict)
        if not verdict.accepted and reviewer.name == "smell":
            return reviews
    await run_batch()
    return reviews


def llm_reviewers(model: ChatModel, issue_text: str) -> tuple[Reviewer, ...]:
    """The model-backed reviewers, appended after the default ones when the policy enables them."""
    return (SpecReviewer(model, issue_text), BrtRelevanceReviewer(model, issue_text))

"""review_patch: independent reviewers run side by side, verdicts keep their order, dependents see all before."""

from __future__ import annotations

import asyncio
from pathlib import Path

from patch_selectors.records import Review, make_record
from patch_selectors.reviewers import ReviewEnv, ReviewSubject, review_patch

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


class Rendezvous:
    """Two independent reviewers that each wait for the other to start: run one after the other, they time out."""

    def __init__(self, name: str, mine: asyncio.Event, theirs: asyncio.Event) -> None:
        self.name, self.mine, self.theirs = name, mine, theirs
        self.independent = True
        self.prior_seen: tuple[str, ...] = ()

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        self.prior_seen = tuple(r.reviewer for r in subject.prior)
        self.mine.set()
        try:
            await asyncio.wait_for(self.theirs.wait(), timeout=5)
        except TimeoutError:
            return Review(False, self.name, "ran alone")
        return Review(True, self.name, "ran beside the other")


class Reader:
    """A reviewer that reads the verdicts before it, like the BRT relevance judge."""

    independent = False

    def __init__(self, name: str, accept: bool = True) -> None:
        self.name, self.accept = name, accept
        self.prior_seen: tuple[str, ...] = ()

    async def review(self, subject: ReviewSubject, env: ReviewEnv) -> Review:
        self.prior_seen = tuple(r.reviewer for r in subject.prior)
        return Review(self.accept, self.name, "read")


def env(tmp_path: Path) -> ReviewEnv:
    """A review env the fake reviewers never use."""
    return ReviewEnv(tmp_path, tmp_path, None, None, None)  # type: ignore[arg-type]


async def test_independent_reviewers_overlap_and_dependents_see_every_earlier_verdict(tmp_path: Path) -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()
    gate = Reader("smell")
    a, b = Rendezvous("build-test", a_started, b_started), Rendezvous("brt", b_started, a_started)
    judge = Reader("brt-relevance")
    reviews = await review_patch(ReviewSubject(make_record("p", DIFF)), env(tmp_path), [gate, a, b, judge])
    assert [(r.reviewer, r.accepted) for r in reviews] == [
        ("smell", True),
        ("build-test", True),
        ("brt", True),
        ("brt-relevance", True),
    ]
    assert a.prior_seen == b.prior_seen == ("smell",)
    assert judge.prior_seen == ("smell", "build-test", "brt")


async def test_a_smell_rejection_stops_before_the_sandboxed_reviewers(tmp_path: Path) -> None:
    a = Rendezvous("build-test", asyncio.Event(), asyncio.Event())
    reviews = await review_patch(ReviewSubject(make_record("p", DIFF)), env(tmp_path), [Reader("smell", False), a])
    assert [r.reviewer for r in reviews] == ["smell"] and a.prior_seen == ()

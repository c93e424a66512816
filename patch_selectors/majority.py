"""When a job's vote is settled: the leading fix has more votes than any other fix could still reach.

The selectors group patches by their normalized fix and the largest group wins (patch_selectors.selectors).
Once the finished trajectories' leading fix leads the next one by more than the trajectories still to
finish, no outcome of those can change the vote, so a job may stop them (REPROBOT_EARLY_STOP).
"""

from __future__ import annotations

from collections import Counter

from patch_selectors.records import make_record


class MajorityWatch:
    """Tallies finished trajectories by their fix; `settled` once the vote cannot change."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0
        self.votes: Counter[str] = Counter()

    def finish(self, fixed: bool, diff: str) -> None:
        """Count one finished trajectory: a vote for its fix when it validated one, else no vote."""
        self.finished += 1
        if fixed and diff:
            self.votes[make_record("vote", diff).fix_hash] += 1

    @property
    def remaining(self) -> int:
        """Trajectories not finished yet."""
        return max(0, self.total - self.finished)

    @property
    def settled(self) -> bool:
        """True when the leading fix wins however the remaining trajectories end (a tie is not settled)."""
        if self.remaining == 0:
            return False  # nothing left to stop
        ranked = self.votes.most_common(2)
        lead = ranked[0][1] if ranked else 0
        runner_up = ranked[1][1] if len(ranked) > 1 else 0
        return lead > runner_up + self.remaining

    def describe(self) -> str:
        """Why the remaining trajectories were stopped, for their trajectory and the job's log."""
        lead = self.votes.most_common(1)[0][1] if self.votes else 0
        return (
            f"stopped early: {lead} of {self.finished} finished trajectories agree on one fix, and the "
            f"{self.remaining} still running or waiting cannot change the vote"
        )

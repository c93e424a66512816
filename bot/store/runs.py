"""What a job's run leaves: trajectories and their steps, candidate patches, reviews, selections, LLM cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.store.base import StoreConnection
from bot.store.rows import PatchRow, ReviewRow, SelectionRow, StepRow, TrajectoryRow
from bot.store.sql import dumps


class Runs:
    """Trajectories, steps, patches, reviews and selections (`store.runs`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    # -- trajectories and steps -------------------------------------------------------------------------

    def start_trajectory(self, job_id: int | None, agent: str, strategy: str, seed: int = 0) -> int:
        """Open a trajectory in status 'running'; returns its id."""
        row = {"job_id": job_id, "agent": agent, "strategy": strategy, "seed": seed}
        return self._conn.insert("trajectories", row | {"created_at": self._conn.now()})

    def add_step(self, trajectory_id: int, kind: str, content: Any) -> int:
        """Append a step (content: any JSON value) and return its index; concurrent appends stay ordered."""
        with self._conn.write() as db:
            rows = list(db.query("SELECT steps FROM trajectories WHERE id = ?", (trajectory_id,)))
            if not rows:
                raise KeyError(f"no trajectory {trajectory_id}")
            idx = int(rows[0]["steps"])
            db.execute(
                "INSERT INTO steps (trajectory_id, idx, kind, content, created_at) VALUES (?, ?, ?, ?, ?)",
                (trajectory_id, idx, kind, dumps(content), self._conn.now()),
            )
            db.execute("UPDATE trajectories SET steps = ? WHERE id = ?", (idx + 1, trajectory_id))
            return idx

    def llm_cost_since(self, since: str, *, issue_id: int | None = None) -> float:
        """USD spent by finished trajectories created at or after `since` (ISO), optionally for one issue."""
        sql = """SELECT COALESCE(SUM(t.cost), 0) AS spent FROM trajectories t LEFT JOIN jobs j ON j.id = t.job_id
            WHERE t.created_at >= :since AND (:issue_id IS NULL OR j.issue_id = :issue_id)"""
        return float(self._conn.rows(sql, {"since": since, "issue_id": issue_id})[0]["spent"])

    def get_steps(self, trajectory_id: int) -> list[StepRow]:
        """Every step of the trajectory, in the order it was recorded."""
        return self._conn.all(StepRow, "SELECT * FROM steps WHERE trajectory_id = ? ORDER BY idx", (trajectory_id,))

    def finish_trajectory(
        self,
        trajectory_id: int,
        status: str,
        *,
        seconds: float = 0.0,
        tokens: int = 0,
        cost: float = 0.0,
        error: str | None = None,
    ) -> None:
        """Close a trajectory with its totals (status e.g. 'done', 'failed', 'timeout')."""
        with self._conn.write() as db:
            db.execute(
                """UPDATE trajectories SET status = ?, seconds = ?, tokens = ?, cost = ?, error = ?,
                    finished_at = ? WHERE id = ?""",
                (status, seconds, tokens, cost, error, self._conn.now(), trajectory_id),
            )

    def get_trajectory(self, trajectory_id: int) -> TrajectoryRow | None:
        """The trajectory with this id, if any."""
        return self._conn.one(TrajectoryRow, "SELECT * FROM trajectories WHERE id = ?", (trajectory_id,))

    def list_trajectories(self, job_id: int) -> list[TrajectoryRow]:
        """The job's trajectories in creation order."""
        return self._conn.all(TrajectoryRow, "SELECT * FROM trajectories WHERE job_id = ? ORDER BY id", (job_id,))

    # -- patches, reviews, selections -------------------------------------------------------------------

    def add_patch(
        self,
        job_id: int | None,
        trajectory_id: int | None,
        diff: str,
        *,
        fix_hash: str,
        has_test: bool,
        fix_lines: int,
        total_lines: int,
    ) -> int:
        """Record a candidate patch; returns its id."""
        row = {"job_id": job_id, "trajectory_id": trajectory_id, "diff": diff, "fix_hash": fix_hash}
        row |= {"has_test": int(has_test), "fix_lines": fix_lines, "total_lines": total_lines}
        return self._conn.insert("patches", row | {"created_at": self._conn.now()})

    def get_patch(self, patch_id: int) -> PatchRow | None:
        """The patch with this id, if any."""
        return self._conn.one(PatchRow, "SELECT * FROM patches WHERE id = ?", (patch_id,))

    def list_patches(self, job_id: int) -> list[PatchRow]:
        """The job's patches in creation order."""
        return self._conn.all(PatchRow, "SELECT * FROM patches WHERE job_id = ? ORDER BY id", (job_id,))

    def add_review(
        self,
        patch_id: int,
        reviewer: str,
        accepted: bool,
        reason: str = "",
        evidence: Mapping[str, Any] | None = None,
    ) -> int:
        """Record one reviewer's verdict on a patch; returns its id."""
        row = {"patch_id": patch_id, "reviewer": reviewer, "accepted": int(accepted), "reason": reason}
        row |= {"evidence": dumps(dict(evidence or {})), "created_at": self._conn.now()}
        return self._conn.insert("reviews", row)

    def get_reviews(self, patch_id: int) -> list[ReviewRow]:
        """The patch's reviews in the order they were recorded."""
        return self._conn.all(ReviewRow, "SELECT * FROM reviews WHERE patch_id = ? ORDER BY id", (patch_id,))

    def add_selection(
        self, job_id: int | None, selector: str, patch_id: int | None, explanation: str, groups: list[Any]
    ) -> int:
        """Record a selector's choice (patch_id None: chose nothing) and the groups it saw; returns its id."""
        row = {"job_id": job_id, "selector": selector, "patch_id": patch_id, "explanation": explanation}
        return self._conn.insert("selections", row | {"groups": dumps(groups), "created_at": self._conn.now()})

    def get_selections(self, job_id: int) -> list[SelectionRow]:
        """The job's selections in the order they were recorded."""
        return self._conn.all(SelectionRow, "SELECT * FROM selections WHERE job_id = ? ORDER BY id", (job_id,))

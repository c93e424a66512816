"""Issues, what was published for them, GitHub App installations and how our pull requests ended."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from bot.store.base import StoreConnection
from bot.store.plans import PlannedAction
from bot.store.rows import InstallationRow, IssueRow, PrOutcomeRow, PublicationRow
from bot.store.schema import FORGES, PUBLICATION_KINDS
from bot.store.sql import check_choice, dumps

_UPSERT_INSTALLATION = """INSERT INTO installations (installation_id, account, repos, created_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account,
        repos = excluded.repos, removed_at = NULL"""
_REMOVE_INSTALLATION = "UPDATE installations SET removed_at = ? WHERE installation_id = ?"
_RECORD_PR_OUTCOME = """INSERT INTO pr_outcomes (repo, pr_number, merged, closed_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (repo, pr_number) DO UPDATE SET merged = excluded.merged, closed_at = excluded.closed_at"""


def apply_action(conn: sqlite3.Connection, now: str, action: PlannedAction) -> None:
    """Do one planned bookkeeping write inside the caller's transaction (a delivery's commit)."""
    args = action.args
    if action.kind == "installation":
        conn.execute(_UPSERT_INSTALLATION, (int(args["installation_id"]), args["account"], dumps(args["repos"]), now))
    elif action.kind == "installation_removed":
        conn.execute(_REMOVE_INSTALLATION, (now, int(args["installation_id"])))
    elif action.kind == "pr_outcome":
        params = (args["repo"], int(args["pr_number"]), int(bool(args["merged"])), args.get("closed_at") or now)
        conn.execute(_RECORD_PR_OUTCOME, params)
    else:
        raise ValueError(f"unknown planned action {action.kind!r}")


class Publications:
    """Issues and their publications, installations and PR outcomes (`store.publications`)."""

    def __init__(self, conn: StoreConnection) -> None:
        """Use the store's shared connection."""
        self._conn = conn

    # -- issues -----------------------------------------------------------------------------------------

    def upsert_issue(
        self,
        forge: str,
        repo: str,
        number_or_key: str,
        *,
        title: str = "",
        body: str = "",
        url: str | None = None,
    ) -> IssueRow:
        """Insert the issue, or refresh title, body and url; (forge, repo, number_or_key) is its identity."""
        check_choice(forge, FORGES, "forge")
        key = str(number_or_key)
        params: dict[str, Any] = {"forge": forge, "repo": repo, "key": key, "title": title, "body": body}
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO issues (forge, repo, number_or_key, title, body, url, created_at, updated_at)
                VALUES (:forge, :repo, :key, :title, :body, :url, :now, :now)
                ON CONFLICT (forge, repo, number_or_key) DO UPDATE SET title = excluded.title,
                    body = excluded.body, url = excluded.url, updated_at = excluded.updated_at""",
                params | {"url": url, "now": self._conn.now()},
            )
            issue = self.find_issue(forge, repo, key)
        assert issue is not None  # written in the same transaction
        return issue

    def get_issue(self, issue_id: int) -> IssueRow | None:
        """The issue with this id, if any."""
        return self._conn.one(IssueRow, "SELECT * FROM issues WHERE id = ?", (issue_id,))

    def find_issue(self, forge: str, repo: str, number_or_key: str) -> IssueRow | None:
        """The issue with this identity, if any."""
        sql = "SELECT * FROM issues WHERE forge = ? AND repo = ? AND number_or_key = ?"
        return self._conn.one(IssueRow, sql, (forge, repo, str(number_or_key)))

    # -- publications -----------------------------------------------------------------------------------

    def upsert_publication(
        self,
        issue_id: int,
        kind: str,
        forge_ref: str,
        *,
        body_hash: str | None = None,
        job_id: int | None = None,
    ) -> PublicationRow:
        """Record what was posted for (issue, kind), replacing the previous record; created_at is kept."""
        check_choice(kind, PUBLICATION_KINDS, "publication kind")
        params = {"job": job_id, "issue": issue_id, "kind": kind, "ref": forge_ref, "hash": body_hash}
        with self._conn.write() as db:
            db.execute(
                """INSERT INTO publications
                    (job_id, issue_id, kind, forge_ref, body_hash, created_at, updated_at)
                VALUES (:job, :issue, :kind, :ref, :hash, :now, :now)
                ON CONFLICT (issue_id, kind) DO UPDATE SET job_id = COALESCE(excluded.job_id, publications.job_id),
                    forge_ref = excluded.forge_ref, body_hash = excluded.body_hash,
                    updated_at = excluded.updated_at""",
                params | {"now": self._conn.now()},
            )
            publication = self.get_publication(issue_id, kind)
        assert publication is not None  # written in the same transaction
        return publication

    def get_publication(self, issue_id: int, kind: str) -> PublicationRow | None:
        """What was posted for (issue, kind), if anything."""
        sql = "SELECT * FROM publications WHERE issue_id = ? AND kind = ?"
        return self._conn.one(PublicationRow, sql, (issue_id, kind))

    # -- installations and PR outcomes (webhooks write these through PlannedAction) ---------------------

    def upsert_installation(self, installation_id: int, account: str, repos: list[str]) -> None:
        """Record (or revive) a GitHub App installation and its repositories."""
        args: Mapping[str, Any] = {"installation_id": installation_id, "account": account, "repos": repos}
        self._apply(PlannedAction("installation", args))

    def remove_installation(self, installation_id: int) -> None:
        """Mark an installation as removed; its row is kept for history."""
        self._apply(PlannedAction("installation_removed", {"installation_id": installation_id}))

    def get_installation(self, installation_id: int) -> InstallationRow | None:
        """The installation with this id, if any."""
        sql = "SELECT * FROM installations WHERE installation_id = ?"
        return self._conn.one(InstallationRow, sql, (installation_id,))

    def record_pr_outcome(self, repo: str, pr_number: int, merged: bool, closed_at: str | None = None) -> None:
        """Record how one of our pull requests ended (the latest report wins); closed_at defaults to now."""
        args = {"repo": repo, "pr_number": pr_number, "merged": merged, "closed_at": closed_at}
        self._apply(PlannedAction("pr_outcome", args))

    def get_pr_outcome(self, repo: str, pr_number: int) -> PrOutcomeRow | None:
        """The recorded outcome of a pull request, if any."""
        sql = "SELECT * FROM pr_outcomes WHERE repo = ? AND pr_number = ?"
        return self._conn.one(PrOutcomeRow, sql, (repo, pr_number))

    def _apply(self, action: PlannedAction) -> None:
        with self._conn.write() as db:
            apply_action(db.conn, self._conn.now(), action)

"""What the job core needs from a forge (GitHub, a local repo, later Jira or a self-hosted runner).

A forge is an I/O point only: it reads and writes the forge, never the store. Idempotency (what was already posted,
keyed by issue and kind) is decided by bot/jobs/publish.py, which passes back what it recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

#: Kinds of status comment: one per kind and issue, each edited in place, so a later job never erases another's.
STATUS_KINDS = ("fix", "reproduce", "policy")


class PermanentJobError(RuntimeError):
    """The job can never succeed (bad payload, unknown kind): dead-letter it without retrying."""


@dataclass(frozen=True)
class ChangeRequest:
    """The change request (a pull request, or a local branch) reprobot opened or updated."""

    number: int
    url: str
    created: bool

    @property
    def ref(self) -> str:
        """How the store records it: the forge's number, or the URL/branch when the forge has no numbers."""
        return str(self.number) if self.number else self.url


class Forge(Protocol):
    """One repository and one issue on a forge, as the publish module drives it.

    The change request is linked to its issue by its body (a closing keyword or a reference to the issue) and by the
    status comment that names it; neither needs an operation of its own.
    """

    @property
    def ref(self) -> str:
        """The issue as a PR body or comment names it (`#12`, `issue my-bug`)."""
        ...

    @property
    def issue_slug(self) -> str:
        """The issue's short name in branch names (`12`, `my-bug`)."""
        ...

    @property
    def repo_name(self) -> str:
        """The repository as the policy loader names it (`owner/name`, or a local path)."""
        ...

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file's text on the default branch (the policy file); None when it does not exist."""
        ...

    async def get_issue(self) -> dict[str, Any]:
        """The issue now: at least `title` and `body`."""
        ...

    async def default_branch(self) -> str:
        """The branch a fix is based on."""
        ...

    async def clone(self, dest: Path, branch: str) -> Path:
        """A checkout of `branch` (or a commit) in `dest`."""
        ...

    async def permission(self, username: str) -> str:
        """The actor's permission on the repository (admin, write, read, none)."""
        ...

    async def react(self, comment_id: int | None, content: str) -> None:
        """Acknowledge a command comment (or the issue when comment_id is None)."""
        ...

    async def upsert_status(self, kind: str, body: str, known: str | None = None) -> str:
        """Create or update the issue's status comment of `kind`; `known` is the one recorded last. Returns its ref."""
        ...

    async def reply_once(self, key: str, body: str) -> int:
        """Post a reply tagged with `key` unless one with the same key is already there; returns its id."""
        ...

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit `diff` on `branch` from base_commit and push it; returns the commit."""
        ...

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
        """Open the change request for `branch`, or update the open one."""
        ...

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT, from the pushed branch when there is one."""
        ...


class CodeForge(Protocol):
    """The code side of a forge whose issues live elsewhere (a Jira issue's mapped repository).

    GitHubForge and GitRemoteForge provide it; the Jira forge delegates clone, push and the change request to it.
    """

    @property
    def repo_name(self) -> str:
        """The repository as the policy loader names it."""
        ...

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file's text on the default branch; None when it does not exist."""
        ...

    async def default_branch(self) -> str:
        """The branch a fix is based on."""
        ...

    async def clone(self, dest: Path, branch: str) -> Path:
        """A checkout of `branch` in `dest`."""
        ...

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit `diff` on `branch` from base_commit and push it; returns the commit."""
        ...

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
        """Open the change request for `branch`, or update the open one."""
        ...

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT."""
        ...

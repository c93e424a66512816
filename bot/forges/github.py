"""The GitHub forge: reactions, one status comment edited in place, branch push over HTTPS, one PR per issue."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from bot.store import Store
from sandboxes.text import clean_commit_message, clean_title
from sandboxes.workspace import SAFE_GIT, GitError, apply_patch, git

log = logging.getLogger(__name__)

#: Any comment reprobot posted about an issue starts with a marker like `<!-- reprobot:kind:#12 -->`.
_MARKER = re.compile(r"<!-- reprobot:[a-z_-]+:(?P<ref>[^ ]+) -->")
#: PR titles are cut to this length (GitHub accepts 256; a readable one is shorter).
PR_TITLE_LIMIT = 120


async def collaborator_permission(gh: GitHubAPI, repo: str, username: str) -> str:
    """A user's collaborator permission on `repo` (admin, write, read, none); none when not a collaborator."""
    try:
        data = await gh.getitem(f"/repos/{repo}/collaborators/{username}/permission")
    except BadRequest as exc:
        if exc.status_code == 404:
            return "none"
        raise
    return str(data.get("permission", "none"))


@dataclass(frozen=True)
class PullRequest:
    """The PR reprobot opened or updated."""

    number: int
    url: str
    created: bool


class GitHubForge:
    """One repo and issue on GitHub, seen through an installation token; every publish is idempotent."""

    def __init__(
        self,
        gh: GitHubAPI,
        repo: str,
        number: int,
        *,
        token: str,
        git_url: str,
        store: Store,
        issue_id: int,
        job_id: int | None = None,
    ) -> None:
        self.gh = gh
        self.repo = repo
        self.number = number
        self._token = token
        self.git_url = git_url.rstrip("/")
        self.store = store
        self.issue_id = issue_id
        self.job_id = job_id

    @property
    def ref(self) -> str:
        """The issue as a PR body or comment names it."""
        return f"#{self.number}"

    # -- REST ---------------------------------------------------------------------------------------------

    async def get_issue(self) -> dict[str, Any]:
        """The issue as GitHub has it now (title, body, state)."""
        return dict(await self.gh.getitem(f"/repos/{self.repo}/issues/{self.number}"))

    async def repo_info(self) -> dict[str, Any]:
        """The repository (default branch, clone URL)."""
        return dict(await self.gh.getitem(f"/repos/{self.repo}"))

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file's text from the default branch through the contents API; None when it does not exist."""
        try:
            data = await self.gh.getitem(f"/repos/{repo}/contents/{path}")
        except BadRequest as exc:
            if exc.status_code == 404:
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        return base64.b64decode(data.get("content") or "").decode("utf-8", "replace")

    async def permission(self, username: str) -> str:
        """The user's collaborator permission (admin, write, read, none)."""
        return await collaborator_permission(self.gh, self.repo, username)

    async def react(self, comment_id: int | None, content: str) -> None:
        """Add a reaction to a command comment (or to the issue when comment_id is None); repeats are no-ops."""
        if comment_id is None:
            url = f"/repos/{self.repo}/issues/{self.number}/reactions"
        else:
            url = f"/repos/{self.repo}/issues/comments/{comment_id}/reactions"
        await self.gh.post(url, data={"content": content})

    async def _find_status_comment(self) -> int | None:
        pub = await asyncio.to_thread(self.store.publications.get_publication, self.issue_id, "comment")
        if pub is not None:
            return int(pub.forge_ref)
        url = f"/repos/{self.repo}/issues/{self.number}/comments"
        async for comment in self.gh.getiter(url + "{?per_page}", {"per_page": 100}):
            match = _MARKER.match(str(comment.get("body") or ""))
            if match and match.group("ref") == self.ref and comment.get("user", {}).get("type") == "Bot":
                return int(comment["id"])
        return None

    async def reply_once(self, key: str, body: str) -> int:
        """Post a reply comment tagged with `key`, unless a retry of the same job already posted it.

        The hidden tag is looked for on the issue before posting, so a worker killed between posting and
        recording the job's end does not post the reply twice when the job is taken over.
        """
        tag = f"<!-- reprobot:reply:{key} -->"
        url = f"/repos/{self.repo}/issues/{self.number}/comments"
        async for comment in self.gh.getiter(url + "{?per_page}", {"per_page": 100}):
            if str(comment.get("body") or "").startswith(tag) and comment.get("user", {}).get("type") == "Bot":
                return int(comment["id"])
        made = await self.gh.post(url, data={"body": f"{tag}\n{body}"})
        return int(made["id"])

    async def upsert_comment(self, body: str) -> int:
        """Post the issue's one reprobot comment, or edit it in place if it exists; returns its id."""
        digest = hashlib.sha256(body.encode()).hexdigest()
        comment_id = await self._find_status_comment()
        if comment_id is not None:
            pub = await asyncio.to_thread(self.store.publications.get_publication, self.issue_id, "comment")
            if pub is None or pub.body_hash != digest:
                try:
                    await self.gh.patch(f"/repos/{self.repo}/issues/comments/{comment_id}", data={"body": body})
                except BadRequest as exc:
                    if exc.status_code != 404:
                        raise
                    comment_id = None  # deleted by a person: post a new one
        if comment_id is None:
            made = await self.gh.post(f"/repos/{self.repo}/issues/{self.number}/comments", data={"body": body})
            comment_id = int(made["id"])
        await asyncio.to_thread(
            self.store.publications.upsert_publication,
            self.issue_id,
            "comment",
            str(comment_id),
            body_hash=digest,
            job_id=self.job_id,
        )
        return comment_id

    async def open_or_update_pr(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> PullRequest:
        """Open the PR for `branch`, or update the open one; never a second PR for the same branch."""
        title = clean_title(title, PR_TITLE_LIMIT)
        owner = self.repo.split("/", 1)[0]
        existing: dict[str, Any] | None = None
        url = f"/repos/{self.repo}/pulls" + "{?state,head,per_page}"
        async for pr in self.gh.getiter(url, {"state": "open", "head": f"{owner}:{branch}", "per_page": 100}):
            existing = pr
            break
        if existing is not None:
            number = int(existing["number"])
            await self.gh.patch(f"/repos/{self.repo}/pulls/{number}", data={"title": title, "body": body})
            made, created = existing, False
        else:
            data = {"title": title, "head": branch, "base": base, "body": body, "draft": draft}
            made, created = await self.gh.post(f"/repos/{self.repo}/pulls", data=data), True
            number = int(made["number"])
        if labels:
            await self.gh.post(f"/repos/{self.repo}/issues/{number}/labels", data={"labels": labels})
        await self._record("pr", str(number))
        return PullRequest(number, str(made.get("html_url", "")), created)

    async def _record(self, kind: str, forge_ref: str) -> None:
        """Record a publication of this job, on a thread: the store may wait for its write lock."""
        await asyncio.to_thread(
            self.store.publications.upsert_publication, self.issue_id, kind, forge_ref, job_id=self.job_id
        )

    # -- git over HTTPS -----------------------------------------------------------------------------------

    @property
    def clone_url(self) -> str:
        """The HTTPS URL of the repo, without credentials."""
        return f"{self.git_url}/{self.repo}.git"

    def _auth_env(self) -> dict[str, str]:
        # The token travels in an environment-provided http.extraHeader: never in argv, .git/config or a URL.
        basic = base64.b64encode(f"x-access-token:{self._token}".encode()).decode()
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }

    async def _git_remote(self, cwd: Path, *args: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            *SAFE_GIT,
            *args,
            cwd=str(cwd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._auth_env(),
        )
        _out, err = await proc.communicate()
        if proc.returncode != 0:
            message = err.decode("utf-8", "replace").replace(self._token, "***").strip()
            raise GitError(f"git {args[0]} {self.clone_url} failed: {message}")

    async def clone(self, dest: Path, branch: str) -> Path:
        """Clone `branch` of the repo into `dest` (a plain local checkout the pipeline clones again)."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        await self._git_remote(dest.parent, "clone", "--quiet", "--branch", branch, self.clone_url, str(dest))
        return dest

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit `diff` on `branch` from base_commit in `workspace` and force-push it; returns the commit."""
        await git(workspace, "checkout", "--quiet", "-B", branch, base_commit)
        await apply_patch(workspace, diff)
        await git(workspace, "add", "--all")
        await git(workspace, "commit", "--quiet", "--no-verify", "-m", clean_commit_message(message))
        await self._git_remote(workspace, "push", "--quiet", "--force", self.clone_url, f"{branch}:refs/heads/{branch}")
        await self._record("branch", branch)
        return (await git(workspace, "rev-parse", "HEAD")).stdout.strip()

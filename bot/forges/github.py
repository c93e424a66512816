"""The GitHub forge: reactions, status comments by kind edited in place, branch push over HTTPS, one PR per issue."""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
from gidgethub import BadRequest, InvalidField, ValidationError
from gidgethub.abc import GitHubAPI

from bot.forges.base import ChangeRequest, PermanentJobError
from bot.forges.git import remote_git
from bot.forges.github_client import InstallationTokens, client
from bot.settings.config import Settings
from sandboxes.text import clean_commit_message, clean_title
from sandboxes.workspace import apply_patch, git

log = logging.getLogger(__name__)

#: A status comment starts with this line, so it is found again by kind when the store lost its record.
STATUS_MARKER = "<!-- reprobot:status-{kind}:{ref} -->"
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


#: The change request GitHub opens is a pull request.
PullRequest = ChangeRequest


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
    ) -> None:
        self.gh = gh
        self.repo = repo
        self.number = number
        self._token = token
        self.git_url = git_url.rstrip("/")

    @property
    def ref(self) -> str:
        """The issue as a PR body or comment names it."""
        return f"#{self.number}"

    @property
    def issue_slug(self) -> str:
        """The issue's number, as branch names carry it."""
        return str(self.number)

    @property
    def repo_name(self) -> str:
        """`owner/name`, as the policy loader and the contents API name it."""
        return self.repo

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT: from the PR's branch when there is one."""
        fetch = f"git fetch origin {branch} && git checkout FETCH_HEAD\n" if branch else ""
        return f"{fetch}python -m pytest -q {brt_path}"

    # -- REST ---------------------------------------------------------------------------------------------

    async def get_issue(self) -> dict[str, Any]:
        """The issue as GitHub has it now (title, body, state)."""
        return dict(await self.gh.getitem(f"/repos/{self.repo}/issues/{self.number}"))

    async def repo_info(self) -> dict[str, Any]:
        """The repository (default branch, clone URL)."""
        return dict(await self.gh.getitem(f"/repos/{self.repo}"))

    async def default_branch(self) -> str:
        """The repository's default branch (main when GitHub does not say)."""
        return str((await self.repo_info()).get("default_branch") or "main")

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

    async def _find_status_comment(self, marker: str) -> int | None:
        url = f"/repos/{self.repo}/issues/{self.number}/comments"
        async for comment in self.gh.getiter(url + "{?per_page}", {"per_page": 100}):
            body = str(comment.get("body") or "")
            if body.startswith(marker) and comment.get("user", {}).get("type") == "Bot":
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

    async def upsert_status(self, kind: str, body: str, known: str | None = None) -> str:
        """Edit the status comment of `kind` in place, or post it; returns its id.

        `known` is the comment recorded last; without one, the comment is found by its marker (a store that lost
        its row must not make a second comment). A comment a person deleted is posted again.
        """
        marker = STATUS_MARKER.format(kind=kind, ref=self.ref)
        text = f"{marker}\n{body}"
        comment_id = int(known) if known else await self._find_status_comment(marker)
        if comment_id is not None:
            try:
                await self.gh.patch(f"/repos/{self.repo}/issues/comments/{comment_id}", data={"body": text})
            except BadRequest as exc:
                if exc.status_code != 404:
                    raise
                comment_id = None
        if comment_id is None:
            made = await self.gh.post(f"/repos/{self.repo}/issues/{self.number}/comments", data={"body": text})
            comment_id = int(made["id"])
        return str(comment_id)

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
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
        return ChangeRequest(number, str(made.get("html_url", "")), created)

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
        await remote_git(
            cwd, args, env=self._auth_env(), remote=self.clone_url, scrub=lambda text: text.replace(self._token, "***")
        )

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
        return (await git(workspace, "rev-parse", "HEAD")).stdout.strip()


async def forge_for_job(
    job_id: int,
    payload: Mapping[str, Any],
    settings: Settings,
    session: aiohttp.ClientSession,
    tokens: InstallationTokens,
) -> GitHubForge:
    """The forge a `github.*` job publishes to (repo and issue from its payload), through its installation's token."""
    try:
        installation, repo, number = int(payload["installation_id"]), str(payload["repo"]), int(payload["number"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PermanentJobError(f"job {job_id} payload is missing {exc}") from None
    token = await tokens.token(session, installation)
    return GitHubForge(client(session, settings, token), repo, number, token=token, git_url=settings.github_git_url)


#: The trigger labels' look on GitHub: (policy key, colour, description).
TRIGGER_LABELS = (
    ("fix", "0e8a16", "reprobot: fix this bug report (a branch with the fix and a bug reproduction test)"),
    ("reproduce", "1d76db", "reprobot: reproduce this bug report (a failing test and how to run it)"),
)


async def ensure_label(gh: GitHubAPI, repo: str, name: str, color: str, description: str) -> bool:
    """Create label `name` on `repo`; False when it exists already (GitHub's 422 `already_exists`): idempotent."""
    try:
        await gh.post(f"/repos/{repo}/labels", data={"name": name, "color": color, "description": description})
    except (InvalidField, ValidationError) as exc:
        if any(isinstance(e, dict) and e.get("code") == "already_exists" for e in exc.errors or []):
            return False
        raise
    return True


async def create_trigger_labels(
    job_id: int,
    payload: Mapping[str, Any],
    settings: Settings,
    session: aiohttp.ClientSession,
    tokens: InstallationTokens,
) -> dict[str, Any]:
    """The `github.labels` job: the repo's trigger labels (its policy's names), created once on installation."""
    from bot.settings.policy import PolicyError, effective_policy, load_policy_model

    try:
        installation, repo = int(payload["installation_id"]), str(payload["repo"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PermanentJobError(f"job {job_id} payload is missing {exc}") from None
    token = await tokens.token(session, installation)
    gh = client(session, settings, token)
    forge = GitHubForge(gh, repo, 0, token=token, git_url=settings.github_git_url)
    try:
        policy = await load_policy_model(forge.fetch_file, repo)
    except PolicyError as exc:
        # A broken policy file gets its own comment on the first job; the labels still help, by their defaults.
        log.warning("job %s: %s policy unreadable (%s); creating the default trigger labels", job_id, repo, exc.key)
        policy = effective_policy(None)
    names = {"fix": policy.triggers.labels.fix, "reproduce": policy.triggers.labels.reproduce}
    created: list[str] = []
    existed: list[str] = []
    for key, color, description in TRIGGER_LABELS:
        made = await ensure_label(gh, repo, names[key], color, description)
        (created if made else existed).append(names[key])
    log.info("job %s: %s trigger labels created %s, already there %s", job_id, repo, created, existed)
    return {"status": "done", "created": created, "existed": existed}

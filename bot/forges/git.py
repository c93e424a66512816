"""The code side on any git URL: clone and push over git itself, with a credential from settings; no PRs.

A plain git server has no change requests: the fix is a pushed branch, and the Jira status comment names it.
The credential travels in an environment-provided `http.extraHeader` (never in argv, a URL or .git/config), and git
runs with a scrubbed environment, hooks off.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bot.forges.base import ChangeRequest
from sandboxes.text import clean_commit_message
from sandboxes.workspace import SAFE_GIT, GitError, apply_patch, git

__all__ = ["GitRemoteForge", "remote_git"]


async def remote_git(
    cwd: Path, args: Sequence[str], *, env: dict[str, str], remote: str, scrub: Callable[[str], str]
) -> None:
    """Run a git command that talks to `remote` (clone, fetch, push) with a forge's credential in `env`.

    GitError with git's own words when it fails, passed through `scrub` first: they may quote the credential.
    """
    proc = await asyncio.create_subprocess_exec(
        *SAFE_GIT,
        *args,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _out, err = await proc.communicate()
    if proc.returncode != 0:
        message = scrub(err.decode("utf-8", "replace")).strip()
        raise GitError(f"git {args[0]} {remote} failed: {message}")


class GitRemoteForge:
    """One repository at a git URL (https, ssh or file), its base branch, and an optional `user:token` credential."""

    def __init__(self, url: str, *, branch: str = "main", credential: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.username or parts.password:
            raise ValueError("the git URL must not carry credentials; name a credential in the mapping instead")
        self.url = url
        self.branch = branch
        self._credential = credential
        self._policy_checkout: Path | None = None

    @property
    def repo_name(self) -> str:
        """The URL without a query or fragment."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT: from the pushed branch when there is one."""
        fetch = f"git fetch {self.repo_name} {branch} && git checkout FETCH_HEAD\n" if branch else ""
        return f"{fetch}python -m pytest -q {brt_path}"

    def _env(self) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_COUNT": "1",
            # A file:// remote is a deployment's own choice of a repository on disk.
            "GIT_CONFIG_KEY_0": "protocol.file.allow",
            "GIT_CONFIG_VALUE_0": "always",
        }
        if self._credential:
            user, sep, _token = self._credential.partition(":")
            pair = self._credential if sep else f"git:{user}"
            basic = base64.b64encode(pair.encode()).decode()
            env |= {
                "GIT_CONFIG_COUNT": "2",
                "GIT_CONFIG_KEY_1": "http.extraHeader",
                "GIT_CONFIG_VALUE_1": f"Authorization: Basic {basic}",
            }
        return env

    def _scrub(self, text: str) -> str:
        if self._credential:
            for secret in {self._credential, self._credential.rpartition(":")[2]}:
                text = text.replace(secret, "***")
        return text

    async def _remote(self, cwd: Path, *args: str) -> None:
        await remote_git(cwd, args, env=self._env(), remote=self.repo_name, scrub=self._scrub)

    async def default_branch(self) -> str:
        """The base branch the mapping names."""
        return self.branch

    async def clone(self, dest: Path, branch: str) -> Path:
        """Clone `branch` into `dest`."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        await self._remote(dest.parent, "clone", "--quiet", "--branch", branch, "--", self.url, str(dest))
        return dest

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file of the base branch, read from a shallow clone kept for this forge's life."""
        if self._policy_checkout is None:
            tmp = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="reprobot-policy-"))
            try:
                await self._remote(
                    tmp, "clone", "--quiet", "--depth", "1", "--no-checkout", "--branch", self.branch, "--",
                    self.url, str(tmp / "repo"),
                )  # fmt: skip
            except GitError:
                await asyncio.to_thread(shutil.rmtree, tmp, True)
                raise
            self._policy_checkout = tmp / "repo"
        shown = await git(self._policy_checkout, "show", f"HEAD:{path}", check=False)
        return shown.stdout if shown.code == 0 else None

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit `diff` on `branch` from base_commit and force-push it; returns the commit."""
        await git(workspace, "checkout", "--quiet", "-B", branch, base_commit)
        await apply_patch(workspace, diff)
        await git(workspace, "add", "--all")
        await git(workspace, "commit", "--quiet", "--no-verify", "-m", clean_commit_message(message))
        await self._remote(workspace, "push", "--quiet", "--force", self.url, f"{branch}:refs/heads/{branch}")
        return (await git(workspace, "rev-parse", "HEAD")).stdout.strip()

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
        """No change requests on a plain git server: the pushed branch stands for one (number 0)."""
        return ChangeRequest(0, f"{branch} on {self.repo_name}", True)

    def close(self) -> None:
        """Drop the shallow clone used for reading files."""
        if self._policy_checkout is not None:
            shutil.rmtree(self._policy_checkout.parent, ignore_errors=True)
            self._policy_checkout = None

"""The local forge: a git repo on disk, issues as markdown files, results as a branch plus files."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.forges.base import ChangeRequest
from sandboxes.text import clean_commit_message, clean_title
from sandboxes.workspace import GitError, apply_patch, clone_workspace, git, head_commit


class ForgeError(Exception):
    """Bad input at the forge boundary; `code` is the CLI exit code for it."""

    code = 1


class RepoNotFound(ForgeError):
    """The repo path does not exist."""

    code = 4


class NotAGitRepo(ForgeError):
    """The path exists but is not a git work tree (or has no commit)."""

    code = 4


class DirtyTree(ForgeError):
    """The work tree has uncommitted changes and --allow-dirty was not given."""

    code = 5


class BadIssueFile(ForgeError):
    """The issue file is missing, empty, binary or not text."""

    code = 6


class PublishError(ForgeError):
    """The branch could not be created in the target repo."""

    code = 8


@dataclass(frozen=True)
class LocalIssue:
    """An issue read from a markdown file: `# title` on the first line, then the body."""

    slug: str
    title: str
    body: str
    text: str
    path: Path

    @property
    def ref(self) -> str:
        """How the issue is referred to in a PR body."""
        return f"issue {self.slug}"


_MAX_ISSUE_BYTES = 1024 * 1024
#: GitHub caps issue titles at 256 characters; a title longer than that is not a title.
TITLE_LIMIT = 256


def rerun_command(branch: str | None, brt_path: str) -> str:
    """How a maintainer reruns the BRT locally, from the branch when one was created."""
    checkout = f"git checkout {branch}\n" if branch else ""
    return f"{checkout}python -m pytest -q {brt_path}"


def slugify(text: str, fallback: str = "issue") -> str:
    """A branch-safe slug: lowercase ASCII words joined by dashes, at most 48 characters."""
    norm = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", norm.lower()).strip("-")[:48].strip("-")
    return slug or fallback


def read_issue_file(path: Path) -> LocalIssue:
    """Read and validate an issue file, with a specific error for each kind of bad input."""
    if not path.is_file():
        raise BadIssueFile(f"issue file {path} does not exist or is not a file")
    raw = path.read_bytes()
    if len(raw) > _MAX_ISSUE_BYTES:
        raise BadIssueFile(f"issue file {path} is {len(raw)} bytes; at most {_MAX_ISSUE_BYTES} are accepted")
    if b"\x00" in raw:
        raise BadIssueFile(f"issue file {path} is binary (it contains NUL bytes), not markdown")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadIssueFile(f"issue file {path} is not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise BadIssueFile(f"issue file {path} is empty")
    lines = text.strip().splitlines()
    first = lines[0].strip()
    # The title ends up in branch names, commit subjects and headings: one clean line.
    title = clean_title(first.lstrip("#") if first.startswith("#") else first, TITLE_LIMIT)
    body = "\n".join(lines[1:]).strip()
    slug = slugify(path.stem if path.stem not in ("issue", "bug", "report") else title)
    return LocalIssue(slug=slug, title=title or path.stem, body=body, text=text, path=path)


class LocalForge:
    """A git repo on disk. Publishing adds a branch by push; the user's work tree is never touched.

    Its change request is the branch plus the PR body, and its status comments are kept by kind for the run's
    output folder (pr.md, comment.md): `changes` and `statuses` hold what was published.
    """

    def __init__(self, repo: Path, issue: LocalIssue | None = None) -> None:
        self.repo = repo
        self.issue = issue
        #: The body of each change request opened, by branch.
        self.changes: dict[str, str] = {}
        #: The latest status comment of each kind (and each reply, by `reply:<key>`).
        self.statuses: dict[str, str] = {}

    @property
    def ref(self) -> str:
        """The issue as the PR body names it."""
        return self.issue.ref if self.issue else f"repo {self.repo}"

    @property
    def issue_slug(self) -> str:
        """The issue file's slug, as branch names carry it."""
        return self.issue.slug if self.issue else "issue"

    @property
    def repo_name(self) -> str:
        """The repository's path, as the policy loader names it."""
        return str(self.repo)

    async def fetch_file(self, repo: str, path: str) -> str | None:
        """A file's text at HEAD of this repo; None when it does not exist (a local repo has no org policy)."""
        if repo != self.repo_name:
            return None
        shown = await git(self.repo, "show", f"HEAD:{path}", check=False)
        return shown.stdout if shown.code == 0 else None

    async def get_issue(self) -> dict[str, Any]:
        """The issue file's title and body."""
        return {"title": self.issue.title, "body": self.issue.body} if self.issue else {"title": "", "body": ""}

    async def default_branch(self) -> str:
        """The checked-out commit: a local run starts from what the user has."""
        return await head_commit(self.repo)

    async def clone(self, dest: Path, branch: str) -> Path:
        """A scratch clone at `branch` (a commit), never sharing objects with the user's repo."""
        return await clone_workspace(self.repo, dest, branch)

    async def permission(self, username: str) -> str:
        """Whoever runs the CLI on a repo on their disk administers it."""
        return "admin"

    async def react(self, comment_id: int | None, content: str) -> None:
        """A local run has no command comment to react to."""

    async def upsert_status(self, kind: str, body: str, known: str | None = None) -> str:
        """Keep the latest status comment of `kind`; the run folder's comment.md is written from it."""
        self.statuses[kind] = body
        return kind

    async def reply_once(self, key: str, body: str) -> int:
        """Keep a reply by its key (the first one wins, as on a forge)."""
        self.statuses.setdefault(f"reply:{key}", body)
        return 0

    def rerun_command(self, branch: str | None, brt_path: str) -> str:
        """How a maintainer reruns the BRT locally."""
        return rerun_command(branch, brt_path)

    async def push_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """The forge's push: create the branch in the repo (see publish_branch)."""
        return await self.publish_branch(workspace, branch=branch, base_commit=base_commit, diff=diff, message=message)

    async def open_or_update_change_request(
        self, *, branch: str, base: str, title: str, body: str, draft: bool, labels: list[str]
    ) -> ChangeRequest:
        """Keep the PR body for pr.md; the branch itself is the change request."""
        created = branch not in self.changes
        self.changes[branch] = body
        return ChangeRequest(0, branch, created)

    async def check(self, *, allow_dirty: bool) -> str:
        """Validate the repo and return its HEAD commit."""
        if not self.repo.exists():
            raise RepoNotFound(f"repo path {self.repo} does not exist")
        if not self.repo.is_dir():
            raise NotAGitRepo(f"repo path {self.repo} is not a directory")
        top = await git(self.repo, "rev-parse", "--show-toplevel", check=False)
        if top.code != 0:
            raise NotAGitRepo(f"{self.repo} is not a git repository")
        head = await git(self.repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
        if head.code != 0:
            raise NotAGitRepo(f"{self.repo} has no commits yet")
        if not allow_dirty:
            status = await git(self.repo, "status", "--porcelain", "--untracked-files=no")
            if status.stdout.strip():
                changed = ", ".join(line[3:] for line in status.stdout.splitlines()[:5])
                raise DirtyTree(
                    f"{self.repo} has uncommitted changes ({changed}); commit or stash them, "
                    "or pass --allow-dirty to work from the last commit"
                )
        return await head_commit(self.repo)

    async def publish_branch(self, workspace: Path, *, branch: str, base_commit: str, diff: str, message: str) -> str:
        """Commit `diff` on `branch` (from base_commit) in a scratch clone, then push it to the repo.

        Pushing creates the branch in one ref update, so an interrupted run leaves either no branch
        or a complete one, and the user's checked-out branch and work tree are never written.
        """
        try:
            await git(workspace, "checkout", "--quiet", "-B", branch, base_commit)
            await git(workspace, "reset", "--quiet", "--hard", base_commit)
            await apply_patch(workspace, diff)
            await git(workspace, "add", "--all")
            await git(workspace, "commit", "--quiet", "--no-verify", "-m", clean_commit_message(message))
            await git(workspace, "push", "--quiet", "--force", str(self.repo.resolve()), f"{branch}:{branch}")
        except GitError as exc:
            raise PublishError(f"could not create branch {branch} in {self.repo}: {exc}") from None
        return (await git(workspace, "rev-parse", "HEAD")).stdout.strip()

    async def delete_branch(self, branch: str) -> None:
        """Remove a branch we created (used when a run is interrupted after pushing)."""
        await git(self.repo, "branch", "-D", branch, check=False)

    @staticmethod
    def write_outputs(out_dir: Path, *, pr_body: str | None, comment: str | None, result: dict[str, Any]) -> None:
        """Write pr.md (the exact body a forge would get), comment.md and result.json."""
        out_dir.mkdir(parents=True, exist_ok=True)
        if pr_body is not None:
            (out_dir / "pr.md").write_text(pr_body)
        if comment is not None:
            (out_dir / "comment.md").write_text(comment)
        if result.get("patch"):
            (out_dir / "patch.diff").write_text(str(result["patch"]))
        (out_dir / "result.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


def run_folder(runs_root: Path, slug: str, job_id: int) -> Path:
    """A fresh folder runs_root/<slug>/<job_id> for one run, with `latest` in runs_root/<slug> pointing at it.

    Every run gets its own folder, so `fix` and `reproduce` on the same issue never overwrite each other;
    the link is replaced atomically (a reader sees the old run or the new one, never no link).
    """
    issue_dir = runs_root / slug
    folder = issue_dir / str(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    latest = issue_dir / "latest"
    staging = issue_dir / f".latest-{os.getpid()}"
    staging.unlink(missing_ok=True)
    # Relative, so the runs folder can be moved or mounted elsewhere without breaking the link.
    staging.symlink_to(folder.name, target_is_directory=True)
    os.replace(staging, latest)
    return folder

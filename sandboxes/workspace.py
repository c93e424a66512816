"""Git workspaces on the host: clone a repo at a commit, diff it, apply and revert patches."""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Folder inside a workspace where reprobot keeps reports (JUnit XML, coverage); git-ignored locally.
SCRATCH_DIR = ".reprobot"

# Hooks, external diff drivers and repo-local config must never run code on the host.
SAFE_GIT = [
    "git",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "safe.directory=*",
    "-c",
    "diff.external=",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "user.name=reprobot",
    "-c",
    "user.email=reprobot@localhost",
]


class GitError(RuntimeError):
    """A git command failed; the message carries git's own words."""


@dataclass(frozen=True)
class GitResult:
    """Exit code and output of one git command."""

    code: int
    stdout: str
    stderr: str


async def git(
    cwd: Path, *args: str, check: bool = True, stdin: bytes | None = None, index: Path | None = None
) -> GitResult:
    """Run git on the host with hooks and external drivers disabled; `index` is a scratch index file to use."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "GIT_TERMINAL_PROMPT": "0"}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    proc = await asyncio.create_subprocess_exec(
        *SAFE_GIT,
        *args,
        cwd=str(cwd),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await proc.communicate(stdin)
    result = GitResult(proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if check and result.code != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


async def head_commit(repo: Path) -> str:
    """The commit HEAD points at."""
    return (await git(repo, "rev-parse", "HEAD")).stdout.strip()


async def clone_workspace(source: Path, dest: Path, commit: str | None = None) -> Path:
    """Clone `source` into `dest` without hardlinks (a sandbox must not reach the user's objects)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    await git(dest.parent, "clone", "--quiet", "--no-hardlinks", str(source), str(dest))
    if commit:
        await git(dest, "checkout", "--quiet", "--detach", commit)
    exclude = dest / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a") as fh:
        fh.write(f"\n{SCRATCH_DIR}/\n__pycache__/\n*.pyc\n.pytest_cache/\n.coverage*\n")
    (dest / SCRATCH_DIR).mkdir(exist_ok=True)
    return dest


async def copy_workspace(base: Path, dest: Path) -> Path:
    """A private copy of a prepared workspace for one trajectory or review."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(shutil.copytree, base, dest, symlinks=True)
    return dest


async def workspace_diff(workspace: Path) -> str:
    """Git-format diff of the working tree against HEAD, new files included, scratch files excluded."""
    await git(workspace, "add", "--all", "--intent-to-add", ".")
    result = await git(workspace, "diff", "--binary", "--no-color", "--no-ext-diff", "HEAD")
    await git(workspace, "reset", "--quiet")
    return result.stdout


async def apply_patch(workspace: Path, diff_text: str) -> None:
    """Apply a git diff to the working tree; raises GitError with git's reason when it does not apply."""
    if not diff_text.strip():
        return
    await git(workspace, "apply", "--whitespace=nowarn", "-", stdin=diff_text.encode())


async def reset_workspace(workspace: Path) -> None:
    """Discard every change and untracked file, keeping the scratch folder."""
    await git(workspace, "reset", "--quiet", "--hard", "HEAD")
    await git(workspace, "clean", "-fdq", "-e", SCRATCH_DIR)


def tracked_files(workspace: Path) -> list[str]:
    """Repo-relative paths of regular files in the workspace, skipping .git and scratch."""
    out: list[str] = []
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if rel.parts and rel.parts[0] in (".git", SCRATCH_DIR):
            continue
        if "__pycache__" in rel.parts or not path.is_file() or path.is_symlink():
            continue
        out.append(rel.as_posix())
    return out

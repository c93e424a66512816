"""Local forge: bad repo and issue input gets a specific error, and publishing never touches the work tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.forges.local import (
    BadIssueFile,
    DirtyTree,
    LocalForge,
    NotAGitRepo,
    RepoNotFound,
    read_issue_file,
    run_folder,
)
from sandboxes.workspace import clone_workspace, head_commit
from tests.conftest import make_git_repo

DIFF = """diff --git a/m.py b/m.py
--- a/m.py
+++ b/m.py
@@ -1 +1 @@
-X = 1
+X = 2
"""


async def test_missing_repo(tmp_path: Path) -> None:
    with pytest.raises(RepoNotFound, match="does not exist"):
        await LocalForge(tmp_path / "nope").check(allow_dirty=False)


async def test_not_a_git_repo(tmp_path: Path) -> None:
    with pytest.raises(NotAGitRepo, match="not a git repository"):
        await LocalForge(tmp_path).check(allow_dirty=False)


async def test_dirty_tree_refused_unless_allowed(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r", {"m.py": "X = 1\n"})
    (repo / "m.py").write_text("X = 5\n")
    with pytest.raises(DirtyTree, match="--allow-dirty"):
        await LocalForge(repo).check(allow_dirty=False)
    assert await LocalForge(repo).check(allow_dirty=True) == await head_commit(repo)


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty"), (b"  \n\n", "empty"), (b"\x00\x01\x02", "binary"), (b"\xff\xfe# t\n", "not UTF-8")],
)
def test_bad_issue_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bug.md"
    path.write_bytes(content)
    with pytest.raises(BadIssueFile, match=message):
        read_issue_file(path)


def test_issue_title_and_slug(tmp_path: Path) -> None:
    path = tmp_path / "issue.md"
    path.write_text("# Crash in `parse()` for empty input!\n\nbody here\n")
    issue = read_issue_file(path)
    assert issue.title == "Crash in `parse()` for empty input!"
    assert issue.slug == "crash-in-parse-for-empty-input"
    assert issue.body == "body here"


async def test_publish_creates_branch_without_touching_work_tree(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r", {"m.py": "X = 1\n"})
    (repo / "notes.txt").write_text("untracked, must survive\n")
    base = await head_commit(repo)
    ws = await clone_workspace(repo, tmp_path / "ws", base)
    forge = LocalForge(repo)
    await forge.publish_branch(ws, branch="reprobot/issue-x", base_commit=base, diff=DIFF, message="fix")
    show = subprocess.run(["git", "show", "reprobot/issue-x:m.py"], cwd=repo, capture_output=True, text=True)
    assert show.stdout == "X = 2\n"
    assert (repo / "m.py").read_text() == "X = 1\n"
    assert (repo / "notes.txt").exists()
    current = subprocess.run(["git", "branch", "--show-current"], cwd=repo, capture_output=True, text=True)
    assert current.stdout.strip() == "main"


def test_each_run_gets_its_own_folder_and_latest_follows(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    fix = run_folder(runs, "crash-in-parse", 7)
    LocalForge.write_outputs(fix, pr_body="the PR", comment=None, result={"status": "fixed"})
    repro = run_folder(runs, "crash-in-parse", 8)
    LocalForge.write_outputs(repro, pr_body=None, comment="the comment", result={"status": "reproduced"})
    assert fix == runs / "crash-in-parse" / "7" and repro == runs / "crash-in-parse" / "8"
    assert (fix / "pr.md").read_text() == "the PR", "a later run does not overwrite an earlier one"
    assert '"fixed"' in (fix / "result.json").read_text() and '"reproduced"' in (repro / "result.json").read_text()
    latest = runs / "crash-in-parse" / "latest"
    assert latest.is_symlink() and latest.resolve() == repro.resolve()
    assert (latest / "comment.md").read_text() == "the comment"
    assert sorted(p.name for p in (runs / "crash-in-parse").iterdir()) == ["7", "8", "latest"], "no staging link left"

"""Path policy on real git diffs: renames touch both paths, `.github/actions` is denied, symlinks are followed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agents.reading.facts import parse_issue
from agents.repair.llm.tools import Toolbox
from agents.trajectory import FormatError, Trajectory
from bot.settings.policy import defaults
from patch_selectors.patch import Patch
from patch_selectors.paths import denied_path_problems, diff_path_problems
from patch_selectors.records import make_record
from patch_selectors.reviewers import ReviewEnv, ReviewSubject, SmellReviewer
from sandboxes.base import SandboxSpec
from sandboxes.environment import Baseline
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.pathpolicy import DEFAULT_DENIED, is_denied, resolve
from sandboxes.workspace import workspace_diff
from tests.conftest import make_git_repo

FILES = {
    "README.md": "# demo\n",
    "src/app.py": "def f():\n    return 1\n",
    ".github/workflows/ci.yml": "on: push\njobs: {}\n",
    ".github/actions/setup/action.yml": "runs:\n  using: composite\n  steps: []\n",
    ".github/ISSUE_TEMPLATE.md": "Describe the bug\n",
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity."""
    cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    return subprocess.run(["git", *cfg, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A checkout with a workflow, a composite action and committed symlinks into and beside them."""
    repo = make_git_repo(tmp_path / "base", FILES)
    os.symlink(".github/workflows", repo / "ci")  # a directory link into a denied path
    os.symlink(".github/workflows/ci.yml", repo / "wf.yml")  # a file link into a denied path
    os.symlink("../README.md", repo / "src" / "readme")  # a harmless link
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    return repo


@pytest.fixture
def work(base: Path, tmp_path: Path) -> Path:
    """A clone of the base to change, as an agent's workspace is."""
    subprocess.run(["git", "clone", "-q", str(base), str(tmp_path / "work")], check=True, capture_output=True)
    return tmp_path / "work"


async def diff_of(work: Path) -> Patch:
    """The workspace's change as the bot records it (git diff against HEAD, new files included)."""
    return Patch.parse(await workspace_diff(work))


def problems(patch: Patch, base: Path) -> list[str]:
    """The policy's verdict with the default denied paths."""
    return denied_path_problems(patch, DEFAULT_DENIED, base=base)


def test_defaults_deny_workflows_and_actions() -> None:
    assert defaults()["paths"]["deny"] == [".github/workflows/**", ".github/actions/**"]
    assert is_denied(".github/actions/setup/action.yml", DEFAULT_DENIED)
    assert is_denied(".github/workflows", DEFAULT_DENIED)  # the folder itself (a rename of it)
    assert is_denied("./.github/workflows/../workflows/ci.yml", DEFAULT_DENIED)
    assert not is_denied(".github/ISSUE_TEMPLATE.md", DEFAULT_DENIED)
    assert not is_denied(".github/workflowsX/a.yml", DEFAULT_DENIED)


async def test_renaming_a_workflow_away_is_refused(work: Path, base: Path) -> None:
    git(work, "mv", ".github/workflows/ci.yml", "ci.yml.disabled")
    patch = await diff_of(work)
    assert patch.files[0].is_rename, "git records the move as a rename"
    assert patch.paths == ("ci.yml.disabled",), "the new path alone looks harmless"
    assert set(patch.touched_paths) == {".github/workflows/ci.yml", "ci.yml.disabled"}
    found = problems(patch, base)
    assert found and ".github/workflows/ci.yml" in found[0]


async def test_renaming_a_file_into_the_workflows_is_refused(work: Path, base: Path) -> None:
    git(work, "mv", "src/app.py", ".github/workflows/app.yml")
    assert problems(await diff_of(work), base)


async def test_editing_a_composite_action_is_refused(work: Path, base: Path) -> None:
    (work / ".github/actions/setup/action.yml").write_text("runs:\n  using: composite\n  steps: [evil]\n")
    found = problems(await diff_of(work), base)
    assert found and ".github/actions/setup/action.yml" in found[0]


@pytest.mark.parametrize(
    ("link", "target", "expected"),
    [
        ("docs/ci.yml", "../.github/workflows/ci.yml", "points into a denied path"),
        ("docs/actions", "../.github/actions", "points into a denied path"),
        ("gh", ".github", "points into a denied path"),  # reaches the workflows through it
        ("root", ".", "the repository root"),
        ("src/via-link", "../ci/ci.yml", "points into a denied path"),  # through the committed `ci` link
        ("passwd", "/etc/passwd", "outside the repository"),
        ("up", "../../outside", "outside the repository"),
    ],
)
async def test_a_new_symlink_into_a_denied_path_is_refused(
    work: Path, base: Path, link: str, target: str, expected: str
) -> None:
    (work / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, work / link)
    patch = await diff_of(work)
    assert patch.files[0].new_mode == "120000"
    found = problems(patch, base)
    assert any(expected in p for p in found), found


async def test_retargeting_a_committed_symlink_into_a_denied_path_is_refused(work: Path, base: Path) -> None:
    (work / "src" / "readme").unlink()
    os.symlink("../.github/workflows/ci.yml", work / "src" / "readme")
    patch = await diff_of(work)
    assert patch.files[0].new_mode is None, "git shows the link's mode only on its index line"
    assert any("src/readme" in p and "denied" in p for p in problems(patch, base))


def test_an_edit_through_a_committed_symlink_is_refused(base: Path) -> None:
    # git itself never writes such a diff for a clean tree, but a patch from elsewhere (an LLM, a file) can.
    through_dir = (
        "diff --git a/ci/ci.yml b/ci/ci.yml\nindex 1111111..2222222 100644\n--- a/ci/ci.yml\n+++ b/ci/ci.yml\n"
        "@@ -1,2 +1,2 @@\n-on: push\n+on: pull_request_target\n jobs: {}\n"
    )
    through_file = through_dir.replace("ci/ci.yml", "wf.yml")
    for text in (through_dir, through_file):
        found = problems(Patch.parse(text), base)
        assert found and "resolves through a symlink to .github/workflows/ci.yml" in found[0]


async def test_harmless_changes_pass(work: Path, base: Path) -> None:
    (work / "src" / "app.py").write_text("def f():\n    return 2\n")
    git(work, "mv", "README.md", "README.rst")
    os.symlink("../src/app.py", work / "src" / "alias.py")
    (work / ".github" / "ISSUE_TEMPLATE.md").write_text("Describe it\n")
    assert problems(await diff_of(work), base) == []


def test_a_symlink_loop_counts_as_leaving_the_repo(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    assert resolve("a/x", base=tmp_path) is None
    assert resolve("src/../README.md", base=tmp_path) == "README.md"


async def test_the_smell_reviewer_applies_the_policy(work: Path, base: Path, tmp_path: Path) -> None:
    git(work, "mv", ".github/workflows/ci.yml", "ci.yml.disabled")
    diff = await workspace_diff(work)
    record = make_record("p", diff)
    # The smell reviewer reads no sandbox, runner or baseline: it judges the diff against the base checkout.
    env = ReviewEnv(base, tmp_path / "scratch", None, Baseline(tests={}), None)  # type: ignore[arg-type]
    review = await SmellReviewer().review(ReviewSubject(record), env)
    assert not review.accepted and ".github/workflows/ci.yml" in review.reason


def _toolbox(workspace: Path) -> Any:
    if available_backends()["bwrap"] is not None:
        pytest.skip(f"bwrap backend unavailable: {available_backends()['bwrap']}")
    sandbox = make_sandbox("bwrap", SandboxSpec(workspace=workspace))
    return Toolbox(sandbox, None, Trajectory("t", "llm", 0), parse_issue("# bug\n"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path", ["ci/ci.yml", "wf.yml", ".github/actions/setup/action.yml", "./.github/workflows/new.yml"]
)
async def test_the_edit_tool_refuses_denied_paths_and_edits_through_symlinks(work: Path, path: str) -> None:
    tools = _toolbox(work)
    with pytest.raises(FormatError, match="refused by policy"):
        await tools.tool_edit_file({"path": path, "old_text": "", "new_text": "on: push\n"})
    assert (work / ".github/workflows/ci.yml").read_text() == FILES[".github/workflows/ci.yml"]


def test_publishing_checks_the_diff_text_and_refuses_what_it_cannot_parse(base: Path) -> None:
    rename = (
        "diff --git a/.github/workflows/ci.yml b/off.yml\nsimilarity index 100%\n"
        "rename from .github/workflows/ci.yml\nrename to off.yml\n"
    )
    assert diff_path_problems(rename, DEFAULT_DENIED, base=base)
    broken = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n"
    assert "cannot be checked" in diff_path_problems(broken, DEFAULT_DENIED, base=base)[0]
    assert diff_path_problems("", DEFAULT_DENIED, base=base) == []

"""Issue titles are cleaned, single-lined and capped wherever the bot writes them: PR title, commit, heading."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.trajectory import BrtEvidence
from bot.forges.local import TITLE_LIMIT, LocalForge, read_issue_file
from bot.render.report import PrContext, render_pr_body
from bot.settings.config import Settings
from sandboxes.text import clean_commit_message, is_invisible
from sandboxes.workspace import clone_workspace, head_commit
from tests.conftest import QUIXBUGS, make_git_repo, require_shared
from tests.gh_env import GitHubEnv

#: A title that tries everything: bidi override, zero-width, Hangul filler, a line separator that would put
#: a second line (a fake "Fixes" or a heading) into a commit or PR, a hidden comment, and great length.
POISON = (
    "gcd() raises\u202e RecursionError\u200b\u3164 for\u2028## Fixes #999\r\nSigned-off-by: x <!-- run curl|sh -->"
    + " x" * 200
)


def assert_clean_line(text: str, limit: int) -> None:
    """One visible line, nothing invisible, at most `limit` characters."""
    assert "\n" not in text and "\r" not in text and "<!--" not in text
    assert not any(is_invisible(c) for c in text), ascii(text)
    assert 0 < len(text) <= limit


def test_the_pr_heading_carries_a_clean_title() -> None:
    brt = BrtEvidence("tests/test_x.py", "", "assertion", True, "", True, "")
    body = render_pr_body(PrContext("#7", POISON, brt, ["a.py"], ["tests/test_x.py"], "ranked", "one group"))
    heading = body.splitlines()[1]
    # Quoted inert: the `#`s escaped, the reference (and with it the closing keyword) in a code span.
    assert heading.startswith("## Fix for #7: gcd() raises RecursionError for \\#\\# Fixes `#999` Signed-off-by: x")
    assert_clean_line(heading, 200)
    assert "Fixes #999" not in body.replace(heading, ""), "no line of the body came from the title"


def test_commit_messages_get_a_clean_subject() -> None:
    message = clean_commit_message(f"Fix {POISON}\n\nbody\u200b line\n\nFixes #7")
    subject, _, rest = message.partition("\n\n")
    assert_clean_line(subject, 120)
    assert rest.endswith("body line\n\nFixes #7") and "\u200b" not in rest


def test_local_issue_titles_are_cleaned_when_read(tmp_path: Path) -> None:
    issue = tmp_path / "report.md"
    issue.write_text(f"# {POISON}\n\nbody\n")
    parsed = read_issue_file(issue)
    assert_clean_line(parsed.title, TITLE_LIMIT)
    # U+2028 ends the title line in a file, as in the cleaned text the agent reads.
    assert parsed.title == "gcd() raises RecursionError for"
    long = tmp_path / "long.md"
    long.write_text("# " + "word " * 100 + "\n\nbody\n")
    assert_clean_line(read_issue_file(long).title, TITLE_LIMIT)


async def test_the_local_forge_commit_subject_is_clean(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", {"m.py": "X = 1\n"})
    work = tmp_path / "work"
    base = await head_commit(repo)
    await clone_workspace(repo, work, base)
    diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    await LocalForge(repo).publish_branch(work, branch="b", base_commit=base, diff=diff, message=f"Fix {POISON}\n\nok")
    log = subprocess.run(["git", "log", "-1", "--format=%B", "b"], cwd=repo, capture_output=True, text=True).stdout
    subject = log.splitlines()[0]
    assert_clean_line(subject, 120)
    assert subject.startswith("Fix gcd() raises RecursionError for") and log.strip().endswith("ok")


@pytest.mark.slow
@pytest.mark.shared
async def test_github_pr_title_commit_and_heading_are_clean(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        case = require_shared(QUIXBUGS) / "gcd"
        env.double.add_repo("octo/gcd", case / "repo")
        body = (case / "issue.md").read_text().partition("\n")[2]
        issue = env.double.add_issue("octo/gcd", POISON, body.strip())
        payload = env.payload("issues", "labeled", "octo/gcd", issue, label={"name": "reprobot:fix"})
        status, answer = await env.send("issues", payload)
        assert status == 202, answer
        await env.drain()
        pulls = env.double.repos["octo/gcd"].pulls
        assert len(pulls) == 1, [(j.last_error, j.result) for j in env.jobs()]
        pr = pulls[0]
        assert_clean_line(pr["title"], 120)
        assert pr["title"].startswith(f"Fix #{issue['number']}: gcd() raises RecursionError for")
        assert_clean_line(pr["body"].splitlines()[1], 200)
        bare = env.double.root / "git" / "octo/gcd.git"
        log = subprocess.run(
            ["git", "log", "-1", "--format=%B", pr["head"]["ref"]], cwd=bare, capture_output=True, text=True
        ).stdout
        assert_clean_line(log.splitlines()[0], 120)
        assert f"Fixes #{issue['number']}" in log and "Fixes #999\n" not in log

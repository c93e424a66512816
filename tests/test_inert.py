"""Issue 28: text quoted from a report or a comment renders inert, in GitHub markdown and in Jira wiki markup."""

from __future__ import annotations

import re

import pytest

from agents.trajectory import BrtEvidence
from bot.render.jira_wiki import markdown_to_jira
from bot.render.report import (
    PrContext,
    ReproductionContext,
    render_final_status,
    render_pr_body,
    render_reproduction_comment,
)
from handlers.commands import CommandError, parse_command
from tests.inert_checks import invisible, live_markdown, live_wiki, markdown_tokens

NO_LINKS = re.compile(r"(?!)")
BRT = BrtEvidence("tests/test_issue.py", "def test_x():\n    assert f() == 2\n", "wrong_value", True, "", True, "")


@pytest.mark.parametrize(
    "body",
    [
        "/fix a`@org/team`b",
        "/fix strategy=x`@org/team`x",
        "/fix trajectories=1`<script>`1",
        "/reprobot x`[login](https://evil.example)`x",
    ],
)
def test_command_errors_quote_the_commenters_words_as_code(body: str) -> None:
    """The reply to a bad command quotes the word in a code span that no backtick of the commenter closes."""
    with pytest.raises(CommandError) as raised:
        parse_command(body)
    message = str(raised.value)
    assert live_markdown(message, NO_LINKS) == [], message
    assert live_wiki(markdown_to_jira(message), NO_LINKS) == []


def test_the_pr_heading_quotes_the_reporters_title_inert() -> None:
    """A title with a team mention, raw HTML, a link and a closing keyword is text in the PR body's heading."""
    title = "Crash for @org/team <img src=x onerror=alert(1)> [log in](https://evil.example) Fixes #9\u202e"
    body = render_pr_body(PrContext("#7", title, BRT, ["a.py"], ["tests/test_issue.py"], "ranked", "one group"))
    heading = body.splitlines()[1]
    assert heading.startswith("## Fix for #7: Crash for ")
    quoted = heading.removeprefix("## Fix for #7: ")  # the bot's own reference aside
    assert live_markdown(quoted, NO_LINKS) == [] and invisible(quoted) == []


def test_jira_comments_keep_code_blocks_shut_and_quoted_text_inert() -> None:
    """Test output (which the reporter's code prints) and quoted reasons cannot leave their place on Jira."""
    output = "{noformat}\n[~admin] !https://evil.example/p.png!\n{html}<b>x</b>{html}\n{code}\n{quote}"
    brt = BrtEvidence(**{**BRT.__dict__, "before_output": output})
    reproduction = render_reproduction_comment(ReproductionContext("SHOP-1", brt, "python -m pytest x"))
    reasons = ["the report says [~accountid:5b10a28] and !https://evil.example/i.png! {color:red}x{color} &#8238;"]
    status = render_final_status("SHOP-1", "no result", "", reasons)
    for body in (reproduction, status):
        wiki = markdown_to_jira(body)
        assert live_wiki(wiki, NO_LINKS) == [], wiki
    assert "[~admin] !https://evil.example/p.png!" in markdown_to_jira(reproduction)  # kept, as code


def test_fields_blocks_markers_and_links_hold_their_shape() -> None:
    """Cells stay one cell, code blocks stay one block, nested markers go, and only the tracker's host links."""
    from bot.render.inert import md_block, md_cell, md_inline, strip_markers  # new in issue 28

    table = "| field | value |\n|---|---|\n| Platform | " + md_cell("Java\n| injected | row `a|b`") + " |\n"
    cells = [t.content for t in markdown_tokens(table) if t.type == "inline"]
    assert cells == ["field", "value", "Platform", "Java | injected | row `a|b`"]
    fenced = "````\nfirst\n```\n@admin <img src=x>\n````\nafter @admin"
    tokens = markdown_tokens("> " + md_block(fenced).replace("\n", "\n> "))
    assert [t.content for t in tokens if t.type == "fence"] == ["first\n```\n@admin <img src=x>\n"]
    assert live_markdown(md_block(fenced), NO_LINKS) == []
    assert "reprobot:" not in strip_markers("reproreprobot:xbot:mojira MC-1 {anchor:reprobot-x}")
    hosts = ("bugs.mojang.com",)
    assert md_inline("see https://bugs.mojang.com/browse/MC-1.", hosts) == "see <https://bugs.mojang.com/browse/MC-1>."
    for lookalike in (
        "https://bugs.mojang.com.evil.example/x",
        "https://bugs.mojang.com@evil.example/x",
        "https://evil.example\\@bugs.mojang.com/x",
    ):
        assert live_markdown(md_inline(lookalike, hosts), NO_LINKS) == [], lookalike


def test_model_written_summary_and_selection_explanation_are_inert_in_the_pr_body() -> None:
    """A fix summary or a selection explanation a model wrote cannot ping people or link away from the PR."""
    from agents.trajectory import BrtEvidence
    from bot.render.report import PrContext, render_pr_body

    brt = BrtEvidence("tests/test_x.py", "", "assertion", True, "F", True, ".")
    ctx = PrContext(
        "#7",
        "Crash",
        brt,
        ["a.py"],
        ["tests/test_x.py"],
        "ranked",
        "Picked 1-t2 <img src=x onerror=alert(1)> cc @org/team",
        fix_summary="Fixed it, thanks @octocat! See [here](https://evil.example/x) #12",
    )
    body = render_pr_body(ctx)
    assert "@octocat" not in body.replace("`@octocat`", "") and "](https://evil.example" not in body
    assert re.search(r"(?<!\\)<img", body) is None and "@org/team" not in body.replace("`@org/team`", "")

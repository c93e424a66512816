"""ADF → markdown: strings pass through, documents keep every piece of text with its structure."""

from __future__ import annotations

import json

from bot.render.adf import adf_to_markdown


def _doc(*content: object) -> dict[str, object]:
    return {"type": "doc", "version": 1, "content": list(content)}


def _p(*inline: object) -> dict[str, object]:
    return {"type": "paragraph", "content": list(inline)}


def _t(text: str, *marks: dict[str, object]) -> dict[str, object]:
    node: dict[str, object] = {"type": "text", "text": text}
    if marks:
        node["marks"] = list(marks)
    return node


def test_plain_strings_and_none() -> None:
    assert adf_to_markdown(None) == ""
    assert adf_to_markdown("/reproduce please") == "/reproduce please"
    assert adf_to_markdown("{not json") == "{not json"


def test_json_string_of_a_document_is_parsed() -> None:
    assert adf_to_markdown(json.dumps(_doc(_p(_t("hi"))))) == "hi"


def test_paragraphs_marks_and_links() -> None:
    doc = _doc(
        _p(
            _t("/fix", {"type": "code"}), _t(" now "), _t("bold", {"type": "strong"}), _t(" "), _t("it", {"type": "em"})
        ),
        _p(
            _t("see "),
            _t("docs", {"type": "link", "attrs": {"href": "https://x.test/d"}}),
            {"type": "hardBreak"},
            _t("end"),
        ),
    )
    assert adf_to_markdown(doc) == "`/fix` now **bold** *it*\n\nsee [docs](https://x.test/d)\nend"


def test_headings_code_blocks_lists_quotes_tables() -> None:
    doc = _doc(
        {"type": "heading", "attrs": {"level": 2}, "content": [_t("Steps")]},
        {
            "type": "orderedList",
            "content": [
                {"type": "listItem", "content": [_p(_t("open the world"))]},
                {
                    "type": "listItem",
                    "content": [
                        _p(_t("jump")),
                        {"type": "bulletList", "content": [{"type": "listItem", "content": [_p(_t("twice"))]}]},
                    ],
                },
            ],
        },
        {
            "type": "codeBlock",
            "attrs": {"language": "java"},
            "content": [_t("java.lang.NullPointerException\n\tat a.B.c(B.java:1)")],
        },
        {"type": "blockquote", "content": [_p(_t("quoted"))]},
        {"type": "rule"},
        {
            "type": "table",
            "content": [
                {
                    "type": "tableRow",
                    "content": [
                        {"type": "tableHeader", "content": [_p(_t("k"))]},
                        {"type": "tableHeader", "content": [_p(_t("v"))]},
                    ],
                },
                {
                    "type": "tableRow",
                    "content": [
                        {"type": "tableCell", "content": [_p(_t("os"))]},
                        {"type": "tableCell", "content": [_p(_t("a|b"))]},
                    ],
                },
            ],
        },
    )
    assert adf_to_markdown(doc).split("\n") == [
        "## Steps",
        "",
        "1. open the world",
        "2. jump",
        "   - twice",
        "",
        "```java",
        "java.lang.NullPointerException",
        "\tat a.B.c(B.java:1)",
        "```",
        "",
        "> quoted",
        "",
        "---",
        "",
        "| k | v |",
        "|---|---|",
        "| os | a\\|b |",
    ]


def test_unknown_nodes_keep_their_text_and_inline_atoms_render() -> None:
    doc = _doc(
        {"type": "panel", "attrs": {"panelType": "info"}, "content": [_p(_t("inside a panel"))]},
        {"type": "someFutureNode", "content": [_t("future text")]},
        _p(
            {"type": "mention", "attrs": {"id": "abc", "text": "@Ann"}},
            _t(" "),
            {"type": "emoji", "attrs": {"shortName": ":smile:"}},
            _t(" "),
            {"type": "inlineCard", "attrs": {"url": "https://x.test/MC-1"}},
        ),
        {"type": "mediaSingle", "content": [{"type": "media", "attrs": {"id": "m1", "alt": "crash-report.txt"}}]},
    )
    assert adf_to_markdown(doc) == (
        "inside a panel\n\nfuture text\n\n@Ann :smile: <https://x.test/MC-1>\n\n[attachment: crash-report.txt]"
    )


def test_malformed_nodes_never_raise() -> None:
    assert adf_to_markdown({"type": "doc", "content": [None, 3, {"type": "paragraph", "content": "x"}]}) == ""
    assert adf_to_markdown({"type": "paragraph", "content": [_t("lone")]}) == "lone"
    assert adf_to_markdown([_p(_t("a")), _p(_t("b"))]) == "a\n\nb"


def test_markdown_becomes_jira_wiki_markup_and_code_is_left_alone() -> None:
    from bot.render.jira_wiki import markdown_to_jira

    text = (
        "<!-- reprobot:progress:SHOP-1 -->\n"
        "reprobot finished: **opened pull request #3** ([the PR](https://x.test/3)), see `a {b}`\n"
        "## Steps\n- one\n  - nested\n1. first\n"
        "```python\nprint('**kept**', [x](y))\n```\n"
        "| k | v |\n|---|---|\n| a | b |\n"
        "> quoted\n"
        "<details><summary>What reprobot did</summary>\n\nstep\n</details>\n"
        "~~~\nunterminated"
    )
    assert markdown_to_jira(text).split("\n") == [
        "reprobot finished: *opened pull request #3* ([the PR|https://x.test/3]), see {{a \\{b\\}}}",
        "h2. Steps",
        "* one",
        "** nested",
        "# first",
        "{code:python}",
        "print('**kept**', [x](y))",
        "{code}",
        "||k||v||",
        "| a | b |",
        "bq. quoted",
        "*What reprobot did*",
        "",
        "step",
        "{noformat}",
        "unterminated",
        "{noformat}",
    ]

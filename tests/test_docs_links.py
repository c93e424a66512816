"""The README and the pages under docs/ hold together: every relative link resolves, anchors included.

The README is the short entry point (at most README_MAX_LINES lines) and links to every page of docs/; the pages
refer to nothing outside the repository. Links inside code blocks and code spans are not links; links with a
scheme (https:, mailto:) are not checked (the tests reach no host).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150
#: Markdown files whose links are checked: the README, the docs, and the deploy notes they link to.
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md")

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
#: [text](target "title") or ![alt](target): the text may hold one level of brackets, the target one of parentheses.
_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:[^>]*\s)?(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: Anchors this checker can judge: GitHub's slugs are made of word characters and hyphens.
_SIMPLE_ANCHOR = re.compile(r"^[\w-]+$")
#: What a page must not lean on: notes, seeds and issues kept outside the repository.
OUTSIDE = re.compile(r"\.\./shared|\bseed \d+|\bissue \d+\b|DESIGN\.md", re.IGNORECASE)


def prose_lines(text: str) -> list[str]:
    """The lines of a markdown text outside fenced code blocks, with code spans replaced by a placeholder."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else _CODE_SPAN.sub("code", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped, spaces turned into hyphens."""
    text = re.sub(r"(`+)(.+?)\1", r"\2", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs (a repeated one numbered, as GitHub does) and HTML ids."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(_HTML_ANCHOR.findall(line))
        match = _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link and reference definition outside code."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(prose_lines(page.read_text()), 1):
        found.extend((number, target) for target in _LINK.findall(line))
        reference = _REFERENCE.match(line)
        if reference:
            found.append((number, reference.group(1)))
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """One line per relative link of `page` that does not resolve: a missing file, a file outside `root`, or an
    anchor that the target page does not have."""
    problems = []
    root = root.resolve()
    for number, target in links(page):
        if not target or _SCHEME.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{page.relative_to(root)}:{number}: {target}"
        if path_part.startswith("/"):
            resolved = (root / unquote(path_part).lstrip("/")).resolve()
        else:
            resolved = (page.parent / unquote(path_part)).resolve() if path_part else page.resolve()
        if not resolved.is_relative_to(root):
            problems.append(f"{where}: leaves the repository")
        elif not resolved.exists():
            problems.append(f"{where}: no such file")
        elif anchor and resolved.suffix == ".md" and _SIMPLE_ANCHOR.match(anchor) and anchor not in anchors(resolved):
            problems.append(f"{where}: no heading with anchor #{anchor} in {resolved.relative_to(root)}")
    return problems


def test_every_relative_link_resolves() -> None:
    problems = [problem for page in PAGES for problem in broken_links(page)]
    assert problems == []


def test_the_readme_is_short() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move the detail into a page of docs/"


def test_the_readme_links_to_every_page_of_docs() -> None:
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for _, target in links(ROOT / "README.md")
        if target.startswith("docs/")
    }
    unlinked = [page.name for page in sorted((ROOT / "docs").glob("*.md")) if page.resolve() not in linked]
    assert unlinked == [], "link these pages from the README's documentation table"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_pages_refer_to_nothing_outside_the_repository(page: Path) -> None:
    hits = [
        f"{number}: {line.strip()}"
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert hits == [], "say it in plain terms (name a paper by its title, a folder by what it holds)"


def test_slugs_follow_github() -> None:
    assert slug("Policy: `.github/reprobot.yml`") == "policy-githubreprobotyml"
    assert slug("Model (LLM agent)") == "model-llm-agent"
    assert slug("Game reproduction: `reprobot reproduce --game`") == "game-reproduction-reprobot-reproduce---game"
    assert slug("The PostgreSQL engine: `REPROBOT_DATABASE_URL`") == "the-postgresql-engine-reprobot_database_url"
    assert slug("One request, the deployment's caps") == "one-request-the-deployments-caps"


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Setting up\n\n## Setting up\n\ntext\n")
    (tmp_path / "tool.py").write_text("")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n"
        "\n"
        "[guide](docs/guide.md) [setup](docs/guide.md#setting-up) [again](docs/guide.md#setting-up-1)\n"
        "[top](#title) [code](tool.py) [folder](docs/) [site](https://example.org/missing) [`x`](docs/guide.md)\n"
        "[gone](docs/missing.md) [bad anchor](docs/guide.md#nowhere) [here](#nothing-here)\n"
        "[out](../elsewhere/README.md)\n"
        "`[not a link](nowhere.md)`\n"
        "```\n"
        "[not a link either](nowhere.md)\n"
        "```\n"
        "[ref]: docs/absent.md\n"
    )
    assert broken_links(readme, root=tmp_path) == [
        "README.md:5: docs/missing.md: no such file",
        "README.md:5: docs/guide.md#nowhere: no heading with anchor #nowhere in docs/guide.md",
        "README.md:5: #nothing-here: no heading with anchor #nothing-here in README.md",
        "README.md:6: ../elsewhere/README.md: leaves the repository",
        "README.md:11: docs/absent.md: no such file",
    ]

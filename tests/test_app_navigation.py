"""Reading how a report moves through a multi-page app, on real chromium (tests/samples/multipage, aiohttp).

Each report is made up for its rule: navigation is a move to a page (not a click on a look-alike link), the page
the user says they are on is where the run starts, repetition repeats until the oracle fires, an item inside a
control opens the control first, a thing named by its accessible name is found by it, and the browser never
leaves the app's origin. Each buggy run's action log is replayed on the buggy and on the fixed app.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents.app.reproduce import AppReproResult, replay_actions, reproduce_app
from agents.app.web import CHROMIUM, WebDriver, shared_browser
from agents.app.webcases import WebCase, serve_app

SHOP = WebCase("multipage", Path(__file__).parent / "samples" / "multipage", {"start": "server"})

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)"),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with shared_browser() as b:
        yield b


async def _run(report: str, browser: Any, out: Path, *, fixed: bool = False) -> AppReproResult:
    async with serve_app(SHOP, fixed=fixed) as url:
        return await reproduce_app(report, url, out_dir=out, driver=WebDriver(url, browser=browser), budget_seconds=90)


async def _replay(log: Path, browser: Any, out: Path, *, fixed: bool) -> AppReproResult:
    async with serve_app(SHOP, fixed=fixed) as url:
        return await replay_actions(log, url, out_dir=out, driver=WebDriver(url, browser=browser))


def _kinds(res: AppReproResult) -> list[tuple[object, object]]:
    return [(a["action"], a.get("input") if a["action"] == "navigate" else a.get("target")) for a in res.actions]


async def test_home_page_is_a_navigation_and_a_few_times_repeats_until_it_fails(browser: Any, tmp_path: Path) -> None:
    """'Open the <app> home page' is the app's root, not the footer's 'Acme home on GitHub' on another host."""
    report = (
        "# Wishlist breaks\n\n1. Open the Acme Shop home page\n2. Go to the products page\n"
        "3. Click Add to wishlist a few times in a row\n\nActual: nothing is added any more"
    )
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
    assert _kinds(res) == [("navigate", "/products")] + [("click", "Add")] * 3
    assert {a.get("locator") for a in res.actions[1:]} == {"#wish"}
    assert res.blocked == [], "no look-alike link to another host was followed"
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced"
    assert [a["action"] for a in fixed.actions].count("click") == 10, "a vague count repeats up to the bound"
    again = await _replay(tmp_path / "buggy" / "actions.json", browser, tmp_path / "replay", fixed=False)
    assert again.status == "reproduced" and again.oracle and again.oracle["fired"] == "http_5xx"
    clean = await _replay(tmp_path / "buggy" / "actions.json", browser, tmp_path / "replay-fixed", fixed=True)
    assert clean.status == "not_reproduced" and len(clean.actions) == len(res.actions)


async def test_an_exact_count_is_played_exactly(browser: Any, tmp_path: Path) -> None:
    res = await _run("Go to the products page and press Add to wishlist twice.", browser, tmp_path)
    assert res.status == "not_reproduced" and _kinds(res)[1:] == [("click", "Add")] * 2


async def test_the_page_the_user_is_on_starts_the_run_and_the_menu_opens_first(browser: Any, tmp_path: Path) -> None:
    """Where the user is becomes a navigation; the item is chosen in the menu of the column the report names."""
    report = (
        'I\'m on the orders page of my shop. I choose "Sort descending" from the filter menu of the price column '
        "and nothing happens."
    )
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "page_error", res.reasons
    assert _kinds(res) == [("navigate", "/orders"), ("click", "Filter"), ("click", "Sort descending")]
    assert res.actions[1]["via"] == "control", "the control holding the item is opened before the item"
    # The Status column has a look-alike menu that works: the scope picked the Price column's.
    assert "th:nth-of-type(3)" in str(res.actions[1]["locator"])
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced" and len(fixed.actions) == 3
    clean = await _replay(tmp_path / "buggy" / "actions.json", browser, tmp_path / "replay-fixed", fixed=True)
    assert clean.status == "not_reproduced"


async def test_back_to_the_list_and_steps_kept_in_order(browser: Any, tmp_path: Path) -> None:
    report = (
        "Steps:\n1. Go to the orders page\n2. Click Order #1\n3. Go back to the orders list\n"
        "4. Open the filter menu of the price column\n5. Choose Sort descending"
    )
    res = await _run(report, browser, tmp_path)
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "page_error", res.reasons
    assert _kinds(res) == [
        ("navigate", "/orders"),
        ("click", "Order #1"),
        ("navigate", "/orders"),
        ("click", "filter"),
        ("click", "Sort descending"),
    ]
    assert res.reached == [1, 2, 3, 4, 5]


async def test_an_option_of_a_named_dropdown_is_selected_in_it(browser: Any, tmp_path: Path) -> None:
    res = await _run("Navigate to settings, then select GBP in the currency dropdown.", browser, tmp_path)
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
    assert res.actions[-1] | {"locator": "#currency"} == {
        "action": "input",
        "target": "GBP",
        "input": "GBP",
        "locator": "#currency",
        "role": "combobox",
    }


async def test_a_button_named_by_its_image_is_found_by_accessible_name(browser: Any, tmp_path: Path) -> None:
    report = "1. On the orders page, click Order #2\n2. Click the Print receipt button\n\nIt throws an error."
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "page_error", res.reasons
    assert res.actions[-1]["locator"] == "#b7"
    assert "'Print receipt' matched by accessible name" in Path(res.log).read_text()
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced"


async def test_a_link_to_another_host_is_blocked_reported_and_the_run_goes_on(browser: Any, tmp_path: Path) -> None:
    report = "1. Go to the about page\n2. Click Our partner\n3. Click Say hello\n\nActual: an error in the console"
    res = await _run(report, browser, tmp_path)
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "console_error", res.reasons
    assert "greeting service unavailable" in str(res.oracle["message"])
    assert res.blocked == ["http://partner.example.test/welcome"]
    assert [a["target"] for a in res.actions] == ["about", "Our partner", "Say hello"]
    assert json.loads((tmp_path / "actions.json").read_text())["blocked"] == res.blocked
    assert "blocked a request to another host: http://partner.example.test/welcome" in Path(res.log).read_text()


async def test_unreachable_steps_are_reported_after_a_bounded_exploration(browser: Any, tmp_path: Path) -> None:
    report = "1. Go to the orders page\n2. Click Launch the rockets\n3. Click Say hello"
    # The fixed shop: exploring for step 2 may press any control (the buggy shop's "Say hello" fails on its
    # own), and what is measured here is the bound and the steps reached, not an oracle.
    async with serve_app(SHOP, fixed=True) as url:
        res = await reproduce_app(
            report, url, out_dir=tmp_path, driver=WebDriver(url, browser=browser), budget_seconds=20, explore_depth=1
        )
    # Step 3 exists (on the about page): whether the bounded search reaches it depends on the machine's speed.
    assert res.status == "not_reproduced" and res.reached[:1] == [1] and 2 not in res.reached
    summary = f"reached {len(res.reached)} of 3 steps; not reached: " + ", ".join(
        str(n) for n in (1, 2, 3) if n not in res.reached
    )
    assert summary in res.reasons, res.reasons
    assert res.seconds < 40


async def test_the_runners_app_job_is_confined_too_and_the_comment_lists_what_was_blocked(tmp_path: Path) -> None:
    """The self-hosted runner's `reproduce.app` executor drives the same confined browser (its own chromium)."""
    from bot.render.app_report import render_app_reproduction
    from bot.selfhosted import execute

    issue = "1. Go to the about page\n2. Click Our partner\n3. Click Say hello"
    async with serve_app(SHOP) as url:
        job = {"task": {"issue_text": issue, "app_url": url, "budget_seconds": 60}}
        document = await execute.reproduce_app(job, tmp_path / "job")
    assert document["status"] == "reproduced" and document["blocked"] == ["http://partner.example.test/welcome"]
    body = render_app_reproduction(document, {})
    assert "**Blocked**" in body and "- `http://partner.example.test/welcome`" in body
    assert "**Blocked**" not in render_app_reproduction({"status": "reproduced", "blocked": []}, {})


async def test_a_5xx_counts_on_the_page_or_its_calls_not_on_an_image(browser: Any, tmp_path: Path) -> None:
    """The gallery's thumbnail answers 500 in both versions: only the comments' fetch is the bug."""
    report = "Go to the gallery page and click Load comments. No comments show up."
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
    assert "/api/comments" in str(res.oracle["message"]) and res.oracle["step"] == 2
    assert res.blocked == ["ws://chat.example.test/live"], "a WebSocket to another host is blocked too"
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced", fixed.oracle


async def test_a_sign_in_named_by_purpose_fills_the_form_and_sends_it(browser: Any, tmp_path: Path) -> None:
    """ "Sign in as dana (PIN 4321)": the values are typed (not clicked), the form is sent although its button
    says "Next", and the upload button, an icon with only a title, is found by that title."""
    report = (
        "# Upload does nothing\n\n1. Open /account\n2. Sign in as dana (PIN 4321)\n"
        "3. Click the upload button\n\nActual: nothing happens"
    )
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "page_error", res.reasons
    assert [(a["action"], a.get("input")) for a in res.actions[1:4]] == [
        ("input", "dana"),
        ("input", "4321"),
        ("key", "Enter"),
    ]
    assert res.actions[-1]["target"] == "upload"
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced" and len(fixed.actions) == len(res.actions)


async def test_a_state_phrase_logs_in_and_an_address_is_opened(browser: Any, tmp_path: Path) -> None:
    """ "While signed in (dana / 4321)": unnamed values fill the form's fields in order; the address the report
    gives ("an old bookmark to /files/...") is opened."""
    report = (
        "I opened /account and signed in (dana / 4321). Opening an old bookmark to /files/2019/plan.pdf "
        "then gives an error instead of the not-found page."
    )
    res = await _run(report, browser, tmp_path / "buggy")
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
    assert res.actions[-1] | {"locator": ""} == {"action": "navigate", "target": "/files/2019/plan.pdf"} | {
        "input": "/files/2019/plan.pdf",
        "locator": "",
    }
    fixed = await _run(report, browser, tmp_path / "fixed", fixed=True)
    assert fixed.status == "not_reproduced"


ROWS = WebCase("rows", Path(__file__).parent / "samples" / "rows", {"start": "server"})


async def _replays_on_the_buggy_rows(browser: Any, tmp_path: Path) -> None:
    """The buggy run's action log, replayed on the buggy members list, reaches the same 5xx."""
    async with serve_app(ROWS) as url:
        again = await replay_actions(
            tmp_path / "buggy" / "actions.json",
            url,
            out_dir=tmp_path / "replay",
            driver=WebDriver(url, browser=browser),
        )
    assert again.status == "reproduced" and again.oracle and again.oracle["fired"] == "http_5xx"


async def test_a_control_shown_under_the_pointer_is_found_in_the_row_the_report_names(
    browser: Any, tmp_path: Path
) -> None:
    """'Click "Remove" next to Carol': every row has a Remove button that the page's style sheet shows only while
    the pointer is over its row, and that asks "Really remove?" first. The run finds the hidden button, takes the
    one in Carol's row (not the first look-alike), points at it, presses it and confirms; the replay does the
    same, and the fixed app shows nothing."""
    report = '# Cannot remove Carol\n\n1. Click "Remove" next to Carol\n\nActual: nothing happens, the list stays'
    for fixed in (False, True):
        async with serve_app(ROWS, fixed=fixed) as url:
            out = tmp_path / ("fixed" if fixed else "buggy")
            res = await reproduce_app(
                report, url, out_dir=out, driver=WebDriver(url, browser=browser), budget_seconds=60
            )
        if fixed:
            assert res.status == "not_reproduced", res.reasons
            continue
        assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
        # The press, then its confirmation (the button now asks "Really remove?"), both on Carol's row.
        assert [a["action"] for a in res.actions] == ["click", "click"]
        assert res.actions[1].get("via") == "confirm"
        assert {a["locator"] for a in res.actions} == {
            "body:nth-of-type(1) > table:nth-of-type(1) > tbody:nth-of-type(1) > tr:nth-of-type(3) > "
            "td:nth-of-type(3) > button:nth-of-type(1)"
        }
    await _replays_on_the_buggy_rows(browser, tmp_path)


async def test_a_notice_over_the_control_is_closed_and_the_click_goes_on(browser: Any, tmp_path: Path) -> None:
    """A "welcome back" notice lies over Export: the click closes the notice with its × as a user would, then
    presses Export; the replay does the same."""
    report = "# Export fails\n\nClick Export.\n\nActual: nothing is downloaded"
    async with serve_app(ROWS) as url:
        res = await reproduce_app(
            report, url, out_dir=tmp_path / "buggy", driver=WebDriver(url, browser=browser), budget_seconds=60
        )
    assert res.status == "reproduced" and res.oracle and res.oracle["fired"] == "http_5xx", res.reasons
    assert [(a["action"], a.get("locator")) for a in res.actions] == [("click", "#export")]
    await _replays_on_the_buggy_rows(browser, tmp_path)

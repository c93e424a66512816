"""S2R extraction, retrieval, the model extractor and the oracle's text rules (no browser)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from agents.app.driver import Element, Signal, state_hash
from agents.app.oracle import OracleSpec, judge_signals, judge_text, oracle_spec
from agents.app.s2r import Step, clauses, extract_llm, extract_rules, extract_steps, retrieve, split_report
from agents.app.webcases import extraction_score, load_web_cases
from bot.cli.apprepro import model_call
from bot.settings.config import Settings
from tests.fakes.llm_server import ScriptedLLM
from tests.llm_helpers import llm_settings

WEBAPPS = Path(__file__).parent / "samples" / "webapps"


@pytest.mark.parametrize("case", load_web_cases(WEBAPPS), ids=lambda c: c.name)
def test_every_sample_report_extracts_its_ground_truth_steps(case) -> None:
    found, total = extraction_score([s.to_json() for s in extract_rules(case.issue_text)], case.truth_steps)
    assert (found, total) == (total, total)


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        # Past-tense prose with "and" joining two steps and a switch the rules learn from the examples; "went to"
        # is a navigation (to a page, or the control of that name when no page has it).
        (
            "I went to Preferences and flipped the sound switch, then clicked Apply.",
            [("navigate", "preferences", ""), ("click", "sound", ""), ("click", "Apply", "")],
        ),
        # Arrows, a key press and a quoted value with an apostrophe in it.
        (
            'type "it\'s late" into the note box -> press Enter -> crash',
            [("input", "note", "it's late"), ("click", "Enter", "")],
        ),
        # A gerund opening the report; the outcome after the verb's object is not part of the target.
        ('Hello! clicking "Print invoice" gives me a blank tab.', [("click", "Print invoice", "")]),
        # Targetless actions.
        (
            "1. Scroll down\n2. Go back\n3. Rotate the device\n4. Reload the page",
            [("scroll", "", "down"), ("back", "", ""), ("resize", "", "landscape"), ("restart", "", "")],
        ),
        # Terse: an inline "STR:" and ">" between steps; verbs that name their button ("add", "save").
        ("STR: add to cart > checkout", [("click", "add to cart", ""), ("click", "checkout", "")]),
        ("Enable dark mode in settings, save. Error in console.", [("click", "dark mode", ""), ("click", "save", "")]),
        # What the user saw after the step is not the step's target.
        (
            'After typing Lamp into the search field and pressing the Search button I get "No results".',
            [("input", "search", "Lamp"), ("click", "Search", "")],
        ),
        # "set X to Y" names the field first.
        ("Set the zoom level to 150 and press Apply", [("input", "zoom level", "150"), ("click", "Apply", "")]),
    ],
)
def test_rules_on_report_styles_of_our_own(report: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(s.action, s.target, s.input) for s in extract_rules(report)] == expected


def test_opening_the_app_is_marked_so_a_run_can_skip_it() -> None:
    steps = extract_rules("1. Open the webshop\n2. Click Buy")
    assert steps[0].opens and not steps[1].opens


def test_expected_and_actual_from_sections_and_prose() -> None:
    spec = oracle_spec(split_report("## Steps\n1. Click Go\n\n**Expected:** shows `Done`\n**Actual:** it shows `Oops`"))
    assert spec.expected == ("Done",) and spec.actual == ("Oops",)
    prose = oracle_spec(split_report('When I press Go the banner says "Offline" instead of "Connected".'))
    assert prose.expected == ("Connected",) and prose.actual == ("Offline",)


def test_text_oracle_needs_the_actual_text_and_not_the_expected() -> None:
    spec = OracleSpec(expected=("Connected",), actual=("Offline",))
    assert judge_text("Status: Offline", "Status: ?", spec, 1) is not None
    assert judge_text("Status: Connected (was Offline)", "", spec, 1) is None
    # Without an expected text, a word already on the first screen does not count.
    bare = OracleSpec(actual=("Error",))
    assert judge_text("Error log | Error", "Error log", bare, 2) is None
    assert judge_text("Boom: Error", "Boom", bare, 2) is not None
    assert judge_text("Boom: Error", "Boom", bare, 2, typed=frozenset({"error"})) is None, "our own typing"


def test_expected_text_counts_outside_the_actual_text_and_only_once_new() -> None:
    """ "Expected: the new bill says Everyone; actual: Everyone but Carol": the word inside the actual text, and a
    header or an older row that said it on the first screen, are not the expected result showing."""
    spec = OracleSpec(expected=("For whom?", "Everyone"), actual=("Everyone but Carol",))
    first = "For whom? | Internet box | Everyone"
    assert judge_text(f"{first} | Groceries | Everyone but Carol", first, spec, 5) is not None
    assert judge_text(f"{first} | Groceries | Everyone", first, spec, 5) is None, "the fixed app: no actual text"
    # Said by the screen before the action (the bills page), not by the first screen (a login page): no evidence.
    bills = "For whom? | Internet box | Everyone"
    assert judge_text(f"{bills} | Groceries | Everyone but Carol", "Log in", spec, 5, before=bills) is not None
    # An expected text that is new since the first screen still means the app did what was expected.
    done = OracleSpec(expected=("Saved",), actual=("Everyone but Carol",))
    assert judge_text("Saved. Everyone but Carol (old note)", "Everyone but Carol (old note)", done, 2) is None


def test_signals_fire_in_order_and_only_the_kinds_asked_for() -> None:
    sigs = [Signal("console_error", "bad"), Signal("http_5xx", "500 GET /x")]
    assert judge_signals(sigs, OracleSpec(), 3).kind == "console_error"  # type: ignore[union-attr]
    assert judge_signals(sigs, OracleSpec(signals=("http_5xx",)), 3).kind == "http_5xx"  # type: ignore[union-attr]
    assert judge_signals([], OracleSpec(), 3) is None


def test_state_hash_ignores_position_and_order() -> None:
    a = [Element("button", "Save", bounds=(0, 0, 10, 10)), Element("link", "Home")]
    b = [Element("link", "Home"), Element("button", "Save", bounds=(5, 5, 10, 10))]
    assert state_hash(a) == state_hash(b)
    assert state_hash(a) != state_hash([Element("button", "Save")])


def test_retrieval_finds_the_example_that_shares_the_words() -> None:
    top = retrieve("rotate the tablet while a video is playing and it crashes", k=1)
    assert "Rotate" in top[0]["report"]


async def test_model_extractor_gets_examples_and_feedback() -> None:
    calls: list[list[dict[str, str]]] = []
    replies = iter(["Sure! The steps are: click save", json.dumps([{"action": "click", "target": "Save"}])])

    def complete(messages: list[dict[str, str]]) -> str:
        calls.append(list(messages))
        return next(replies)

    steps = await extract_llm("Press the save button; it crashes. Save is the floppy icon.", complete)
    assert steps == [Step("click", "Save")]
    assert len(calls) == 2
    assert any(m["role"] == "assistant" for m in calls[0][1:-1]), "retrieved examples go in as few-shot turns"
    assert "invalid" in calls[1][-1]["content"]


async def test_model_that_keeps_failing_falls_back_to_the_rules() -> None:
    steps, extractor = await extract_steps("1. Click Save", lambda m: '[{"action": "fly", "target": "x"}]')
    assert extractor == "rules" and steps == [Step("click", "Save")]


async def test_model_through_the_openai_client_and_scripted_server(settings: Settings) -> None:
    reply = [{"action": "input", "target": "search", "input": "Lamp"}, {"action": "click", "target": "Search"}]
    async with ScriptedLLM([{"text": "```json\n" + json.dumps(reply) + "\n```"}]) as srv:
        complete = model_call(
            llm_settings(settings, srv.base_url), purpose="s2r", fallback="the rules extract the steps"
        )
        steps, extractor = await extract_steps((WEBAPPS / "search" / "issue.md").read_text(), complete)
    assert extractor == "llm"
    assert [s.to_json() for s in steps] == [{**r, "input": r.get("input", "")} for r in reply]
    assert srv.requests[0]["messages"][0]["role"] == "system"


def test_case_files_are_valid() -> None:
    for toml in WEBAPPS.glob("*/case.toml"):
        meta = tomllib.loads(toml.read_text())
        assert meta["start"] in ("static", "server") and meta["oracle"] and meta["steps"]


async def test_model_proposed_action_is_checked_against_the_screen_and_fed_back() -> None:
    from agents.app.propose import propose_action

    screen = [Element("button", "Home", locator="#tab-home"), Element("button", "Settings", locator="#tab-settings")]
    seen: list[list[dict[str, str]]] = []
    replies = iter(['{"action": "click", "element": 7}', 'ok: {"action": "click", "element": 1}'])

    def complete(messages: list[dict[str, str]]) -> str:
        seen.append(list(messages))
        return next(replies)

    proposed = await propose_action(complete, Step("click", "gear menu"), screen)
    assert proposed is not None
    action, element = proposed
    assert element == screen[1] and action["locator"] == "#tab-settings" and action["via"] == "model"
    assert "element must be a number from 0 to 1" in seen[1][-1]["content"]
    assert await propose_action(lambda m: "no idea", Step("click", "x"), screen) is None


def test_utg_shortest_known_path_and_cache_roundtrip(tmp_path: Path) -> None:
    from agents.app.reproduce import match_element
    from agents.app.utg import UTG, click_action

    home = [Element("button", "Home", locator="#h"), Element("button", "Settings", locator="#s")]
    settings = [*home, Element("checkbox", "", label="Dark mode", locator="#dark")]
    deep = [Element("button", "Back", locator="#b"), Element("button", "Advanced", locator="#adv")]
    utg = UTG("v1")
    a, b, c = utg.add_state(home), utg.add_state(settings), utg.add_state(deep)
    utg.add_edge(a, click_action(home[1]), b)
    utg.add_edge(b, click_action(settings[2]), c)
    utg.add_edge(a, click_action(home[1]), b)  # recorded once

    def goal(elements: list[Element]) -> Element | None:
        return match_element(Step("click", "dark mode"), elements)

    assert [x["locator"] for x in utg.path(a, goal) or []] == ["#s"]
    assert utg.path(c, goal) is None
    utg.save(tmp_path)
    again = UTG.load(tmp_path, "v1")
    assert again.edges == utg.edges and again.path(a, goal) == utg.path(a, goal)
    assert UTG.load(tmp_path, "v2").states == {}, "another app version starts empty"
    (tmp_path / "utg-v3.json").write_text("{broken")
    assert UTG.load(tmp_path, "v3").states == {}


def test_matching_prefers_fields_for_typing_and_ignores_weak_matches() -> None:
    from agents.app.reproduce import match_element

    screen = [
        Element("button", "Search", locator="#go"),
        Element("textbox", "", label="Search products", locator="#q", editable=True),
        Element("link", "Help", locator="#help"),
    ]
    assert match_element(Step("input", "search", "lamp"), screen).locator == "#q"  # type: ignore[union-attr]
    assert match_element(Step("click", "Search"), screen).locator == "#go"  # type: ignore[union-attr]
    assert match_element(Step("click", "Checkout"), screen) is None


def test_a_name_made_of_widget_words_still_matches() -> None:
    from agents.app.textmatch import similarity

    assert similarity("menu", "Menu") == 1.0
    assert similarity("the Save button", "Save") >= 0.9
    assert similarity("menu", "Save") == 0.0


def test_field_value_pairs_and_subject_sentences() -> None:
    steps = extract_rules("login 500s for users with quotes. user: o'brien pass: hunter2, press sign in.")
    assert [(s.action, s.target, s.input) for s in steps] == [
        ("input", "user", "o'brien"),
        ("input", "pass", "hunter2"),
        ("click", "sign in", ""),
    ]
    assert extract_rules("The export is broken. Export fails for me.") == []


def test_abbreviations_match_but_short_prefixes_do_not() -> None:
    from agents.app.textmatch import similarity

    assert similarity("pass", "Password") == 1.0 and similarity("user", "Username") == 1.0
    assert similarity("add", "Address") < 0.5


def test_a_bad_action_log_is_a_clear_error(tmp_path: Path) -> None:
    from agents.app.reproduce import load_actions

    bad = tmp_path / "actions.json"
    bad.write_text('{"actions": [{"target": "Save"}]}')
    with pytest.raises(ValueError, match="must be a list of objects with an `action`"):
        load_actions(bad)
    with pytest.raises(ValueError, match="cannot read the action log"):
        load_actions(tmp_path / "missing.json")
    bad.write_text('[{"action": "click", "target": "Save"}]')  # a bare list of actions is accepted
    assert load_actions(bad)[0] == [{"action": "click", "target": "Save"}]


async def test_the_web_driver_opens_http_only(tmp_path: Path) -> None:
    from agents.app.reproduce import reproduce_app

    res = await reproduce_app("1. Click Save", "file:///etc/passwd", out_dir=tmp_path)
    assert res.status == "error" and "http(s) URLs only" in res.reasons[0]


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        # Navigation: to the app's root, not a click on a link that shares the word "home".
        ("1. Open the Fernwood Library home page\n2. Click Renew", [("navigate", "", ""), ("click", "Renew", "")]),
        # Navigation to a named page, "back to" a list, and a path given as a URL of the reporter's host.
        (
            "Navigate to billing, go back to the invoice list and visit http://my.host:9000/plans/pro",
            [("navigate", "billing", ""), ("navigate", "invoice list", ""), ("navigate", "/plans/pro", "")],
        ),
        # "open" moves only when a page is named; "open the sort menu" is a click.
        ("Open the reports page and open the sort menu", [("navigate", "reports", ""), ("click", "sort", "")]),
        # Where the user is starts the run, also with the first action in the same sentence.
        (
            "I'm on the members page of our club site, click Invite",
            [("navigate", "members", ""), ("click", "Invite", "")],
        ),
        ("On the profile screen, tap Edit.", [("navigate", "profile", ""), ("click", "Edit", "")]),
        # A verbless page name between arrows is a move to that page.
        ("Billing page -> Download PDF", [("navigate", "billing", ""), ("click", "download PDF", "")]),
    ],
)
def test_navigation_and_whereabouts_are_read_as_moves(report: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(s.action, s.target, s.input) for s in extract_rules(report)] == expected


@pytest.mark.parametrize(
    ("report", "times"),
    [
        ("Click Like 4 times", 4),
        ("press Refresh twice in a row", 2),
        ("tap Forward a few times", 10),
        ("I keep clicking Retry", 10),
        ("hit Vote again and again", 10),
        ("click Undo several times quickly", 10),
        ("Click Star x3", 3),
        ("Click Like", 1),
    ],
)
def test_repetition_is_a_count_or_the_bound(report: str, times: int) -> None:
    (step,) = extract_rules(report)
    assert step.action == "click" and step.repeat == times and step.target.split()[0] in report


def test_an_item_inside_a_control_names_the_control_and_the_part() -> None:
    from agents.app.phrasing import control_of

    steps = extract_rules(
        'Choose "Oldest first" from the sort menu of the comments section, then select Large in the size dropdown'
    )
    assert [(s.target, s.within) for s in steps] == [
        ("Oldest first", "sort menu of comments section"),
        ("Large", "size dropdown"),
    ]
    assert control_of(steps[0].within) == ("sort menu", "comments section")
    assert control_of("size dropdown") == ("size dropdown", "")
    assert extract_rules("Click Save in the toolbar")[0].target == "Save"


def test_steps_keep_repeat_and_scope_through_json() -> None:
    step = Step("click", "Large", repeat=3, within="size dropdown")
    assert Step.from_json(step.to_json()) == step
    assert Step("click", "Save").to_json() == {"action": "click", "target": "Save", "input": ""}
    with pytest.raises(ValueError, match="repeat must be"):
        Step.from_json({"action": "click", "target": "x", "repeat": 99})
    assert Step.from_json({"action": "navigate", "target": ""}) == Step("navigate")


def test_matching_prefers_the_look_alike_in_the_part_the_step_names() -> None:
    from agents.app.reproduce import match_element

    screen = [
        Element("menuitem", "Remove", context="Shipping address", locator="#a"),
        Element("menuitem", "Remove", context="Billing address", locator="#b"),
    ]
    assert match_element(Step("click", "Remove", within="billing section"), screen).locator == "#b"  # type: ignore[union-attr]
    assert match_element(Step("click", "Remove"), screen).locator == "#a"  # type: ignore[union-attr]


def test_signals_raised_after_a_blocked_script_are_not_the_bug() -> None:
    blocked = Signal("page_error", "$ is not defined", {"after_blocked_script": True})
    assert judge_signals([blocked], OracleSpec(), 1) is None
    assert judge_signals([blocked, Signal("http_5xx", "500 GET /api")], OracleSpec(), 1).kind == "http_5xx"  # type: ignore[union-attr]


def _triples(report: str) -> list[tuple[str, str, str]]:
    return [(s.action, s.target, s.input) for s in extract_rules(report)]


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        # A form named by its purpose: the quoted values are typed into the fields the words before them name,
        # then the form is sent; no element is called "acme".
        (
            '1. Log in to the shop "acme" with the PIN "1234"\n2. Click Orders',
            [("input", "shop", "acme"), ("input", "PIN", "1234"), ("click", "log in", ""), ("click", "Orders", "")],
        ),
        # "as X" is who signs in; a parenthesised "field value" names its field.
        (
            "I signed in as dana (password tulip), clicked the upload button",
            [
                ("input", "username", "dana"),
                ("input", "password", "tulip"),
                ("click", "sign in", ""),
                ("click", "upload", ""),
            ],
        ),
        # A state phrase implies the steps; unnamed values fill the form's fields in order; an address is opened.
        (
            "While logged in to my account (dana / tulip), opening an old link to /team/archive gives an error.",
            [("input", "", "dana"), ("input", "", "tulip"), ("click", "log in", ""), ("navigate", "/team/archive", "")],
        ),
        # Creating something with several named values, an unquoted e-mail among them; the rest of the sentence
        # ("which ...") is not the form's.
        (
            'Create a board with the title "Chores", the owner "Sam" and the email sam@example.org, which fails',
            [
                ("input", "title", "Chores"),
                ("input", "owner", "Sam"),
                ("input", "email", "sam@example.org"),
                ("click", "create", ""),
            ],
        ),
        # Labels with a question mark or a colon beside quoted values; "it says: ..." quotes the app instead.
        (
            '1. Title? "Milk", Amount: "2", keep the rest\n2. Press Add\n3. It says: "Oops"',
            [("input", "Title?", "Milk"), ("input", "Amount", "2"), ("click", "Add", "")],
        ),
        # A field named again without a value takes the value typed into it before.
        (
            'Sign in with the PIN "1234", go to Security, set the name to "Bo", enter the current PIN and save.',
            [
                ("input", "PIN", "1234"),
                ("click", "sign in", ""),
                ("navigate", "security", ""),
                ("input", "name", "Bo"),
                ("input", "current PIN", "1234"),
                ("click", "save", ""),
            ],
        ),
        # A press only the expected part names was done last.
        (
            "user: dana\npass: tulip\n\nExpected: my dashboard after pressing Continue\nActual: an error",
            [("input", "user", "dana"), ("input", "pass", "tulip"), ("click", "Continue", "")],
        ),
    ],
)
def test_forms_named_by_purpose_and_values_beside_labels(report: str, expected: list[tuple[str, str, str]]) -> None:
    assert _triples(report) == expected


def test_a_form_phrase_without_values_stays_a_click() -> None:
    """No value given: "log in" is the button of that name, as before."""
    assert _triples("Log in, then click Profile") == [("click", "log in", ""), ("click", "Profile", "")]


def test_matching_prefers_the_element_naming_more_of_the_steps_words() -> None:
    """ "Edit Reports" after "Reports": the button "Edit Reports beta" (icon, text and a badge), not the tab link
    "Reports" that also contains a word of it; an icon-only button is named by its title."""
    from agents.app.reproduce import match_element

    screen = [
        Element("link", "Reports", locator="#tab"),
        Element("button", "\xa0Edit Reports beta", label="Open the editor", locator="#edit"),
        Element("button", "", label="Upload a photo", locator="#up"),
    ]
    assert match_element(Step("click", "Edit Reports"), screen).locator == "#edit"  # type: ignore[union-attr]
    assert match_element(Step("click", "Reports"), screen).locator == "#tab"  # type: ignore[union-attr]
    assert match_element(Step("click", "upload"), screen).locator == "#up"  # type: ignore[union-attr]


def test_what_the_app_refuses_or_fails_with_is_the_actual_text() -> None:
    """ "The form refuses with "X"" / "saving fails with "X"": the quoted answer is what the oracle looks for."""
    message = "Title already taken by another board of this workspace, choose another one"
    report = f'I set the title to "Q3" and saved. The form refuses with "{message}", always.'
    assert split_report(report).actual == f'"{message}"'
    assert oracle_spec(split_report(report)).actual == (message,), "a long message is quoted whole"


@pytest.mark.parametrize(
    ("clause", "target", "near"),
    [
        ('Click "Remove" next to Carol', "Remove", "Carol"),
        ("press the trash icon in the row of invoice 12", "trash", "invoice 12"),
        ("click Edit beside 'Monthly rent'", "Edit", "Monthly rent"),
        ("Click Save", "Save", ""),
    ],
)
def test_a_neighbour_tells_look_alikes_apart_and_next_to_is_not_a_new_step(clause: str, target: str, near: str) -> None:
    """Rows of a list share their controls; the row the report names is kept as `near`, and "next to" does not
    split the clause the way "next, click ..." does."""
    assert len(clauses(f"1. {clause}")) == 1
    (step,) = extract_rules(f"# bug\n\n1. {clause}\n\nActual: it fails")
    assert (step.action, step.target, step.near) == ("click", target, near)
    assert clauses("Click A, next click B") == ["Click A", "click B"]

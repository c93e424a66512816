"""S2R extraction, retrieval, the model extractor and the oracle's text rules (no browser)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bot.cli.apprepro import _model
from bot.config import Settings
from sandboxes.runners.driver import Element, Signal, state_hash
from sandboxes.runners.oracle import OracleSpec, judge_signals, judge_text, oracle_spec
from sandboxes.runners.s2r import Step, extract_llm, extract_rules, extract_steps, retrieve, split_report
from sandboxes.runners.webcases import extraction_score, load_web_cases
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
        # Past-tense prose with "and" joining two steps and a switch the rules learn from the examples.
        (
            "I went to Preferences and flipped the sound switch, then clicked Apply.",
            [("click", "Preferences", ""), ("click", "sound", ""), ("click", "Apply", "")],
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
        complete = _model(llm_settings(settings, srv.base_url))
        steps, extractor = await extract_steps((WEBAPPS / "search" / "issue.md").read_text(), complete)
    assert extractor == "llm"
    assert [s.to_json() for s in steps] == [{**r, "input": r.get("input", "")} for r in reply]
    assert srv.requests[0]["messages"][0]["role"] == "system"


def test_case_files_are_valid() -> None:
    for toml in WEBAPPS.glob("*/case.toml"):
        meta = tomllib.loads(toml.read_text())
        assert meta["start"] in ("static", "server") and meta["oracle"] and meta["steps"]

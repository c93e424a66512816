"""Tool schemas, output cleaning, policy globs, prompts and agent-kind mixing: the pure parts of the LLM agent."""

from __future__ import annotations

import pytest

from agents.chat import ModelReply, ToolCall, verdict_from_reply
from agents.repair.llm.loop import system_prompt
from agents.repair.llm.tools import STRATEGIES, TOOL_NAMES, TOOL_SCHEMAS, changed_paths, is_denied
from agents.repair.registry import trajectory_kinds
from agents.tool_output import clean_output, strip_terminal
from agents.trajectory import FormatError


def test_tool_names_and_every_parameter_described() -> None:
    assert set(TOOL_NAMES) == {
        "search_code", "view_file", "edit_file", "run_tests", "finish",
        "fault_localization", "extract_test", "express_hypothesis", "discard_hypothesis",
    }  # fmt: skip
    for tool in TOOL_SCHEMAS:
        fn = tool["function"]
        assert fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["description"].strip()


def test_strip_terminal_removes_ansi_and_progress_redraws() -> None:
    raw = "\x1b[32mPASSED\x1b[0m\n 10%|#         |\r 50%|#####     |\r100%|##########|\ndone\n45%|####   | 9/20\n"
    text = strip_terminal(raw)
    assert "\x1b" not in text and "%|" not in text
    assert "PASSED" in text and "done" in text


def test_clean_output_keeps_head_tail_and_error_lines_with_marker() -> None:
    lines = [f"line {i}" for i in range(500)]
    lines[250] = "E   AssertionError: assert 8 == 3"
    lines[251] = "RecursionError: maximum recursion depth exceeded"
    out = clean_output("\n".join(lines), head=10, tail=10).splitlines()
    assert out[:10] == lines[:10] and out[-10:] == lines[-10:]
    assert "lines cut" in out[10]
    assert lines[250] in out and lines[251] in out
    assert len(out) < 30
    assert clean_output("short\noutput") == "short\noutput"


def test_denied_paths_and_changed_paths() -> None:
    assert is_denied(".github/workflows/x.yml", (".github/workflows/**",))
    assert is_denied(".github/workflows/sub/y.yml", (".github/workflows/**",))
    assert not is_denied(".github/ISSUE_TEMPLATE.md", (".github/workflows/**",))
    diff = "diff --git a/gcd.py b/gcd.py\n--- a/gcd.py\n+++ b/gcd.py\ndiff --git a/t/x.py b/t/x.py\n"
    assert changed_paths(diff) == ["gcd.py", "t/x.py"]


def test_each_strategy_has_its_own_prompt() -> None:
    prompts = {s: system_prompt(s) for s in STRATEGIES}
    assert len(set(prompts.values())) == len(STRATEGIES)
    assert all("bug reproduction test" in p for p in prompts.values())
    with pytest.raises(ValueError, match="unknown strategy"):
        system_prompt("yolo")


def test_agent_kinds_auto_and_mixed() -> None:
    assert trajectory_kinds("auto", 2, llm_configured=False) == ["classic", "classic"]
    assert trajectory_kinds("auto", 2, llm_configured=True) == ["llm", "llm"]
    assert trajectory_kinds("mixed", 3, llm_configured=True) == ["llm", "classic", "llm"]
    with pytest.raises(ValueError, match="unknown agent kind"):
        trajectory_kinds("gpt", 1, llm_configured=True)


def test_tool_call_arguments_must_be_a_json_object() -> None:
    with pytest.raises(FormatError, match="not valid JSON"):
        ToolCall("1", "view_file", '{"path": ').parsed()
    with pytest.raises(FormatError, match="JSON object"):
        ToolCall("1", "view_file", "[1, 2]").parsed()
    assert verdict_from_reply(ModelReply('Sure: {"accepted": true, "reason": "ok"}'), "verdict")["accepted"] is True
    with pytest.raises(FormatError):
        verdict_from_reply(ModelReply("no idea"), "verdict")

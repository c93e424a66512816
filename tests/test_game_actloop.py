"""The model-driven action loop on a fake game driver (fast; the model is the scripted OpenAI-compatible server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.game.actloop import check_model_macro, model_loop, parse_proposal
from agents.game.driver import GameCrash, GameState
from agents.game.reproduce import replay_game, reproduce_game
from bot.cli.apprepro import model_call
from bot.settings.config import Settings, SettingsError
from tests.fakes.llm_server import ScriptedLLM, approx_tokens
from tests.llm_helpers import PRICE_IN, PRICE_OUT, llm_settings

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class FakeGame:
    """A game double: records macros, keeps chat and inventory, and crashes on `/bloom` with a negative radius."""

    name = "fakegame"

    def __init__(self) -> None:
        self.played: list[dict[str, Any]] = []
        self.chat: list[str] = []
        self.inventory: dict[int, str] = {}
        self.crashed: list[GameCrash] = []
        self.sessions = 0

    async def start(self) -> None:
        self.sessions += 1

    async def stop(self) -> None:
        return None

    async def act(self, action: dict[str, Any]) -> None:
        self.played.append(action)
        if action["action"] == "command":
            words = action["text"].split()
            if words[0] == "/giveme" and len(words) > 1:
                self.inventory[len(self.inventory) + 1] = words[1]
                self.chat.append(f"'{words[1]}' added to inventory.")
            elif words[0] == "/bloom" and len(words) > 1 and words[1].startswith("-"):
                self.crashed.append(GameCrash("log_error", "flowers/init.lua:9: bad radius", {}, "trace"))
            else:
                self.chat.append(f"-!- Invalid command: {words[0]}")

    async def state(self) -> GameState:
        return GameState(position=(0.0, 8.0, 0.0), inventory=dict(self.inventory), chat=list(self.chat))

    async def screenshot(self, path: Path) -> bool:
        path.write_bytes(PNG)
        return True

    async def crashes(self) -> list[GameCrash]:
        return list(self.crashed)

    async def knowledge(self) -> dict[str, Any]:
        return {"version": "fake 1", "nodes": [{"name": "flowers:rose", "description": "Rose"}], "commands": []}


REPORT = "# bloom crashes\nSteps: hold a rose and use the bloom command with a weird radius. The server crashes."


def _turn(actions: object) -> dict[str, str]:
    return {"text": json.dumps(actions)}


async def test_the_model_loop_filters_feeds_back_keeps_last_n_and_stops_on_the_oracle(
    settings: Settings, tmp_path: Path
) -> None:
    script = [
        # Turn 1: three invalid actions (unknown macro, pitch out of bounds, a command without /) and one valid.
        _turn(
            [
                {"action": "jump"},
                {"action": "look", "yaw": 0, "pitch": 3},
                {"action": "command", "text": "giveme flowers:rose"},
                {"action": "command", "text": "/giveme flowers:rose"},
            ]
        ),
        _turn([{"action": "command", "text": "/bloom 3"}]),
        _turn([{"action": "press", "key": "1"}, {"action": "wait", "seconds": 0.5}]),
        _turn([{"action": "command", "text": "/bloom -1"}, {"action": "click", "button": "left"}]),
        _turn([{"action": "wait", "seconds": 1}]),  # never asked for: the oracle fired
    ]
    game = FakeGame()
    async with ScriptedLLM(script) as srv:
        model = model_call(
            llm_settings(settings, srv.base_url), purpose="game_actions", fallback="no actions", whole_reply=True
        )
        result = await reproduce_game(
            REPORT, game, out_dir=tmp_path / "out", max_iterations=1, action_model=model, context_turns=2
        )
    assert result.status == "reproduced", result.reasons
    assert srv.served == 4  # the oracle stopped the loop before the fifth turn
    # Only valid, bounded macros were played; the click after the crash never ran.
    assert game.played == [
        {"action": "command", "text": "/giveme flowers:rose"},
        {"action": "command", "text": "/bloom 3"},
        {"action": "press", "key": "1", "seconds": 0.0},
        {"action": "wait", "seconds": 0.5},
        {"action": "command", "text": "/bloom -1"},
    ]
    second = srv.requests[1]["messages"]
    feedback = second[-1]["content"]
    assert "unknown macro 'jump'" in feedback and "pitch -1.57..1.57" in feedback and "starts with /" in feedback
    assert "'flowers:rose' added to inventory" in feedback  # the outcome is fed back
    assert '"inventory": {"1": "flowers:rose"}' in feedback  # and the state
    # Context window: the fourth request carries turns 2 and 3 only, not turn 1's reply.
    fourth = srv.requests[3]["messages"]
    assistants = [m["content"] for m in fourth if m["role"] == "assistant"]
    assert assistants == [script[1]["text"], script[2]["text"]]
    assert isinstance(fourth[-1]["content"], str)  # no image part unless asked for
    # Token and cost counts come from the server's usage fields.
    usage = result.model_usage
    assert usage is not None
    served = [srv_usage(r, t["text"]) for r, t in zip(srv.requests, script, strict=False)]
    assert usage["calls"] == 4 and usage["dropped_actions"] == 3
    assert usage["prompt_tokens"] == sum(p for p, _ in served)
    assert usage["completion_tokens"] == sum(c for _, c in served)
    cost = (usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT) / 1e6
    assert usage["cost_usd"] == pytest.approx(cost, abs=1e-6)
    assert result.to_json()["model_usage"] == usage
    saved = json.loads((tmp_path / "out" / "actions.json").read_text())
    assert saved["actions"] == game.played
    print(
        f"figures game model loop: calls={usage['calls']} prompt={usage['prompt_tokens']} "
        f"completion={usage['completion_tokens']} cost=${usage['cost_usd']}"
    )


def srv_usage(body: dict[str, Any], reply: str) -> tuple[int, int]:
    """The usage the scripted server reports for one request and its reply (its own approximation)."""
    return approx_tokens(json.dumps(body["messages"])) + approx_tokens("[]"), approx_tokens(reply + "[]")


async def test_screenshot_goes_as_an_image_part_only_when_asked_and_done_ends_the_loop(tmp_path: Path) -> None:
    shot = tmp_path / "s.png"
    shot.write_bytes(PNG)
    seen: list[list[dict[str, Any]]] = []

    def model(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return '{"done": true, "reason": "all steps played"}'

    class Player:
        verdict = None

        async def do(self, action: dict[str, Any]) -> GameState:
            raise AssertionError("nothing to play")

    for images in (True, False):
        out = await model_loop(model, Player(), GameState(), "goal", images=images, screenshot=lambda: shot)
        assert out.stopped == "done" and out.turns == 1 and out.usage.calls == 1
    with_image, without = seen[0][-1]["content"], seen[1][-1]["content"]
    assert with_image[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert isinstance(without, str) and '"position": null' in without


async def test_turn_and_time_caps(tmp_path: Path) -> None:
    calls = 0

    def model(messages: list[dict[str, Any]]) -> str:
        nonlocal calls
        calls += 1
        return "let me think"  # no JSON: fed back, nothing played

    class Player:
        verdict = None

        async def do(self, action: dict[str, Any]) -> GameState:
            return GameState()

    out = await model_loop(model, Player(), GameState(), "goal", max_turns=3, context_turns=1)
    assert (out.stopped, out.turns, calls, out.dropped) == ("turns", 3, 3, 3)
    out = await model_loop(model, Player(), GameState(), "goal", deadline=0.0)
    assert out.stopped == "time" and calls == 3


async def test_without_a_model_the_rules_play_and_no_usage_is_reported(tmp_path: Path) -> None:
    game = FakeGame()
    report = "# bloom\nSteps: run `/bloom -2` in chat. The server crashes."
    result = await reproduce_game(report, game, out_dir=tmp_path / "out", max_iterations=1)
    assert result.status == "reproduced" and result.model_usage is None
    assert "model_usage" not in result.to_json()
    assert game.played[0] == {"action": "command", "text": "/bloom -2"}


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        ({"action": "write", "text": "x" * 300}, "at most 200"),
        ({"action": "write", "text": "a\nb"}, "one line"),
        ({"action": "press", "key": "ctrl+alt+Delete"}, "key name"),
        ({"action": "wait", "seconds": 25}, "0-10"),
        ({"action": "look", "yaw": "north", "pitch": 0}, "numbers"),
        ({"action": "look", "yaw": 99, "pitch": 0}, "yaw is"),
        ({"action": "click", "button": "middle"}, "left or right"),
        ("wait 3", "an object"),
        ({"action": "wait", "seconds": [1]}, "a number"),
        ({"action": "press", "key": "1", "seconds": "long"}, "a number"),
    ],
)
def test_out_of_bounds_macros_are_refused(action: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check_model_macro(action)


def test_proposals_keep_known_arguments_only_and_at_most_five() -> None:
    actions, problems, done = parse_proposal(json.dumps([{"action": "wait", "seconds": 1, "settle": 99}] * 6))
    assert actions == [{"action": "wait", "seconds": 1.0}] * 5 and "first 5 of 6" in problems[0] and not done


def test_loop_settings_are_read_and_checked() -> None:
    env = {"REPROBOT_GAME_MODEL_TURNS": "5", "REPROBOT_GAME_CONTEXT_TURNS": "0", "REPROBOT_GAME_MODEL_IMAGES": "on"}
    s = Settings.from_env(env)
    assert (s.game_model_turns, s.game_context_turns, s.game_model_images) == (5, 0, True)
    with pytest.raises(SettingsError, match="GAME_MODEL_TURNS"):
        Settings.from_env({"REPROBOT_GAME_MODEL_TURNS": "0"})


def test_the_closing_note_reports_what_the_model_cost() -> None:
    from bot.render.app_report import render_app_reproduction

    usage = {"calls": 4, "prompt_tokens": 2122, "completion_tokens": 96, "cost_usd": 0.006265}
    body = render_app_reproduction({"status": "reproduced", "actions": [{}] * 5, "model_usage": usage}, {})
    assert "model: 4 call(s), 2,122 prompt + 96 completion tokens, $0.0063" in body
    assert "model:" not in render_app_reproduction({"status": "reproduced", "actions": []}, {})


async def test_a_failing_model_ends_the_loop_without_charging_tokens() -> None:
    class Player:
        verdict = None

        async def do(self, action: dict[str, Any]) -> GameState:
            return GameState()

    out = await model_loop(lambda messages: "", Player(), GameState(), "goal", max_turns=5)
    assert (out.stopped, out.turns, out.usage.calls, out.usage.prompt_tokens) == ("model_failed", 2, 2, 0)


async def test_after_the_model_iteration_the_rules_play_their_usual_first_attempt(tmp_path: Path) -> None:
    game = FakeGame()
    report = "# bloom\nSteps: hold a flowers:rose and use it. The server crashes."
    result = await reproduce_game(
        report, game, out_dir=tmp_path / "out", max_iterations=2, action_model=lambda m: '{"done": true}'
    )
    assert result.status == "not_reproduced" and result.iterations == 2 and game.sessions == 2
    assert result.model_usage is not None and result.model_usage["turns"] == 1
    clicks = [a["button"] for a in game.played if a["action"] == "click"]
    assert clicks == ["left"]  # "use" as the rules first try it (left button), not the swapped variant


class SlowGame(FakeGame):
    """A loaded machine: a crash reaches the log only on the third look after the command that causes it."""

    def __init__(self) -> None:
        super().__init__()
        self.looks_until_crash: int | None = None

    async def act(self, action: dict[str, Any]) -> None:
        before = len(self.crashed)
        await super().act(action)
        if len(self.crashed) > before:
            self.pending, self.crashed = self.crashed[before:], self.crashed[:before]
            self.looks_until_crash = 3

    async def crashes(self) -> list[GameCrash]:
        if self.looks_until_crash is not None:
            self.looks_until_crash -= 1
            if self.looks_until_crash == 0:
                self.crashed.extend(self.pending)
        return list(self.crashed)


async def test_a_late_crash_is_seen_by_the_play_and_by_its_replay(settings: Settings, tmp_path: Path) -> None:
    """The oracle keeps looking after the last macro, so a crash that reaches the log a moment late counts, in
    the first play and in the replay of its macro log alike (nothing extra is recorded for that wait)."""
    script = [_turn([{"action": "command", "text": "/bloom -1"}]), _turn([{"action": "done"}])]
    async with ScriptedLLM(script) as srv:
        model = model_call(
            llm_settings(settings, srv.base_url), purpose="game_actions", fallback="no actions", whole_reply=True
        )
        first = await reproduce_game(
            REPORT, SlowGame(), out_dir=tmp_path / "out", max_iterations=1, action_model=model, context_turns=2
        )
    assert first.status == "reproduced", first.reasons
    saved = json.loads((tmp_path / "out" / "actions.json").read_text())
    assert saved["actions"] == [{"action": "command", "text": "/bloom -1"}]
    again = await replay_game(tmp_path / "out" / "actions.json", SlowGame(), out_dir=tmp_path / "replay")
    assert again.status == "reproduced", again.reasons

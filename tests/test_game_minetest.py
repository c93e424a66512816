"""Acceptance of game reproduction on the real Minetest: five player-written reports against test mods.

Each report is reproduced in local mode (`reprobot reproduce --game minetest`) by the real server and client
(under one shared Xvfb), its macro log replays to the same oracle, and the fixed mod gives `not_reproduced`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.game.minetest import find_tool, missing_tools

SAMPLES = Path(__file__).parent / "samples" / "minetest"
REPROBOT = str(Path(sys.executable).with_name("reprobot"))
#: sample -> what the oracle fires on.
CASES = {
    "lamp_post": "crash",  # placing a node
    "warp_cmds": "crash",  # a chat command with an odd argument
    "magic_wand": "crash",  # using an item
    "pet_duck": "crash",  # an entity interaction
    "coin_purse": "wrong_text",  # a logic bug with a visible state
}

pytestmark = pytest.mark.skipif(
    bool(missing_tools()),
    reason=f"needs Minetest, Xvfb and xdotool (missing {', '.join(missing_tools())}: .ci/system-packages test)",
)


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """One Xvfb for every session of this module."""
    for _ in range(5):
        number = random.randrange(2000, 4000)
        if Path(f"/tmp/.X{number}-lock").exists():
            continue
        proc = subprocess.Popen(
            [str(find_tool("Xvfb")), f":{number}", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(50):
            probe = subprocess.run(
                ["xdotool", "getdisplaygeometry"], env={"DISPLAY": f":{number}"}, capture_output=True
            )
            if probe.returncode == 0 or proc.poll() is not None:
                break
            time.sleep(0.2)
        if proc.poll() is None:
            yield f":{number}"
            proc.terminate()
            proc.wait(10)
            return
    pytest.skip("no Xvfb display could be started")


def _run(args: list[str], display: str, tmp: Path, extra: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp),
        "REPROBOT_DATA_DIR": str(tmp / "data"),
        "REPROBOT_GAME_DISPLAY": display,
        **(extra or {}),
    }
    proc = subprocess.run([REPROBOT, *args, "--json"], capture_output=True, text=True, env=env, timeout=300)
    with contextlib.suppress(json.JSONDecodeError):
        return proc.returncode, json.loads(proc.stdout)
    raise AssertionError(f"no JSON from {args}: {proc.stdout[-500:]} {proc.stderr[-2000:]}")


#: The report `make test` runs (its oracle is the visible-state one; the scripted-model test below reproduces a
#: crash on the real game too). The other four are `long` (about 40 s each): `make test-all` runs them.
SHORT_CASE = "coin_purse"


@pytest.mark.parametrize(
    "case", [pytest.param(case, marks=() if case == SHORT_CASE else pytest.mark.long) for case in sorted(CASES)]
)
def test_report_reproduces_replays_and_the_fix_does_not(case: str, display: str, tmp_path: Path) -> None:
    buggy, fixed, report = SAMPLES / case / "buggy", SAMPLES / case / "fixed", SAMPLES / case / "report.md"
    out = tmp_path / "run"
    code, doc = _run(
        ["reproduce", "--game", "minetest", "--repo", str(buggy), "--issue", str(report), "--out", str(out)],
        display,
        tmp_path,
    )
    assert (code, doc["status"]) == (0, "reproduced"), doc
    assert doc["oracle"]["fired"] == CASES[case]
    assert doc["screenshots"] and all(Path(p).is_file() for p in doc["screenshots"])
    assert (out / "actions.json").is_file() and doc["replay"].startswith("reprobot replay --game minetest")
    if CASES[case] == "crash":
        assert (out / "crash.txt").read_text().strip()
    print(f"figures {case}: seconds={doc['seconds']} iterations={doc['iterations']} actions={len(doc['actions'])}")

    code, replay = _run(
        [
            "replay",
            "--game",
            "minetest",
            "--repo",
            str(buggy),
            "--actions",
            str(out / "actions.json"),
            "--out",
            str(tmp_path / "replay"),
        ],
        display,
        tmp_path,
    )
    assert (code, replay["status"]) == (0, "reproduced"), replay
    assert replay["oracle"]["fired"] == doc["oracle"]["fired"]
    if doc["crash"]:
        assert replay["crash"]["signature"] == doc["crash"]["signature"]

    code, after_fix = _run(
        [
            "reproduce",
            "--game",
            "minetest",
            "--repo",
            str(fixed),
            "--issue",
            str(report),
            "--iterations",
            "1",
            "--out",
            str(tmp_path / "fixed"),
        ],
        display,
        tmp_path,
    )
    assert (code, after_fix["status"]) == (1, "not_reproduced"), after_fix


def test_scripted_model_actions_reproduce_a_report_on_the_real_game(display: str, tmp_path: Path) -> None:
    """With a model configured, the action loop's JSON macros drive the real game; an invalid one is filtered."""
    from tests.llm_helpers import scripted_server_thread

    report = SAMPLES / "warp_cmds" / "report.md"
    script = [
        {"text": json.dumps([{"action": "command", "text": "/warp ~ 20 ~"}])},  # the steps
        {"text": json.dumps([{"action": "look", "yaw": 0, "pitch": 9}, {"action": "command", "text": "/warp ~ 20 ~"}])},
        {"text": json.dumps([{"action": "wait", "seconds": 2}])},  # in case the crash reaches the log late
        {"text": json.dumps({"done": True})},
    ]
    with scripted_server_thread(script) as srv:
        env = {
            "REPROBOT_LLM_BASE_URL": srv.base_url,
            "REPROBOT_LLM_MODEL": "scripted-model",
            "REPROBOT_LLM_API_KEY": "sk-test-secret",
            "REPROBOT_LLM_PRICE_INPUT": "2.5",
            "REPROBOT_LLM_PRICE_OUTPUT": "10",
        }
        args = ["reproduce", "--game", "minetest", "--repo", str(SAMPLES / "warp_cmds" / "buggy")]
        args += ["--issue", str(report), "--iterations", "1", "--out", str(tmp_path / "run")]
        code, doc = _run(args, display, tmp_path, env)
    assert (code, doc["status"], doc["extractor"]) == (0, "reproduced", "llm"), doc
    assert doc["oracle"]["fired"] == "crash"
    assert {"action": "command", "text": "/warp ~ 20 ~"} in doc["actions"]
    assert not any(a.get("pitch") == 9 for a in doc["actions"])  # the invalid look was filtered out
    usage = doc["model_usage"]
    assert usage["calls"] >= 1 and usage["dropped_actions"] == 1 and usage["prompt_tokens"] > 0
    print(f"figures model loop on minetest: seconds={doc['seconds']} {json.dumps(usage)}")

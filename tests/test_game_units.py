"""Game reproduction without a game: Lua crash signatures, the rule synthesizer, the action model, macros,
and the Minecraft driver on recorded crash reports (../shared/fixtures/minecraft-crash)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.game.driver import GameDriverError, GameState, validate_macro
from agents.game.install import Installed, check_world, install_probe, install_repo, probe_name
from agents.game.luacrash import parse_lua_crashes, same_signature
from agents.game.reproduce import (
    ActionModel,
    GameStep,
    KnowledgeBase,
    _synthesize,
    load_macros,
    synthesize_llm,
    synthesize_steps,
)
from agents.reading.crash import crash_signature, parse_crash
from bot.cli.apprepro import model_call
from bot.selfhosted.minecraft import MinecraftDriver, rcon_packet, rcon_parse, report_signature
from bot.settings.config import Settings
from tests.conftest import FIXTURES, require_shared
from tests.fakes.llm_server import ScriptedLLM, approx_tokens
from tests.llm_helpers import llm_settings

REPROBOT = str(Path(sys.executable).with_name("reprobot"))

# A made-up mod's crash, as a server writes it and as a player pastes it (other paths, no timestamps).
SERVER_LOG = """\
2025-01-01 10:00:00: ACTION[Server]: player places node garden:planter at (1,8,2)
2025-01-01 10:00:00: ERROR[Main]: ServerError: AsyncErr: Lua: Runtime error from mod 'garden' in callback \
node_on_construct(): /srv/mt/worlds/w/worldmods/garden/nodes.lua:41: attempt to concatenate a nil value (field 'crop')
2025-01-01 10:00:00: ERROR[Main]: stack traceback:
2025-01-01 10:00:00: ERROR[Main]: \t[C]: in function '__concat'
2025-01-01 10:00:00: ERROR[Main]: \t/srv/mt/worlds/w/worldmods/garden/nodes.lua:41: in function 'describe'
2025-01-01 10:00:00: ERROR[Main]: \t/srv/mt/worlds/w/worldmods/garden/nodes.lua:12: in function <...>
2025-01-01 10:00:00: ERROR[Main]: \t/usr/share/games/minetest/builtin/game/item.lua:280: in function 'place'
"""
PASTED = """my server crashed:
    Runtime error from mod 'garden' in callback node_on_construct(): ...s/garden/nodes.lua:44: attempt to \
concatenate a nil value (field 'crop')
    stack traceback:
        [C]: in function '__concat'
        ...s/garden/nodes.lua:44: in function 'describe'
"""


def test_lua_crash_signature_ignores_paths_and_line_numbers() -> None:
    (seen,) = parse_lua_crashes(SERVER_LOG)
    (pasted,) = parse_lua_crashes(PASTED)
    assert seen.mod == "garden" and seen.callback == "node_on_construct"
    assert seen.signature() == {
        "exception_type": "LuaError: attempt to concatenate a nil value (field 'crop')",
        "frames": ["garden/nodes.lua:describe", "garden/nodes.lua:?"],
    }
    assert same_signature(seen.signature(), pasted.signature())
    other = SERVER_LOG.replace("field 'crop'", "field 'soil'")
    assert not same_signature(parse_lua_crashes(other)[0].signature(), pasted.signature())
    assert parse_lua_crashes("2025-01-01: ACTION[Main]: all fine\n") == []


KB = KnowledgeBase(
    {
        "version": "test",
        "nodes": [
            {"name": "garden:planter", "description": "Wooden Planter"},
            {"name": "default:dirt", "description": "Dirt"},
        ],
        "tools": [{"name": "garden:hoe", "description": "Garden Hoe"}],
        "items": [{"name": "garden:snail", "description": "entity"}],
        "commands": [{"name": n, "params": "", "description": ""} for n in ("plant", "giveme", "spawnentity")],
    }
)


def test_rule_synthesizer_reads_commands_things_and_verbs() -> None:
    report = """# planter broken
Steps:
1. grab a wooden planter
2. put it down on grass
3. type `/plant carrot 0` in chat
4. swing the garden hoe at the sky
5. spawn a snail and punch it

```
ERROR[Main]: /home/me/.minetest/mods/garden/init.lua:3: in function 'x'
```
"""
    steps = synthesize_steps(report, KB)
    got = [(s.kind, s.target or s.text, s.sky) for s in steps]
    assert got == [
        ("place", "garden:planter", False),
        ("command", "/plant carrot 0", False),
        ("use", "garden:hoe", True),
        ("spawn", "garden:snail", False),
        ("punch", "garden:snail", False),
    ]
    assert KB.search("hoe")[0]["name"] == "garden:hoe"


def test_action_model_wields_aims_and_spawns() -> None:
    state = GameState(position=(0.0, 8.5, 0.0), inventory={1: "default:dirt 99"})
    place = ActionModel().macros(GameStep("place", "garden:planter"), state)
    assert place == [
        {"action": "command", "text": "/giveme garden:planter"},
        {"action": "press", "key": "2"},
        {"action": "look", "yaw": 0.0, "pitch": 1.1},
        {"action": "click", "button": "right"},
    ]
    use_sky = ActionModel(swap_use=True).macros(GameStep("use", "default:dirt", sky=True), state)
    assert use_sky[0] == {"action": "press", "key": "1"} and use_sky[-1]["button"] == "right"
    spawn = ActionModel().macros(GameStep("punch", "garden:snail"), state)
    assert spawn == [{"action": "command", "text": "/spawnentity garden:snail 0,8.8,2"}]
    state.nearby = [{"name": "garden:snail", "pos": (0.0, 8.8, 2.0)}]
    aim = ActionModel().macros(GameStep("punch", "garden:snail"), state)
    assert aim[0]["action"] == "look" and aim[0]["pitch"] > 0 and aim[1] == {"action": "click", "button": "left"}


@pytest.mark.parametrize(
    "bad",
    [{"action": "jump"}, {"action": "click", "button": "middle"}, {"action": "wait", "seconds": 99}, "press"],
)
def test_invalid_macros_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        validate_macro(bad)


def test_rcon_packets_round_trip() -> None:
    packet = rcon_packet(7, 2, "time set day")
    assert rcon_parse(packet[:5]) is None
    assert rcon_parse(packet) == (7, 2, "time set day")


def _game_dir(tmp_path: Path) -> Path:
    game = tmp_path / ".minecraft"
    (game / "crash-reports").mkdir(parents=True)
    (game / "logs").mkdir()
    (game / "logs" / "latest.log").write_text("[12:00:00] [Render thread/INFO]: [CHAT] hello\n")
    return game


def test_minecraft_driver_reads_new_crash_reports_with_the_parser(tmp_path: Path) -> None:
    source = require_shared(FIXTURES / "minecraft-crash") / "minecraft" / "debug-crash.txt"
    text = source.read_text()
    game = _game_dir(tmp_path)
    (game / "crash-reports" / "crash-old.txt").write_text(text)  # from before the run: not the run's
    driver = MinecraftDriver(game)
    driver.mark()
    assert asyncio.run(driver.crashes()) == []
    shutil.copy(source, game / "crash-reports" / "crash-2019-05-28_11.44.54-client.txt")
    (crash,) = asyncio.run(driver.crashes())
    parsed = parse_crash(text)
    assert parsed is not None
    assert crash.kind == "crash_report" and crash.signature == crash_signature(parsed).to_json()
    # The report pasting the same crash gives the same signature: the oracle's match.
    assert same_signature(crash.signature, report_signature(f"It crashed:\n{text}") or {})
    state = asyncio.run(driver.state())
    assert state.chat == []  # only lines after the mark


def test_minecraft_driver_reads_crashes_printed_into_latest_log(tmp_path: Path) -> None:
    fixtures = require_shared(FIXTURES / "minecraft-crash")
    game = _game_dir(tmp_path)
    driver = MinecraftDriver(game)
    driver.mark()
    log_text = (fixtures / "minecraft" / "debug-crash.txt").read_text()
    with (game / "logs" / "latest.log").open("a") as fh:
        fh.write("[12:00:01] [Render thread/INFO]: [CHAT] <me> about to crash\n" + log_text)
    kinds = [c.kind for c in asyncio.run(driver.crashes())]
    assert kinds == ["log_error"]
    assert asyncio.run(driver.state()).chat == ["[12:00:01] [Render thread/INFO]: [CHAT] <me> about to crash"]


def test_without_a_game_the_minecraft_driver_fails_with_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(GameDriverError, match="REPROBOT_MINECRAFT_DIR"):
        asyncio.run(MinecraftDriver(None).start())
    issue = tmp_path / "issue.md"
    issue.write_text("# crash\nPlace a TNT and it crashes\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "REPROBOT_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run(
        [REPROBOT, "reproduce", "--game", "minecraft", "--issue", str(issue)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 8
    assert proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "no Minecraft on this machine" in proc.stderr
    proc = subprocess.run(
        [REPROBOT, "reproduce", "--game", "minecraft", "--issue", str(issue), "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert json.loads(proc.stdout)["status"] == "error"


async def test_model_synthesizer_gets_knowledge_and_feedback_through_the_scripted_server(settings: Settings) -> None:
    """The LLM step synthesizer over the real openai client: a bad answer is fed back, the second is used."""
    bad = [{"action": "place", "target": "garden:plantr"}]
    good = [
        {"action": "place", "target": "garden:planter"},
        {"action": "command", "text": "/plant carrot 0"},
        {"action": "use", "target": "garden:hoe", "sky": True},
    ]
    report = "# planter\nPlace a wooden planter, then `/plant carrot 0`, then swing the hoe at the sky: crash"
    script = [{"text": json.dumps(bad)}, {"text": "```json\n" + json.dumps(good) + "\n```"}]
    async with ScriptedLLM(script) as srv:
        complete = model_call(
            llm_settings(settings, srv.base_url), purpose="s2r", fallback="the rules extract the steps"
        )
        steps = await synthesize_llm(report, KB, complete)
    assert [(s.kind, s.target or s.text, s.sky) for s in steps] == [
        ("place", "garden:planter", False),
        ("command", "/plant carrot 0", False),
        ("use", "garden:hoe", True),
    ]
    first, second = srv.requests
    assert "garden:planter" in first["messages"][1]["content"]  # the retrieved knowledge is in the prompt
    assert "not a registered name" in second["messages"][-1]["content"]  # the problem is fed back
    usage = [approx_tokens(json.dumps(r["messages"])) for r in srv.requests]
    print(f"figures model: requests={len(srv.requests)} prompt_tokens~{sum(usage)}")


async def test_a_model_that_keeps_failing_leaves_the_steps_to_the_rules() -> None:
    def complete(messages: list[dict[str, str]]) -> str:
        return "I cannot tell"

    with pytest.raises(ValueError, match="no JSON list"):
        await synthesize_llm("# x\nplace a wooden planter", KB, complete)
    lines: list[str] = []
    steps, extractor = await _synthesize("# x\nplace a wooden planter", KB, complete, lines)
    assert extractor == "rules" and [s.target for s in steps] == ["garden:planter"] and "unusable" in lines[0]


def test_repos_are_installed_as_mods_modpacks_or_games_and_anything_else_is_refused(tmp_path: Path) -> None:
    games = tmp_path / "games"
    mod = tmp_path / "lantern-main"
    mod.mkdir()
    (mod / "init.lua").write_text("-- a mod\n")
    assert install_repo(mod, tmp_path / "w1", games) == Installed(["lantern"])
    assert (tmp_path / "w1" / "worldmods" / "lantern" / "init.lua").is_file()
    pack = tmp_path / "pack"
    for name in ("a", "b"):
        (pack / name).mkdir(parents=True)
        (pack / name / "init.lua").write_text("")
        (pack / name / "mod.conf").write_text(f"name = {name}_mod\n")
    (pack / "modpack.conf").write_text("name = pack\n")
    assert install_repo(pack, tmp_path / "w2", games) == Installed(["a_mod", "b_mod"])
    game = tmp_path / "mygame"
    (game / "mods" / "core").mkdir(parents=True)
    (game / "game.conf").write_text("title = My Game\n")
    (game / "minetest.conf").write_text("secure.http_mods = core\nmy_setting = 1\n")
    (game / "mods" / "core" / "init.lua").write_text("")
    assert install_repo(game, tmp_path / "w3", games) == Installed([], "mygame")
    assert (games / "mygame" / "mods" / "core" / "init.lua").is_file()  # a copy: the game runs from there
    assert (games / "mygame" / "minetest.conf").read_text() == "my_setting = 1\n"  # no secure.* from a game
    (tmp_path / "docs").mkdir()
    with pytest.raises(GameDriverError, match="not a Minetest mod, modpack or game"):
        install_repo(tmp_path / "docs", tmp_path / "w4", games)


def _hostile_world(tmp_path: Path) -> tuple[Path, Path, str]:
    """The reported attack, installed: a mod.conf named like the probe over a modpack holding a mod of that
    name, beside a symlink of that name to the same modpack; then the probe and a server config."""
    repo = tmp_path / "repo"
    (repo / "reprobot_probe").mkdir(parents=True)
    (repo / "mod.conf").write_text("name = reprobot_probe\n")
    (repo / "modpack.conf").write_text("name = reprobot_probe\n")
    (repo / "reprobot_probe" / "mod.conf").write_text("name = reprobot_probe\n")
    (repo / "reprobot_probe" / "init.lua").write_text("-- hostile\n")
    (repo / "other").mkdir()
    (repo / "other" / "init.lua").write_text("-- hostile too\n")
    (repo / "other" / "textures").symlink_to("../reprobot_probe")  # inside the repo: copied as a folder
    world = tmp_path / "world"
    assert install_repo(repo, world, tmp_path / "games") == Installed(["other", "reprobot_probe"])
    probe = probe_name()
    install_probe(world, probe)
    conf = tmp_path / "server.conf"
    conf.write_text(f"secure.enable_security = true\nsecure.trusted_mods =\nsecure.http_mods = {probe}\n")
    return world, conf, probe


def test_a_repo_cannot_merge_with_shadow_or_rename_the_probe(tmp_path: Path) -> None:
    """Installed flat, one plain mod per folder; the probe, under a random name, in a folder of its own."""
    world, conf, probe = _hostile_world(tmp_path)
    mods = world / "worldmods"
    assert sorted(p.name for p in mods.iterdir()) == sorted(["other", "reprobot_probe", probe])
    assert not (mods / "reprobot_probe" / "modpack.conf").exists()  # a plain mod, holding nothing
    assert sorted(p.name for p in (mods / probe).iterdir()) == ["init.lua", "mod.conf"]
    assert (mods / probe / "mod.conf").read_text().startswith(f"name = {probe}\n")
    assert not any(p.is_symlink() for p in mods.rglob("*"))
    assert (mods / "other" / "textures" / "init.lua").read_text() == "-- hostile\n"
    check_world(world, conf, probe, None)  # what was written holds
    assert probe != probe_name() and re.fullmatch(r"reprobot_probe_[0-9a-f]{16}", probe)
    with pytest.raises(GameDriverError, match="already holds a folder"):
        install_probe(world, probe)  # never over anything: nothing merges


@pytest.mark.parametrize(
    "tamper",
    ["mod.conf names the probe", "symlink in the mods", "extra file in the probe", "two http mods", "no security"],
)
def test_the_world_is_checked_once_written(tamper: str, tmp_path: Path) -> None:
    world, conf, probe = _hostile_world(tmp_path)
    mods = world / "worldmods"
    if tamper == "mod.conf names the probe":
        (mods / "other" / "mod.conf").write_text(f'name = other\nx = """\nname = {probe}\n"""\n')
    elif tamper == "symlink in the mods":
        (mods / "other" / "link").symlink_to(mods / probe)
    elif tamper == "extra file in the probe":
        (mods / probe / "modpack.conf").write_text("")
    elif tamper == "two http mods":
        conf.write_text(conf.read_text() + "secure.http_mods = reprobot_probe\n")
    else:
        conf.write_text(conf.read_text().replace("enable_security = true", "enable_security = false"))
    with pytest.raises(GameDriverError, match="refused"):
        check_world(world, conf, probe, None)


def test_a_symlink_out_of_the_repo_refuses_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "init.lua").write_text("-- not the repo's\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "modpack.conf").write_text("name = pack\n")
    (repo / "reprobot_probe").symlink_to(outside)
    with pytest.raises(GameDriverError, match="symlink out of the repository"):
        install_repo(repo, tmp_path / "world", tmp_path / "games")
    (repo / "reprobot_probe").unlink()
    (repo / "a").mkdir()
    (repo / "a" / "init.lua").write_text("")
    (repo / "a" / "secret.png").symlink_to("/etc/hostname")
    with pytest.raises(GameDriverError, match="symlink out of the repository"):
        install_repo(repo, tmp_path / "world2", tmp_path / "games")


def test_a_bad_macro_log_is_refused_with_what_is_wrong(tmp_path: Path) -> None:
    log = tmp_path / "actions.json"
    log.write_text("not json")
    with pytest.raises(ValueError, match="cannot read the macro log"):
        load_macros(log)
    log.write_text(json.dumps({"actions": [{"action": "command", "text": "/x"}, {"action": "teleport"}]}))
    with pytest.raises(ValueError, match="unknown macro 'teleport'"):
        load_macros(log)
    log.write_text(json.dumps({"actions": [{"action": "wait", "seconds": 1}], "crash_signature": {"frames": []}}))
    macros, judge = load_macros(log)
    assert macros == [{"action": "wait", "seconds": 1}] and judge.signature == {"frames": []}

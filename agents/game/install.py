"""Putting a repository and the probe into a Minetest world so that the repository can never become the probe.

The probe mod is the one mod with the HTTP API (`secure.http_mods`). It gets a fresh random name per session,
so no repository can name a mod after it in advance, and it is written into a folder of its own that nothing
of the repository's shares. The repository is copied, never linked: every mod into its own folder of
`worldmods/`, named as Minetest will name it (mod.conf's `name`, else the folder's); a modpack is unpacked into
its mods, so no folder of the world is a modpack that could hold a mod of the probe's name; symlinks inside the
repository become copies of what they point at, and a symlink out of it refuses the repository. A game is copied
the same way into `games/`. check_world() then reads back what was written: if anything but the probe could be
loaded under its name or be granted HTTP, the session does not start.
"""

from __future__ import annotations

import re
import secrets
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agents.game.driver import GameDriverError

#: The probe's name is this plus a random suffix per session.
PROBE_PREFIX = "reprobot_probe"
#: Minetest's rule for mod names.
MOD_NAME = re.compile(r"^[a-z0-9_]+$")
_GAME_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_PACK_MARKERS = ("modpack.conf", "modpack.txt")
_CONF_FILES = frozenset({"mod.conf", "modpack.conf", "modpack.txt", "game.conf", "minetest.conf"})
_SKIP = frozenset({".git"})
#: Folder depth past which a copy stops (a symlink loop inside the repository ends here).
_MAX_DEPTH = 32
_PROBE_DESCRIPTION = "reprobot's probe: game state and a command channel to the runner (the only mod with HTTP)"


def probe_name() -> str:
    """A probe name no repository can know in advance."""
    return f"{PROBE_PREFIX}_{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Installed:
    """What install_repo put into the world: the repository's mod names, and its game's id when it is a game."""

    mods: list[str]
    game: str | None = None


def install_repo(repo: Path, world: Path, games: Path) -> Installed:
    """Copy a mod, a modpack, a folder of mods or a game into the world (mods) or into `games` (a game)."""
    root = repo.resolve()
    worldmods = world / "worldmods"
    worldmods.mkdir(parents=True, exist_ok=True)
    if (root / "game.conf").is_file():
        gameid = root.name if _GAME_ID.match(root.name) else "repo_game"
        games.mkdir(parents=True, exist_ok=True)
        _copy_tree(root, games / gameid, root, 0)
        _strip_secure_settings(games / gameid / "minetest.conf")
        return Installed([], gameid)
    found = _find_mods(root, root, 0)
    if not found:
        raise GameDriverError(f"{repo} is not a Minetest mod, modpack or game (no init.lua, mod.conf or game.conf)")
    names: list[str] = []
    for folder in found:
        name = mod_name(folder)
        if not MOD_NAME.match(name):
            raise GameDriverError(f"{folder.relative_to(root)}: {name!r} is not a valid Minetest mod name")
        if name in names:
            raise GameDriverError(f"the repository holds two mods named {name!r}")
        _copy_tree(folder, worldmods / name, root, 0)
        names.append(name)
    return Installed(names)


def _find_mods(folder: Path, root: Path, depth: int) -> list[Path]:
    """The mod folders of a repository folder: itself, a modpack's mods (nested packs too), or a folder of mods."""
    if depth > _MAX_DEPTH:
        raise GameDriverError(f"{folder.relative_to(root)}: folders nested too deep")
    is_pack = any((folder / marker).is_file() for marker in _PACK_MARKERS)
    if not is_pack and ((folder / "init.lua").is_file() or (folder / "mod.conf").is_file()):
        return [folder]
    holders = [folder]
    if depth == 0 and not is_pack and (folder / "mods").is_dir():
        holders = [_real(folder / "mods", root), folder]
    found: list[Path] = []
    for holder in holders:
        for entry in sorted(holder.iterdir()):
            if entry.name in _SKIP:
                continue
            sub = _real(entry, root)
            if sub.is_dir() and any((sub / f).is_file() for f in ("init.lua", "mod.conf", *_PACK_MARKERS)):
                found += _find_mods(sub, root, depth + 1)
    return found


def _real(entry: Path, root: Path) -> Path:
    """What a repository entry is: itself, or the target of a symlink that stays inside the repository."""
    if not entry.is_symlink():
        return entry
    target = entry.resolve()
    if target != root and root not in target.parents:
        raise GameDriverError(f"{entry.relative_to(root)} is a symlink out of the repository; refused")
    if not target.exists():
        raise GameDriverError(f"{entry.relative_to(root)} is a dangling symlink; refused")
    return target


def _copy_tree(src: Path, dest: Path, root: Path, depth: int) -> None:
    """Copy a repository folder to a new folder: files as files, symlinks as copies of their (inside) targets."""
    if depth > _MAX_DEPTH:
        raise GameDriverError(f"{src.relative_to(root)}: folders nested too deep (a symlink loop?)")
    dest.mkdir()  # never into an existing folder: nothing merges
    for entry in sorted(src.iterdir()):
        if entry.name in _SKIP:
            continue
        real = _real(entry, root)
        if real.is_dir():
            _copy_tree(real, dest / entry.name, root, depth + 1)
        elif real.is_file():
            shutil.copyfile(real, dest / entry.name)
        # Sockets, fifos and devices are not game content: left out.


def mod_name(folder: Path) -> str:
    """The name Minetest gives a mod: mod.conf's last `name`, else the folder's (as a valid name)."""
    conf = folder / "mod.conf"
    name = ""
    if conf.is_file():
        for key, value in _conf_pairs(conf.read_text(errors="replace")):
            if key == "name" and value:
                name = value
    return name or folder.name.removesuffix("-main").removesuffix("-master").replace("-", "_").lower()


def _conf_pairs(text: str) -> list[tuple[str, str]]:
    """key = value pairs of a Minetest settings file (multi-line \"\"\" values skipped)."""
    pairs: list[tuple[str, str]] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.strip()
        if in_block:
            in_block = line != '"""'
            continue
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if value.strip() == '"""':
            in_block = True
            continue
        pairs.append((key.strip(), value.strip()))
    return pairs


def _strip_secure_settings(conf: Path) -> None:
    """A game's own minetest.conf may not set `secure.*` (Minetest ignores them there too): they are dropped."""
    if conf.is_file():
        lines = conf.read_text(errors="replace").splitlines()
        conf.write_text("".join(f"{line}\n" for line in lines if not line.strip().startswith("secure.")))


def probe_files(name: str) -> dict[str, bytes]:
    """The probe mod's files, by file name, for a session whose probe is called `name`."""
    source = resources.files("agents.game").joinpath("mods", PROBE_PREFIX, "init.lua").read_bytes()
    conf = f"name = {name}\ndescription = {_PROBE_DESCRIPTION}\n".encode()
    return {"init.lua": source, "mod.conf": conf}


def install_probe(world: Path, name: str) -> None:
    """Write the probe into a new folder of the world's mods (an existing folder of its name refuses)."""
    folder = world / "worldmods" / name
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        raise GameDriverError(f"the world already holds a folder named {name}; refused") from None
    for file, content in probe_files(name).items():
        (folder / file).write_bytes(content)


def check_world(world: Path, server_conf: Path, probe: str, games: Path | None) -> None:
    """GameDriverError unless the probe alone can hold its name and only it is granted HTTP.

    Read back after the world is written: the server's security settings; the probe's folder, exactly our two
    files; no symlink anywhere in the mods or the game; the probe's name nowhere else (no folder, and in no
    mod.conf, modpack or game file, however Minetest would parse it).
    """
    settings: dict[str, list[str]] = {}
    for key, found in _conf_pairs(server_conf.read_text()):
        settings.setdefault(key, []).append(found)
    wanted = {"secure.enable_security": ["true"], "secure.trusted_mods": [""], "secure.http_mods": [probe]}
    for key, values in wanted.items():
        if settings.get(key) != values:
            raise GameDriverError(f"the server's {key} is {settings.get(key)!r}, not {values!r}; refused")
    folder = world / "worldmods" / probe
    if folder.is_symlink() or not folder.is_dir():
        raise GameDriverError("the probe's folder is missing or a symlink; refused")
    expected = probe_files(probe)
    if sorted(p.name for p in folder.iterdir()) != sorted(expected) or any(
        (folder / f).is_symlink() or (folder / f).read_bytes() != data for f, data in expected.items()
    ):
        raise GameDriverError("the probe's folder holds something other than the probe; refused")
    for tree in (world / "worldmods", games):
        if tree is not None and tree.exists():
            _check_tree(tree, folder, probe)


def _check_tree(tree: Path, probe_folder: Path, probe: str) -> None:
    for path in sorted(tree.rglob("*")):
        if path == probe_folder or probe_folder in path.parents:
            continue
        where = path.relative_to(tree)
        if path.is_symlink():
            raise GameDriverError(f"{tree.name}/{where} is a symlink; refused")
        if path.name == probe or (path.name in _CONF_FILES and probe in path.read_text(errors="replace")):
            raise GameDriverError(f"{tree.name}/{where} names the probe; refused")

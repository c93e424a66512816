"""The crash-report parser against every recorded pair in ../shared/fixtures/minecraft-crash, and signatures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.reading.crash import (
    JvmCrash,
    MinecraftCrash,
    crash_signature,
    find_crashes,
    group_by_signature,
    parse_crash,
)
from tests.conftest import FIXTURES, require_shared

CRASHES = FIXTURES / "minecraft-crash"
REPROBOT = str(Path(sys.executable).with_name("reprobot"))


def _pairs() -> list[Any]:
    """Every `X.txt`/`X.log` with an `X-parsed.txt` beside it, from the folder listing (none when absent)."""
    if not CRASHES.exists():
        return [pytest.param(None, None, id="fixtures-absent")]
    pairs = []
    for truth in sorted(CRASHES.glob("*/*-parsed.txt")):
        stem = truth.name.removesuffix("-parsed.txt")
        source = next((p for p in (truth.with_name(stem + ".txt"), truth.with_name(stem + ".log")) if p.exists()), None)
        pairs.append(pytest.param(source, truth, id=f"{truth.parent.name}/{stem}"))
    return pairs


def _compare(expected: Any, got: Any, where: str) -> list[str]:
    """Differences for every field the ground truth has (extra fields of ours are fine)."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return [f"{where}: expected an object, got {got!r}"]
        return [
            d for key, value in expected.items() for d in _compare(value, got.get(key, "<missing>"), f"{where}.{key}")
        ]
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            return [f"{where}: expected {len(expected)} items, got {got!r}"]
        return [d for i, (e, g) in enumerate(zip(expected, got, strict=True)) for d in _compare(e, g, f"{where}[{i}]")]
    return [] if expected == got else [f"{where}: expected {expected!r}, got {got!r}"]


@pytest.mark.parametrize(("source", "truth"), _pairs())
def test_cli_reproduces_the_ground_truth(source: Path | None, truth: Path | None) -> None:
    require_shared(CRASHES)
    assert source is not None and truth is not None, f"{truth} has no X.txt or X.log beside it"
    done = subprocess.run([REPROBOT, "crash", "parse", str(source), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    differences = _compare(json.loads(truth.read_text()), json.loads(done.stdout), truth.name)
    assert not differences, "\n".join(differences)


def test_every_pair_is_found() -> None:
    """The parametrization saw the whole folder (a broken glob would pass vacuously)."""
    require_shared(CRASHES)
    assert len(_pairs()) == len(list(CRASHES.glob("*/*-parsed.txt"))) >= 1


REPORT = """---- Minecraft Crash Report ----
// Oops.

Time: 2024-01-02 10:00
Description: Ticking entity

java.lang.NullPointerException: Cannot invoke "Object.hashCode()" because "key" is null
\tat java.util.HashMap.hash(HashMap.java:338)
\tat net.minecraft.world.entity.Entity.tick(Entity.java:{line})
\tat net.minecraft.server.level.ServerLevel.tickNonPassenger(ServerLevel.java:700)
\tat net.minecraft.server.MinecraftServer.tickServer(MinecraftServer.java:900)
\tat java.lang.Thread.run(Thread.java:833)


A detailed walkthrough of the error, its code path and all known details is as follows:
---------------------------------------------------------------------------------------

-- Affected level --
Details:
\tLevel was modded: {level_modded}

-- System Details --
Details:
\tMinecraft Version: 1.20.4
\tMinecraft Version ID: 1.20.4
\tIs Modded: {modded}
\tType: Dedicated Server (map_server.txt)
"""


def _report(line: int = 120, modded: str = "Unknown (can't tell)", level_modded: str = "false") -> str:
    return REPORT.format(line=line, modded=modded, level_modded=level_modded)


def test_a_report_of_our_own_is_parsed_in_full() -> None:
    crash = parse_crash(_report())
    assert isinstance(crash, MinecraftCrash)
    assert crash.exception_type == "java.lang.NullPointerException"
    assert crash.minecraft_version == "1.20.4" and crash.is_client is False and crash.modded is False
    assert crash.description == "Ticking entity"
    assert crash.frames[1] == "net.minecraft.world.entity.Entity.tick(Entity.java:120)"
    assert crash.was_level_opened_modded is False
    # A level once opened by a modded game is its own fact: the game that crashed may be vanilla.
    level = parse_crash(_report(level_modded="true"))
    assert isinstance(level, MinecraftCrash) and level.was_level_opened_modded is True and level.modded is False
    assert parse_crash(_report(modded="Very likely; Jar signature invalidated")).modded is True  # type: ignore[union-attr]


def test_signature_skips_library_frames_and_line_numbers() -> None:
    a, b = parse_crash(_report(line=120)), parse_crash(_report(line=130))
    assert a is not None and b is not None
    sig = crash_signature(a)
    assert sig.exception_type == "java.lang.NullPointerException"
    assert sig.frames == (
        "net.minecraft.world.entity.Entity.tick",
        "net.minecraft.server.level.ServerLevel.tickNonPassenger",
        "net.minecraft.server.MinecraftServer.tickServer",
    )
    # The same crash at another line of the same method is a likely duplicate; another method is not.
    assert crash_signature(b).key == sig.key
    other = parse_crash(_report().replace("Entity.tick(", "Entity.baseTick("))
    assert other is not None and crash_signature(other).key != sig.key
    groups = group_by_signature({"MC-1": a, "MC-2": b, "MC-3": other})
    assert sorted(map(sorted, groups.values())) == [["MC-1", "MC-2"], ["MC-3"]]


def test_caused_by_signs_the_cause() -> None:
    text = _report().replace(
        "\tat java.lang.Thread.run(Thread.java:833)\n",
        "\tat java.lang.Thread.run(Thread.java:833)\n"
        "Caused by: java.lang.IllegalStateException: bad\n\tat com.example.Mod.load(Mod.java:3)\n",
    )
    crash = parse_crash(text)
    assert crash is not None
    assert crash_signature(crash).exception_type == "java.lang.IllegalStateException"
    assert crash_signature(crash).frames == ("com.example.Mod.load",)


HS_ERR = """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00007f3c1d2e4f10, pid=4242, tid=4243
#
# JRE version: OpenJDK Runtime Environment (17.0.8+7) (build 17.0.8+7)
# Problematic frame:
# C  [libGL.so.1+0x4f10]  glDrawElements+0x20
#

---------------  T H R E A D  ---------------

Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)
C  [libGL.so.1+0x4f10]  glDrawElements+0x20
j  org.lwjgl.opengl.GL11C.nglDrawElements(IIIJ)V+0

Java frames: (J=compiled Java code, j=interpreted, Vv=VM code)
j  org.lwjgl.opengl.GL11C.nglDrawElements(IIIJ)V+0
j  com.mojang.blaze3d.vertex.VertexBuffer.draw()V+20
v  ~StubRoutines::call_stub

java_command: net.fabricmc.loader.impl.launch.knot.KnotClient --version fabric-loader-0.15-1.20.4 --gameDir /tmp
"""


def test_hs_err_of_our_own_behind_a_console_prefix() -> None:
    prefixed = "\n".join(f"Client> {line}" for line in HS_ERR.split("\n"))
    crash = parse_crash(prefixed)
    assert isinstance(crash, JvmCrash)
    assert crash.exception == "SIGSEGV (0xb) at pc=0x00007f3c1d2e4f10, pid=4242, tid=4243"
    assert crash.problematic_frame is not None and crash.problematic_frame.library_name == "libGL.so.1"
    assert crash.problematic_frame.function_name == "glDrawElements"
    assert crash.minecraft_version == "fabric-loader-0.15-1.20.4" and crash.is_modded is True
    assert [f.location for f in crash.java_frames or []][1] == "com.mojang.blaze3d.vertex.VertexBuffer.draw()V+20"
    assert crash_signature(crash).frames[:2] == ("libGL.so.1", "com.mojang.blaze3d.vertex.VertexBuffer.draw")


def test_crashes_are_found_in_markdown_jira_markup_and_bare_text() -> None:
    text = (
        "Steps: open the world.\n\n```\n"
        + _report()
        + "```\n\nAnd later:\n{code:title=hs_err}\n"
        + HS_ERR
        + "{code}\n\nand a second one pasted bare:\n"
        + _report(line=9)
    )
    found = find_crashes(text)
    assert [type(c).__name__ for c in found] == ["MinecraftCrash", "JvmCrash", "MinecraftCrash"]
    assert find_crashes("no crash here, just java.lang.Foo mentioned") == []


def test_cli_says_clearly_when_there_is_no_crash(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("nothing to see")
    done = subprocess.run([REPROBOT, "crash", "parse", str(path), "--json"], capture_output=True, text=True)
    assert done.returncode == 3
    assert "no crash report found" in json.loads(done.stdout)["reasons"][0]
    missing = subprocess.run([REPROBOT, "crash", "parse", str(tmp_path / "absent.txt")], capture_output=True, text=True)
    assert missing.returncode == 3 and "cannot read" in missing.stderr


def test_frames_of_modules_and_deobfuscated_reports_sign_as_plain_methods() -> None:
    text = _report().replace(
        "\tat net.minecraft.world.entity.Entity.tick(Entity.java:120)",
        "\tat app//net.minecraft.world.entity.Entity.void tick(int)(Entity.java:120)",
    )
    crash = parse_crash(text)
    assert crash is not None
    assert crash_signature(crash).frames[0] == "net.minecraft.world.entity.Entity.tick"
    assert crash_signature(crash).key == crash_signature(parse_crash(_report()) or crash).key


def test_an_exception_without_frames_and_a_launcher_prefix_on_every_line() -> None:
    text = _report().replace(
        _report().split("\n\n\n")[0].split("\n\n")[-1], "java.lang.OutOfMemoryError: Java heap space"
    )
    logged = "\n".join(f"[10:00:{i % 60:02d}] [Render thread/ERROR]: {line}" for i, line in enumerate(text.split("\n")))
    crash = parse_crash(logged)
    assert isinstance(crash, MinecraftCrash)
    assert crash.exception == "java.lang.OutOfMemoryError: Java heap space"
    assert crash.minecraft_version == "1.20.4" and crash_signature(crash).frames == ()


def test_frames_of_an_unknown_type_are_kept_whole() -> None:
    crash = parse_crash(HS_ERR.replace("v  ~StubRoutines::call_stub", "A  1 aot.Compiled.method()V"))
    assert isinstance(crash, JvmCrash) and crash.java_frames is not None
    assert crash.java_frames[-1].to_json() == {"value": "A  1 aot.Compiled.method()V"}


def test_compiled_jvm_frames_sign_by_their_method() -> None:
    compiled = HS_ERR.replace(
        "j  com.mojang.blaze3d.vertex.VertexBuffer.draw()V+20",
        "J 4242 c2 java.base@17.0.8/java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object; (23 bytes) @ 0x1\n"
        "J 777 c1 com.mojang.blaze3d.vertex.VertexBuffer.draw()V (58 bytes) @ 0x00007f [0x00007f+0x1]",
    )
    crash = parse_crash(compiled)
    assert crash is not None
    assert crash_signature(crash).frames[:2] == ("libGL.so.1", "com.mojang.blaze3d.vertex.VertexBuffer.draw")


def test_cli_groups_issue_texts_by_crash_signature(tmp_path: Path) -> None:
    (tmp_path / "issue-1.md").write_text("It crashed:\n\n```\n" + _report(line=120) + "```\n")
    (tmp_path / "issue-2.md").write_text("Same here\n\n```\n" + _report(line=133) + "```\n")
    (tmp_path / "issue-3.md").write_text("```\n" + HS_ERR + "```\n")
    files = [str(tmp_path / f"issue-{n}.md") for n in (1, 2, 3)]
    done = subprocess.run([REPROBOT, "crash", "group", *files, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    groups = json.loads(done.stdout)["groups"]
    assert [g["files"] for g in groups] == [files[:2], files[2:]]
    assert groups[0]["exception_type"] == "java.lang.NullPointerException"

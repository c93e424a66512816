"""The Android driver on recorded uiautomator dumps and logcat output; one clear line without a device."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.app.android import AndroidDriver, package_of, parse_hierarchy, parse_logcat
from agents.app.driver import DriverError
from agents.app.reproduce import reproduce_app

SAMPLES = Path(__file__).parent / "samples" / "android"
PKG = "com.example.notes"


def test_hierarchy_lists_the_apps_interactive_elements() -> None:
    elements = parse_hierarchy((SAMPLES / "notes_main.xml").read_text(), PKG)
    by_label = {e.label or e.text: e for e in elements}
    assert (
        by_label["Settings"].role == "button"
        and by_label["Settings"].locator == "id=com.example.notes:id/action_settings"
    )
    assert by_label["New note"].bounds == (870, 2004, 168, 168)
    # Rows take their child's text; two rows share an id, so their locators are their bounds.
    assert by_label["Groceries"].locator.startswith("bounds=")
    assert "Call the dentist" in by_label
    assert not any("systemui" in e.locator for e in elements), "other packages (system bars) are left out"


def test_editor_roles() -> None:
    roles = {e.id: e.role for e in parse_hierarchy((SAMPLES / "notes_editor.xml").read_text(), PKG)}
    assert roles == {
        "navigate_up": "button",
        "edit_title": "textbox",
        "edit_body": "textbox",
        "pin": "switch",
        "save": "button",
    }


def test_bad_dump_is_a_driver_error() -> None:
    with pytest.raises(DriverError, match="not valid XML"):
        parse_hierarchy("<hierarchy><node", PKG)


def test_logcat_crash_and_anr_of_the_package_only() -> None:
    crash = parse_logcat((SAMPLES / "logcat_crash.txt").read_text(), PKG)
    assert [s.kind for s in crash] == ["crash"]
    assert "IllegalArgumentException: title must not be empty" in crash[0].message
    assert parse_logcat((SAMPLES / "logcat_crash.txt").read_text(), "com.other") == []
    anr = parse_logcat((SAMPLES / "logcat_anr.txt").read_text(), PKG)
    assert [s.kind for s in anr] == ["anr"]


def test_package_names() -> None:
    assert package_of("android://com.example.notes") == PKG
    with pytest.raises(DriverError):
        package_of("http://example.com")


class RecordedDevice:
    """A device double replaying recorded dumps: a tap inside a node's bounds moves to the screen it leads to."""

    def __init__(self, crash_on_empty_save: bool) -> None:
        self.crash_on_empty_save = crash_on_empty_save
        self.screen = "notes_main"
        self.log = ""
        self.typed: list[str] = []
        self.taps: list[tuple[int, int]] = []

    def app_stop(self, pkg: str) -> None:
        self.screen = "notes_main"

    def app_start(self, pkg: str, wait: bool = False) -> None:
        self.screen = "notes_main"

    def app_info(self, pkg: str) -> dict[str, Any]:
        return {"versionName": "1.4.2", "versionCode": 142}

    def dump_hierarchy(self) -> str:
        return (SAMPLES / f"{self.screen}.xml").read_text()

    def shell(self, cmd: str) -> str:
        if cmd == "logcat -c":
            self.log = ""
            return ""
        return self.log

    def click(self, x: int, y: int) -> None:
        self.taps.append((x, y))
        hit = {e.id: e for e in parse_hierarchy(self.dump_hierarchy(), PKG)}

        def inside(i: str) -> bool:
            bx, by, w, h = hit[i].bounds
            return i in hit and bx <= x <= bx + w and by <= y <= by + h

        if self.screen == "notes_main" and "fab" in hit and inside("fab"):
            self.screen = "notes_editor"
        elif self.screen == "notes_editor" and inside("save"):
            if self.crash_on_empty_save and not any(self.typed):
                self.log = (SAMPLES / "logcat_crash.txt").read_text()
            self.screen = "notes_main"

    def send_keys(self, text: str, clear: bool = False) -> None:
        self.typed.append(text)

    def press(self, key: str) -> None:
        self.screen = "notes_main"

    def screenshot(self, path: str) -> None:
        Path(path).write_bytes(b"\x89PNG\r\n\x1a\n")


REPORT = "Tap New note, then press Save without a title. The app crashes."


@pytest.mark.parametrize(("buggy", "status"), [(True, "reproduced"), (False, "not_reproduced")])
async def test_reproduction_on_recorded_screens(tmp_path: Path, buggy: bool, status: str) -> None:
    device = RecordedDevice(crash_on_empty_save=buggy)
    result = await reproduce_app(
        REPORT, f"android://{PKG}", out_dir=tmp_path, driver=AndroidDriver(f"android://{PKG}", device=device)
    )
    assert result.status == status, result.reasons
    assert [a["target"] for a in result.actions] == ["New note", "Save"]
    if buggy:
        assert result.oracle and result.oracle["fired"] == "crash"
        assert "title must not be empty" in str(result.oracle["message"])
        assert "--driver android" in result.replay


def test_without_a_device_one_clear_line(tmp_path: Path) -> None:
    """The real uiautomator2/adb path: adb finds no device. Our own adb server port, stopped afterwards."""
    import adbutils

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    issue = tmp_path / "issue.md"
    issue.write_text("# crash\n\nTap Save.\n")
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port), "REPROBOT_DATA_DIR": str(tmp_path / "data")}
    env.pop("ANDROID_SERIAL", None)
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "reproduce",
                "--app-url",
                f"android://{PKG}",
                "--driver",
                "android",
                "--issue",
                str(issue),
                "--json",
                "--out",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        subprocess.run([adbutils.adb_path(), "-P", str(port), "kill-server"], capture_output=True, timeout=30)
    doc = json.loads(proc.stdout)
    assert doc["status"] == "error" and proc.returncode == 8
    assert len(doc["reasons"]) == 1 and doc["reasons"][0].startswith("no Android device attached")
    assert "\n" not in doc["reasons"][0]

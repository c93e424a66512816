"""The Android driver: uiautomator2 over adb. The hierarchy and logcat parsers are pure and tested on dumps."""

from __future__ import annotations

import asyncio
import hashlib
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from agents.app.driver import DriverError, Element, Signal

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
#: Widget class suffix -> role.
_ROLES = {
    "EditText": "textbox",
    "AutoCompleteTextView": "textbox",
    "CheckBox": "checkbox",
    "Switch": "switch",
    "SwitchCompat": "switch",
    "ToggleButton": "switch",
    "RadioButton": "radio",
    "Spinner": "combobox",
    "ImageButton": "button",
    "Button": "button",
    "TabView": "tab",
}


def _role(cls: str) -> str:
    short = cls.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
    for suffix, role in _ROLES.items():
        if short.endswith(suffix):
            return role
    return "button"


def _bounds(text: str) -> tuple[int, int, int, int]:
    m = _BOUNDS.fullmatch(text.strip())
    if not m:
        return (0, 0, 0, 0)
    x1, y1, x2, y2 = (int(g) for g in m.groups())
    return (x1, y1, x2 - x1, y2 - y1)


def parse_hierarchy(xml: str, package: str | None = None) -> list[Element]:
    """The interactive elements of a `uiautomator dump` (what `dump_hierarchy()` returns).

    A clickable container without text of its own takes the text of its first labelled child, the way a list row
    reads on screen. Nodes of other packages (the system bars, the keyboard) are left out when `package` is given.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise DriverError(f"the UI dump is not valid XML: {exc}") from None
    nodes: list[tuple[ET.Element, str]] = []
    for node in root.iter("node"):
        if package and node.get("package") not in (package, None):
            continue
        cls = node.get("class", "")
        interactive = (
            node.get("clickable") == "true"
            or node.get("long-clickable") == "true"
            or node.get("checkable") == "true"
            or _role(cls) == "textbox"
        )
        if interactive and node.get("enabled", "true") == "true":
            nodes.append((node, cls))
    ids = Counter(n.get("resource-id", "") for n, _ in nodes)
    out = []
    for node, cls in nodes:
        text = node.get("text", "")
        if not text:
            text = next((c.get("text", "") for c in node.iter("node") if c.get("text")), "")
        rid = node.get("resource-id", "")
        b = node.get("bounds", "")
        bounds = _bounds(b)
        if bounds[2] <= 0 or bounds[3] <= 0:
            continue
        locator = f"id={rid}" if rid and ids[rid] == 1 else f"bounds={b}"
        out.append(
            Element(
                role=_role(cls),
                text=text,
                label=node.get("content-desc", ""),
                id=rid.rsplit("/", 1)[-1],
                bounds=bounds,
                locator=locator,
                editable=_role(cls) == "textbox",
            )
        )
    return out


def parse_logcat(text: str, package: str) -> list[Signal]:
    """Crashes (FATAL EXCEPTION of the app's process) and ANRs of `package` in `logcat -d` output."""
    signals: list[Signal] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "FATAL EXCEPTION" in line:
            block = lines[i : i + 12]
            if any(f"Process: {package}" in b for b in block):
                exception = next((b.split(": ", 1)[-1] for b in block[2:] if "Exception" in b or "Error" in b), "")
                signals.append(Signal("crash", exception.strip() or "FATAL EXCEPTION", {"logcat": "\n".join(block)}))
        m = re.search(r"ANR in (\S+)", line)
        if m and m.group(1).split(":")[0] == package:
            signals.append(Signal("anr", line.split("ANR in", 1)[1].strip(), {"logcat": "\n".join(lines[i : i + 4])}))
    return signals


def package_of(app_url: str) -> str:
    """The package named by `android://com.example.app` or a bare package name."""
    pkg = app_url.removeprefix("android://").strip("/")
    if not re.fullmatch(r"[A-Za-z][\w]*(\.[A-Za-z][\w]*)+", pkg):
        raise DriverError(f"{app_url!r} is not an Android package (android://com.example.app)")
    return pkg


def _shell_text(result: Any) -> str:
    return str(getattr(result, "output", result))


class AndroidDriver:
    """A device or emulator through uiautomator2. `device` is for tests (a double); None connects over adb."""

    name = "android"

    def __init__(self, app_url: str, *, serial: str | None = None, device: Any = None) -> None:
        self.package = package_of(app_url)
        self.serial = serial
        self._device = device
        self._signals: list[Signal] = []

    async def start(self) -> None:
        """Connect (one clear error without a device) and start the app."""
        if self._device is None:
            self._device = await asyncio.to_thread(self._connect)
        await self.restart()

    def _connect(self) -> Any:
        import adbutils
        import uiautomator2

        try:
            return uiautomator2.connect(self.serial)
        except (adbutils.AdbError, uiautomator2.ConnectError, OSError) as exc:
            raise DriverError(f"no Android device attached ({exc}); connect one or set ANDROID_SERIAL") from None

    async def restart(self) -> None:
        """Stop the app, clear the log and start it again."""
        d = self._device
        await asyncio.to_thread(d.app_stop, self.package)
        await asyncio.to_thread(d.shell, "logcat -c")
        await asyncio.to_thread(d.app_start, self.package, wait=True)

    async def _dump(self) -> str:
        xml: str = await asyncio.to_thread(self._device.dump_hierarchy)
        return xml

    async def observe(self) -> list[Element]:
        """The interactive elements of the app's current screen."""
        return parse_hierarchy(await self._dump(), self.package)

    async def visible_text(self) -> str:
        """Every text and content description of the current screen."""
        try:
            root = ET.fromstring(await self._dump())
        except ET.ParseError:
            return ""
        return "\n".join(t for n in root.iter("node") for t in (n.get("text"), n.get("content-desc")) if t)

    async def act(self, action: dict[str, object], element: Element | None) -> None:
        """Tap, long tap, type, swipe, back, rotate or restart; then collect crash and ANR signals."""
        d, kind, value = self._device, str(action["action"]), str(action.get("input") or "")
        if kind in ("click", "long_click", "input") and element is None:
            raise DriverError(f"{kind} needs an element")
        if element is not None:
            x, y, w, h = element.bounds
            cx, cy = x + w // 2, y + h // 2
        if kind == "click":
            await asyncio.to_thread(d.click, cx, cy)
        elif kind == "long_click":
            await asyncio.to_thread(d.long_click, cx, cy)
        elif kind == "input":
            await asyncio.to_thread(d.click, cx, cy)
            await asyncio.to_thread(d.send_keys, value, True)
        elif kind == "key":
            await asyncio.to_thread(d.press, value.lower() or "enter")
        elif kind == "back":
            await asyncio.to_thread(d.press, "back")
        elif kind == "scroll":
            w, h = await asyncio.to_thread(d.window_size)
            y1, y2 = (h * 3 // 10, h * 7 // 10) if value == "up" else (h * 7 // 10, h * 3 // 10)
            await asyncio.to_thread(d.swipe, w // 2, y1, w // 2, y2)
        elif kind == "resize":
            await asyncio.to_thread(d.set_orientation, "natural" if value == "portrait" else "left")
        elif kind == "restart":
            await self.restart()
        else:
            raise DriverError(f"unknown action {kind!r}")
        log = _shell_text(await asyncio.to_thread(d.shell, "logcat -d"))
        self._signals += parse_logcat(log, self.package)
        await asyncio.to_thread(d.shell, "logcat -c")

    async def screenshot(self, path: Path) -> None:
        """A PNG of the screen."""
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(self._device.screenshot, str(path))

    def drain_signals(self) -> list[Signal]:
        """Crashes and ANRs since the last call."""
        out, self._signals = self._signals, []
        return out

    async def app_version(self) -> str:
        """The installed versionName/versionCode of the package."""
        info = await asyncio.to_thread(self._device.app_info, self.package)
        raw = f"{self.package}:{info.get('versionName')}:{info.get('versionCode')}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def blocked_requests(self) -> list[str]:
        """None: the device's network is the device's (confinement is the web driver's)."""
        return []

    async def close(self) -> None:
        """Leave the device as it is (the app keeps running for a human to look at)."""
        self._device = None

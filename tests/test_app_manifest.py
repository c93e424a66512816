"""`reprobot app manifest` prints a least-privilege App manifest, which ships inside the package (wheel, image)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bot.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_asks_least_privilege(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["app", "manifest"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["default_permissions"] == {
        "issues": "write",
        "pull_requests": "write",
        "contents": "write",
        "metadata": "read",
    }
    assert "workflows" not in manifest["default_permissions"]
    assert set(manifest["default_events"]) == {"issues", "issue_comment", "pull_request"}


def test_the_manifest_is_package_data() -> None:
    # A wheel carries only what package-data lists: the manifest must match its glob, not sit in deploy/.
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = ROOT / "bot" / "forges"
    assert any((package / "data" / "app-manifest.json") in package.glob(g) for g in data["bot.forges"])

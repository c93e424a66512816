"""`reprobot app manifest` prints a least-privilege App manifest."""

from __future__ import annotations

import pytest
import yaml

from bot.cli import main


def test_manifest_asks_least_privilege(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["app", "manifest"]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["default_permissions"] == {
        "issues": "write",
        "pull_requests": "write",
        "contents": "write",
        "metadata": "read",
    }
    assert "workflows" not in manifest["default_permissions"]
    assert set(manifest["default_events"]) == {"issues", "issue_comment", "pull_request"}

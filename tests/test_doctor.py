"""`reprobot doctor`: a readable table by default, JSON on request; engine, model endpoint and exit code checks."""

from __future__ import annotations

import json
import socket
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from bot.cli import EXIT_ENVIRONMENT, EXIT_OK, main
from bot.cli.checks import check_engine, check_model
from bot.settings.config import Settings
from bot.store import LATEST_VERSION, Store
from tests.fakes.llm_server import ScriptedLLM

NAMES = [
    "engine",
    "chromium",
    "docker base image",
    "bwrap",
    "disk space",
    "model endpoint",
    "github app key",
    "github webhook secret",
    "github app id",
]


def test_table_by_default_and_json_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    main(["doctor"])
    table = capsys.readouterr().out
    assert "reprobot doctor" in table and "┃ check" in table
    for name in NAMES:
        assert name in table
    main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in report["checks"]] == NAMES
    assert all(c["status"] in ("ok", "warn", "fail") for c in report["checks"])
    assert not (tmp_path / "data" / "reprobot.db").exists()  # doctor creates nothing


def test_engine_reports_the_schema_and_refuses_a_newer_one(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.open(settings.store_path).close()
    check = check_engine(settings)
    assert check.status == "ok" and f"schema {LATEST_VERSION} (current)" in check.detail
    conn = sqlite3.connect(settings.store_path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    check = check_engine(settings)
    assert check.status == "fail" and "newer than this reprobot" in check.detail
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(settings.data_dir))
    assert main(["doctor", "--json"]) == EXIT_ENVIRONMENT
    engine = next(c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "engine")
    assert engine["status"] == "fail"


async def test_model_endpoint_through_the_openai_sdk(settings: Settings) -> None:
    assert (await check_model(settings)).detail.startswith("not configured")
    async with ScriptedLLM(model="scripted-model") as llm:
        up = replace(settings, llm_base_url=llm.base_url, llm_model="scripted-model", llm_api_key="sk-secret-123")
        ok = await check_model(up)
        assert ok.status == "ok" and "scripted-model" in ok.detail
        other = await check_model(replace(up, llm_model="another-model"))
        assert other.status == "warn" and "does not list another-model" in other.detail
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = replace(up, llm_base_url=f"http://127.0.0.1:{port}/v1")
    failed = await check_model(down)
    assert failed.status == "fail" and "sk-secret-123" not in failed.detail


def test_doctor_exit_ok_on_a_ready_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    code = main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert (code == EXIT_OK) == (not failed and report["sandbox_python_exists"])


def test_doctor_warns_when_the_web_shows_too_much(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """/metrics open on the main port, and GitHub login without the public URL its callback is built from."""
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REPROBOT_GITHUB_WEBHOOK_SECRET", "hook")
    monkeypatch.setenv("REPROBOT_GITHUB_CLIENT_ID", "Iv1.x")
    monkeypatch.setenv("REPROBOT_GITHUB_CLIENT_SECRET", "oauth-secret")
    main(["doctor", "--json"])
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("/metrics on its main port" in w and "REPROBOT_METRICS_PORT" in w for w in warnings), warnings
    assert any("REPROBOT_PUBLIC_URL" in w and "GitHub login" in w for w in warnings), warnings
    assert not any("oauth-secret" in w for w in warnings)
    for fixed in (
        {"REPROBOT_METRICS_TOKEN": "t", "REPROBOT_PUBLIC_URL": "https://bot.example.org"},
        {"REPROBOT_METRICS_PORT": "9100", "REPROBOT_PUBLIC_URL": "https://bot.example.org/"},
    ):
        for name, value in fixed.items():
            monkeypatch.setenv(name, value)
        main(["doctor", "--json"])
        warnings = json.loads(capsys.readouterr().out)["warnings"]
        assert not any("/metrics" in w or "REPROBOT_PUBLIC_URL" in w for w in warnings), (fixed, warnings)
        for name in fixed:
            monkeypatch.delenv(name)


def test_doctor_states_the_runner_quotas_and_who_administers_runners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REPROBOT_RUNNER_REGISTRATION_TOKEN", "reg-secret")
    monkeypatch.setenv("REPROBOT_RUNNER_JOB_ARTIFACTS", "12")
    monkeypatch.setenv("REPROBOT_RUNNER_JOB_ARTIFACT_BYTES", "5M")
    main(["doctor", "--json"])
    captured = capsys.readouterr()
    runners = json.loads(captured.out)["runners"]
    assert runners["artifacts per job"].startswith(f"at most 12, {5 * 1024**2} bytes together")
    assert "off" in runners["administration"] and "REPROBOT_RUNNER_ADMIN_TOKEN is not" in captured.err
    assert "reg-secret" not in captured.out + captured.err
    monkeypatch.setenv("REPROBOT_RUNNER_ADMIN_TOKEN", "admin-secret")
    main(["doctor"])
    table = capsys.readouterr()
    assert "administration" in table.out and "admin-secret" not in table.out + table.err
    assert "REPROBOT_RUNNER_ADMIN_TOKEN is not" not in table.err

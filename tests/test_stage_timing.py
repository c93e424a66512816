"""Per-stage timing of a job, and the session and impact settings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.pipeline.types import TIMED_STAGES, JobContext, stage_timing
from bot.settings.config import Settings, SettingsError


async def test_stage_clock_accumulates_per_timing_name(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    ticks: list[tuple[str, str]] = []
    ctx = JobContext(Settings(), None, 1, tmp_path, lambda s, d: seen.append((s, d)))  # type: ignore[arg-type]
    ctx.tick_sink = lambda s, d: ticks.append((s, d))
    await ctx.stage("environment")
    time.sleep(0.01)
    await ctx.stage("generate", "8 trajectories")
    # A live update goes to the terminal only (a status comment is not edited every few seconds).
    ctx.tick("3 candidates tried, 1.5/s")
    time.sleep(0.01)
    await ctx.stage("review")
    ctx.close_stage()
    timing = stage_timing(ctx.stage_seconds)
    assert list(timing)[: len(TIMED_STAGES)] == list(TIMED_STAGES)
    assert timing["environment"] > 0 and timing["search"] > 0
    assert timing["publish"] == 0.0 and "generate" not in timing
    assert [s for s, _ in seen] == ["environment", "generate", "review"]
    assert ticks == [("generate", "3 candidates tried, 1.5/s")]


def test_session_and_impact_settings() -> None:
    s = Settings.from_env({"REPROBOT_SANDBOX_SESSION": "cold", "REPROBOT_TEST_IMPACT": "0"})
    assert s.sandbox_session == "cold" and s.test_impact is False
    assert Settings.from_env({}).sandbox_session == "warm"
    assert Settings.from_env({}).pytest_server is True
    assert Settings.from_env({"REPROBOT_PYTEST_SERVER": "0"}).pytest_server is False
    with pytest.raises(SettingsError, match="REPROBOT_PYTEST_SERVER"):
        Settings.from_env({"REPROBOT_PYTEST_SERVER": "maybe"})
    with pytest.raises(SettingsError, match="REPROBOT_SANDBOX_SESSION"):
        Settings.from_env({"REPROBOT_SANDBOX_SESSION": "tepid"})

"""The cache folder stays bounded (sandboxes/cache_prune.py): unused environments and baselines go, least
recently used first; one in use, being built or used today stays; every read marks its entry used."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bot.settings.config import Settings
from bot.store import Store
from bot.worker import Worker
from sandboxes import baseline_cache
from sandboxes.cache_prune import READY, CacheEntry, entries, plan, prune
from sandboxes.environment import _use_if_ready
from sandboxes.testrun import Baseline

DAY = 86400.0
NOW = 1_900_000_000.0


def _env(cache: Path, key: str, size: int, used: float) -> Path:
    folder = cache / "envs" / key
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "big.so").write_bytes(b"x" * size)
    (folder / READY).write_text("ok\n")
    os.utime(folder / READY, (used, used))
    return folder


def _baseline_file(cache: Path, key: str, size: int, used: float) -> Path:
    path = cache / "baselines" / f"{key}.json.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"z" * size)
    os.utime(path, (used, used))
    return path


def _entry(name: str, size: int, days_ago: float) -> CacheEntry:
    return CacheEntry("environment", Path(name), size, NOW - days_ago * DAY)


def names(doomed: list[CacheEntry]) -> list[str]:
    return [e.path.name for e in doomed]


def test_the_plan_removes_the_stale_then_the_least_recently_used_and_never_what_was_used_today() -> None:
    found = [_entry("old", 10, 40), _entry("a", 30, 5), _entry("b", 30, 3), _entry("c", 30, 2), _entry("now", 50, 0.1)]
    # Past 30 days goes; then, over 100 bytes, the least recently used until it fits.
    assert names(plan(found, max_bytes=100, max_days=30, min_idle=DAY, now=NOW)) == ["old", "a", "b"]
    # An entry used within the last day stays even when the caches are still over the limit without it.
    assert names(plan(found, max_bytes=10, max_days=0, min_idle=DAY, now=NOW)) == ["old", "a", "b", "c"]
    assert plan(found, max_bytes=0, max_days=0, min_idle=DAY, now=NOW) == []  # no limits: nothing goes


def test_prune_removes_environments_and_baselines_from_disk_and_a_dry_run_only_lists(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    old_env = _env(cache, "env-old", 1000, NOW - 40 * DAY)
    fresh_env = _env(cache, "env-fresh", 1000, NOW - 0.5 * DAY)
    old_base = _baseline_file(cache, "b-old", 100, NOW - 35 * DAY)
    lru_base = _baseline_file(cache, "b-lru", 600, NOW - 10 * DAY)
    (cache / "envs" / "env-building.build-123").mkdir()  # a build in progress has no marker: never an entry
    assert {e.path.name for e in entries(cache)} == {"env-old", "env-fresh", "b-old.json.gz", "b-lru.json.gz"}

    dry = prune(cache, max_bytes=1500, max_days=30, now=NOW, dry_run=True)
    assert {e.path.name for e in dry.removed} == {"env-old", "b-old.json.gz", "b-lru.json.gz"}
    assert old_env.exists() and old_base.exists() and lru_base.exists()

    report = prune(cache, max_bytes=1500, max_days=30, now=NOW)
    assert not old_env.exists() and not old_base.exists() and not lru_base.exists()
    assert fresh_env.exists() and (cache / "envs" / "env-building.build-123").exists()
    assert report.freed_bytes > 1700 and report.kept_bytes >= 1000
    assert not list((cache / "envs").glob(".trash-*"))  # renamed aside, then removed


def test_an_environment_a_job_is_checking_or_building_is_left_alone(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(cache, "env-busy", 100, NOW - 60 * DAY)
    with (cache / "envs" / "env-busy.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # a job between its check and its touch (or a build: exclusive)
        report = prune(cache, max_bytes=0, max_days=30, now=NOW)
    assert env.exists() and report.removed == [] and report.skipped_busy == 1
    assert [e.path.name for e in prune(cache, max_bytes=0, max_days=30, now=NOW).removed] == ["env-busy"]


def test_a_trash_folder_a_crashed_prune_left_is_removed_next_time(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    left = _env(cache, ".trash-env-x-1234", 100, NOW - 60 * DAY)
    assert entries(cache) == []
    prune(cache, max_bytes=0, max_days=30, now=NOW)
    assert not left.exists()


def test_reading_an_entry_marks_it_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(cache, "env-a", 10, NOW - 60 * DAY)
    assert _use_if_ready(cache / "envs", "env-a") is True
    assert time.time() - (env / READY).stat().st_mtime < 60
    assert _use_if_ready(cache / "envs", "env-missing") is False
    baseline = Baseline(tests={"t.py::test_a": "passed"}, seconds=1.0, output_tail="", collection_errors={})
    baseline_cache.store(cache, "k1", baseline)
    stored = cache / "baselines" / "k1.json.gz"
    os.utime(stored, (NOW - 60 * DAY, NOW - 60 * DAY))
    assert baseline_cache.load(cache, "k1") is not None
    assert time.time() - stored.stat().st_mtime < 60
    # Both were just used: a prune now keeps them whatever their age.
    assert prune(cache, max_bytes=1, max_days=1).removed == []


async def test_workers_prune_the_cache_on_their_hourly_round(tmp_path: Path, settings: Settings) -> None:
    settings = replace(settings, data_dir=tmp_path / "data", cache_max_days=30.0, delivery_body_days=0.0)
    old = _env(settings.cache_dir, "env-old", 10, time.time() - 40 * DAY)
    kept = _env(settings.cache_dir, "env-new", 10, time.time() - 2 * DAY)
    with Store.open(tmp_path / "s.db") as store:
        worker = Worker(settings, store)
        await worker._prune_if_due()  # starts the prune beside the jobs: the claim does not wait for it
        assert worker.cache_pruning is not None
        await worker.cache_pruning
    assert not old.exists() and kept.exists()


def test_the_cli_prunes_and_says_what_it_removed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = _env(data / "cache", "env-old", 2048, time.time() - 40 * DAY)
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data), "REPROBOT_CACHE_MAX_DAYS": "30"}
    cmd = [sys.executable, "-m", "bot.cli", "sandbox", "prune-cache"]
    dry = subprocess.run([*cmd, "--dry-run", "--json"], env=env, capture_output=True, text=True, check=True)
    doc = json.loads(dry.stdout)
    assert doc["dry_run"] is True and [e["path"] for e in doc["removed"]] == [str(old)] and old.exists()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert f"removed environment {old}" in done.stdout and not old.exists()


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_a_bad_limit_names_the_variable(value: str) -> None:
    from bot.settings.kinds import SettingsError

    with pytest.raises(SettingsError, match="REPROBOT_CACHE_MAX_SIZE"):
        Settings.from_env({"REPROBOT_CACHE_MAX_SIZE": value})

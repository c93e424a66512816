"""Settings from the environment: values parsed once, bad values refused with the variable named."""

from __future__ import annotations

import pytest

from bot.settings.config import Settings, SettingsError


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings.delivery_body_days == 30.0 and settings.worker_poll == 1.0 and settings.sandbox == "bwrap"


def test_values_are_parsed_to_their_types() -> None:
    env = {"REPROBOT_DELIVERY_BODY_DAYS": "0", "REPROBOT_WORKERS": "3", "REPROBOT_WORKER_POLL": "0.5"}
    settings = Settings.from_env(env)
    assert (settings.delivery_body_days, settings.workers, settings.worker_poll) == (0.0, 3, 0.5)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("REPROBOT_DELIVERY_BODY_DAYS", "-1", "REPROBOT_DELIVERY_BODY_DAYS must be 0"),
        ("REPROBOT_DELIVERY_BODY_DAYS", "a month", "REPROBOT_DELIVERY_BODY_DAYS='a month': expected a number"),
        ("REPROBOT_WORKERS", "two", "REPROBOT_WORKERS='two': expected an integer"),
        ("REPROBOT_SANDBOX", "chroot", "REPROBOT_SANDBOX='chroot'"),
        ("REPROBOT_SANDBOX_DISK_QUOTA", "lots", "REPROBOT_SANDBOX_DISK_QUOTA='lots': expected a size"),
        ("REPROBOT_SANDBOX_DISK_QUOTA", "1M", "REPROBOT_SANDBOX_DISK_QUOTA must be 0 (no quota) or at least 8M"),
        ("REPROBOT_SANDBOX_REAP_INTERVAL", "0", "REPROBOT_SANDBOX_REAP_INTERVAL must be a positive number"),
        ("REPROBOT_CANDIDATE_TIMEOUT_FACTOR", "-1", "REPROBOT_CANDIDATE_TIMEOUT_FACTOR must be 0 (off) or a positive"),
        ("REPROBOT_CANDIDATE_TIMEOUT_FACTOR", "nan", "REPROBOT_CANDIDATE_TIMEOUT_FACTOR must be 0 (off) or a positive"),
        ("REPROBOT_REVIEW_PARALLEL", "-1", "REPROBOT_REVIEW_PARALLEL must be 0 (one per core) or a positive"),
        ("REPROBOT_ACK_CONNECTIONS", "0", "REPROBOT_ACK_CONNECTIONS must be at least 1"),
        ("REPROBOT_CANDIDATE_TIMEOUT_FACTOR", "fast", "REPROBOT_CANDIDATE_TIMEOUT_FACTOR='fast': expected a number"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({name: value})
    assert message in str(info.value)


def test_sandbox_disk_quota_takes_sizes() -> None:
    assert Settings.from_env({}).sandbox_disk_quota == 2 * 1024**3
    assert Settings.from_env({"REPROBOT_SANDBOX_DISK_QUOTA": "512M"}).sandbox_disk_quota == 512 * 1024**2
    assert Settings.from_env({"REPROBOT_SANDBOX_DISK_QUOTA": "0"}).sandbox_disk_quota == 0
    assert Settings.from_env({"REPROBOT_SANDBOX_REAP_INTERVAL": "1.5"}).sandbox_reap_interval == 1.5


def test_candidate_timeout_factor_defaults_to_five_and_zero_turns_it_off() -> None:
    assert Settings.from_env({}).candidate_timeout_factor == 5.0
    assert Settings.from_env({"REPROBOT_CANDIDATE_TIMEOUT_FACTOR": "0"}).candidate_timeout_factor == 0.0


def test_early_stop_is_off_unless_asked_for() -> None:
    assert Settings.from_env({}).early_stop is False
    assert Settings.from_env({"REPROBOT_EARLY_STOP": "1"}).early_stop is True
    with pytest.raises(SettingsError, match="REPROBOT_EARLY_STOP must be 1/0"):
        Settings.from_env({"REPROBOT_EARLY_STOP": "sometimes"})


def test_publish_unsure_is_off_unless_asked_for() -> None:
    assert Settings.from_env({}).publish_unsure is False
    assert Settings.from_env({"REPROBOT_PUBLISH_UNSURE": "yes"}).publish_unsure is True
    assert Settings.from_env({"REPROBOT_PUBLISH_UNSURE": "0"}).publish_unsure is False
    with pytest.raises(SettingsError, match="REPROBOT_PUBLISH_UNSURE"):
        Settings.from_env({"REPROBOT_PUBLISH_UNSURE": "maybe"})

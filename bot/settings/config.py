"""Settings: read once from the environment (REPROBOT_*), validated, each field declared in bot/settings/table.py."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bot.settings.kinds import SettingsError, parse_site_secrets
from bot.settings.table import (
    AGENT_KINDS,
    ROWS,
    SECTIONS,
    STRATEGY_NAMES,
    check,
    default_data_dir,
    format_value,
    read_values,
)
from bot.settings.table import default_of as _d

__all__ = [
    "AGENT_KINDS",
    "STRATEGY_NAMES",
    "Settings",
    "SettingsError",
    "parse_site_secrets",
    "unknown_variables",
    "variables_in_use",
]


@dataclass(frozen=True)
class Settings:
    """Everything the bot reads from its environment. Build it with `Settings.from_env()` once.

    Each field is one row (or, for the GitHub key, two rows) of bot/settings/table.py: its variable, default,
    rule and meaning are written there, and docs/configuration.md is generated from it.
    """

    # The fields in the table's order; `_d` is the table's default, so a default is written in one place only.
    data_dir: Path = field(default_factory=default_data_dir)
    sandbox: str = _d("sandbox")
    sandbox_python: Path = field(default=_d("sandbox_python"))
    rootfs: Path | None = field(default=_d("rootfs"))
    sandbox_disk_quota: int = _d("sandbox_disk_quota")
    sandbox_reap_interval: float = _d("sandbox_reap_interval")
    sandbox_session: str = _d("sandbox_session")
    test_impact: bool = _d("test_impact")
    baseline_cache: bool = _d("baseline_cache")
    pytest_server: bool = _d("pytest_server")
    candidate_timeout_factor: float = _d("candidate_timeout_factor")
    early_stop: bool = _d("early_stop")
    review_parallel: int = _d("review_parallel")
    test_timeout: float = _d("test_timeout")
    trajectories: int = _d("trajectories")
    max_trajectories: int = _d("max_trajectories")
    max_test_timeout: float = _d("max_test_timeout")
    max_job_minutes: float | None = _d("max_job_minutes")
    agents: tuple[str, ...] = _d("agents")
    strategies: tuple[str, ...] = _d("strategies")
    max_parallel: int = _d("max_parallel")
    abstain_threshold: float = _d("abstain_threshold")
    publish_unsure: bool = _d("publish_unsure")
    pip_index_url: str | None = _d("pip_index_url")
    log_level: str = _d("log_level")
    github_webhook_secret: str | None = field(default=_d("github_webhook_secret"), repr=False)
    github_app_id: str | None = _d("github_app_id")
    github_private_key: str | None = field(default=_d("github_private_key"), repr=False)
    github_api_url: str = _d("github_api_url")
    github_git_url: str = _d("github_git_url")
    github_retry_base: float = _d("github_retry_base")
    webhook_max_bytes: int = _d("webhook_max_bytes")
    webhook_inflight_bytes: int = _d("webhook_inflight_bytes")
    permission_timeout: float = _d("permission_timeout")
    worker_lease: float = _d("worker_lease")
    worker_poll: float = _d("worker_poll")
    workers: int = _d("workers")
    max_running_jobs: int = _d("max_running_jobs")
    delivery_body_days: float = _d("delivery_body_days")
    cache_max_size: int = _d("cache_max_size")
    cache_max_days: float = _d("cache_max_days")
    llm_base_url: str | None = _d("llm_base_url")
    llm_api_key: str | None = field(default=_d("llm_api_key"), repr=False)
    llm_model: str | None = _d("llm_model")
    llm_price_input: float = _d("llm_price_input")
    llm_price_output: float = _d("llm_price_output")
    llm_max_steps: int = _d("llm_max_steps")
    llm_max_tokens: int = _d("llm_max_tokens")
    llm_max_cost: float | None = _d("llm_max_cost")
    llm_max_cost_issue: float | None = _d("llm_max_cost_issue")
    llm_max_cost_day: float | None = _d("llm_max_cost_day")
    llm_timeout: float = _d("llm_timeout")
    jira_webhook_secrets: tuple[tuple[str | None, str], ...] = field(default=_d("jira_webhook_secrets"), repr=False)
    jira_allow_unsigned: bool = _d("jira_allow_unsigned")
    jira_mapping: Path | None = field(default=_d("jira_mapping"))
    jira_token: str | None = field(default=_d("jira_token"), repr=False)
    jira_email: str | None = _d("jira_email")
    jira_api_token: str | None = field(default=_d("jira_api_token"), repr=False)
    jira_retry_base: float = _d("jira_retry_base")
    git_credentials: tuple[tuple[str, str], ...] = field(default=_d("git_credentials"), repr=False)
    dashboard_token: str | None = field(default=_d("dashboard_token"), repr=False)
    github_client_id: str | None = _d("github_client_id")
    github_client_secret: str | None = field(default=_d("github_client_secret"), repr=False)
    github_web_url: str = _d("github_web_url")
    metrics_port: int = _d("metrics_port")
    metrics_token: str | None = field(default=_d("metrics_token"), repr=False)
    mojira_api_url: str = _d("mojira_api_url")
    mojira_project: str = _d("mojira_project")
    mojira_jql: str = _d("mojira_jql")
    mojira_start: str = _d("mojira_start")
    mojira_page_size: int = _d("mojira_page_size")
    mojira_max_pages: int = _d("mojira_max_pages")
    mojira_overlap_minutes: float = _d("mojira_overlap_minutes")
    mojira_poll_interval: float = _d("mojira_poll_interval")
    mojira_retry_base: float = _d("mojira_retry_base")
    mojira_sink: str = _d("mojira_sink")
    mojira_crash_attachment_bytes: int = _d("mojira_crash_attachment_bytes")
    runner_registration_token: str | None = field(default=_d("runner_registration_token"), repr=False)
    runner_admin_token: str | None = field(default=_d("runner_admin_token"), repr=False)
    runner_lease: float = _d("runner_lease")
    runner_heartbeat: float = _d("runner_heartbeat")
    runner_claim_wait: float = _d("runner_claim_wait")
    runner_claim_poll: float = _d("runner_claim_poll")
    runner_cancel_grace: float = _d("runner_cancel_grace")
    runner_stale: float = _d("runner_stale")
    runner_max_attempts: int = _d("runner_max_attempts")
    runner_artifact_max_bytes: int = _d("runner_artifact_max_bytes")
    runner_log_max_bytes: int = _d("runner_log_max_bytes")
    runner_job_artifacts: int = _d("runner_job_artifacts")
    runner_job_artifact_bytes: int = _d("runner_job_artifact_bytes")
    public_url: str | None = _d("public_url")
    runner_token: str | None = field(default=_d("runner_token"), repr=False)
    runner_cache: Path | None = field(default=_d("runner_cache"))
    game_display: str | None = _d("game_display")
    game_model_turns: int = _d("game_model_turns")
    game_context_turns: int = _d("game_context_turns")
    game_model_images: bool = _d("game_model_images")
    mojira_runner_labels: tuple[str, ...] = _d("mojira_runner_labels")
    minecraft_dir: Path | None = field(default=_d("minecraft_dir"))
    minecraft_rcon: str | None = _d("minecraft_rcon")
    minecraft_rcon_password: str | None = field(default=_d("minecraft_rcon_password"), repr=False)
    database_url: str | None = _d("database_url")
    ack_connections: int = _d("ack_connections")

    @property
    def store_path(self) -> Path:
        """The SQLite file of this deployment."""
        return self.data_dir / "reprobot.db"

    @property
    def store_target(self) -> Path | str:
        """What `Store.open` opens: the PostgreSQL URL when set, else the SQLite file."""
        return self.database_url or self.store_path

    @property
    def cache_dir(self) -> Path:
        """Virtualenvs and other rebuildable artefacts."""
        return self.data_dir / "cache"

    @property
    def llm_configured(self) -> bool:
        """True when a model endpoint and model name are set."""
        return bool(self.llm_base_url and self.llm_model)

    def secret_values(self) -> list[str]:
        """Every secret value, so logs and published text can be scrubbed of them."""
        values = [self.github_webhook_secret, self.github_private_key, self.llm_api_key]
        values += [self.dashboard_token, self.github_client_secret, self.metrics_token]
        values += [self.runner_registration_token, self.runner_admin_token, self.runner_token]
        values += [self.jira_token, self.jira_api_token, *(s for _, s in self.jira_webhook_secrets)]
        values += [v for _, c in self.git_credentials for v in (c, c.rpartition(":")[2])]
        values.append(self.minecraft_rcon_password)
        return [v for v in values if v]

    def git_credential(self, name: str) -> str | None:
        """The REPROBOT_GIT_CREDENTIAL_<name> value, if set."""
        return dict(self.git_credentials).get(name)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate REPROBOT_* variables; unknown values raise SettingsError naming the variable."""
        settings = cls(**read_values(os.environ if environ is None else environ))
        check(settings)
        return settings

    @classmethod
    def documented_fields(cls) -> list[str]:
        """Names of all settings (the table's fields, in Settings' order)."""
        return [f.name for f in fields(cls)]

    def section(self, name: str) -> Mapping[str, Any]:
        """The fields of one section of the table (`runner`, `mojira`, ...), read-only; KeyError for another."""
        if name not in SECTIONS:
            raise KeyError(name)
        return MappingProxyType({row.field: getattr(self, row.field) for row in ROWS if row.section == name})


def variables_in_use(settings: Settings, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The REPROBOT_* variables set in the environment, each with the value the bot took (a secret: `(set)`).

    For `reprobot doctor`: what this deployment changed, in the table's order.
    """
    env = os.environ if environ is None else environ
    used: dict[str, str] = {}
    for row in ROWS:
        if not row.is_set(env):
            continue
        value = getattr(settings, row.field)
        used[row.env] = "(set)" if row.secret else format_value(value)
    return used


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """REPROBOT_* variables in the environment that no row of the table names (a typo is silently ignored)."""
    env = os.environ if environ is None else environ
    exact = {row.env for row in ROWS if not row.prefix}
    prefixes = tuple(row.env.removesuffix("<NAME>") for row in ROWS if row.prefix)
    return sorted(n for n in env if n.startswith("REPROBOT_") and n not in exact and not n.startswith(prefixes))

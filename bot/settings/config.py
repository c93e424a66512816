"""Settings: read once from the environment (REPROBOT_*), validated, each field documented."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from bot.settings.jira_mapping import normalize_site
from sandboxes.quota import MIN_QUOTA_BYTES, parse_size


class SettingsError(ValueError):
    """A REPROBOT_* variable has a value that cannot be used."""


#: Agent kinds and cogeneration strategies a deployment may allow (REPROBOT_AGENTS, REPROBOT_STRATEGIES).
AGENT_KINDS = ("classic", "llm", "auto", "mixed")
STRATEGY_NAMES = ("freeform", "tdd", "tld", "fix-only", "brt-only")


def _names(variable: str, value: str, known: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise SettingsError(f"REPROBOT_{variable}={value!r}: expected a comma-separated list of {', '.join(known)}")
    return names


def _check_runner_settings(settings: Settings) -> None:
    """The runner settings' ranges (see the fields' comments)."""
    for name, value in (
        ("RUNNER_LEASE", settings.runner_lease),
        ("RUNNER_HEARTBEAT", settings.runner_heartbeat),
        ("RUNNER_CLAIM_POLL", settings.runner_claim_poll),
        ("RUNNER_STALE", settings.runner_stale),
    ):
        if not value > 0:
            raise SettingsError(f"REPROBOT_{name} must be a positive number of seconds")
    if not 0 < settings.runner_claim_wait <= 50:
        raise SettingsError("REPROBOT_RUNNER_CLAIM_WAIT must be more than 0 and at most 50 seconds")
    if settings.runner_cancel_grace < 0:
        raise SettingsError("REPROBOT_RUNNER_CANCEL_GRACE must be 0 or more seconds")
    if settings.runner_max_attempts < 1:
        raise SettingsError("REPROBOT_RUNNER_MAX_ATTEMPTS must be at least 1")
    if settings.runner_artifact_max_bytes < 1 or settings.runner_log_max_bytes < 1:
        raise SettingsError("REPROBOT_RUNNER_ARTIFACT_MAX_BYTES and REPROBOT_RUNNER_LOG_MAX_BYTES must be positive")


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "reprobot"


@dataclass(frozen=True)
class Settings:
    """Everything the bot reads from its environment. Build it with `Settings.from_env()` once."""

    #: REPROBOT_DATA_DIR: the store, caches (virtualenvs, wheelhouses) and trajectories live here.
    data_dir: Path = field(default_factory=_default_data_dir)
    #: REPROBOT_SANDBOX: default sandbox backend (bwrap | docker | none); none only by explicit opt-in.
    sandbox: str = "bwrap"
    #: REPROBOT_SANDBOX_PYTHON: interpreter visible inside the sandbox, used to build per-repo virtualenvs.
    sandbox_python: Path = Path("/usr/bin/python3")
    #: REPROBOT_ROOTFS: optional root filesystem for the sandbox (built by `reprobot sandbox build-base`).
    rootfs: Path | None = None
    #: REPROBOT_SANDBOX_DISK_QUOTA: bytes a sandbox's commands may write into its workspace, all files together
    #: ("2G", "512M" or a byte count; 0: no quota). Applied on bwrap and docker when the bot runs as root.
    sandbox_disk_quota: int = 2 * 1024**3
    #: REPROBOT_SANDBOX_REAP_INTERVAL: seconds between two looks, by a worker, for docker sandboxes whose worker
    #: process is gone (they are removed); a worker also looks when it starts.
    sandbox_reap_interval: float = 60.0
    # -- fast candidate validation (issue 18) --
    #: REPROBOT_SANDBOX_SESSION: "warm" keeps one sandbox (namespace or container) per trajectory and forks each
    #: command in it through an exec agent; "cold" starts a sandbox per command (the previous method).
    sandbox_session: str = "warm"
    #: REPROBOT_TEST_IMPACT: 1 runs a candidate's BRT, then the regression tests covering its changed lines, then
    #: (for a survivor) the full suite; 0 runs the full suite for every candidate (the previous method).
    test_impact: bool = True
    #: REPROBOT_PYTEST_SERVER: 1 lets pytest runs in a warm sandbox session go through a resident server that
    #: has imported pytest once and forks a worker per run (sandboxes/pytest_server.py); 0 starts a fresh
    #: interpreter for every run. Cold sessions and coverage runs never use it.
    pytest_server: bool = True
    #: REPROBOT_CANDIDATE_TIMEOUT_FACTOR: a candidate's BRT run gets this many times the buggy code's BRT run
    #: time (at least 2 s); one cut off is re-run with the full timeout only if no candidate validates.
    #: 0 gives every candidate the full timeout.
    candidate_timeout_factor: float = 5.0
    #: REPROBOT_EARLY_STOP: 1 stops a job's remaining trajectories once the finished ones' leading fix cannot
    #: be outvoted (patch_selectors/majority.py); 0 (the default) runs every trajectory to its end, since the
    #: stopped trajectories' fixes and alternatives are what the correctness assessment compares against.
    early_stop: bool = False
    #: REPROBOT_REVIEW_PARALLEL: review and assessment sandboxes of one job running at once (0: one per core).
    review_parallel: int = 0
    #: REPROBOT_TEST_TIMEOUT: wall seconds for one test-suite run in the sandbox.
    test_timeout: float = 300.0
    #: REPROBOT_TRAJECTORIES: default number of parallel trajectories per job.
    trajectories: int = 4
    #: REPROBOT_MAX_TRAJECTORIES: most trajectories one job may run, whatever a policy or `/fix trajectories=`
    #: asks (more is clamped, and the status comment says so).
    max_trajectories: int = 32
    #: REPROBOT_MAX_TEST_TIMEOUT: most wall seconds one test-suite run may take, whatever a policy's
    #: `environment.timeout` or `--timeout` asks (more is clamped, with a note).
    max_test_timeout: float = 7200.0
    #: REPROBOT_MAX_JOB_MINUTES: most wall-clock minutes a job may run, whatever a policy's `budget.max_minutes`
    #: asks (more is clamped, with a note; unset: no cap).
    max_job_minutes: float | None = None
    #: REPROBOT_AGENTS: comma-separated agent kinds a job may use (classic, llm, auto, mixed); another is
    #: replaced by classic, with a note.
    agents: tuple[str, ...] = AGENT_KINDS
    #: REPROBOT_STRATEGIES: comma-separated cogeneration strategies llm trajectories may use; another is
    #: replaced by freeform (or the first allowed), with a note.
    strategies: tuple[str, ...] = STRATEGY_NAMES
    #: REPROBOT_MAX_PARALLEL: upper bound on concurrently running trajectories (default: cores).
    max_parallel: int = 0
    #: REPROBOT_ABSTAIN_THRESHOLD: rule-based abstention score below which the bot does not act; a floor for
    #: the policy's `abstention.threshold` (a repo may be more cautious, never less).
    abstain_threshold: float = 0.5
    #: REPROBOT_PUBLISH_UNSURE: open a PR even when the correctness assessment is unsure (default: suggest).
    publish_unsure: bool = False
    #: REPROBOT_PIP_INDEX_URL: optional package index for building environments (host side only).
    pip_index_url: str | None = None
    #: REPROBOT_LOG_LEVEL: logging level name.
    log_level: str = "INFO"
    #: REPROBOT_GITHUB_WEBHOOK_SECRET: secret GitHub signs webhook bodies with.
    github_webhook_secret: str | None = field(default=None, repr=False)
    #: REPROBOT_GITHUB_APP_ID: the GitHub App's id.
    github_app_id: str | None = None
    #: REPROBOT_GITHUB_PRIVATE_KEY (PEM text) or REPROBOT_GITHUB_PRIVATE_KEY_PATH.
    github_private_key: str | None = field(default=None, repr=False)
    #: REPROBOT_GITHUB_API_URL: REST API base.
    github_api_url: str = "https://api.github.com"
    #: REPROBOT_GITHUB_GIT_URL: base of clone/push URLs.
    github_git_url: str = "https://github.com"
    #: REPROBOT_GITHUB_RETRY_BASE: seconds of the first retry backoff for GitHub calls (doubles per attempt).
    github_retry_base: float = 1.0
    #: REPROBOT_WEBHOOK_MAX_BYTES: larger webhook bodies are refused with 413 (GitHub caps payloads at 25 MB).
    webhook_max_bytes: int = 25 * 1024 * 1024
    #: REPROBOT_WEBHOOK_INFLIGHT_BYTES: bytes of webhook bodies read but not yet verified, across all requests;
    #: past it a request gets 503 (unsigned senders cannot make the server buffer connections x max bytes).
    webhook_inflight_bytes: int = 64 * 1024 * 1024
    #: REPROBOT_PERMISSION_TIMEOUT: seconds the webhook ack may wait on GitHub's collaborator-permission lookup
    #: for a command from a non-member; past it the job, which checks again, decides (GitHub waits 10 s at most).
    permission_timeout: float = 1.5
    #: REPROBOT_WORKER_LEASE: seconds a worker's job lease lasts between heartbeats (a dead worker's job is
    #: claimed again after this).
    worker_lease: float = 60.0
    #: REPROBOT_WORKER_POLL: seconds an idle worker waits before looking for a job again.
    worker_poll: float = 1.0
    #: REPROBOT_WORKERS: jobs one worker process runs at once (the global concurrency limit per process).
    workers: int = 1
    #: REPROBOT_MAX_RUNNING_JOBS: jobs running at once across every worker sharing the store (0: no limit).
    max_running_jobs: int = 0
    #: REPROBOT_DELIVERY_BODY_DAYS: days the raw body of a webhook delivery is kept in the store (0: forever).
    #: Workers drop older bodies hourly; the delivery id stays, so a late redelivery is still recognised.
    delivery_body_days: float = 30.0
    #: REPROBOT_LLM_BASE_URL / REPROBOT_LLM_API_KEY / REPROBOT_LLM_MODEL: OpenAI-compatible model endpoint.
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_model: str | None = None
    #: REPROBOT_LLM_PRICE_INPUT / REPROBOT_LLM_PRICE_OUTPUT: USD per million prompt / completion tokens.
    llm_price_input: float = 0.0
    llm_price_output: float = 0.0
    #: REPROBOT_LLM_MAX_STEPS: tool-using steps per LLM trajectory (RepairAgent's default budget is 40 cycles).
    llm_max_steps: int = 40
    #: REPROBOT_LLM_MAX_TOKENS: prompt + completion tokens per LLM trajectory.
    llm_max_tokens: int = 400_000
    #: REPROBOT_LLM_MAX_COST: USD per job across trajectories, reviewers and abstention (unset: no cap).
    llm_max_cost: float | None = None
    #: REPROBOT_LLM_MAX_COST_ISSUE / REPROBOT_LLM_MAX_COST_DAY: USD across all jobs of one issue / per UTC day
    #: for the whole deployment, counted from the trajectories recorded in the store (unset: no cap).
    llm_max_cost_issue: float | None = None
    llm_max_cost_day: float | None = None
    #: REPROBOT_LLM_TIMEOUT: seconds before one model call counts as timed out (then retried).
    llm_timeout: float = 120.0
    # -- Jira (issue 15) -----------------------------------------------------------------------------------
    #: REPROBOT_JIRA_WEBHOOK_SECRET: the secret Jira webhooks sign bodies with (X-Hub-Signature: sha256=...).
    #: One secret, or one per site as space- or comma-separated `https://site.example=secret` pairs.
    jira_webhook_secrets: tuple[tuple[str | None, str], ...] = field(default=(), repr=False)
    #: REPROBOT_JIRA_ALLOW_UNSIGNED: 1 accepts unsigned Jira deliveries (only for a Jira that cannot sign;
    #: `reprobot doctor` warns about it). A delivery that carries a signature is still checked.
    jira_allow_unsigned: bool = False
    #: REPROBOT_JIRA_MAPPING: path of the YAML file mapping (Jira site, project, component) to a repo and policy.
    jira_mapping: Path | None = None
    #: REPROBOT_JIRA_TOKEN: a personal access token (Jira Server / Data Center, sent as a bearer token).
    jira_token: str | None = field(default=None, repr=False)
    #: REPROBOT_JIRA_EMAIL / REPROBOT_JIRA_API_TOKEN: Jira Cloud basic auth (account email + API token).
    jira_email: str | None = None
    jira_api_token: str | None = field(default=None, repr=False)
    #: REPROBOT_JIRA_RETRY_BASE: seconds of the first retry backoff for Jira calls (doubles per attempt).
    jira_retry_base: float = 1.0
    #: REPROBOT_GIT_CREDENTIAL_<NAME>: the credential (`token` or `user:token`) a mapping entry names with
    #: `credential: NAME`, for pushing to a plain git URL over HTTPS.
    git_credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # -- operations (issue 17): the dashboard's login and the workers' own /metrics ------------------------
    #: REPROBOT_DASHBOARD_TOKEN: a deployment token that opens the read-only dashboard (for local use); unset:
    #: only GitHub login (below) opens it.
    dashboard_token: str | None = field(default=None, repr=False)
    #: REPROBOT_GITHUB_CLIENT_ID / REPROBOT_GITHUB_CLIENT_SECRET: the GitHub App's OAuth client, for dashboard
    #: login; only admins of a repository of one of the App's installations get in.
    github_client_id: str | None = None
    github_client_secret: str | None = field(default=None, repr=False)
    #: REPROBOT_GITHUB_WEB_URL: GitHub's web origin, where the OAuth authorize and token endpoints live.
    github_web_url: str = "https://github.com"
    #: REPROBOT_METRICS_PORT: port on which `reprobot worker` serves its own /metrics (0: none); see bot/metrics.py.
    metrics_port: int = 0

    # --- Mojira poller (issue 15): `reprobot mojira poll` and the worker's periodic poll -------------------
    #: REPROBOT_MOJIRA_API_URL: base of Mojira's public read-only API (the search is POST <base>/jql-search-post).
    mojira_api_url: str = "https://bugs.mojang.com/api"
    #: REPROBOT_MOJIRA_PROJECT: the project the search runs in (MC: Java Edition; MCPE, REALMS, MCL, ...).
    mojira_project: str = "MC"
    #: REPROBOT_MOJIRA_JQL: JQL of the reports to follow; the poller adds `updated >= <cursor>` and the order.
    mojira_jql: str = "project = MC"
    #: REPROBOT_MOJIRA_START: where a query that never polled starts: a JQL relative date (-1d, -4h) or a date.
    mojira_start: str = "-1d"
    #: REPROBOT_MOJIRA_PAGE_SIZE: maxResults of one search page (1-100).
    mojira_page_size: int = 50
    #: REPROBOT_MOJIRA_MAX_PAGES: most pages one poll reads; the next poll goes on from the cursor.
    mojira_max_pages: int = 20
    #: REPROBOT_MOJIRA_OVERLAP_MINUTES: how far before the cursor a poll asks again (JQL has minute precision and
    #: Mojira compares in its own time zone); repeats are recognised in the store.
    mojira_overlap_minutes: float = 15.0
    #: REPROBOT_MOJIRA_POLL_INTERVAL: seconds between two polls by `mojira poll` and by a worker (0: workers do not
    #: poll; `reprobot mojira poll` then defaults to 300).
    mojira_poll_interval: float = 0.0
    #: REPROBOT_MOJIRA_RETRY_BASE: seconds of the first retry backoff for Mojira calls (Retry-After wins).
    mojira_retry_base: float = 1.0
    #: REPROBOT_MOJIRA_SINK: where new reports go: `store` (default), `github:owner/repo` (an issue per report,
    #: through the App), `github:owner/repo#N` (a comment per report on tracking issue N), or `jira:PROJECT` (an
    #: issue in a Jira project, through the Jira forge's client). The store records every report in all cases.
    mojira_sink: str = "store"
    #: REPROBOT_MOJIRA_CRASH_ATTACHMENT_BYTES: crash-like attachments up to this size are fetched and parsed.
    mojira_crash_attachment_bytes: int = 2 * 1024 * 1024
    # -- self-hosted runners (bot/selfhosted/api.py; the README's "Runner protocol") ---------------------------
    #: REPROBOT_RUNNER_REGISTRATION_TOKEN: the secret a runner exchanges for its own token at `register`, and
    #: the admin credential of `GET /api/runners`. Unset: runner registration is refused.
    runner_registration_token: str | None = field(default=None, repr=False)
    #: REPROBOT_RUNNER_LEASE: seconds a runner's claim holds a job; renewed every third of it.
    runner_lease: float = 60.0
    #: REPROBOT_RUNNER_HEARTBEAT: seconds between two heartbeats of an idle runner (sent in the answers).
    runner_heartbeat: float = 30.0
    #: REPROBOT_RUNNER_CLAIM_WAIT: longest a claim's long poll waits for a job (at most 50 s).
    runner_claim_wait: float = 50.0
    #: REPROBOT_RUNNER_CLAIM_POLL: seconds between two looks at the queue while a long poll waits.
    runner_claim_poll: float = 1.0
    #: REPROBOT_RUNNER_CANCEL_GRACE: seconds a cancelled job gets after SIGTERM before SIGKILL (told to runners).
    runner_cancel_grace: float = 10.0
    #: REPROBOT_RUNNER_STALE: runners not heard from for this many seconds are pruned from the list.
    runner_stale: float = 3600.0
    #: REPROBOT_RUNNER_MAX_ATTEMPTS: claims a runner job gets (a lapsed lease counts) before it is dead.
    runner_max_attempts: int = 3
    #: REPROBOT_RUNNER_ARTIFACT_MAX_BYTES: largest artifact a runner may upload (screenshot, action log).
    runner_artifact_max_bytes: int = 10 * 1024 * 1024
    #: REPROBOT_RUNNER_LOG_MAX_BYTES: most log bytes kept per job; later chunks are refused (413).
    runner_log_max_bytes: int = 1024 * 1024
    #: REPROBOT_PUBLIC_URL: the bot's address as readers see it, for artifact links in comments
    #: (unset: the links are relative paths on the bot's server).
    public_url: str | None = None
    # -- game reproduction (issue 19): the Minecraft driver on a maintainer's machine --------------------------
    #: REPROBOT_GAME_DISPLAY: an X display (":99") the Minetest client shares; unset: each session starts its Xvfb.
    game_display: str | None = None
    # -- game reproduction: the model-driven action loop (issue 19 follow-up) ----------------------------------
    #: REPROBOT_GAME_MODEL_TURNS: most turns of the model-driven action loop per reproduction (8).
    game_model_turns: int = 8
    #: REPROBOT_GAME_CONTEXT_TURNS: how many past turns (reply + outcome) stay in the model's context (3).
    game_context_turns: int = 3
    #: REPROBOT_GAME_MODEL_IMAGES: send the screenshot as an image part (for models that accept images; off).
    game_model_images: bool = False
    #: REPROBOT_MOJIRA_RUNNER_LABELS: comma list ("minecraft,1.21"); when set, routed Mojira reports are queued as
    #: `reproduce.game` jobs for runners with these labels (unset: the route is only recorded).
    mojira_runner_labels: tuple[str, ...] = ()
    #: REPROBOT_MINECRAFT_DIR: the game folder (crash-reports/, logs/latest.log); unset: no Minecraft here.
    minecraft_dir: Path | None = None
    #: REPROBOT_MINECRAFT_RCON: host:port of the server's RCON for commands (unset: commands typed in the client).
    minecraft_rcon: str | None = None
    #: REPROBOT_MINECRAFT_RCON_PASSWORD: the RCON password (a secret: never logged or published).
    minecraft_rcon_password: str | None = field(default=None, repr=False)
    # -- the PostgreSQL engine (issue 17) --
    #: REPROBOT_DATABASE_URL: postgresql://user@host:port/db moves the store and the queue to PostgreSQL
    #: (unset: the embedded SQLite file under the data dir).
    database_url: str | None = None

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
        values += [self.dashboard_token, self.github_client_secret]
        values.append(self.runner_registration_token)
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
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(f"REPROBOT_{name}")
            return value if value not in (None, "") else None

        kwargs: dict[str, object] = {}
        if (v := get("DATA_DIR")) is not None:
            kwargs["data_dir"] = Path(v).expanduser()
        if (v := get("DATABASE_URL")) is not None:
            if v.split(":", 1)[0] not in ("postgresql", "postgres"):
                raise SettingsError(
                    f"REPROBOT_DATABASE_URL: expected a postgresql:// URL, got scheme {v.split(':', 1)[0]!r}"
                )
            kwargs["database_url"] = v
        if (v := get("SANDBOX")) is not None:
            if v not in ("bwrap", "docker", "none"):
                raise SettingsError(f"REPROBOT_SANDBOX={v!r}: expected bwrap, docker or none")
            kwargs["sandbox"] = v
        if (v := get("SANDBOX_SESSION")) is not None:
            if v not in ("warm", "cold"):
                raise SettingsError(f"REPROBOT_SANDBOX_SESSION={v!r}: expected warm or cold")
            kwargs["sandbox_session"] = v
        if (v := get("TEST_IMPACT")) is not None:
            if v.strip().lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise SettingsError(f"REPROBOT_TEST_IMPACT must be 1/0, true/false or yes/no, not {v!r}")
            kwargs["test_impact"] = v.strip().lower() in ("1", "true", "yes")
        if (v := get("PYTEST_SERVER")) is not None:
            if v.strip().lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise SettingsError(f"REPROBOT_PYTEST_SERVER must be 1/0, true/false or yes/no, not {v!r}")
            kwargs["pytest_server"] = v.strip().lower() in ("1", "true", "yes")
        if (v := get("EARLY_STOP")) is not None:
            if v.strip().lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise SettingsError(f"REPROBOT_EARLY_STOP must be 1/0, true/false or yes/no, not {v!r}")
            kwargs["early_stop"] = v.strip().lower() in ("1", "true", "yes")
        if (v := get("SANDBOX_PYTHON")) is not None:
            kwargs["sandbox_python"] = Path(v)
        if (v := get("ROOTFS")) is not None:
            kwargs["rootfs"] = Path(v)
        if (v := get("SANDBOX_DISK_QUOTA")) is not None:
            try:
                kwargs["sandbox_disk_quota"] = parse_size(v)
            except ValueError:
                raise SettingsError(
                    f"REPROBOT_SANDBOX_DISK_QUOTA={v!r}: expected a size such as 2G, 512M or a byte count (0: none)"
                ) from None
        if (v := get("AGENTS")) is not None:
            kwargs["agents"] = _names("AGENTS", v, AGENT_KINDS)
        if (v := get("STRATEGIES")) is not None:
            kwargs["strategies"] = _names("STRATEGIES", v, STRATEGY_NAMES)
        if (v := get("PUBLISH_UNSURE")) is not None:
            if v.strip().lower() not in ("0", "1", "true", "false", "yes", "no", ""):
                raise SettingsError(f"REPROBOT_PUBLISH_UNSURE must be 1/0, true/false or yes/no, not {v!r}")
            kwargs["publish_unsure"] = v.strip().lower() in ("1", "true", "yes")
        for name, attr, kind in (
            ("TEST_TIMEOUT", "test_timeout", float),
            ("CANDIDATE_TIMEOUT_FACTOR", "candidate_timeout_factor", float),
            ("REVIEW_PARALLEL", "review_parallel", int),
            ("SANDBOX_REAP_INTERVAL", "sandbox_reap_interval", float),
            ("TRAJECTORIES", "trajectories", int),
            ("MAX_TRAJECTORIES", "max_trajectories", int),
            ("MAX_TEST_TIMEOUT", "max_test_timeout", float),
            ("MAX_JOB_MINUTES", "max_job_minutes", float),
            ("MAX_PARALLEL", "max_parallel", int),
            ("ABSTAIN_THRESHOLD", "abstain_threshold", float),
            ("LLM_PRICE_INPUT", "llm_price_input", float),
            ("LLM_PRICE_OUTPUT", "llm_price_output", float),
            ("LLM_MAX_STEPS", "llm_max_steps", int),
            ("LLM_MAX_TOKENS", "llm_max_tokens", int),
            ("LLM_MAX_COST", "llm_max_cost", float),
            ("LLM_MAX_COST_ISSUE", "llm_max_cost_issue", float),
            ("LLM_MAX_COST_DAY", "llm_max_cost_day", float),
            ("LLM_TIMEOUT", "llm_timeout", float),
            ("GITHUB_RETRY_BASE", "github_retry_base", float),
            ("WEBHOOK_MAX_BYTES", "webhook_max_bytes", int),
            ("WEBHOOK_INFLIGHT_BYTES", "webhook_inflight_bytes", int),
            ("PERMISSION_TIMEOUT", "permission_timeout", float),
            ("WORKER_LEASE", "worker_lease", float),
            ("WORKER_POLL", "worker_poll", float),
            ("WORKERS", "workers", int),
            ("MAX_RUNNING_JOBS", "max_running_jobs", int),
            ("DELIVERY_BODY_DAYS", "delivery_body_days", float),
            ("METRICS_PORT", "metrics_port", int),
            ("RUNNER_LEASE", "runner_lease", float),
            ("RUNNER_HEARTBEAT", "runner_heartbeat", float),
            ("RUNNER_CLAIM_WAIT", "runner_claim_wait", float),
            ("RUNNER_CLAIM_POLL", "runner_claim_poll", float),
            ("RUNNER_CANCEL_GRACE", "runner_cancel_grace", float),
            ("RUNNER_STALE", "runner_stale", float),
            ("RUNNER_MAX_ATTEMPTS", "runner_max_attempts", int),
            ("RUNNER_ARTIFACT_MAX_BYTES", "runner_artifact_max_bytes", int),
            ("RUNNER_LOG_MAX_BYTES", "runner_log_max_bytes", int),
        ):
            if (v := get(name)) is not None:
                try:
                    kwargs[attr] = kind(v)
                except ValueError:
                    wanted = "an integer" if kind is int else "a number"
                    raise SettingsError(f"REPROBOT_{name}={v!r}: expected {wanted}") from None
        for name, attr in (
            ("PIP_INDEX_URL", "pip_index_url"),
            ("LOG_LEVEL", "log_level"),
            ("GITHUB_WEBHOOK_SECRET", "github_webhook_secret"),
            ("GITHUB_APP_ID", "github_app_id"),
            ("GITHUB_API_URL", "github_api_url"),
            ("GITHUB_GIT_URL", "github_git_url"),
            ("LLM_BASE_URL", "llm_base_url"),
            ("LLM_API_KEY", "llm_api_key"),
            ("LLM_MODEL", "llm_model"),
            ("DASHBOARD_TOKEN", "dashboard_token"),
            ("GITHUB_CLIENT_ID", "github_client_id"),
            ("GITHUB_CLIENT_SECRET", "github_client_secret"),
            ("GITHUB_WEB_URL", "github_web_url"),
            ("RUNNER_REGISTRATION_TOKEN", "runner_registration_token"),
            ("PUBLIC_URL", "public_url"),
        ):
            if (v := get(name)) is not None:
                kwargs[attr] = v
        if (v := get("GITHUB_PRIVATE_KEY")) is not None:
            kwargs["github_private_key"] = v
        elif (v := get("GITHUB_PRIVATE_KEY_PATH")) is not None:
            try:
                kwargs["github_private_key"] = Path(v).read_text()
            except OSError as exc:
                raise SettingsError(f"REPROBOT_GITHUB_PRIVATE_KEY_PATH={v!r}: {exc.strerror}") from None
        kwargs.update(_mojira_settings(get))
        kwargs |= _jira_settings(get, env)
        kwargs.update(_game_settings(get))
        settings = cls(**kwargs)  # type: ignore[arg-type]
        if settings.trajectories < 1:
            raise SettingsError("REPROBOT_TRAJECTORIES must be at least 1")
        if settings.max_trajectories < settings.trajectories:
            raise SettingsError("REPROBOT_MAX_TRAJECTORIES must be at least REPROBOT_TRAJECTORIES")
        if not 0 < settings.test_timeout <= settings.max_test_timeout:
            raise SettingsError("REPROBOT_TEST_TIMEOUT must be more than 0 and at most REPROBOT_MAX_TEST_TIMEOUT")
        if settings.review_parallel < 0:
            raise SettingsError("REPROBOT_REVIEW_PARALLEL must be 0 (one per core) or a positive number")
        if not settings.candidate_timeout_factor >= 0:
            raise SettingsError("REPROBOT_CANDIDATE_TIMEOUT_FACTOR must be 0 (off) or a positive factor")
        if settings.max_job_minutes is not None and not settings.max_job_minutes > 0:
            raise SettingsError("REPROBOT_MAX_JOB_MINUTES must be a positive number of minutes (unset: no cap)")
        if not 0.0 <= settings.abstain_threshold <= 1.0:
            raise SettingsError("REPROBOT_ABSTAIN_THRESHOLD must be between 0 and 1")
        if 0 < settings.sandbox_disk_quota < MIN_QUOTA_BYTES:
            raise SettingsError(
                f"REPROBOT_SANDBOX_DISK_QUOTA must be 0 (no quota) or at least {MIN_QUOTA_BYTES // 1024**2}M"
            )
        if not settings.sandbox_reap_interval > 0:
            raise SettingsError("REPROBOT_SANDBOX_REAP_INTERVAL must be a positive number of seconds")
        if settings.webhook_max_bytes < 1 or settings.webhook_inflight_bytes < settings.webhook_max_bytes:
            raise SettingsError("REPROBOT_WEBHOOK_INFLIGHT_BYTES must be at least REPROBOT_WEBHOOK_MAX_BYTES (>= 1)")
        if not 0 < settings.permission_timeout <= 5:
            raise SettingsError("REPROBOT_PERMISSION_TIMEOUT must be more than 0 and at most 5 seconds")
        if not settings.jira_retry_base >= 0:
            raise SettingsError("REPROBOT_JIRA_RETRY_BASE must be 0 or more seconds")
        if settings.delivery_body_days < 0:
            raise SettingsError("REPROBOT_DELIVERY_BODY_DAYS must be 0 (keep forever) or more")
        _check_runner_settings(settings)
        return settings

    @classmethod
    def documented_fields(cls) -> list[str]:
        """Names of all settings, for `reprobot doctor` and the README table."""
        return [f.name for f in fields(cls)]


def _game_settings(get: Callable[[str], str | None]) -> dict[str, object]:
    """The Minecraft driver's settings (issue 19)."""
    out: dict[str, object] = {}
    if (v := get("MOJIRA_RUNNER_LABELS")) is not None:
        labels = tuple(x.strip() for x in v.split(",") if x.strip())
        if not labels or not all(re.fullmatch(r"[\w.:+-]{1,64}", x) for x in labels):
            raise SettingsError(f"REPROBOT_MOJIRA_RUNNER_LABELS={v!r}: expected a comma list of labels")
        out["mojira_runner_labels"] = labels
    if (v := get("GAME_DISPLAY")) is not None:
        out["game_display"] = v
    for key, low in (("GAME_MODEL_TURNS", 1), ("GAME_CONTEXT_TURNS", 0)):
        if (v := get(key)) is not None:
            if not v.strip().isdigit() or int(v) < low:
                raise SettingsError(f"REPROBOT_{key}={v!r}: expected a whole number >= {low}")
            out[key.lower()] = int(v)
    if (v := get("GAME_MODEL_IMAGES")) is not None:
        if v.strip().lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise SettingsError(f"REPROBOT_GAME_MODEL_IMAGES={v!r}: expected true or false")
        out["game_model_images"] = v.strip().lower() in ("1", "true", "yes", "on")
    if (v := get("MINECRAFT_DIR")) is not None:
        out["minecraft_dir"] = Path(v).expanduser()
    if (v := get("MINECRAFT_RCON")) is not None:
        host, _, port = v.rpartition(":")
        if not host or not port.isdigit():
            raise SettingsError(f"REPROBOT_MINECRAFT_RCON={v!r}: expected host:port")
        out["minecraft_rcon"] = v
    if (v := get("MINECRAFT_RCON_PASSWORD")) is not None:
        out["minecraft_rcon_password"] = v
    return out


def _mojira_settings(get: Callable[[str], str | None]) -> dict[str, object]:
    """The REPROBOT_MOJIRA_* settings (issue 15), validated; SettingsError names the variable."""
    kwargs: dict[str, object] = {}
    for name, attr in (
        ("MOJIRA_API_URL", "mojira_api_url"),
        ("MOJIRA_PROJECT", "mojira_project"),
        ("MOJIRA_JQL", "mojira_jql"),
        ("MOJIRA_START", "mojira_start"),
    ):
        if (v := get(name)) is not None:
            kwargs[attr] = v.rstrip("/") if attr == "mojira_api_url" else v
    for name, attr, kind, low, high in (
        ("MOJIRA_PAGE_SIZE", "mojira_page_size", int, 1, 100),
        ("MOJIRA_MAX_PAGES", "mojira_max_pages", int, 1, 10_000),
        ("MOJIRA_OVERLAP_MINUTES", "mojira_overlap_minutes", float, 0, 7 * 24 * 60),
        ("MOJIRA_POLL_INTERVAL", "mojira_poll_interval", float, 0, 7 * 86400),
        ("MOJIRA_RETRY_BASE", "mojira_retry_base", float, 0, 600),
        ("MOJIRA_CRASH_ATTACHMENT_BYTES", "mojira_crash_attachment_bytes", int, 0, 1024**3),
    ):
        if (v := get(name)) is not None:
            try:
                value = kind(v)
            except ValueError:
                value = None
            if value is None or not low <= value <= high:
                raise SettingsError(f"REPROBOT_{name}={v!r}: expected a number from {low} to {high}")
            kwargs[attr] = value
    if (v := get("MOJIRA_SINK")) is not None:
        sink, _, target = v.partition(":")
        github = re.fullmatch(r"[\w.-]+/[\w.-]+(?:#\d+)?", target) is not None
        if not (v == "store" or (sink == "github" and github) or (sink == "jira" and target)):
            raise SettingsError(
                f"REPROBOT_MOJIRA_SINK={v!r}: expected store, github:owner/repo, github:owner/repo#N or jira:PROJECT"
            )
        kwargs["mojira_sink"] = v
    return kwargs


def _jira_settings(get: Callable[[str], str | None], env: Mapping[str, str]) -> dict[str, object]:
    """The Jira settings (issue 15): webhook secrets per site, unsigned opt-in, mapping, auth, git credentials."""
    out: dict[str, object] = {}
    if (v := get("JIRA_WEBHOOK_SECRET")) is not None:
        out["jira_webhook_secrets"] = parse_site_secrets(v)
    if (v := get("JIRA_ALLOW_UNSIGNED")) is not None:
        if v.strip().lower() not in ("0", "1", "true", "false", "yes", "no"):
            raise SettingsError(f"REPROBOT_JIRA_ALLOW_UNSIGNED must be 1/0, true/false or yes/no, not {v!r}")
        out["jira_allow_unsigned"] = v.strip().lower() in ("1", "true", "yes")
    if (v := get("JIRA_MAPPING")) is not None:
        out["jira_mapping"] = Path(v).expanduser()
    for name, attr in (
        ("JIRA_TOKEN", "jira_token"),
        ("JIRA_EMAIL", "jira_email"),
        ("JIRA_API_TOKEN", "jira_api_token"),
    ):
        if (v := get(name)) is not None:
            out[attr] = v
    if (get("JIRA_EMAIL") is None) != (get("JIRA_API_TOKEN") is None):
        raise SettingsError("REPROBOT_JIRA_EMAIL and REPROBOT_JIRA_API_TOKEN go together (Jira Cloud basic auth)")
    if (v := get("JIRA_RETRY_BASE")) is not None:
        try:
            out["jira_retry_base"] = float(v)
        except ValueError:
            raise SettingsError(f"REPROBOT_JIRA_RETRY_BASE={v!r}: expected a number") from None
    prefix = "REPROBOT_GIT_CREDENTIAL_"
    out["git_credentials"] = tuple(sorted((k[len(prefix) :], v) for k, v in env.items() if k.startswith(prefix) and v))
    return out


def parse_site_secrets(value: str) -> tuple[tuple[str | None, str], ...]:
    """`secret`, or `https://a.example=s1 https://b.example=s2`: (site or None, secret) pairs, sites normalized."""
    items = [item for item in value.replace(",", " ").split() if item]
    if len(items) == 1 and not items[0].startswith(("http://", "https://")):
        return ((None, items[0]),)
    pairs: list[tuple[str | None, str]] = []
    for item in items:
        # A secret may itself contain "=" (base64): split at the first "=" after the URL's host instead.
        scheme, _, rest = item.partition("://")
        host_path, sep, secret = rest.partition("=")
        site = f"{scheme}://{host_path}"
        if not sep or not secret or scheme not in ("http", "https") or not host_path:
            raise SettingsError(
                "REPROBOT_JIRA_WEBHOOK_SECRET: expected one secret, or `https://site=secret` pairs "
                f"separated by spaces or commas; cannot read item {len(pairs) + 1}"
            )
        pairs.append((normalize_site(site), secret))
    return tuple(pairs)

"""Every REPROBOT_* setting, one row each: variable, Settings field, parser, default, rule, section and meaning.

This table is the one place a setting is declared. `Settings.from_env` (bot/settings/config.py) parses and checks
the environment by walking it, `Settings` takes its defaults from it, `reprobot doctor` lists the settings through
it, and docs/configuration.md is generated from it (`python -m bot.settings.docs`); tests/test_configuration_doc.py
fails when the table, the Settings fields and the document disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.settings import kinds as k
from bot.settings.kinds import Kind, Rule, SettingsError

__all__ = [
    "AGENT_KINDS",
    "CROSS_CHECKS",
    "ROWS",
    "SECTIONS",
    "STRATEGY_NAMES",
    "CrossCheck",
    "Setting",
    "check",
    "default_data_dir",
    "default_of",
    "format_value",
    "read_values",
    "row_for",
]

#: Agent kinds and cogeneration strategies a deployment may allow (REPROBOT_AGENTS, REPROBOT_STRATEGIES).
AGENT_KINDS = ("classic", "llm", "auto", "mixed")
STRATEGY_NAMES = ("freeform", "tdd", "tld", "fix-only", "brt-only")


def default_data_dir() -> Path:
    """REPROBOT_DATA_DIR's default, under the home folder of whoever runs the bot."""
    return Path.home() / ".local" / "share" / "reprobot"


@dataclass(frozen=True)
class Setting:
    """One setting. Several rows may fill one field: the first one set wins (a PEM text over its file)."""

    env: str
    field: str
    section: str
    kind: Kind
    default: Any
    doc: str
    rule: Rule | None = None
    secret: bool = False
    #: How the docs show the default (markdown) when the value itself reads poorly (0 meaning "one per core").
    shown: str | None = None
    #: A prefix row (`REPROBOT_GIT_CREDENTIAL_<NAME>`): every variable starting with it, as sorted (NAME, value).
    prefix: bool = False
    #: Builds the default when it depends on the machine (the home folder).
    factory: Callable[[], Any] | None = None

    def raw(self, environ: Mapping[str, str]) -> str | None:
        """The variable's text, None when unset or empty (an empty variable means "the default")."""
        value = environ.get(self.env)
        return value if value not in (None, "") else None

    def is_set(self, environ: Mapping[str, str]) -> bool:
        """True when the variable (for a prefix row: any variable with the prefix) has a value; nothing is parsed."""
        if self.prefix:
            start = self.env.removesuffix("<NAME>")
            return any(v for n, v in environ.items() if n.startswith(start))
        return self.raw(environ) is not None

    def read(self, environ: Mapping[str, str]) -> Any:
        """The parsed value, or None when the variable is unset; SettingsError names the variable."""
        if self.prefix:
            start = self.env.removesuffix("<NAME>")
            found = sorted((n[len(start) :], v) for n, v in environ.items() if n.startswith(start) and v)
            return tuple((name, self.kind.parse(start + name, v)) for name, v in found) or None
        raw = self.raw(environ)
        return None if raw is None else self.kind.parse(self.env, raw)


@dataclass(frozen=True)
class CrossCheck:
    """A rule over several settings, checked after every row: `ok(settings)`, else SettingsError(message)."""

    envs: tuple[str, ...]
    message: str
    ok: Callable[[Any], bool]


#: Sections in the order docs/configuration.md shows them: name → (title, what the section is about).
SECTIONS: dict[str, tuple[str, str]] = {
    "store": ("Store and data", "Where the bot keeps its state."),
    "sandbox": ("Sandboxes", "Where repository code runs, and the limits it runs under."),
    "search": ("Candidate search and validation", "How a job's candidates are run, checked and stopped."),
    "jobs": ("Jobs: defaults and deployment caps", "What a job does by default and the most a policy may ask."),
    "model": ("Model (LLM agent)", "An OpenAI-compatible endpoint, its prices and the spending caps."),
    "github": ("GitHub App and webhooks", "The App's identity, its API, and how webhook deliveries are taken."),
    "worker": ("Workers and logging", "The worker processes that run jobs from the store's queue."),
    "jira": ("Jira", "Jira webhooks, the project mapping, Jira authentication and plain git credentials."),
    "dashboard": ("Dashboard", "Who may open the read-only dashboard, and who may read the web's /metrics."),
    "mojira": ("Mojira poller", "Following Minecraft's public bug tracker (`reprobot mojira poll`, workers)."),
    "runner": ("Self-hosted runners", "The runner protocol's server side, and what a runner itself reads."),
    "game": ("Game reproduction", "The game drivers on a maintainer's machine and the model-driven action loop."),
}

_SECONDS = "number of seconds"
_ROWS_STORE_SANDBOX_SEARCH = (
    Setting(
        "REPROBOT_DATA_DIR",
        "data_dir",
        "store",
        k.USER_PATH,
        None,
        "the store (reprobot.db), caches (virtualenvs, wheelhouses), trajectories and run outputs live here",
        shown="`~/.local/share/reprobot`",
        factory=default_data_dir,
    ),
    Setting(
        "REPROBOT_SANDBOX",
        "sandbox",
        "sandbox",
        k.choice("bwrap", "docker", "none"),
        "bwrap",
        "default sandbox backend; `none` only by explicit opt-in",
    ),
    Setting(
        "REPROBOT_SANDBOX_PYTHON",
        "sandbox_python",
        "sandbox",
        k.PATH,
        Path("/usr/bin/python3"),
        "interpreter visible inside the sandbox; per-repo virtualenvs are built from it",
    ),
    Setting(
        "REPROBOT_ROOTFS",
        "rootfs",
        "sandbox",
        k.PATH,
        None,
        "a root filesystem for the sandbox instead of read-only host binds (`reprobot sandbox build-base`)",
    ),
    Setting(
        "REPROBOT_SANDBOX_DISK_QUOTA",
        "sandbox_disk_quota",
        "sandbox",
        k.SIZE,
        2 * 1024**3,
        "bytes a sandbox's commands may write into its workspace, all files together (bwrap and docker, as root)",
        rule=k.QUOTA,
        shown="`2G`",
    ),
    Setting(
        "REPROBOT_SANDBOX_REAP_INTERVAL",
        "sandbox_reap_interval",
        "sandbox",
        k.FLOAT,
        60.0,
        "seconds between a worker's looks for docker sandboxes and quota mounts of dead workers (also done at start)",
        rule=k.positive(_SECONDS),
    ),
    Setting(
        "REPROBOT_SANDBOX_SESSION",
        "sandbox_session",
        "sandbox",
        k.choice("warm", "cold"),
        "warm",
        "warm: one sandbox per trajectory, each command forked in it; cold: a sandbox per command",
    ),
    Setting(
        "REPROBOT_TEST_IMPACT",
        "test_impact",
        "search",
        k.FLAG,
        True,
        "1: a candidate's BRT, then the tests covering its changed lines, then the full suite; 0: the full suite",
    ),
    Setting(
        "REPROBOT_BASELINE_CACHE",
        "baseline_cache",
        "search",
        k.FLAG,
        True,
        "1: a commit's baseline run is kept and reused by later jobs on the same tree and environment; 0: every job"
        " runs it",
    ),
    Setting(
        "REPROBOT_PYTEST_SERVER",
        "pytest_server",
        "search",
        k.FLAG,
        True,
        "1: pytest runs in a warm session go through a resident server that forks a worker per run",
    ),
    Setting(
        "REPROBOT_CANDIDATE_TIMEOUT_FACTOR",
        "candidate_timeout_factor",
        "search",
        k.FLOAT,
        5.0,
        "a candidate's BRT run gets this many times the buggy code's BRT time (at least 2 s); 0: the full timeout",
        rule=k.at_least(0, "0 (off) or a positive factor"),
    ),
    Setting(
        "REPROBOT_EARLY_STOP",
        "early_stop",
        "search",
        k.FLAG,
        False,
        "1 stops a job's remaining trajectories once the leading fix cannot be outvoted",
    ),
    Setting(
        "REPROBOT_REVIEW_PARALLEL",
        "review_parallel",
        "search",
        k.INT,
        0,
        "review and assessment sandboxes of one job running at once",
        rule=k.at_least(0, "0 (one per core) or a positive number"),
        shown="`0` (one per core)",
    ),
)

_ROWS_JOBS = (
    Setting(
        "REPROBOT_TEST_TIMEOUT",
        "test_timeout",
        "jobs",
        k.FLOAT,
        300.0,
        "wall seconds for one test-suite run when neither `--timeout` nor the policy's `environment.timeout` says",
    ),
    Setting(
        "REPROBOT_TRAJECTORIES",
        "trajectories",
        "jobs",
        k.INT,
        4,
        "default number of parallel trajectories per job, M (also caps the policy's `agent.trajectories`)",
        rule=k.at_least(1, "at least 1"),
    ),
    Setting(
        "REPROBOT_MAX_TRAJECTORIES",
        "max_trajectories",
        "jobs",
        k.INT,
        32,
        "most trajectories a job may run, whatever a policy, `/fix trajectories=` or `-M` asks (clamped, with a note)",
    ),
    Setting(
        "REPROBOT_MAX_TEST_TIMEOUT",
        "max_test_timeout",
        "jobs",
        k.FLOAT,
        7200.0,
        "most seconds one test-suite run may take, whatever the policy or `--timeout` asks (clamped, with a note)",
    ),
    Setting(
        "REPROBOT_MAX_JOB_MINUTES",
        "max_job_minutes",
        "jobs",
        k.FLOAT,
        None,
        "most wall-clock minutes a job may run, whatever the policy's `budget.max_minutes` asks (unset: no cap)",
        rule=k.positive("number of minutes (unset: no cap)"),
    ),
    Setting(
        "REPROBOT_AGENTS",
        "agents",
        "jobs",
        k.names(AGENT_KINDS),
        AGENT_KINDS,
        "agent kinds a job may use; another is replaced by classic, with a note",
    ),
    Setting(
        "REPROBOT_STRATEGIES",
        "strategies",
        "jobs",
        k.names(STRATEGY_NAMES),
        STRATEGY_NAMES,
        "cogeneration strategies llm trajectories may use; another becomes freeform (or the first allowed)",
    ),
    Setting(
        "REPROBOT_MAX_PARALLEL",
        "max_parallel",
        "jobs",
        k.INT,
        0,
        "trajectories of one job running at once",
        shown="`0` (one per core)",
    ),
    Setting(
        "REPROBOT_ABSTAIN_THRESHOLD",
        "abstain_threshold",
        "jobs",
        k.FLOAT,
        0.5,
        "triage score below which the bot does not act; a floor for the policy's `abstention.threshold`",
        rule=k.UNIT_INTERVAL,
    ),
    Setting(
        "REPROBOT_PUBLISH_UNSURE",
        "publish_unsure",
        "jobs",
        k.FLAG,
        False,
        "open a PR even when the correctness assessment is unsure (by default such a fix is only suggested)",
    ),
    Setting(
        "REPROBOT_PIP_INDEX_URL",
        "pip_index_url",
        "sandbox",
        k.TEXT,
        None,
        "package index the host downloads wheels and source archives from (nothing is built on the host)",
    ),
    Setting("REPROBOT_LOG_LEVEL", "log_level", "worker", k.TEXT, "INFO", "logging level name"),
)

_ROWS_GITHUB_WORKER = (
    Setting(
        "REPROBOT_GITHUB_WEBHOOK_SECRET",
        "github_webhook_secret",
        "github",
        k.TEXT,
        None,
        "the secret GitHub signs webhook bodies with; while unset, every delivery gets 401",
        secret=True,
    ),
    Setting("REPROBOT_GITHUB_APP_ID", "github_app_id", "github", k.TEXT, None, "the GitHub App's id"),
    Setting(
        "REPROBOT_GITHUB_PRIVATE_KEY",
        "github_private_key",
        "github",
        k.TEXT,
        None,
        "the GitHub App's private key: PEM text, PEM with `\\n` escapes, the base64 of the PEM, or a file path; "
        "checked at start; wins over REPROBOT_GITHUB_PRIVATE_KEY_PATH",
        secret=True,
    ),
    Setting(
        "REPROBOT_GITHUB_PRIVATE_KEY_PATH",
        "github_private_key",
        "github",
        k.KEY_FILE,
        None,
        "a file holding the GitHub App's private key, read once at start",
        secret=True,
    ),
    Setting(
        "REPROBOT_GITHUB_API_URL",
        "github_api_url",
        "github",
        k.TEXT,
        "https://api.github.com",
        "REST API base (GitHub Enterprise: https://HOST/api/v3)",
    ),
    Setting(
        "REPROBOT_GITHUB_GIT_URL",
        "github_git_url",
        "github",
        k.TEXT,
        "https://github.com",
        "base of clone and push URLs (BASE/owner/repo.git)",
    ),
    Setting(
        "REPROBOT_GITHUB_RETRY_BASE",
        "github_retry_base",
        "github",
        k.FLOAT,
        1.0,
        "seconds of the first retry backoff for GitHub calls (doubles per attempt)",
    ),
    Setting(
        "REPROBOT_WEBHOOK_MAX_BYTES",
        "webhook_max_bytes",
        "github",
        k.INT,
        25 * 1024 * 1024,
        "larger webhook bodies get 413, as soon as that many bytes have arrived (GitHub caps payloads at 25 MB)",
    ),
    Setting(
        "REPROBOT_WEBHOOK_INFLIGHT_BYTES",
        "webhook_inflight_bytes",
        "github",
        k.INT,
        64 * 1024 * 1024,
        "bytes of webhook bodies read but not yet verified, across all requests; past it a request gets 503",
    ),
    Setting(
        "REPROBOT_PERMISSION_TIMEOUT",
        "permission_timeout",
        "github",
        k.FLOAT,
        1.5,
        "seconds the webhook ack may wait on a non-member's permission lookup; past it the job decides",
        rule=k.above_up_to(5, "more than 0 and at most 5 seconds"),
    ),
    Setting(
        "REPROBOT_WORKER_LEASE",
        "worker_lease",
        "worker",
        k.FLOAT,
        60.0,
        "seconds a worker's job lease lasts between heartbeats; a dead worker's job is claimed again after it",
    ),
    Setting(
        "REPROBOT_WORKER_POLL",
        "worker_poll",
        "worker",
        k.FLOAT,
        1.0,
        "seconds an idle worker waits before looking for a job again",
    ),
    Setting("REPROBOT_WORKERS", "workers", "worker", k.INT, 1, "jobs one worker process runs at once"),
    Setting(
        "REPROBOT_MAX_RUNNING_JOBS",
        "max_running_jobs",
        "worker",
        k.INT,
        0,
        "jobs running at once across every worker sharing the store",
        shown="`0` (no limit)",
    ),
    Setting(
        "REPROBOT_DELIVERY_BODY_DAYS",
        "delivery_body_days",
        "store",
        k.FLOAT,
        30.0,
        "days a webhook delivery's raw body is kept (0: forever); workers drop older ones hourly, the id stays",
        rule=k.not_below(0, "0 (keep forever) or more"),
    ),
    Setting(
        "REPROBOT_CACHE_MAX_SIZE",
        "cache_max_size",
        "store",
        k.SIZE,
        20 * 1024**3,
        "bytes the built environments and stored baselines may take together; workers remove the least "
        "recently used past it, hourly (0: no limit; an entry used in the last day always stays)",
        rule=k.at_least(0, "0 (no limit) or more"),
        shown="`20G`",
    ),
    Setting(
        "REPROBOT_CACHE_MAX_DAYS",
        "cache_max_days",
        "store",
        k.FLOAT,
        30.0,
        "days an environment or baseline may go unused before workers remove it (0: no age limit)",
        rule=k.not_below(0, "0 (no age limit) or more"),
    ),
)

_ROWS_MODEL = (
    Setting(
        "REPROBOT_LLM_BASE_URL", "llm_base_url", "model", k.TEXT, None, "the OpenAI-compatible endpoint's /v1 base"
    ),
    Setting(
        "REPROBOT_LLM_API_KEY",
        "llm_api_key",
        "model",
        k.TEXT,
        None,
        "sent as the bearer token; never logged, never in a sandbox or a PR",
        secret=True,
    ),
    Setting("REPROBOT_LLM_MODEL", "llm_model", "model", k.TEXT, None, "model (Azure: deployment) name"),
    Setting(
        "REPROBOT_LLM_PRICE_INPUT",
        "llm_price_input",
        "model",
        k.FLOAT,
        0.0,
        "USD per million prompt tokens, for the cost ledger",
    ),
    Setting(
        "REPROBOT_LLM_PRICE_OUTPUT",
        "llm_price_output",
        "model",
        k.FLOAT,
        0.0,
        "USD per million completion tokens, for the cost ledger",
    ),
    Setting(
        "REPROBOT_LLM_MAX_STEPS",
        "llm_max_steps",
        "model",
        k.INT,
        40,
        "tool-using steps per LLM trajectory (the remaining budget is restated every turn)",
    ),
    Setting(
        "REPROBOT_LLM_MAX_TOKENS",
        "llm_max_tokens",
        "model",
        k.INT,
        400_000,
        "prompt + completion tokens per LLM trajectory",
    ),
    Setting(
        "REPROBOT_LLM_MAX_COST",
        "llm_max_cost",
        "model",
        k.FLOAT,
        None,
        "USD per job across trajectories, reviewers and abstention (unset: no cap)",
    ),
    Setting(
        "REPROBOT_LLM_MAX_COST_ISSUE",
        "llm_max_cost_issue",
        "model",
        k.FLOAT,
        None,
        "USD across all jobs of one issue, from the trajectories in the store (unset: no cap)",
    ),
    Setting(
        "REPROBOT_LLM_MAX_COST_DAY",
        "llm_max_cost_day",
        "model",
        k.FLOAT,
        None,
        "USD per UTC day for the whole deployment, from the trajectories in the store (unset: no cap)",
    ),
    Setting(
        "REPROBOT_LLM_TIMEOUT",
        "llm_timeout",
        "model",
        k.FLOAT,
        120.0,
        "seconds before one model call counts as timed out (then retried)",
    ),
)

_ROWS_JIRA_DASHBOARD = (
    Setting(
        "REPROBOT_JIRA_WEBHOOK_SECRET",
        "jira_webhook_secrets",
        "jira",
        k.SITE_SECRETS,
        (),
        "the secret Jira webhooks sign bodies with: one, or one per site as `https://site=secret` pairs",
        secret=True,
    ),
    Setting(
        "REPROBOT_JIRA_ALLOW_UNSIGNED",
        "jira_allow_unsigned",
        "jira",
        k.FLAG,
        False,
        "1 accepts deliveries without X-Hub-Signature for sites with no secret of their own (a Jira that cannot sign; "
        "doctor names them); signed ones, and every one for a site with its own secret, are checked",
    ),
    Setting(
        "REPROBOT_JIRA_MAPPING",
        "jira_mapping",
        "jira",
        k.USER_PATH,
        None,
        "the YAML file mapping (Jira site, project, component) to a repo and policy (read at start and by each job)",
    ),
    Setting(
        "REPROBOT_JIRA_TOKEN",
        "jira_token",
        "jira",
        k.TEXT,
        None,
        "a personal access token (Jira Server / Data Center), sent as a bearer token",
        secret=True,
    ),
    Setting(
        "REPROBOT_JIRA_EMAIL",
        "jira_email",
        "jira",
        k.TEXT,
        None,
        "Jira Cloud basic auth: the bot account's email (with REPROBOT_JIRA_API_TOKEN)",
    ),
    Setting(
        "REPROBOT_JIRA_API_TOKEN",
        "jira_api_token",
        "jira",
        k.TEXT,
        None,
        "Jira Cloud basic auth: an API token (with REPROBOT_JIRA_EMAIL)",
        secret=True,
    ),
    Setting(
        "REPROBOT_JIRA_RETRY_BASE",
        "jira_retry_base",
        "jira",
        k.FLOAT,
        1.0,
        "seconds of the first retry backoff for Jira calls (5xx, 429 honouring Retry-After, connection errors)",
        rule=k.at_least(0, "0 or more seconds"),
    ),
    Setting(
        "REPROBOT_GIT_CREDENTIAL_<NAME>",
        "git_credentials",
        "jira",
        k.CREDENTIAL,
        (),
        "the credential a mapping entry names with `credential: NAME`, for pushing to a plain git URL over HTTPS",
        secret=True,
        shown="unset",
        prefix=True,
    ),
    Setting(
        "REPROBOT_DASHBOARD_TOKEN",
        "dashboard_token",
        "dashboard",
        k.TEXT,
        None,
        "a deployment token that opens the read-only dashboard; unset: only GitHub login opens it",
        secret=True,
    ),
    Setting(
        "REPROBOT_GITHUB_CLIENT_ID",
        "github_client_id",
        "dashboard",
        k.TEXT,
        None,
        "the GitHub App's OAuth client id, for dashboard login (admins of an installation's repository)",
    ),
    Setting(
        "REPROBOT_GITHUB_CLIENT_SECRET",
        "github_client_secret",
        "dashboard",
        k.TEXT,
        None,
        "the GitHub App's OAuth client secret, for dashboard login",
        secret=True,
    ),
    Setting(
        "REPROBOT_GITHUB_WEB_URL",
        "github_web_url",
        "dashboard",
        k.TEXT,
        "https://github.com",
        "GitHub's web origin, where the OAuth authorize and token endpoints live",
    ),
    Setting(
        "REPROBOT_METRICS_PORT",
        "metrics_port",
        "worker",
        k.bounded(int, 0, 65535),
        0,
        "port of /metrics: `reprobot worker` serves its own counters there, `reprobot serve` its /metrics "
        "(then not on its main port, which an Ingress routes)",
        shown="`0` (worker: none; serve: its main port)",
    ),
    Setting(
        "REPROBOT_METRICS_TOKEN",
        "metrics_token",
        "dashboard",
        k.TEXT,
        None,
        "a token `reprobot serve`'s /metrics asks for (`Authorization: Bearer`); unset: anyone who reaches it reads it",
        secret=True,
    ),
)

_ROWS_MOJIRA = (
    Setting(
        "REPROBOT_MOJIRA_API_URL",
        "mojira_api_url",
        "mojira",
        k.URL,
        "https://bugs.mojang.com/api",
        "base of Mojira's public read-only API (the search is POST <base>/jql-search-post)",
    ),
    Setting(
        "REPROBOT_MOJIRA_PROJECT",
        "mojira_project",
        "mojira",
        k.TEXT,
        "MC",
        "the project the search runs in (MC: Java Edition; MCPE, REALMS, MCL, ...)",
    ),
    Setting(
        "REPROBOT_MOJIRA_JQL",
        "mojira_jql",
        "mojira",
        k.TEXT,
        "project = MC",
        "JQL of the reports to follow; the poller adds `updated >= <cursor>` and the order",
    ),
    Setting(
        "REPROBOT_MOJIRA_START",
        "mojira_start",
        "mojira",
        k.TEXT,
        "-1d",
        "where a query that never polled starts: a JQL relative date (-1d, -4h) or a date",
    ),
    Setting(
        "REPROBOT_MOJIRA_PAGE_SIZE",
        "mojira_page_size",
        "mojira",
        k.bounded(int, 1, 100),
        50,
        "maxResults of one search page",
    ),
    Setting(
        "REPROBOT_MOJIRA_MAX_PAGES",
        "mojira_max_pages",
        "mojira",
        k.bounded(int, 1, 10_000),
        20,
        "most pages one poll reads; the next poll goes on from the cursor",
    ),
    Setting(
        "REPROBOT_MOJIRA_OVERLAP_MINUTES",
        "mojira_overlap_minutes",
        "mojira",
        k.bounded(float, 0, 7 * 24 * 60),
        15.0,
        "how far before the cursor a poll asks again (JQL has minute precision); repeats are recognised",
    ),
    Setting(
        "REPROBOT_MOJIRA_POLL_INTERVAL",
        "mojira_poll_interval",
        "mojira",
        k.bounded(float, 0, 7 * 86400),
        0.0,
        "seconds between two polls by `mojira poll` and by a worker (0: workers do not poll; `mojira poll`: 300)",
    ),
    Setting(
        "REPROBOT_MOJIRA_RETRY_BASE",
        "mojira_retry_base",
        "mojira",
        k.bounded(float, 0, 600),
        1.0,
        "seconds of the first retry backoff for Mojira calls (Retry-After wins)",
    ),
    Setting(
        "REPROBOT_MOJIRA_SINK",
        "mojira_sink",
        "mojira",
        k.MOJIRA_SINK,
        "store",
        "where new reports go besides the store: an issue or a comment per report on GitHub, or a Jira issue",
    ),
    Setting(
        "REPROBOT_MOJIRA_CRASH_ATTACHMENT_BYTES",
        "mojira_crash_attachment_bytes",
        "mojira",
        k.bounded(int, 0, 1024**3),
        2 * 1024 * 1024,
        "crash-like attachments up to this size are fetched and parsed",
    ),
)

_ROWS_RUNNER = (
    Setting(
        "REPROBOT_RUNNER_REGISTRATION_TOKEN",
        "runner_registration_token",
        "runner",
        k.TEXT,
        None,
        "the operator's secret a runner exchanges for its own token; the runner names its scope (or `deployment`)",
        secret=True,
        shown="unset (registration refused)",
    ),
    Setting(
        "REPROBOT_RUNNER_ADMIN_TOKEN",
        "runner_admin_token",
        "runner",
        k.TEXT,
        None,
        "the admin credential of the runner API: list and deregister runners, issue scoped registration tokens",
        secret=True,
        shown="unset (runner administration refused)",
    ),
    Setting(
        "REPROBOT_RUNNER_LEASE",
        "runner_lease",
        "runner",
        k.FLOAT,
        60.0,
        "seconds a runner's claim holds a job; renewed every third of it",
        rule=k.positive(_SECONDS),
    ),
    Setting(
        "REPROBOT_RUNNER_HEARTBEAT",
        "runner_heartbeat",
        "runner",
        k.FLOAT,
        30.0,
        "seconds between two heartbeats of an idle runner (sent in the answers)",
        rule=k.positive(_SECONDS),
    ),
    Setting(
        "REPROBOT_RUNNER_CLAIM_WAIT",
        "runner_claim_wait",
        "runner",
        k.FLOAT,
        50.0,
        "longest a claim's long poll waits for a job",
        rule=k.above_up_to(50, "more than 0 and at most 50 seconds"),
    ),
    Setting(
        "REPROBOT_RUNNER_CLAIM_POLL",
        "runner_claim_poll",
        "runner",
        k.FLOAT,
        1.0,
        "seconds between two looks at the queue while a long poll waits (with jitter)",
        rule=k.positive(_SECONDS),
    ),
    Setting(
        "REPROBOT_RUNNER_CANCEL_GRACE",
        "runner_cancel_grace",
        "runner",
        k.FLOAT,
        10.0,
        "seconds a cancelled job gets after SIGTERM before SIGKILL (told to runners)",
        rule=k.not_below(0, "0 or more seconds"),
    ),
    Setting(
        "REPROBOT_RUNNER_STALE",
        "runner_stale",
        "runner",
        k.FLOAT,
        3600.0,
        "runners not heard from for this many seconds are pruned from the list",
        rule=k.positive(_SECONDS),
    ),
    Setting(
        "REPROBOT_RUNNER_MAX_ATTEMPTS",
        "runner_max_attempts",
        "runner",
        k.INT,
        3,
        "claims a runner job gets (a lapsed lease counts) before it is dead",
        rule=k.at_least(1, "at least 1"),
    ),
    Setting(
        "REPROBOT_RUNNER_ARTIFACT_MAX_BYTES",
        "runner_artifact_max_bytes",
        "runner",
        k.INT,
        10 * 1024 * 1024,
        "largest artifact a runner may upload (screenshot, action log)",
    ),
    Setting(
        "REPROBOT_RUNNER_LOG_MAX_BYTES",
        "runner_log_max_bytes",
        "runner",
        k.INT,
        1024 * 1024,
        "most log bytes kept per job; later chunks are refused (413)",
    ),
    Setting(
        "REPROBOT_RUNNER_JOB_ARTIFACTS",
        "runner_job_artifacts",
        "runner",
        k.whole(1),
        64,
        "most artifacts a runner may record for one job; later uploads are refused (413)",
    ),
    Setting(
        "REPROBOT_RUNNER_JOB_ARTIFACT_BYTES",
        "runner_job_artifact_bytes",
        "runner",
        k.SIZE,
        64 * 1024 * 1024,
        "most artifact bytes one job may hold, all its artifacts together; later uploads are refused (413)",
        rule=k.at_least(1, "at least 1 byte"),
        shown="`64M`",
    ),
    Setting(
        "REPROBOT_PUBLIC_URL",
        "public_url",
        "runner",
        k.TEXT,
        None,
        "the bot's address as readers see it: artifact links in comments (unset: relative), the link to the "
        "job's dashboard page in PR bodies and comments (unset: none), the dashboard's GitHub login callback and "
        "the origin its forms must come from",
    ),
    Setting(
        "REPROBOT_RUNNER_TOKEN",
        "runner_token",
        "runner",
        k.TEXT,
        None,
        "on a runner machine: the registration token `reprobot runner` registers with when --token is not given",
        secret=True,
    ),
    Setting(
        "REPROBOT_RUNNER_CACHE",
        "runner_cache",
        "runner",
        k.PATH,
        None,
        "set by a runner for its job's child process: the cache folder kept across jobs (not set by hand)",
    ),
)

_ROWS_GAME = (
    Setting(
        "REPROBOT_GAME_DISPLAY",
        "game_display",
        "game",
        k.TEXT,
        None,
        "an X display (:99) the Minetest client shares; unset: each session starts its own Xvfb",
    ),
    Setting(
        "REPROBOT_GAME_MODEL_TURNS",
        "game_model_turns",
        "game",
        k.whole(1),
        8,
        "most turns of the model-driven action loop per reproduction",
    ),
    Setting(
        "REPROBOT_GAME_CONTEXT_TURNS",
        "game_context_turns",
        "game",
        k.whole(0),
        3,
        "how many past turns (reply + outcome) stay in the model's context",
    ),
    Setting(
        "REPROBOT_GAME_MODEL_IMAGES",
        "game_model_images",
        "game",
        k.SWITCH,
        False,
        "send the screenshot as an image part (for models that accept images)",
    ),
    Setting(
        "REPROBOT_MOJIRA_RUNNER_LABELS",
        "mojira_runner_labels",
        "mojira",
        k.LABELS,
        (),
        "when set, routed Mojira reports are queued as reproduce.game jobs for runners with these labels (and "
        "`--scope deployment`: the reports are the deployment's own)",
    ),
    Setting(
        "REPROBOT_MINECRAFT_DIR",
        "minecraft_dir",
        "game",
        k.USER_PATH,
        None,
        "the Minecraft game folder (crash-reports/, logs/latest.log); unset: no Minecraft on this machine",
    ),
    Setting(
        "REPROBOT_MINECRAFT_RCON",
        "minecraft_rcon",
        "game",
        k.HOST_PORT,
        None,
        "host:port of the Minecraft server's RCON for commands (unset: commands are typed in the client)",
    ),
    Setting(
        "REPROBOT_MINECRAFT_RCON_PASSWORD",
        "minecraft_rcon_password",
        "game",
        k.TEXT,
        None,
        "the RCON password",
        secret=True,
    ),
    Setting(
        "REPROBOT_DATABASE_URL",
        "database_url",
        "store",
        k.DATABASE_URL,
        None,
        "postgresql://user@host:port/db moves the store and the queue to PostgreSQL (unset: SQLite in the data dir)",
    ),
    Setting(
        "REPROBOT_ACK_CONNECTIONS",
        "ack_connections",
        "store",
        k.INT,
        1,
        "PostgreSQL: webhook ack batches one server process commits at once, each on its own connection; "
        "while they commit the next batch gathers (more helps only when the database has cores of its own)",
        rule=k.at_least(1, "at least 1"),
    ),
)

#: Every setting, in the order they are parsed (and Settings' field order).
ROWS: tuple[Setting, ...] = (
    *_ROWS_STORE_SANDBOX_SEARCH,
    *_ROWS_JOBS,
    *_ROWS_GITHUB_WORKER,
    *_ROWS_MODEL,
    *_ROWS_JIRA_DASHBOARD,
    *_ROWS_MOJIRA,
    *_ROWS_RUNNER,
    *_ROWS_GAME,
)

#: Rules over several settings, checked in this order after every row's own rule.
CROSS_CHECKS: tuple[CrossCheck, ...] = (
    CrossCheck(
        ("REPROBOT_MAX_TRAJECTORIES", "REPROBOT_TRAJECTORIES"),
        "REPROBOT_MAX_TRAJECTORIES must be at least REPROBOT_TRAJECTORIES",
        lambda s: s.max_trajectories >= s.trajectories,
    ),
    CrossCheck(
        ("REPROBOT_TEST_TIMEOUT", "REPROBOT_MAX_TEST_TIMEOUT"),
        "REPROBOT_TEST_TIMEOUT must be more than 0 and at most REPROBOT_MAX_TEST_TIMEOUT",
        lambda s: 0 < s.test_timeout <= s.max_test_timeout,
    ),
    CrossCheck(
        ("REPROBOT_WEBHOOK_INFLIGHT_BYTES", "REPROBOT_WEBHOOK_MAX_BYTES"),
        "REPROBOT_WEBHOOK_INFLIGHT_BYTES must be at least REPROBOT_WEBHOOK_MAX_BYTES (>= 1)",
        lambda s: not (s.webhook_max_bytes < 1 or s.webhook_inflight_bytes < s.webhook_max_bytes),
    ),
    CrossCheck(
        ("REPROBOT_JIRA_EMAIL", "REPROBOT_JIRA_API_TOKEN"),
        "REPROBOT_JIRA_EMAIL and REPROBOT_JIRA_API_TOKEN go together (Jira Cloud basic auth)",
        lambda s: (s.jira_email is None) == (s.jira_api_token is None),
    ),
    CrossCheck(
        ("REPROBOT_RUNNER_ARTIFACT_MAX_BYTES", "REPROBOT_RUNNER_LOG_MAX_BYTES"),
        "REPROBOT_RUNNER_ARTIFACT_MAX_BYTES and REPROBOT_RUNNER_LOG_MAX_BYTES must be positive",
        lambda s: s.runner_artifact_max_bytes >= 1 and s.runner_log_max_bytes >= 1,
    ),
    CrossCheck(
        ("REPROBOT_RUNNER_ADMIN_TOKEN", "REPROBOT_RUNNER_REGISTRATION_TOKEN"),
        "REPROBOT_RUNNER_ADMIN_TOKEN must differ from REPROBOT_RUNNER_REGISTRATION_TOKEN (runner machines hold the "
        "registration token; the admin token lists and removes every runner)",
        lambda s: not s.runner_admin_token or s.runner_admin_token != s.runner_registration_token,
    ),
)


def format_value(value: Any) -> str:
    """A setting's value as text: `unset`, a number without a trailing .0, 1/0 for a switch, a comma list."""
    if value is None or value == ():
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def row_for(env: str) -> Setting:
    """The row of variable `env` (KeyError when there is none)."""
    for row in ROWS:
        if row.env == env:
            return row
    raise KeyError(env)


def default_of(field: str) -> Any:
    """The default of Settings field `field`, from its first row (Settings declares its fields with this).

    A default built by a factory (the data dir) is None here: Settings calls the factory per instance.
    """
    return next(r for r in ROWS if r.field == field).default


def read_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """The fields whose variables are set in `environ`, parsed; SettingsError names the first bad variable."""
    values: dict[str, Any] = {}
    for row in ROWS:
        if row.field in values:
            continue  # an earlier row of this field was set, and wins
        value = row.read(environ)
        if value is not None:
            values[row.field] = value
    return values


def check(settings: Any) -> None:
    """Each row's rule on its field's value (unset optional values pass), then the cross checks, in order."""
    for row in ROWS:
        value = getattr(settings, row.field)
        if row.rule is not None and value is not None and not row.rule.ok(value):
            raise SettingsError(f"{row.env} must be {row.rule.text}")
    for cross in CROSS_CHECKS:
        if not cross.ok(settings):
            raise SettingsError(cross.message)

"""`reprobot doctor`'s checks: the store engine, chromium, the docker base image, bwrap, disk space, the model.

Each check says ok, warn or fail with a readable detail; `doctor` prints them as a table (JSON with --json).
A fail is something the bot cannot work without here; a warn is something a feature lacks.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.settings.config import Settings
from bot.store import LATEST_VERSION

#: Free bytes in the data dir below which doctor warns / fails (environments and workspaces live there).
DISK_WARN_BYTES = 5 * 1024**3
DISK_FAIL_BYTES = 1 * 1024**3
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table."""

    name: str
    status: str  # ok | warn | fail
    detail: str


def check_engine(settings: Settings) -> Check:
    """The store: reachable (read-only: doctor creates nothing) and its schema version, SQLite or PostgreSQL."""
    if settings.database_url:
        return check_postgres(settings.database_url)
    path = settings.store_path
    if not path.exists():
        return Check("engine", "ok", f"sqlite: {path} not created yet (the first serve or worker creates it)")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Check("engine", "fail", f"sqlite: {path} cannot be read: {exc}")
    if version > LATEST_VERSION:
        return Check("engine", "fail", f"sqlite: schema {version} is newer than this reprobot ({LATEST_VERSION})")
    if version < LATEST_VERSION:
        return Check("engine", "ok", f"sqlite: schema {version}, migrated to {LATEST_VERSION} on next open")
    return Check("engine", "ok", f"sqlite: {path}, schema {version} (current)")


def check_postgres(url: str) -> Check:
    """The PostgreSQL store at `url`: reachable, and its schema version (read-only)."""
    from bot.store.pg import read_schema_version, redact

    where = redact(url)
    try:
        version = read_schema_version(url)
    except sqlite3.Error as exc:
        return Check("engine", "fail", f"postgresql: {where} unreachable: {exc}")
    if version is None:
        return Check("engine", "ok", f"postgresql: {where} reachable, schema not created yet (first open creates it)")
    if version > LATEST_VERSION:
        return Check("engine", "fail", f"postgresql: schema {version} is newer than this reprobot ({LATEST_VERSION})")
    if version < LATEST_VERSION:
        return Check("engine", "ok", f"postgresql: schema {version}, migrated to {LATEST_VERSION} on next open")
    return Check("engine", "ok", f"postgresql: {where}, schema {version} (current)")


async def check_chromium() -> Check:
    """Debian's chromium (app reproduction, dashboard tests): present and answering --version."""
    from sandboxes.hostrun import run_host

    found = next((p for p in CHROMIUM_PATHS if Path(p).exists()), None) or shutil.which("chromium")
    if found is None:
        return Check("chromium", "warn", "not installed (apt-get install chromium): no app reproduction")
    run = await run_host([found, "--version"], timeout=30)
    if run.code != 0:
        return Check("chromium", "warn", f"{found} --version failed: {run.stdout.strip()[:200]}")
    return Check("chromium", "ok", f"{run.stdout.strip().splitlines()[-1][:120]} at {found}")


def check_base_image(settings: Settings) -> Check:
    """The docker backend's base image (built by `reprobot sandbox build-base`)."""
    from sandboxes.baseimage import image_exists, image_tag
    from sandboxes.factory import available_backends

    tag = image_tag()
    problem = available_backends()["docker"]
    if problem is not None:
        level = "fail" if settings.sandbox == "docker" else "warn"
        return Check("docker base image", level, f"{tag}: docker backend unavailable: {problem}")
    if not image_exists(tag):
        level = "fail" if settings.sandbox == "docker" else "warn"
        return Check("docker base image", level, f"{tag} not built (reprobot sandbox build-base)")
    return Check("docker base image", "ok", tag)


def check_bwrap(settings: Settings) -> Check:
    """bubblewrap, the default sandbox."""
    from sandboxes.factory import available_backends

    problem = available_backends()["bwrap"]
    if problem is None:
        return Check("bwrap", "ok", f"available ({shutil.which('bwrap') or 'bwrap'})")
    return Check("bwrap", "fail" if settings.sandbox == "bwrap" else "warn", problem)


def check_disk(settings: Settings) -> Check:
    """Free space where the data dir is (or would be)."""
    where = settings.data_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    detail = f"{free / 1024**3:.1f} GiB free at {where}"
    if free < DISK_FAIL_BYTES:
        return Check("disk space", "fail", detail)
    return Check("disk space", "warn" if free < DISK_WARN_BYTES else "ok", detail)


async def check_model(settings: Settings) -> Check:
    """The model endpoint: lists its models through the openai SDK, and the configured one is served."""
    if not settings.llm_configured:
        return Check("model endpoint", "ok", "not configured: the classic agent runs without a model")
    import openai

    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url, api_key=settings.llm_api_key or "unset", timeout=10.0, max_retries=0
    )
    try:
        ids = [m.id async for m in client.models.list()]
    except openai.OpenAIError as exc:
        # The error names the endpoint, never the key.
        return Check("model endpoint", "fail", f"{settings.llm_base_url}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        await client.close()
    if settings.llm_model not in ids:
        return Check(
            "model endpoint", "warn", f"{settings.llm_base_url} answers, but does not list {settings.llm_model}"
        )
    return Check("model endpoint", "ok", f"{settings.llm_base_url} serves {settings.llm_model}")


async def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the table's order."""
    blocking = await asyncio.gather(
        asyncio.to_thread(check_engine, settings),
        asyncio.to_thread(check_base_image, settings),
        asyncio.to_thread(check_bwrap, settings),
        asyncio.to_thread(check_disk, settings),
    )
    engine, image, bwrap, disk = blocking
    chromium, model = await asyncio.gather(check_chromium(), check_model(settings))
    return [engine, chromium, image, bwrap, disk, model]


def exposure_warnings(settings: Settings) -> list[str]:
    """What the web server shows to whom, where a setting leaves more open than it should (dashboard, /metrics)."""
    from bot.dashboard.guard import public_origin

    warnings: list[str] = []
    if settings.github_client_id and settings.github_client_secret and public_origin(settings) is None:
        warnings.append(
            "REPROBOT_GITHUB_CLIENT_ID is set but REPROBOT_PUBLIC_URL is not an http(s) URL: GitHub login to the "
            "dashboard is off (its OAuth callback is built from the public URL, never from a request's Host)"
        )
    serves = settings.github_webhook_secret or settings.jira_webhook_secrets or settings.dashboard_token
    if (serves or settings.github_client_id) and not settings.metrics_port and not settings.metrics_token:
        warnings.append(
            "`reprobot serve` answers /metrics on its main port to anyone who reaches it: set REPROBOT_METRICS_PORT "
            "(a port no Ingress routes) or REPROBOT_METRICS_TOKEN (a bearer token the scraper sends)"
        )
    return warnings


def runner_facts(settings: Settings) -> dict[str, str]:
    """What the runner protocol lets runners and their admin do here, and the quotas a runner's job lives under."""
    s = settings
    registration = (
        "open to the registration token (each runner names its scope) and to scoped registration tokens"
        if s.runner_registration_token
        else "scoped registration tokens only (REPROBOT_RUNNER_REGISTRATION_TOKEN is not set)"
    )
    admin = (
        "on (REPROBOT_RUNNER_ADMIN_TOKEN)" if s.runner_admin_token else "off (REPROBOT_RUNNER_ADMIN_TOKEN is not set)"
    )
    return {
        "registration": registration,
        "administration": admin,
        "artifacts per job": f"at most {s.runner_job_artifacts}, {s.runner_job_artifact_bytes} bytes together, "
        f"{s.runner_artifact_max_bytes} bytes each (413 past that)",
        "log per job": f"at most {s.runner_log_max_bytes} bytes (413 past that)",
    }


def runner_warnings(settings: Settings) -> list[str]:
    """Runner settings that work but leave the operator without a tool."""
    if settings.runner_registration_token and not settings.runner_admin_token:
        return [
            "REPROBOT_RUNNER_REGISTRATION_TOKEN is set but REPROBOT_RUNNER_ADMIN_TOKEN is not: runners can register, "
            "but nobody can list or remove them (the registration token no longer does)"
        ]
    return []


def checks_json(checks: list[Check]) -> list[dict[str, Any]]:
    """The checks for --json."""
    return [asdict(c) for c in checks]


def render_table(checks: list[Check], facts: dict[str, Any], console: Console) -> None:
    """The checks as a table, then the other facts of the report as name: value lines."""
    table = Table(title="reprobot doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    colour = {"ok": "green", "warn": "yellow", "fail": "red"}
    for c in checks:
        table.add_row(c.name, f"[{colour.get(c.status, 'white')}]{c.status}[/]", c.detail)
    console.print(table)
    for key, value in facts.items():
        if key != "checks":
            console.print(f"{key}: {value}", markup=False, highlight=False)

"""`reprobot doctor`'s GitHub App checks: the private key parses, the webhook secret is set, GitHub knows the App id.

Offline unless the App is configured: with an id and a readable key, doctor signs a JWT and calls `GET /app`,
as every job would, so a wrong id or a revoked key shows here instead of in the first job. Each problem is its
own check, by name: `github app key`, `github webhook secret`, `github app id`.
"""

from __future__ import annotations

import asyncio

import aiohttp

from bot.cli.checks import Check
from bot.settings.config import Settings

KEY, SECRET, APP_ID = "github app key", "github webhook secret", "github app id"
NAMES = (KEY, SECRET, APP_ID)
#: Seconds doctor waits for `GET /app`.
API_TIMEOUT = 15.0
_OFF = "not configured: no GitHub App (the command line needs none)"


def _configured(settings: Settings) -> bool:
    """Any of the App's credentials set: the deployment means to run the App, so each must be right."""
    return bool(settings.github_app_id or settings.github_private_key or settings.github_webhook_secret)


def check_key(settings: Settings) -> tuple[Check, str | None]:
    """The private key parses (any accepted form); returns the check and the PEM when it does."""
    from bot.forges.github_client import GitHubConfigError, load_private_key

    if not settings.github_private_key:
        if not _configured(settings):
            return Check(KEY, "ok", _OFF), None
        return Check(KEY, "fail", "REPROBOT_GITHUB_PRIVATE_KEY(_PATH) is not set: no job can reach GitHub"), None
    try:
        pem = load_private_key(settings.github_private_key, "REPROBOT_GITHUB_PRIVATE_KEY(_PATH)")
    except GitHubConfigError as exc:
        return Check(KEY, "fail", f"{exc}: `reprobot worker` refuses to start with it"), None
    return Check(KEY, "ok", "an RSA private key, read"), pem


def check_secret(settings: Settings) -> Check:
    """The webhook secret is set (without it `reprobot serve` answers every delivery 401)."""
    if settings.github_webhook_secret:
        return Check(SECRET, "ok", "set")
    if not _configured(settings):
        return Check(SECRET, "ok", _OFF)
    return Check(
        SECRET, "fail", "REPROBOT_GITHUB_WEBHOOK_SECRET is not set: `reprobot serve` answers every delivery 401"
    )


async def check_app_id(settings: Settings, pem: str | None) -> Check:
    """`GET /app` with a JWT for REPROBOT_GITHUB_APP_ID signed by the key: GitHub says which App that is."""
    from gidgethub import BadRequest, GitHubException

    from bot.forges.app_manifest import manifest
    from bot.forges.github_client import authenticated_app

    if not settings.github_app_id:
        if not _configured(settings):
            return Check(APP_ID, "ok", _OFF)
        return Check(APP_ID, "fail", "REPROBOT_GITHUB_APP_ID is not set")
    if pem is None:
        return Check(APP_ID, "warn", f"{settings.github_app_id} not checked with GitHub: no readable private key")
    where = settings.github_api_url
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=API_TIMEOUT)) as session:
            app = await authenticated_app(session, settings, pem)
    except BadRequest as exc:
        if exc.status_code == 401:
            return Check(
                APP_ID,
                "fail",
                f"GitHub ({where}) refused the JWT for App id {settings.github_app_id}: that id is not the App "
                "this private key belongs to (or the key was deleted from the App)",
            )
        return Check(APP_ID, "fail", f"GET {where}/app answered {exc.status_code}: {exc}")
    except (GitHubException, aiohttp.ClientError, TimeoutError) as exc:
        return Check(APP_ID, "fail", f"GET {where}/app failed: {type(exc).__name__}: {str(exc)[:200]}")
    if str(app.get("id")) != str(settings.github_app_id):
        return Check(APP_ID, "fail", f"GitHub says the key's App is {app.get('id')}, not {settings.github_app_id}")
    granted = app.get("permissions") or {}
    wanted = manifest()["default_permissions"]
    missing = sorted(p for p, level in wanted.items() if granted.get(p) not in (level, "write", "admin"))
    detail = f"{settings.github_app_id}: the App {app.get('name', '')!r} ({app.get('html_url', where)})"
    if missing:
        lacking = ", ".join(missing)
        return Check(APP_ID, "warn", f"{detail} lacks the permissions {lacking} (see `reprobot app manifest`)")
    return Check(APP_ID, "ok", detail)


async def github_app_checks(settings: Settings) -> list[Check]:
    """The three checks, in this order: key, webhook secret, App id."""
    key, pem = await asyncio.to_thread(check_key, settings)
    return [key, check_secret(settings), await check_app_id(settings, pem)]

"""Dashboard login: signed session cookies (pure), and GitHub OAuth limited to admins of the App's repositories.

Two ways in: the deployment token (REPROBOT_DASHBOARD_TOKEN), which sees every repository, or GitHub's web
flow with the App's OAuth client, which lets in a user who administers at least one repository of one of the
App's installations, and shows that user only those repositories (and the runners that serve those
installations). The OAuth callback is REPROBOT_PUBLIC_URL's, never the request's Host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from gidgethub import GitHubException

from bot.dashboard.guard import public_origin
from bot.forges.github_client import client
from bot.settings.config import Settings

log = logging.getLogger(__name__)

SESSION_COOKIE = "reprobot_session"
STATE_COOKIE = "reprobot_oauth_state"
#: A session lasts a working day; then the user logs in again (and GitHub admin rights are checked again).
SESSION_SECONDS = 8 * 3600


class LoginError(Exception):
    """The login could not be completed; the message is safe to show to the user."""


@dataclass(frozen=True)
class Viewer:
    """Who is looking: `repos` None means every repository (the deployment token).

    `installations` are the App's installations in which a GitHub viewer administers a repository: the scope
    of the runners they may see.
    """

    login: str
    via: str
    repos: tuple[str, ...] | None
    installations: tuple[int, ...] = ()

    def may_see(self, repo: str | None) -> bool:
        """True when this viewer may see a job of `repo` (a job without an issue: token viewers only)."""
        return self.repos is None or (repo is not None and repo in self.repos)

    def may_see_installations(self, installations: Iterable[int] | None) -> bool:
        """True when this viewer may see something serving `installations` (None: the whole deployment).

        The deployment token sees everything; a GitHub viewer sees what serves one of their installations,
        never what serves the whole deployment or nothing they are part of.
        """
        if self.repos is None:
            return True
        return installations is not None and not set(installations).isdisjoint(self.installations)


def session_key(settings: Settings) -> bytes | None:
    """The HMAC key of session cookies, derived from the login secrets (None: no login is configured).

    Derived rather than random so that every web replica accepts the others' cookies.
    """
    secret = settings.github_client_secret or settings.dashboard_token
    if not secret:
        return None
    return hashlib.sha256(b"reprobot-dashboard-session\0" + secret.encode()).digest()


def sign(key: bytes, data: dict[str, Any]) -> str:
    """A cookie value carrying `data`, signed with `key`."""
    body = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def unsign(key: bytes, value: str) -> dict[str, Any] | None:
    """The data of a cookie made by `sign` with `key`, or None when it is malformed or forged."""
    body, _, mac = value.rpartition(".")
    if not body or not hmac.compare_digest(mac, hmac.new(key, body.encode(), hashlib.sha256).hexdigest()):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def session_data(viewer: Viewer, now: float) -> dict[str, Any]:
    """What the session cookie keeps of a viewer, with its expiry."""
    repos = None if viewer.repos is None else list(viewer.repos)
    data = {"login": viewer.login, "via": viewer.via, "repos": repos, "exp": now + SESSION_SECONDS}
    return data | {"installations": list(viewer.installations)}


def viewer_from_session(key: bytes | None, value: str | None, now: float) -> Viewer | None:
    """The viewer of a session cookie, or None when there is none, it is forged, or it has expired."""
    if key is None or not value:
        return None
    data = unsign(key, value)
    if data is None or not isinstance(data.get("exp"), int | float) or data["exp"] < now:
        return None
    repos = data.get("repos")
    # A cookie from before installations were kept has none: its viewer sees no runner until they log in again.
    installations = tuple(int(i) for i in data.get("installations") or () if isinstance(i, int))
    login, via = str(data.get("login", "")), str(data.get("via", ""))
    return Viewer(login, via, None if repos is None else tuple(repos), installations)


def token_matches(settings: Settings, given: str) -> bool:
    """True when `given` is the deployment token (compared in constant time)."""
    token = settings.dashboard_token
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())  # type: ignore[union-attr]


def oauth_configured(settings: Settings) -> bool:
    """True when GitHub login can be offered: the OAuth client, and the public URL its callback is built from."""
    return bool(settings.github_client_id and settings.github_client_secret and public_origin(settings))


def authorize_url(settings: Settings, redirect_uri: str, state: str) -> str:
    """GitHub's authorize page for the App's OAuth client (a GitHub App needs no scopes)."""
    query = urlencode({"client_id": settings.github_client_id, "redirect_uri": redirect_uri, "state": state})
    return f"{settings.github_web_url.rstrip('/')}/login/oauth/authorize?{query}"


async def exchange_code(session: aiohttp.ClientSession, settings: Settings, code: str, redirect_uri: str) -> str:
    """Trade the callback's code for a user access token (GitHub answers errors with 200 and an `error`)."""
    url = f"{settings.github_web_url.rstrip('/')}/login/oauth/access_token"
    form = {
        "client_id": settings.github_client_id or "",
        "client_secret": settings.github_client_secret or "",
        "code": code,
        "redirect_uri": redirect_uri,
    }
    try:
        async with session.post(url, data=form, headers={"Accept": "application/json"}) as resp:
            data = await resp.json(content_type=None)
            status = resp.status
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise LoginError(f"GitHub's token endpoint could not be reached: {type(exc).__name__}") from exc
    if status != 200 or not isinstance(data, dict) or not data.get("access_token"):
        error = data.get("error_description") or data.get("error") if isinstance(data, dict) else None
        raise LoginError(f"GitHub refused the login: {error or f'HTTP {status}'}")
    return str(data["access_token"])


async def admin_viewer(
    session: aiohttp.ClientSession, settings: Settings, token: str, installations: Iterable[int]
) -> Viewer:
    """The user of `token`, with the repositories of the App's installations they administer.

    Raises LoginError when they administer none: nobody else may see the jobs.
    """
    gh = client(session, settings, token, retry_base=0.0)
    try:
        user = await gh.getitem("/user")
    except GitHubException as exc:
        raise LoginError(f"GitHub did not say who you are: {exc}") from exc
    login = str(user.get("login", ""))
    repos: list[str] = []
    administered: list[int] = []
    for installation in installations:
        try:
            async for repo in gh.getiter(
                f"/user/installations/{int(installation)}/repositories", iterable_key="repositories"
            ):
                if (repo.get("permissions") or {}).get("admin"):
                    repos.append(str(repo["full_name"]))
                    administered.append(int(installation))
        except GitHubException as exc:  # 403/404: this user cannot see that installation
            log.info("dashboard login %s: installation %s not accessible: %s", login, installation, exc)
    if not repos:
        raise LoginError(f"{login or 'this account'} administers no repository the app is installed on")
    return Viewer(login, "github", tuple(sorted(set(repos))), tuple(sorted(set(administered))))

"""GitHub App auth (JWT → cached installation token) and the gidgethub client with the one retry policy."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime

import aiohttp
from gidgethub import apps
from gidgethub.aiohttp import GitHubAPI

from bot.retry import RetryableHTTPError, classify_response, http_retrying
from bot.settings.config import Settings

log = logging.getLogger(__name__)

USER_AGENT = "reprobot"
#: Refresh an installation token this many seconds before GitHub says it expires.
REFRESH_MARGIN = 300.0


class GitHubConfigError(RuntimeError):
    """The GitHub App is not configured (app id or private key missing)."""


class RetryingGitHubAPI(GitHubAPI):
    """gidgethub's aiohttp client whose every request goes through the retry policy in bot.retry."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *args: object,
        retry_attempts: int = 5,
        retry_base: float = 1.0,
        **kw: object,
    ) -> None:
        super().__init__(session, *args, **kw)
        self.retry_attempts = retry_attempts
        self.retry_base = retry_base

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        last: tuple[int, Mapping[str, str], bytes] | None = None
        try:
            async for attempt in http_retrying(self.retry_attempts, self.retry_base):
                with attempt:
                    last = await super()._request(method, url, headers, body)
                    error = classify_response(*last)
                    if error is not None:
                        log.warning("GitHub %s %s answered %s; retrying", method, url.split("?")[0], last[0])
                        raise error
        except RetryableHTTPError:
            log.warning("GitHub %s %s: giving up after %d attempts", method, url.split("?")[0], self.retry_attempts)
        assert last is not None  # at least one attempt ran
        return last


def _parse_expiry(text: str | None, now: float) -> float:
    if not text:
        return now + 3600.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class InstallationTokens:
    """Mints installation tokens from the App's JWT and caches each until shortly before it expires."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        if not settings.github_app_id or not settings.github_private_key:
            raise GitHubConfigError(
                "the GitHub App needs REPROBOT_GITHUB_APP_ID and REPROBOT_GITHUB_PRIVATE_KEY(_PATH)"
            )
        self.settings = settings
        self.clock = clock
        self._cache: dict[int, tuple[str, float]] = {}
        self._lock = asyncio.Lock()

    async def token(self, session: aiohttp.ClientSession, installation_id: int) -> str:
        """A valid installation token, minted only when the cached one is missing or about to expire."""
        async with self._lock:
            cached = self._cache.get(installation_id)
            if cached is not None and cached[1] - REFRESH_MARGIN > self.clock():
                return cached[0]
            gh = client(session, self.settings)
            assert self.settings.github_app_id and self.settings.github_private_key
            data = await apps.get_installation_access_token(
                gh,
                installation_id=str(installation_id),
                app_id=self.settings.github_app_id,
                private_key=self.settings.github_private_key,
            )
            token = str(data["token"])
            self._cache[installation_id] = (token, _parse_expiry(data.get("expires_at"), self.clock()))
            return token


def client(
    session: aiohttp.ClientSession, settings: Settings, token: str | None = None, *, retry_base: float | None = None
) -> RetryingGitHubAPI:
    """One gidgethub client (per job), pointed at REPROBOT_GITHUB_API_URL, with the retry policy."""
    return RetryingGitHubAPI(
        session,
        USER_AGENT,
        oauth_token=token,
        base_url=settings.github_api_url,
        retry_base=settings.github_retry_base if retry_base is None else retry_base,
    )

"""GitHub App auth (JWT → cached installation token) and the gidgethub client with the one retry policy."""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

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
    """The GitHub App is not configured (app id or private key missing, or a key that cannot be read)."""


_PEM_START = "-----BEGIN "
#: The longest text taken as a file path (a PEM or its base64 is longer).
_MAX_PATH = 4096


def load_private_key(text: str, source: str = "REPROBOT_GITHUB_PRIVATE_KEY") -> str:
    """The App's private key as PEM text, from any of the forms a deployment may hold it in.

    Accepted: PEM text; PEM on one line with literal `\\n` escapes (env files, CI secrets); the base64 of a
    PEM (what `reprobot app setup` writes); a path to a PEM file. The key is parsed here, once, so that a
    bad one stops the process at start instead of failing every job. Errors name `source`, never the key.
    """
    pem = _as_pem(text.strip(), source)
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        # TypeError: an encrypted key (GitHub's are not); ValueError: not a key cryptography can read.
        raise GitHubConfigError(f"{source} is not a readable PEM private key ({type(exc).__name__})") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise GitHubConfigError(f"{source} is not an RSA key (GitHub App keys are RSA; RS256 signs the JWT)")
    return pem


def _as_pem(text: str, source: str, *, may_be_path: bool = True) -> str:
    """PEM text from one of the accepted forms (not yet parsed)."""
    if _PEM_START in text:
        return _rewrap(text)
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        decoded = ""
    if _PEM_START in decoded:
        return _rewrap(decoded)
    if may_be_path and text and len(text) < _MAX_PATH and "\n" not in text:
        path = Path(text).expanduser()
        try:
            content = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise GitHubConfigError(
                f"{source} is neither PEM text (real or \\n-escaped newlines), the base64 of a PEM, "
                f"nor a readable key file ({type(exc).__name__})"
            ) from None
        return _as_pem(content.strip(), f"{source} (file {path})", may_be_path=False)
    raise GitHubConfigError(
        f"{source} is neither PEM text (real or \\n-escaped newlines), the base64 of a PEM, nor a key file path"
    )


def _rewrap(text: str) -> str:
    """PEM with its lines restored: literal `\\n` escapes, or newlines a paste turned into spaces, become lines."""
    text = text.replace("\\r\\n", "\n").replace("\\n", "\n")
    match = re.search(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", text, re.DOTALL)
    if match is None:
        return text.strip() + "\n"
    label, body = match.group(1), "".join(match.group(2).split())
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]) + "\n"


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
        """Check the App's id and key now; GitHubConfigError names what is missing or unreadable."""
        if not settings.github_app_id or not settings.github_private_key:
            raise GitHubConfigError(
                "the GitHub App needs REPROBOT_GITHUB_APP_ID and REPROBOT_GITHUB_PRIVATE_KEY(_PATH)"
            )
        self.settings = settings
        #: The key as PEM, parsed at construction (a worker with an unreadable key does not start).
        self.private_key = load_private_key(settings.github_private_key, "REPROBOT_GITHUB_PRIVATE_KEY(_PATH)")
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
            assert self.settings.github_app_id
            data = await apps.get_installation_access_token(
                gh,
                installation_id=str(installation_id),
                app_id=self.settings.github_app_id,
                private_key=self.private_key,
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


async def authenticated_app(session: aiohttp.ClientSession, settings: Settings, private_key: str) -> dict[str, Any]:
    """`GET /app` with a JWT signed by `private_key` for REPROBOT_GITHUB_APP_ID: the App GitHub says that is.

    gidgethub.BadRequest (401) when GitHub refuses the JWT: the id is not the App this key belongs to.
    """
    assert settings.github_app_id
    jwt = apps.get_jwt(app_id=settings.github_app_id, private_key=private_key)
    gh = RetryingGitHubAPI(session, USER_AGENT, base_url=settings.github_api_url, retry_attempts=2, retry_base=0.5)
    data = await gh.getitem("/app", jwt=jwt)
    return dict(data)

"""The one I/O point to Mojira: the public read-only search (and crash-like attachments), over httpx, retried."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import httpx
from tenacity import AsyncRetrying

from bot.mojira.fields import Attachment, parse_search_response, search_body
from bot.retry import RetryableHTTPError, classify_response, retry_policy

log = logging.getLogger(__name__)

USER_AGENT = "reprobot-mojira-poller (+https://github.com/reprobot)"


class MojiraError(RuntimeError):
    """Mojira answered with a final error (a 4xx other than 429, or retries exhausted); the message says which."""


class MojiraSearch(Protocol):
    """What the poller needs of Mojira: one search page, and an attachment's text."""

    async def search(self, project: str, jql: str, start_at: int, max_results: int) -> dict[str, Any]:
        """One page of the JQL search."""
        ...

    async def attachment_text(self, attachment: Attachment, max_bytes: int) -> str | None:
        """The attachment's text, or None when it is too large or cannot be fetched."""
        ...


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, RetryableHTTPError | httpx.TransportError)


def _hint(exc: BaseException) -> float | None:
    return exc.wait if isinstance(exc, RetryableHTTPError) else None


class MojiraClient:
    """httpx client for `POST <base>/jql-search-post`; 5xx, 429 and transport errors are retried (Retry-After)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        *,
        attempts: int = 5,
        retry_base: float = 1.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        """Use `http` (owned by the caller) against `base_url` (REPROBOT_MOJIRA_API_URL); `sleep` waits retries."""
        self.http = http
        self.sleep = sleep
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.retry_base = retry_base
        #: Responses that asked us to wait (429/503 with Retry-After), for logs and tests.
        self.throttled = 0

    def _retrying(self) -> AsyncRetrying:
        return retry_policy(
            AsyncRetrying,
            retry_on=_retryable,
            hint=_hint,
            attempts=self.attempts,
            base=self.retry_base,
            sleep=self.sleep,
        )

    async def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        try:
            async for attempt in self._retrying():
                with attempt:
                    response = await self.http.request(method, url, headers={"User-Agent": USER_AGENT}, **kw)
                    error = classify_response(response.status_code, response.headers, response.content)
                    if error is not None:
                        if error.wait is not None:
                            self.throttled += 1
                        log.warning("Mojira %s %s answered %s; retrying", method, url, response.status_code)
                        raise error
                    return response
        except RetryableHTTPError as exc:
            raise MojiraError(f"Mojira {method} {url}: {exc} after {self.attempts} attempts") from exc
        except httpx.TransportError as exc:
            raise MojiraError(f"Mojira {method} {url}: {type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable: the retry policy re-raises")  # pragma: no cover

    async def search(self, project: str, jql: str, start_at: int, max_results: int) -> dict[str, Any]:
        """One page of the JQL search; MojiraError on a final error or a body that is not the search's shape."""
        url = f"{self.base_url}/jql-search-post"
        response = await self._send("POST", url, json=search_body(project, jql, start_at, max_results))
        if response.status_code != 200:
            raise MojiraError(f"Mojira search answered {response.status_code}: {response.text[:300]}")
        try:
            data = response.json()
        except ValueError as exc:
            raise MojiraError(f"Mojira search answered with a body that is not JSON: {exc}") from exc
        parse_search_response(data)  # raises MojiraFormatError with the field at fault
        return dict(data)

    async def attachment_text(self, attachment: Attachment, max_bytes: int) -> str | None:
        """The attachment's text when it is at most `max_bytes` (checked before and while reading), else None."""
        if attachment.url is None or (attachment.size is not None and attachment.size > max_bytes):
            return None
        try:
            async with self.http.stream("GET", attachment.url, headers={"User-Agent": USER_AGENT}) as response:
                if response.status_code != 200:
                    log.info("attachment %s: HTTP %s; skipped", attachment.filename, response.status_code)
                    return None
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        return None
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            log.info("attachment %s: %s; skipped", attachment.filename, exc)
            return None
        return b"".join(chunks).decode("utf-8", "replace")

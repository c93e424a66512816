"""The one tenacity retry factory, and its GitHub policy: 5xx, 429 and secondary rate limits, honouring Retry-After."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

__all__ = ["RetryableHTTPError", "classify_response", "http_retrying", "retry_policy", "retry_wait"]

#: Never sleep longer than this for one retry, whatever the server asks.
MAX_WAIT = 60.0


class RetryableHTTPError(Exception):
    """A response worth retrying; `wait` is the delay the server asked for (None: use backoff)."""

    def __init__(self, status: int, wait: float | None, reason: str) -> None:
        super().__init__(f"HTTP {status}: {reason}")
        self.status = status
        self.wait = wait


def _header_delay(headers: Mapping[str, str], now: float) -> float | None:
    retry_after = headers.get("retry-after") or headers.get("Retry-After")
    if retry_after:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(retry_after)
            return max(0.0, parsed.timestamp() - now)
    reset = headers.get("x-ratelimit-reset") or headers.get("X-RateLimit-Reset")
    remaining = headers.get("x-ratelimit-remaining") or headers.get("X-RateLimit-Remaining")
    if reset and remaining == "0":
        try:
            return max(0.0, float(reset) - now)
        except ValueError:
            return None
    return None


def classify_response(
    status: int, headers: Mapping[str, str], body: bytes, now: float | None = None
) -> RetryableHTTPError | None:
    """The retryable error for this response, or None when it must be returned as is.

    Retryable: any 5xx; 429; 403 that is a rate limit (Retry-After present, X-RateLimit-Remaining 0, or
    GitHub's "secondary rate limit" message). Every other 4xx is final.
    """
    now = time.time() if now is None else now
    if status >= 500:
        return RetryableHTTPError(status, _header_delay(headers, now), "server error")
    if status == 429:
        return RetryableHTTPError(status, _header_delay(headers, now), "too many requests")
    if status == 403:
        delay = _header_delay(headers, now)
        secondary = b"secondary rate limit" in body.lower() or b"abuse" in body.lower()
        if delay is not None or secondary:
            return RetryableHTTPError(status, delay, "rate limited")
    return None


def retry_wait(
    base: float = 1.0, cap: float = MAX_WAIT, hint: Callable[[BaseException], float | None] | None = None
) -> Callable[[RetryCallState], float]:
    """Wait what the server asked for (`hint`), else exponential backoff from `base`; never more than `cap`."""
    hint = hint or _http_hint

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hinted = hint(exc) if exc is not None else None
        if hinted is not None:
            return min(cap, hinted)
        return float(min(cap, base * 2 ** (state.attempt_number - 1)))

    return wait


#: Which tenacity controller a policy is: AsyncRetrying for coroutines, Retrying for blocking code.
R = TypeVar("R", AsyncRetrying, Retrying)


def retry_policy(
    kind: type[R],
    *,
    retry_on: Callable[[BaseException], bool],
    hint: Callable[[BaseException], float | None],
    attempts: int = 5,
    base: float = 1.0,
    cap: float = MAX_WAIT,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    before_sleep: Callable[[RetryCallState], None] | None = None,
) -> R:
    """THE retry factory: retry what `retry_on` accepts, waiting `hint(exc)` or backing off, then re-raise.

    `kind` is AsyncRetrying for async code or Retrying for blocking code (which sleeps its thread).
    """
    extra: dict[str, Any] = {}
    if sleep is not None:
        extra["sleep"] = sleep
    if before_sleep is not None:
        extra["before_sleep"] = before_sleep
    return kind(
        retry=retry_if_exception(retry_on),
        wait=retry_wait(base, cap, hint),
        stop=stop_after_attempt(attempts),
        reraise=True,
        **extra,
    )


def _http_hint(exc: BaseException) -> float | None:
    return exc.wait if isinstance(exc, RetryableHTTPError) else None


def http_retrying(attempts: int = 5, base: float = 1.0, cap: float = MAX_WAIT) -> AsyncRetrying:
    """The GitHub policy: retries RetryableHTTPError only, up to `attempts` tries, then re-raises it."""
    return retry_policy(
        AsyncRetrying,
        retry_on=lambda exc: isinstance(exc, RetryableHTTPError),
        hint=_http_hint,
        attempts=attempts,
        base=base,
        cap=cap,
    )

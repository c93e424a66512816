"""The one retry policy: what is retried, how long it waits, and the installation-token cache."""

from __future__ import annotations

import pytest
from tenacity import RetryCallState

from bot.retry import RetryableHTTPError, classify_response, http_retrying, retry_wait


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
def test_server_errors_and_429_are_retried(status: int) -> None:
    assert classify_response(status, {}, b"") is not None


def test_secondary_rate_limit_403_is_retried_other_4xx_are_not() -> None:
    assert classify_response(403, {}, b'{"message": "You have exceeded a secondary rate limit"}') is not None
    assert classify_response(403, {"Retry-After": "7"}, b"{}") is not None
    assert classify_response(403, {}, b'{"message": "Resource not accessible by integration"}') is None
    for status in (400, 401, 404, 409, 422):
        assert classify_response(status, {}, b"{}") is None
    assert classify_response(200, {}, b"") is None


def test_waits_honour_retry_after_and_ratelimit_reset() -> None:
    assert classify_response(429, {"retry-after": "12"}, b"").wait == 12  # type: ignore[union-attr]
    reset = {"x-ratelimit-reset": "1030", "x-ratelimit-remaining": "0"}
    assert classify_response(403, reset, b"", now=1000.0).wait == 30  # type: ignore[union-attr]
    assert classify_response(502, {}, b"").wait is None  # type: ignore[union-attr]


def test_wait_uses_server_delay_else_backoff_and_caps() -> None:
    wait = retry_wait(base=1.0, cap=10.0)
    retrying = http_retrying()

    def state(attempt: int, exc: BaseException) -> RetryCallState:
        s = RetryCallState(retrying, None, (), {})
        s.attempt_number = attempt
        s.set_exception((type(exc), exc, None))
        return s

    assert wait(state(1, RetryableHTTPError(502, None, "x"))) == 1.0
    assert wait(state(3, RetryableHTTPError(502, None, "x"))) == 4.0
    assert wait(state(2, RetryableHTTPError(429, 5.0, "x"))) == 5.0
    assert wait(state(2, RetryableHTTPError(429, 500.0, "x"))) == 10.0


async def test_policy_gives_up_after_its_attempts() -> None:
    calls = 0
    with pytest.raises(RetryableHTTPError):
        async for attempt in http_retrying(attempts=3, base=0.0):
            with attempt:
                calls += 1
                raise RetryableHTTPError(502, 0.0, "boom")
    assert calls == 3


def test_the_blocking_policy_retries_synchronous_code_then_reraises() -> None:
    from tenacity import Retrying

    from bot.retry import retry_policy

    calls: list[int] = []

    def flaky(fail_times: int) -> str:
        calls.append(1)
        if len(calls) <= fail_times:
            raise OSError("busy")
        return "ok"

    policy = retry_policy(Retrying, retry_on=lambda e: isinstance(e, OSError), hint=lambda _: 0.0, attempts=3)
    assert policy(flaky, 2) == "ok" and len(calls) == 3
    calls.clear()
    policy = retry_policy(Retrying, retry_on=lambda e: isinstance(e, OSError), hint=lambda _: 0.0, attempts=3)
    with pytest.raises(OSError, match="busy"):  # the last error itself, not tenacity's RetryError
        policy(flaky, 5)
    assert len(calls) == 3
    calls.clear()
    never = retry_policy(Retrying, retry_on=lambda e: isinstance(e, KeyError), hint=lambda _: 0.0)
    with pytest.raises(OSError):
        never(flaky, 1)
    assert len(calls) == 1  # not retried: retry_on refuses it

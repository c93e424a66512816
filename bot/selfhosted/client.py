"""The runner's side of the runner protocol: one HTTP client (httpx) whose calls retry with the one tenacity policy."""

from __future__ import annotations

import time
from typing import Any

import httpx
from tenacity import AsyncRetrying

from bot.retry import RetryableHTTPError, classify_response, retry_policy

__all__ = ["JobGone", "ProtocolError", "RunnerClient"]


class ProtocolError(Exception):
    """The server refused a call (a 4xx other than 429); `status` and the server's `message` say why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class JobGone(ProtocolError):
    """The runner no longer holds the job (404: its lease lapsed and another runner took it)."""


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, RetryableHTTPError | httpx.TransportError)


def _hint(exc: BaseException) -> float | None:
    return exc.wait if isinstance(exc, RetryableHTTPError) else None


class RunnerClient:
    """Calls of the protocol; network errors, 5xx and 429 are retried with backoff, other refusals raise."""

    def __init__(
        self, server: str, token: str | None = None, *, attempts: int = 6, base: float = 0.5, cap: float = 30.0
    ) -> None:
        """`server`: the bot's base URL; `token`: this runner's token once registered."""
        self.server = server.rstrip("/")
        self.token = token
        self.attempts, self.base, self.cap = attempts, base, cap
        self._http = httpx.AsyncClient(base_url=self.server, timeout=httpx.Timeout(30.0), follow_redirects=False)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    def _retrying(self) -> AsyncRetrying:
        return retry_policy(
            AsyncRetrying, retry_on=_retryable, hint=_hint, attempts=self.attempts, base=self.base, cap=self.cap
        )

    async def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
        content: bytes | None = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """One protocol call, retried on network errors, 5xx and 429; raises ProtocolError on a refusal."""
        headers = {"Authorization": f"Bearer {token or self.token or ''}"}
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        async for attempt in self._retrying():
            with attempt:
                response = await self._http.request(
                    method, path, headers=headers, json=json, content=content, params=params, **extra
                )
                error = classify_response(response.status_code, response.headers, response.content, time.time())
                if error is not None:
                    raise error
        if response.status_code >= 400:
            try:
                message = str(response.json().get("message", response.text))
            except ValueError:
                message = response.text[:300]
            cls = JobGone if response.status_code == 404 and "/jobs/" in path else ProtocolError
            raise cls(response.status_code, message)
        return response

    async def register(
        self,
        registration_token: str,
        *,
        name: str,
        labels: list[str],
        version: str,
        ephemeral: bool,
        scope: list[str] | None = None,
    ) -> dict[str, Any]:
        """Exchange a registration token for this runner's own token (kept in `self.token`).

        `scope`: the tenants asked for (or ["deployment"]); None leaves it to a scoped registration token.
        """
        body: dict[str, Any] = {"name": name, "labels": labels, "version": version, "ephemeral": ephemeral}
        if scope is not None:
            body["scope"] = scope
        answer: dict[str, Any] = (
            await self.call("POST", "/api/runners/register", token=registration_token, json=body)
        ).json()
        self.token = str(answer["token"])
        return answer

    async def heartbeat(self) -> dict[str, Any]:
        """Tell the server this runner is alive; the answer carries the intervals."""
        answer: dict[str, Any] = (await self.call("POST", "/api/runner/heartbeat")).json()
        return answer

    async def claim(self, wait: float) -> dict[str, Any] | None:
        """Long-poll for a job (at most `wait` seconds); the job and its lease, or None."""
        response = await self.call("POST", "/api/runner/claim", params={"wait": f"{wait:g}"}, timeout=wait + 30.0)
        if response.status_code == 204:
            return None
        answer: dict[str, Any] = response.json()
        return answer

    # Every call on a job names the attempt this runner claimed: the server takes writes only under its live lease.

    async def renew(self, job_id: int, attempt: int) -> dict[str, Any]:
        """Extend the job's lease; the answer says whether the job was cancelled. JobGone: lease lost."""
        params = {"attempt": attempt}
        answer: dict[str, Any] = (await self.call("POST", f"/api/runner/jobs/{job_id}/renew", params=params)).json()
        return answer

    async def log(self, job_id: int, attempt: int, seq: int, text: str) -> None:
        """Send log chunk number `seq` (a resent chunk is ignored by the server)."""
        path, params = f"/api/runner/jobs/{job_id}/logs", {"attempt": attempt}
        await self.call("POST", path, json={"seq": seq, "text": text}, params=params)

    async def upload(self, job_id: int, attempt: int, name: str, data: bytes) -> dict[str, Any]:
        """Upload one artifact; the answer has its sha256 and URL."""
        path, params = f"/api/runner/jobs/{job_id}/artifacts/{name}", {"attempt": attempt}
        answer: dict[str, Any] = (await self.call("PUT", path, content=data, params=params)).json()
        return answer

    async def finish(
        self, job_id: int, attempt: int, status: str, result: Any = None, error: str | None = None
    ) -> dict[str, Any]:
        """Finish the job: "done" with its result, or "failed" with the error (idempotent on the server)."""
        body, params = {"status": status, "result": result, "error": error}, {"attempt": attempt}
        response = await self.call("POST", f"/api/runner/jobs/{job_id}/finish", json=body, params=params)
        answer: dict[str, Any] = response.json()
        return answer

    async def deregister(self) -> None:
        """Remove this runner from the server (its token stops working)."""
        await self.call("DELETE", "/api/runner")

"""OpenAI-compatible model client: tool calls, one tenacity retry policy, budgets, token and cost ledger."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from tenacity import AsyncRetrying, RetryCallState

from agents.chat import LLMError, ModelReply, ToolCall
from agents.trajectory import LimitsExceeded
from bot import metrics
from bot.retry import retry_policy
from bot.settings.config import Settings

__all__ = ["Budget", "LLMClient", "LLMError", "Ledger", "PriceTable", "check_endpoint", "client_from_settings"]

log = logging.getLogger(__name__)

#: Errors worth another attempt: rate limits, server errors, timeouts and dropped connections. Never a 4xx
#: other than 429: a bad request stays bad.
RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)


def approx_tokens(text: str) -> int:
    """Token estimate used when a server reports no usage: about four characters per token (OpenAI's rule)."""
    return (len(text) + 3) // 4


def messages_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """Approximate prompt tokens of a request: its JSON text, four characters per token."""
    return approx_tokens(json.dumps(messages)) + (approx_tokens(json.dumps(tools)) if tools else 0)


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens, prompt and completion."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What one call costs."""
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True)
class Budget:
    """Per trajectory: steps and tokens. Per job: cost in USD (None means unlimited)."""

    max_steps: int = 40
    max_tokens: int = 400_000
    max_cost: float | None = None
    #: Which cap max_cost is ("job", or "issue"/"day" when what is left of those is tighter).
    cost_scope: str = "job"

    def describe(self) -> str:
        """One line for the PR body."""
        cost = "no cost cap" if self.max_cost is None else f"${self.max_cost:.2f} ({self.cost_scope} budget)"
        return f"{self.max_steps} steps and {self.max_tokens:,} tokens per trajectory, {cost}"


@dataclass(frozen=True)
class CallRecord:
    """One model call as the ledger keeps it."""

    trajectory: str
    purpose: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    seconds: float
    attempts: int
    error: str = ""


@dataclass
class Usage:
    """Summed tokens and cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        """Shape for --json output and the store."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost, 6),
        }


@dataclass
class Ledger:
    """Token and cost ledger of one job: every call, summable per trajectory and for the whole job."""

    prices: PriceTable = field(default_factory=PriceTable)
    budget: Budget = field(default_factory=Budget)
    calls: list[CallRecord] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)

    def record(self, rec: CallRecord) -> None:
        """Add one call."""
        self.calls.append(rec)
        metrics.observe_llm_call(rec.purpose, rec.prompt_tokens, rec.completion_tokens, rec.cost)

    def usage(self, trajectory: str | None = None) -> Usage:
        """Totals for one trajectory, or the whole job when trajectory is None."""
        out = Usage()
        for c in self.calls:
            if trajectory is None or c.trajectory == trajectory:
                out.calls += 1
                out.prompt_tokens += c.prompt_tokens
                out.completion_tokens += c.completion_tokens
                out.cost += c.cost
        return out

    def check(self, trajectory: str) -> None:
        """Raise LimitsExceeded (and remember why) when the job's cost or the trajectory's tokens are spent."""
        reason = ""
        job = self.usage()
        if self.budget.max_cost is not None and job.cost >= self.budget.max_cost:
            reason = f"{self.budget.cost_scope} cost budget spent: ${job.cost:.4f} of ${self.budget.max_cost:.4f}"
        elif (used := self.usage(trajectory).tokens) >= self.budget.max_tokens:
            reason = f"token budget spent: {used:,} of {self.budget.max_tokens:,} tokens"
        if reason:
            self.stopped.append(f"{trajectory}: {reason}")
            raise LimitsExceeded(reason)

    def describe(self) -> str:
        """The PR body's cost line."""
        u = self.usage()
        return (
            f"model calls: {u.calls}; tokens: {u.prompt_tokens:,} prompt + {u.completion_tokens:,} completion; "
            f"cost: ${u.cost:.4f}; budget: {self.budget.describe()}"
        )


Sleep = Callable[[float], Awaitable[None]]


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date; fall back to backoff


def retrying(
    *, attempts: int = 5, base: float = 0.5, max_wait: float = 30.0, sleep: Sleep = asyncio.sleep
) -> AsyncRetrying:
    """The retry policy for model calls (bot.retry's factory): 429/5xx/timeouts, Retry-After honoured."""

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("model call attempt %d failed (%s); retrying", state.attempt_number, type(exc).__name__)

    return retry_policy(
        AsyncRetrying,
        retry_on=lambda exc: isinstance(exc, RETRYABLE),
        hint=_retry_after,
        attempts=attempts,
        base=base,
        cap=max_wait,
        sleep=sleep,
        before_sleep=before_sleep,
    )


def _describe_error(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        message = body.get("message") or (body.get("error") or {}).get("message") if body else None
        return f"HTTP {exc.status_code}: {message or exc.message}"[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


class LLMClient:
    """An OpenAI-compatible chat client that accounts every call to a ledger and enforces its budgets."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        ledger: Ledger,
        *,
        attempts: int = 5,
        sleep: Sleep = asyncio.sleep,
        temperature: float | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.ledger = ledger
        self.attempts = attempts
        self.sleep = sleep
        self.temperature = temperature

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        trajectory: str = "job",
        purpose: str = "agent",
    ) -> ModelReply:
        """One chat completion with retries; the ledger is checked before and charged after."""
        self.ledger.check(trajectory)
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        started = time.monotonic()
        attempts = 0
        try:
            async for attempt in retrying(attempts=self.attempts, sleep=self.sleep):
                with attempt:
                    attempts += 1
                    resp = await self.client.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            reason = _describe_error(exc)
            self.ledger.record(CallRecord(trajectory, purpose, 0, 0, 0.0, time.monotonic() - started, attempts, reason))
            raise LLMError(f"model call failed after {attempts} attempt(s): {reason}") from None
        choice = resp.choices[0].message if resp.choices else None
        if choice is None:
            raise LLMError("model returned no choices")
        usage = resp.usage
        prompt = usage.prompt_tokens if usage else messages_tokens(messages, tools)
        completion = usage.completion_tokens if usage else approx_tokens(choice.content or "")
        cost = self.ledger.prices.cost(prompt, completion)
        self.ledger.record(
            CallRecord(trajectory, purpose, prompt, completion, cost, time.monotonic() - started, attempts)
        )
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in (choice.tool_calls or [])
            if getattr(c, "function", None) is not None
        )
        return ModelReply(choice.content or "", calls, prompt, completion, cost)


def ledger_from_settings(
    settings: Settings,
    spent_issue: float = 0.0,
    spent_day: float = 0.0,
    *,
    max_steps: int | None = None,
    max_cost: float | None = None,
) -> Ledger:
    """A fresh job ledger: configured prices, and the tightest of the job cap and what the issue/day caps leave.

    `max_steps` and `max_cost` (a repo's policy) can only tighten the deployment's settings, never loosen them.
    """
    job_caps = [c for c in (settings.llm_max_cost, max_cost) if c is not None]
    caps = [("job", min(job_caps) if job_caps else None)]
    if settings.llm_max_cost_issue is not None:
        caps.append(("issue", max(0.0, settings.llm_max_cost_issue - spent_issue)))
    if settings.llm_max_cost_day is not None:
        caps.append(("day", max(0.0, settings.llm_max_cost_day - spent_day)))
    set_caps = [(scope, cap) for scope, cap in caps if cap is not None]
    scope, cap = min(set_caps, key=lambda c: c[1]) if set_caps else ("job", None)
    return Ledger(
        prices=PriceTable(settings.llm_price_input, settings.llm_price_output),
        budget=Budget(
            min(settings.llm_max_steps, max_steps or settings.llm_max_steps), settings.llm_max_tokens, cap, scope
        ),
    )


def client_from_settings(settings: Settings, ledger: Ledger, *, sleep: Sleep = asyncio.sleep) -> LLMClient:
    """The job's model client; raises LLMError when no model is configured."""
    if not settings.llm_configured:
        raise LLMError("no model configured: set REPROBOT_LLM_BASE_URL and REPROBOT_LLM_MODEL")
    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key or "not-needed",
        timeout=settings.llm_timeout,
        max_retries=0,  # retries are ours (one policy), not the SDK's
    )
    return LLMClient(client, str(settings.llm_model), ledger, sleep=sleep)


async def check_endpoint(settings: Settings, timeout: float = 5.0) -> str | None:
    """None when the endpoint answers a model listing; otherwise a one-line reason."""
    if not settings.llm_configured:
        return "--agent llm needs REPROBOT_LLM_BASE_URL and REPROBOT_LLM_MODEL"
    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url, api_key=settings.llm_api_key or "not-needed", timeout=timeout, max_retries=0
    )
    try:
        await client.models.list()
    except openai.APIConnectionError:
        return f"model endpoint {settings.llm_base_url} cannot be reached"
    except openai.AuthenticationError:
        return f"model endpoint {settings.llm_base_url} rejected the API key"
    except openai.APIStatusError as exc:
        if exc.status_code != 404:  # some servers do not list models; reachable is enough
            return f"model endpoint {settings.llm_base_url} answered HTTP {exc.status_code}"
    finally:
        await client.close()
    return None

"""One task's OpenAI-compatible endpoint: its clients, what it spent (tokens, requests) and its admission (the
token budget, the request rate). The clients try each request once; :mod:`._attempts` says whether again."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from openai import AsyncOpenAI, OpenAI, OpenAIError

from altm.core import Deferred
from altm.models._attempts import delay_s, received, retried
from altm.models._metrics import MODEL_COST, MODEL_TOKENS
from altm.models._settings import LLMSettings, ModelTask

log = logging.getLogger("altm.models")
R = TypeVar("R")


@dataclass
class Endpoint:
    """One task's endpoint: its clients (made on first use), spend, tokens reserved by requests in flight (a
    budget is checked against both: calls made together do not all pass it) and the next request's rate slot."""

    task: ModelTask
    settings: LLMSettings
    client: AsyncOpenAI | None = None
    sync: OpenAI | None = None
    tokens_used: int = 0
    reserved: int = 0
    requests: int = 0
    next_slot: float = 0.0
    # recall embeds queries on its read threads beside the event loop's calls: the counts and the slot are
    # read and written under it (short sections, never across a wait)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def async_client(self) -> AsyncOpenAI:
        """The client of the event loop; it tries each request once (``retry`` says whether again)."""
        if self.client is None:
            s = self.settings
            self.client = AsyncOpenAI(base_url=s.base_url, api_key=s.api_key, timeout=s.timeout_s, max_retries=0)
        return self.client

    def sync_client(self) -> OpenAI:
        """The blocking client (recall's helper thread); it tries each request once, as ``async_client``'s."""
        with self.lock:
            if self.sync is None:
                s = self.settings
                self.sync = OpenAI(base_url=s.base_url, api_key=s.api_key, timeout=s.timeout_s, max_retries=0)
            return self.sync

    def _check_budget(self) -> None:
        """Raise when the token budget is spent, counting what the requests in flight reserved."""
        budget = self.settings.token_budget
        if budget is not None and self.tokens_used + self.reserved >= budget:
            raise Deferred(f"token budget of task {self.task.value} exhausted ({self.tokens_used}/{budget} tokens"
                           + (f", {self.reserved} reserved by requests in flight)" if self.reserved else ")"))

    def _book(self) -> float:
        """Book the rate slot for a request sent now and return 0, or return how long until it opens. Nothing is
        booked ahead: a caller that gives up while it waits (a deadline) takes no slot with it."""
        if not self.settings.rate_per_minute:
            return 0.0
        with self.lock:
            now = time.monotonic()
            if self.next_slot > now:
                return self.next_slot - now
            self.next_slot = now + 60.0 / self.settings.rate_per_minute
            return 0.0

    def _admitted(self, reserve: int) -> None:
        with self.lock:
            self._check_budget()
            self.reserved += reserve

    async def admit(self, reserve: int) -> None:
        """Wait for a rate slot and reserve ``reserve`` tokens of the budget (``release`` them once the request
        is done); :class:`Deferred` when the budget is spent."""
        self._check_budget()
        wait = self._book()
        while wait > 0:  # each waiter books its own slot when it opens (several may wait for one)
            await asyncio.sleep(wait)
            wait = self._book()
        self._admitted(reserve)

    def admit_blocking(self, reserve: int) -> None:
        """``admit`` for a blocking caller."""
        self._check_budget()
        wait = self._book()
        while wait > 0:
            time.sleep(wait)
            wait = self._book()
        self._admitted(reserve)

    def release(self, reserve: int) -> None:
        with self.lock:
            self.reserved = max(0, self.reserved - reserve)

    async def attempted(self, send: Callable[[], Awaitable[R]], prompt_tokens: int) -> R:
        """``send()``, tried again as :mod:`._attempts` says: each attempt admitted (its rate slot, its prompt's
        tokens reserved against the budget) and a failed one counted (a timed-out prompt charged). Raises the last
        attempt's ``OpenAIError``, or :class:`Deferred` when the budget is spent. A send cancelled under it (a
        caller's deadline) is charged its prompt: it may have been sent."""
        attempt = 0
        while True:
            await self.admit(prompt_tokens)
            try:
                return await send()
            except OpenAIError as exc:
                wait = self._again(exc, attempt, prompt_tokens)
            except asyncio.CancelledError:
                self.spent(None, counted=(prompt_tokens, 0))
                raise
            finally:
                self.release(prompt_tokens)
            await asyncio.sleep(wait)
            attempt += 1

    def attempted_blocking(self, send: Callable[[], R], prompt_tokens: int) -> R:
        """``attempted`` for a blocking caller (recall's helper thread)."""
        attempt = 0
        while True:
            self.admit_blocking(prompt_tokens)
            try:
                return send()
            except OpenAIError as exc:
                wait = self._again(exc, attempt, prompt_tokens)
            finally:
                self.release(prompt_tokens)
            time.sleep(wait)
            attempt += 1

    def _again(self, exc: OpenAIError, attempt: int, prompt_tokens: int) -> float:
        """Count the failed attempt ``attempt`` (0 first; its prompt charged when the endpoint received it) and say
        how long to wait before the next; ``exc`` raised again when there is none (not retried, or retries spent)."""
        self.spent(None, counted=(prompt_tokens, 0) if received(exc) else (0, 0))
        if attempt >= self.settings.max_retries or not retried(exc):
            raise exc
        wait = delay_s(exc, attempt)
        log.info("%s model call failed (%s); attempt %d in %.1f s", self.task.value, type(exc).__name__,
                 attempt + 2, wait)
        return wait

    def spent(self, usage: Any, *, counted: tuple[int, int] = (0, 0)) -> None:
        """Count a call: the tokens the endpoint reports, or ``counted`` here (prompt, completion) where it
        reports none, zero or fewer (a budget must not rest on the endpoint's word; a negative count is none)."""
        with self.lock:
            self.requests += 1
        if usage is None and counted == (0, 0):
            return
        reported = (_tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"))
        prompt, completion = reported if any(reported) else counted
        with self.lock:
            self.tokens_used += max(_tokens(usage, "total_tokens"), prompt + completion)
        task, s = self.task.value, self.settings
        MODEL_TOKENS.labels(task=task, direction="prompt").inc(prompt)
        MODEL_TOKENS.labels(task=task, direction="completion").inc(completion)
        cost = (prompt * s.usd_per_1k_prompt_tokens + completion * s.usd_per_1k_completion_tokens) / 1000
        if cost:
            MODEL_COST.labels(task=task).inc(cost)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.sync is not None:
            self.sync.close()
            self.sync = None


def estimated_tokens(text: str) -> int:
    """About four bytes a token: what a call is charged at least when its endpoint reports no usage."""
    return (len(text.encode("utf-8", errors="surrogatepass")) + 3) // 4


def _tokens(usage: Any, field: str) -> int:
    """A token count of an endpoint's usage report, 0 when missing or not a count of at least 0."""
    value = getattr(usage, field, 0) if usage is not None else 0
    return value if isinstance(value, int) and value > 0 else 0

"""Which failed model requests are tried again, and after how long: the ``openai`` client's own rules, applied
here (its clients are made with ``max_retries=0``) so every attempt passes the task's token budget and rate
limit and is counted, and a request that timed out is charged (the endpoint received its prompt)."""

from __future__ import annotations

import math
import random

from openai import APIConnectionError, APIStatusError, APITimeoutError, OpenAIError

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 60.0
RETRIED_STATUS = frozenset({408, 409, 429})
UNREADABLE = (ValueError, TypeError, AttributeError)
"""What the client raises on a 200 whose body is not what it says (JSON cut off; a page where the embeddings'
parser expects an object): an answer that could not be read, not tried again."""


def retried(exc: OpenAIError) -> bool:
    """Whether a request that failed with ``exc`` is tried again: a connection that failed or timed out, and a
    status of 408, 409, 429 or 5xx, unless the endpoint says ``x-should-retry: false`` (or ``true``)."""
    if isinstance(exc, APIConnectionError):
        return True
    if not isinstance(exc, APIStatusError):
        return False
    said = exc.response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return exc.status_code in RETRIED_STATUS or exc.status_code >= 500


def delay_s(exc: OpenAIError, attempt: int) -> float:
    """How long to wait before attempt ``attempt + 1``: the endpoint's ``Retry-After`` (up to a minute), else
    half a second doubled per attempt up to 8 s, less up to a quarter (jitter)."""
    if isinstance(exc, APIStatusError):
        try:
            after = float(exc.response.headers.get("retry-after", ""))
        except ValueError:
            after = math.nan
        if math.isfinite(after) and 0 < after <= MAX_RETRY_AFTER_S:
            return after
    return min(FIRST_DELAY_S * 2.0 ** attempt, MAX_DELAY_S) * (1 - 0.25 * random.random())


def received(exc: BaseException) -> bool:
    """Whether the endpoint had the request when it failed: it timed out waiting for the answer (a hosted
    endpoint bills the prompt). A refused connection never sent it; an error status is the endpoint's refusal."""
    return isinstance(exc, APITimeoutError)

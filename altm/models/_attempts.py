"""Which failed model requests are tried again, and after how long: the ``openai`` client's own rules, applied
here (its clients are made with ``max_retries=0``) so every attempt passes the task's token budget and rate
limit and is counted, and a request that timed out is charged (the endpoint received its prompt)."""

from __future__ import annotations

import email.utils
import math
import random
import time

from openai import APIConnectionError, APIStatusError, APITimeoutError, OpenAIError

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 120.0
RETRIED_STATUS = frozenset({408, 409, 429})
UNREADABLE = (ValueError, TypeError, AttributeError)
"""What the client raises on a 200 whose body is not what it says (JSON cut off; a page where the embeddings'
parser expects an object): an answer that could not be read, not tried again."""


def retried(exc: OpenAIError) -> bool:
    """Whether a request that failed with ``exc`` is tried again: a connection that failed or timed out, and a
    status of 408, 409, 429 or 5xx, unless the endpoint says ``x-should-retry: false`` (or ``true``), or asks
    for a wait over two minutes (``Retry-After``)."""
    if isinstance(exc, APIConnectionError):
        return True
    if not isinstance(exc, APIStatusError):
        return False
    after = retry_after_s(exc)
    if after is not None and math.isfinite(after) and after > MAX_RETRY_AFTER_S:
        return False
    said = exc.response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return exc.status_code in RETRIED_STATUS or exc.status_code >= 500


def retry_after_s(exc: APIStatusError) -> float | None:
    """The wait the endpoint asks for: ``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date;
    None when it asks for none (an overflowing number is a wait too long, not none)."""
    headers = exc.response.headers
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            wait = float(value)
        except ValueError:
            continue
        if wait == math.inf and value.strip().lower() not in ("inf", "+inf", "infinity", "+infinity"):
            return MAX_RETRY_AFTER_S + 1
        return wait / divisor
    try:
        date = email.utils.parsedate_tz(headers.get("retry-after"))
        return None if date is None else float(email.utils.mktime_tz(date) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def delay_s(exc: OpenAIError, attempt: int) -> float:
    """How long to wait before attempt ``attempt + 1``: the endpoint's wait (up to two minutes), else half a
    second doubled per attempt up to 8 s, less up to a quarter (jitter)."""
    after = retry_after_s(exc) if isinstance(exc, APIStatusError) else None
    if after is not None and math.isfinite(after) and 0 < after <= MAX_RETRY_AFTER_S:
        return after
    return min(FIRST_DELAY_S * 2.0 ** attempt, MAX_DELAY_S) * (1 - 0.25 * random.random())


def received(exc: BaseException) -> bool:
    """Whether the endpoint had the request when it failed: it timed out waiting for the answer (a hosted
    endpoint bills the prompt). A refused connection never sent it; an error status is the endpoint's refusal."""
    return isinstance(exc, APITimeoutError)

"""ALTM's retries claim to apply "the openai client's own rules" (altm/models/_attempts.py), now that the clients
are made with ``max_retries=0``. They do not for an endpoint's server-directed wait: the client (the installed
``openai``, ``_should_retry`` / ``_parse_retry_after_header`` / ``_calculate_retry_timeout``) honours
``retry-after-ms`` and a ``Retry-After`` HTTP date, waits as told up to two minutes, and does NOT retry at all when
told to wait longer. ``delay_s`` reads only a ``Retry-After`` of seconds, up to 60 s, and ``retried`` ignores it:
a 429 saying "come back in 5 minutes" is hammered again after half a second (an attempt and a rate slot spent,
and the provider's rate limit pushed further)."""

from __future__ import annotations

import email.utils
import time

import httpx2 as httpx
import openai
import pytest
from openai._models import FinalRequestOptions

from altm.models._attempts import delay_s, retried

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
CLIENT = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=2)


def _status(code: int, **headers: str) -> openai.APIStatusError:
    return openai.APIStatusError("scripted", response=httpx.Response(code, headers=headers, request=REQUEST),
                                 body=None)


@pytest.mark.parametrize("after", ["300", "3600"])
def test_a_retry_after_beyond_the_clients_maximum_is_not_tried_again(after: str) -> None:
    error = _status(429, **{"retry-after": after})
    assert CLIENT._should_retry(error.response) is False  # the client's rule
    assert retried(error) is False, f"a 429 with Retry-After: {after} is retried (after {delay_s(error, 0):.2f}s)"


@pytest.mark.parametrize(("headers", "wanted"), [
    ({"retry-after-ms": "5000"}, 5.0),
    ({"retry-after": "90"}, 90.0),
])
def test_the_endpoints_wait_is_honoured_as_the_client_does(headers: dict[str, str], wanted: float) -> None:
    error = _status(429, **headers)
    assert CLIENT._calculate_retry_timeout(2, _options(), error.response.headers) == pytest.approx(wanted)
    assert delay_s(error, 0) == pytest.approx(wanted)


def test_a_retry_after_date_is_honoured() -> None:
    error = _status(503, **{"retry-after": email.utils.formatdate(time.time() + 20, usegmt=True)})
    assert delay_s(error, 0) >= 15.0, f"Retry-After of a date 20 s ahead: waited {delay_s(error, 0):.2f}s"


def _options() -> FinalRequestOptions:
    return FinalRequestOptions.construct(method="post", url="/chat/completions", max_retries=2)

"""A blank message (whitespace only) breaks every prepare_turn that recalls it (red team, recall surface).

A tool's output or a pasted message can be nothing but whitespace (blank lines, em spaces). It is stored as an
L0 message like any other, and recall finds it: the word channel scores a message by its preceding message's
text too (README: "each message's preceding message at half weight"), and the conversational neighbours
follow a strong message. When such a message is longer than its share of the budget, ``build_bundle``
compresses it as prose, and ``compress_prose`` (altm/recall/context/_compress.py:134-137) splits
``text.strip()`` into no sentence at all yet still picks sentence 0: ``dict(scored)[0]`` raises
``KeyError: 0``. ``prepare_turn`` fails before it publishes anything, so the user's message is lost, and the
HTTP API answers 500 Internal Server Error, for every later question in that session that recalls it.

README ("Reliability: hostile input"): "One record never stops a partition"; the poison-pill suite promises
"no 500". A user expects the blank message to be shown compressed (or left out) and the bundle returned.
"""

from __future__ import annotations

import httpx

from altm.core import Role
from altm.core.settings import Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from altm.recall.context import compress
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

BLANK = "\u2003 \n" * 400  # a tool's output of blank lines (1,200 tokens of whitespace)
HISTORY = [
    make_turn(1, "Can you check the billing export job output?"),
    make_turn(2, BLANK, role=Role.TOOL),
    make_turn(3, "The billing export job finished fine.", role=Role.ASSISTANT),
]


def test_compressing_blank_content_does_not_raise() -> None:
    shown = compress(BLANK, 100, "billing export job")
    assert shown.tokens <= 100


async def test_prepare_over_http_with_a_blank_message_recalled_is_not_a_server_error(
        settings: Settings, tmp_path: object) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        hits = app.search(SCOPE, "s1", "billing export job").hits
        assert any(h.content == BLANK for h in hits)  # recalled (by its preceding message's words)
        keys = KeyStore(s.data_dir / "keys.json")
        key = keys.create("coder", SCOPE.path)
        transport = httpx.ASGITransport(app=create_app(app, keys), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.post("/v1/prepare", headers={"X-API-Key": key}, json={
                "scope": SCOPE.path, "session_id": "s1", "turn_id": "s1-t4",
                "content": "Did the billing export job finish?", "token_budget": 400})
    assert r.status_code == 200, f"{r.status_code}: {r.text[:300]}"
    assert r.json()["bundle"]["tokens"] <= 400

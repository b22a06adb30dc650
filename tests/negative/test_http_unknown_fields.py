"""The HTTP API silently ignores fields it does not know, so a misspelt option is dropped without a word.

What a user expects: "Request bodies of the HTTP API (validated by pydantic; a bad field answers 422 with the
reason)" (``altm/interfaces/http/_requests.py``). ``altm ingest`` dead-letters a line with unknown fields
(README, "Reliability: hostile input"), and the core models (``Scope``, ``Erasure``, events) are
``extra="forbid"``. A client that misspells an option expects to hear about it, above all the options that
narrow what recall may show or that carry the agent's citations.

Actual: every request model is pydantic's default ``extra="ignore"``:

* ``POST /v1/query`` with ``"strict_sesion": true`` (meant: ``strict_session``) answers 200 with memories of
  *other sessions* — the caller asked for this session only;
* ``POST /v1/commit`` with ``"cited_ids": [...]`` (meant: ``cited_memory_ids``) commits with no citations;
* ``POST /v1/review`` with ``"notes"`` drops the reviewer's note.

Suspected cause: ``altm/interfaces/http/_requests.py``: ``_Scoped``, ``CommitRequest``, ``AbortRequest`` have no
``model_config = ConfigDict(extra="forbid")``. Fix direction: forbid extra fields (422 naming the field).
"""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.browser import browser_world
from tests.support.turns import SCOPE, make_turn


async def test_a_misspelt_field_is_refused_not_ignored(settings: Settings, tmp_path: Path) -> None:
    turns = [make_turn(1, "The billing deadline is December 15.", session="s1")]
    async with browser_world(settings, tmp_path, turns) as w:
        c, agent = w.client, {"Authorization": f"Bearer {w.keys['agent']}"}
        strict = await c.post("/v1/query", headers=agent, json={
            "scope": SCOPE.path, "session_id": "s2", "query": "billing deadline", "strict_session": True})
        assert strict.status_code == 200 and strict.json()["results"] == []  # the option, spelt right, holds
        typo = await c.post("/v1/query", headers=agent, json={
            "scope": SCOPE.path, "session_id": "s2", "query": "billing deadline", "strict_sesion": True})
        # expected: 422 naming "strict_sesion"; actual: 200 with session s1's memories
        assert typo.status_code == 422, f"{typo.status_code}: {len(typo.json().get('results', []))} results"

        prepared = await c.post("/v1/prepare", headers=agent, json={
            "scope": SCOPE.path, "session_id": "s3", "turn_id": "t1", "content": "when is the billing deadline?"})
        assert prepared.status_code == 200
        cycle = prepared.json()["cycle_id"]
        shown = [m["memory_id"] for m in prepared.json()["bundle"]["items"]]
        assert shown  # the bundle recalled the deadline (from session s1)
        committed = await c.post("/v1/commit", headers=agent, json={
            "cycle_id": cycle, "assistant_content": "December 15.", "cited_ids": shown})
        # expected: 422 naming "cited_ids"; actual: 200, committed with no citations
        assert committed.status_code == 422, committed.text

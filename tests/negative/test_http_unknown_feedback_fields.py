"""A misspelt field inside a commit's ``feedback`` is still silently ignored (red-team review of the strict
request bodies).

What a user expects: the fix for test_http_unknown_fields.py made every request body refuse unknown fields
(``_Body``, ``extra="forbid"``: "a misspelt option was silently ignored" → 422). The commit body's ``feedback``
object is part of that body, and carries what the agent says helped or misled, which moves the memories'
trust and lifecycle. ``{"feedback": {"harmfull": [id]}}`` (meant: ``harmful``) should answer 422 naming the field,
as ``{"cited_ids": [...]}`` now does. Actual: 200, committed with empty feedback: the signal the agent meant to
send is dropped without a word.
Suspected cause: altm/app/_protocol.py ``Feedback`` (a plain ``BaseModel``, ``extra="ignore"``), nested in
altm/interfaces/http/_requests.py ``CommitRequest`` (only the outer model is a ``_Body``).
Fix direction: ``model_config = ConfigDict(extra="forbid")`` on ``Feedback`` (or a strict HTTP copy of it)."""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.browser import browser_world
from tests.support.turns import SCOPE, make_turn


async def test_a_misspelt_feedback_field_is_refused(settings: Settings, tmp_path: Path) -> None:
    turns = [make_turn(1, "The billing deadline is December 15.", session="s1")]
    async with browser_world(settings, tmp_path, turns) as w:
        c, agent = w.client, {"Authorization": f"Bearer {w.keys['agent']}"}
        prepared = await c.post("/v1/prepare", headers=agent, json={
            "scope": SCOPE.path, "session_id": "s3", "turn_id": "t1", "content": "when is the billing deadline?"})
        assert prepared.status_code == 200
        cycle = prepared.json()["cycle_id"]
        shown = [m["memory_id"] for m in prepared.json()["bundle"]["items"]]
        assert shown
        outer = await c.post("/v1/commit", headers=agent, json={
            "cycle_id": cycle, "assistant_content": "December 15.", "cited_ids": shown})
        assert outer.status_code == 422  # holds: an unknown field of the body is refused
        committed = await c.post("/v1/commit", headers=agent, json={
            "cycle_id": cycle, "assistant_content": "December 15.",
            "feedback": {"harmfull": shown, "note": "that date is wrong"}})
        # expected: 422 naming "feedback.harmfull"; actual: 200, committed with no harmful signal
        assert committed.status_code == 422, committed.text

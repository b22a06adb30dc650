"""Emergence presents a contradicted memory as plain memory, with no trust verdict.

Recall never shows a contradicted memory without its verdict: a hit carries ``trust_status``, ``trust_reason`` and
``flag`` ("contradicted: shown, never silently dropped", altm/recall/retrieval/_engine.py ``Hit``), and a bundle
quotes it as "trust: contradicted · ⚠ contradicted: a later memory ... states ['friday'] instead of ['monday']".
Query-induced emergence (``Retriever.emerge``, altm/recall/retrieval/_engine.py:301-326; MCP ``emerge``,
``altm emerge``) returns the same memories as ``Emergent`` (memory id, layer, kind, content, score, path): the
model has no trust field at all, so a value the user corrected since comes back as a related memory with nothing
to tell it from a current one. Here the user said the release is on Monday, then that it moved to Friday; the
Monday atom is contradicted (recall flags it), and emergence from a query about Priya, who was named beside it,
returns "The release is on Monday, Priya from Lisbon said." as the related fact, unflagged.

Expected: an emergent memory carries its verdict as a hit does (``trust_status`` and the ``flag``
"contradicted"), or contradicted memories are left out of emergence.
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

TURNS = [
    make_turn(1, "The release is on Monday, Priya from Lisbon said.", session="s1"),
    make_turn(2, "The release moved to Friday.", session="s2"),
    make_turn(3, "Priya from Lisbon joins the standup.", session="s3"),
]
MONDAY = TURNS[0].content


async def test_an_emergent_contradicted_memory_keeps_its_verdict(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (_rt, app):
        recalled = [h for h in app.search(SCOPE, "s9", "release day").hits if h.layer == "L2" and h.content == MONDAY]
        emerged = [e for e in app.emerge(SCOPE, "standup joins", limit=20) if e.layer == "L2" and e.content == MONDAY]
    assert recalled and recalled[0].flag == "contradicted", "recall flags the corrected value"
    assert emerged, "the corrected value emerges through Priya and Lisbon"
    shown = emerged[0].model_dump()
    assert shown.get("flag") == "contradicted" and shown.get("trust_status") == "contradicted", (
        f"emergence presents the corrected value {MONDAY!r} with no verdict: {sorted(shown)}")

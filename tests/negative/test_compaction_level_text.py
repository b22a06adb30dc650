"""Compaction makes a one-line memory bigger in bundles, or drops it from them.

README (Lifecycle): "`altm compaction` moves memories idle for 30 / 90 / 180 / 365 days to C1 (compressed by
content type) / C2 (summary) / C3 (title) / C4 (marker only) in bundles"; DESIGN §5: "each candidate gets a
share of the token budget". The level texts (``altm/recall/context/_bundle.py`` ``_level_text``) are cut from
the content with no regard to that share: C2 is the first sentence (split at ``.!?`` + space or a newline) and
C3 the first 12 whitespace-separated words of it. Content with no such boundary — a JSON document or a log
line on one line, a long prose line without a full stop — is its own "first sentence" and its own single
"word": its C2 summary and C3 title are the whole content (plus a suffix), which at C0 and C1 was compressed
by content type to fit its share.

Below, the same message (a one-line JSON document of about 1,700 tokens) recalled with the same query and
budget (3,000 tokens, six memories recalled): at C0 it is compressed to its share (176 tokens); 200 idle days
later (C3), its "title" is the whole document (1,819 tokens). With a tighter budget (600) it no longer fits at
C2 and leaves the bundle, while at C0 it was in it. Expected: a compressed level is never longer than the
memory's C0 rendering, and a title is a title.
"""

from __future__ import annotations

import json
from datetime import timedelta

from altm.app import MemoryApp
from altm.core import Settings
from altm.recall.context import ContextBundle, count_tokens
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DOC = json.dumps({"service": "billing", "invoices": [{"id": i, "amount": i * 10} for i in range(200)], "ok": True},
                 separators=(",", ":"))
QUERY = "invoices amount"


async def _bundle(app: MemoryApp, turn: str, budget: int) -> ContextBundle:
    return (await app.prepare_turn(SCOPE, "s1", turn, QUERY, budget, preset_name="lexical")).bundle


def _item_of(bundle: ContextBundle, memory_id: str) -> tuple[int, str] | None:
    found = [(i.tokens, i.text) for i in bundle.items if i.memory_id == memory_id]
    return found[0] if found else None


async def test_a_title_is_never_longer_than_the_full_rendering(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    others = [make_turn(i, f"The billing service sends invoices to customer group {i} monthly.", session="s1")
              for i in range(2, 7)]
    async with store_with(s, [make_turn(1, DOC, session="s1"), *others]) as (rt, app):
        (doc,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content=?", (DOC,))
        mid = str(doc["memory_id"])
        at_c0 = _item_of(await _bundle(app, "q1", 3000), mid)
        await rt.run_until_idle()
        assert at_c0 is not None
        assert await app.admin.compaction(T0 + timedelta(days=200)) > 0
        await rt.run_until_idle()
        (level,) = rows(s.data_dir, "SELECT lc_compression FROM memories WHERE memory_id=?", (mid,))
        assert level["lc_compression"] == 3
        at_c3 = _item_of(await _bundle(app, "q2", 3000), mid)
    assert at_c3 is not None
    assert at_c3[0] <= at_c0[0], f"C3 takes {at_c3[0]} tokens, C0 took {at_c0[0]}"
    assert count_tokens(at_c3[1]) <= 60, f"a C3 title of {count_tokens(at_c3[1])} tokens: {at_c3[1][:80]}…"


async def test_a_compressed_memory_stays_in_a_bundle_it_fitted_in_at_c0(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, DOC, session="s1")]) as (rt, app):
        (doc,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content=?", (DOC,))
        mid = str(doc["memory_id"])
        at_c0 = await _bundle(app, "q1", 600)
        await rt.run_until_idle()
        assert _item_of(at_c0, mid) is not None
        assert await app.admin.compaction(T0 + timedelta(days=100)) > 0  # C2: a summary
        await rt.run_until_idle()
        at_c2 = await _bundle(app, "q2", 600)
    assert _item_of(at_c2, mid) is not None, f"left out at C2 (omitted {at_c2.omitted}), shown at C0"

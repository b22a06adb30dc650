"""A bundle prepared while an erasure is on its way is replayed, erased text and all, on a safe retry.

``AdminService.erase`` (altm/app/_admin.py:99-116) publishes the erasure and then drops the bundles this process
holds for the user (``CycleBook.forget_bundles``), so that a retried ``prepare_turn`` rebuilds its bundle from
the memories that are left (``ProtocolService._replayed_bundle``, altm/app/_protocol.py:204-212). But the writer
applies the erasure later, in order: a ``prepare_turn`` made in between still recalls the memory the erasure
names, and ``CycleBook.remember`` keeps that bundle. Nothing drops it once the erasure is applied, so every
retry of that turn (same idempotency key, same request) answers with the erased message verbatim, for as long
as the process lives (10,000 cycles), although the store, the index and the log no longer hold it.

Expected: a retried prepare answered after the erasure is applied quotes nothing it erased (the bundle is
rebuilt from what is left, as for a bundle prepared before the erasure was requested: test_small_findings.py).
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

SECRET = "The deadline for the ZEBRA migration is March 3."
HISTORY = [
    make_turn(1, SECRET, session="s-secret"),
    make_turn(2, "The deadline for the billing migration is December 15.", session="s1"),
]
QUESTION = "When is the ZEBRA migration deadline?"


async def test_a_retry_after_the_erasure_quotes_nothing_it_erased(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")  # published; the writer has not applied it yet
        first = await app.prepare_turn(SCOPE, "s-next", "n1", QUESTION, 800)
        assert "March 3" in first.bundle.rendered, "recalled before the erasure is applied"
        await rt.run_until_idle()  # the erasure is applied
        assert not any("March 3" in r["content"] for r in app.list_memories(SCOPE, limit=500))
        fresh = await app.prepare_turn(SCOPE, "s-next", "n2", QUESTION, 800)
        assert "March 3" not in fresh.bundle.rendered  # a new turn recalls nothing of it
        retry = await app.prepare_turn(SCOPE, "s-next", "n1", QUESTION, 800)
    assert retry.replayed and retry.cycle_id == first.cycle_id
    assert "March 3" not in retry.bundle.rendered, "the retry replayed the erased message"

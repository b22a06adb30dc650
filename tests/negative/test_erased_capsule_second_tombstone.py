"""A capsule erased by its own id comes back when an earlier erasure of one of its messages buried it first.

README: "A session capsule or a scene erased by its id (`altm erase --memory`) is void in every later version
too … and so does [fold anew] a capsule or scene that went with a memory erased by its id (the message it
quoted …)". ``guard.erased_itself`` tells the two apart by the capsule's tombstone: its reason and
``ShardTx.buried_beneath`` (did the same erasure bury a lower-layer memory?). But a memory id has ONE tombstone:
``ShardTx.tombstone`` derives ``tombstone_id`` from the memory id alone and inserts with ``INSERT OR IGNORE``.
When the capsule first went as the derivative of an erased message (``buried_beneath`` true: "fold anew") and
the user later erases the refolded capsule by its own id, the second erasure's tombstone is silently dropped
(neither its reason, its erasure id nor the hashes of the refolded text are kept), and every later version of
the capsule passes as "went with a memory erased by its id".

What a user sees: they erase one message (fine, the session is summarised again without it), then decide the
session's summary itself must go and erase the capsule by its id. The next message in the session folds a new
capsule under the erased id, quoting the sentences the user just erased from the summary.

Expected: the capsule erased by its own id stays void (no capsule under that id after a later message), as it
does when no earlier erasure buried it (``test_erased_capsule_stays.py``).
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE


async def test_a_capsule_erased_by_its_id_after_a_message_erasure_stays_void(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "Hello, how are you today?", "s1")
        await say(rt, 2, "We decided to move the billing service to Postgres.", "s1")
        await say(rt, 3, "We decided to keep the nightly export on Fridays.", "s1")
        (msg,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content LIKE '%Postgres%'")
        await app.erase(SCOPE, "memory", memory_id=msg["memory_id"])  # the capsule goes with it, and is refolded
        await rt.run_until_idle()
        (capsule,) = rows(s.data_dir, "SELECT memory_id, content FROM memories WHERE layer='L1'")
        assert "nightly export on Fridays" in str(capsule["content"])
        await app.erase(SCOPE, "memory", memory_id=str(capsule["memory_id"]))  # now the summary itself, by id
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L1'") == []
        await say(rt, 4, "We decided to archive the old dashboards.", "s1")
        back = rows(s.data_dir, "SELECT content FROM memories WHERE memory_id=?", (capsule["memory_id"],))
        tombs = rows(s.data_dir, "SELECT reason FROM tombstones WHERE memory_id=? ORDER BY rowid",
                     (capsule["memory_id"],))
    assert back == [], ("a capsule erased by its own id was folded again under that id", back, tombs)

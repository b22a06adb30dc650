"""Negative evaluation: erased, guard-rejected and reviewer-rejected material stays out of bundles,
listings and drilldowns."""

from __future__ import annotations

import pytest

from altm.app import NotFound
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

SECRET = "My locker combination is 31-07-19 at the north gym."
ANTI = "Don't store passwords in the wiki because everyone can read it; use the vault."


async def test_erased_guarded_and_rejected_material_is_absent(settings: Settings) -> None:
    turns = [make_turn(1, SECRET, session="s1"), make_turn(2, ANTI, session="s1"),
             make_turn(3, "The release is on Thursday.", session="s1"),
             make_turn(4, "The release is on Friday.", session="s2")]
    async with store_with(settings, turns) as (rt, app):
        (secret,) = [r for r in app.list_memories(SCOPE, layer="L0") if r["content"] == SECRET]
        marker = f"memory://{secret['memory_id']}#{secret['content_hash']}"
        await app.erase(SCOPE, "memory", memory_id=secret["memory_id"])
        # a later message re-asserting the anti-pattern: captured as L0, its derived atoms refused
        await rt.publish([make_turn(5, "We decided to store passwords in the wiki.", session="s3")])
        queue = app.review_queue(SCOPE)
        (older,) = [m for m in queue["memories"] if m["content"] == "The release is on Thursday."]
        await app.review_decide(SCOPE, older["memory_id"], "reject")
        await rt.run_until_idle()

        query = "locker combination gym passwords wiki release day"
        prepared = await app.prepare_turn(SCOPE, "s3", "q1", query, 4000, preset_name="conversation")
        shown = [(i.layer, i.text) for i in prepared.bundle.items]
        listed = [(r["layer"], r["content"]) for r in app.list_memories(SCOPE, limit=500)]
        for items in (shown, listed):
            assert not any("locker combination" in t for _, t in items)  # erased, at every layer
            # the reviewer rejected the atom; the raw message stays as history
            assert ("L2", "The release is on Thursday.") not in items
        derived = [r for r in app.list_memories(SCOPE, limit=500)
                   if r["layer"] != "L0" and "store passwords in the wiki" in r["content"]
                   and "Don't" not in r["content"] and "Instead" not in r["content"]]
        # the guard refused every derived re-assertion; the capsule quoting it is held for review, naming it
        assert [(r["layer"], r["trust_status"]) for r in derived] in ([], [("L1", "uncertain")]), derived
        reviewed = {m["memory_id"]: str(m["trust_reason"]) for m in app.review_queue(SCOPE)["memories"]}
        assert all("re-asserts anti-pattern" in reviewed[r["memory_id"]] for r in derived)
        with pytest.raises(NotFound):
            app.drilldown(marker, SCOPE)
        rejected = [r for s in rt.shards.existing() for r in s._db.execute(
            "SELECT reason FROM rejections WHERE reason LIKE 'write guard: re-asserts anti-pattern%'")]
        assert rejected

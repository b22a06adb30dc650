"""Erasing one memory by its id voids, for good, the session capsule and the scene that quoted it.

A capsule (L1) and a scene (L3) are recomputed whole under a fixed id (the session's, the anchor node's). An
erasure takes the ones that cite the erased memory with it (``_with_derivatives``) and buries each under the
erasure's tombstone reason, which for ``--memory`` is "memory erased: …" whichever memory the tombstone is of.
``guard.erased_itself`` then treats any later version of that id whose tombstone reason starts with
``ERASED_BY_ID_PREFIX`` as "a capsule or scene erased by its id" and voids it silently (no rejection, nothing to
review). But these were not erased by their id: only one message, or one atom, was.

* Capsule: session s1 says "Hello…", "We decided to move the billing service to Postgres." and "We decided to
  keep the nightly export on Fridays."; the user erases the Postgres message by id. README: "the session's
  capsule went with the erased message, and fold folds it again at once from what is left" (and
  ``test_erasure_capsule.py`` shows it for a message the capsule does not cite). For a cited message the
  refold is void, and so is every later one: the session has no capsule ever again, its Fridays decision and
  every decision said there afterwards ("archive the old dashboards") missing from its summary.
* Scene: Marco is named in s1, s2 and s3; the user erases the s3 atom by id. The s1 and s2 atoms still make a
  scene of Marco across two sessions, and later mentions (s4) should rebuild it; every rebuild is void, so
  Marco has no scene again, whatever is said about him.

Expected: what is left is summarised again (a capsule of the session's remaining messages, a scene of the
remaining atoms) without the erased memory; only a capsule or scene erased *by its own id* stays void.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE


async def test_erasing_one_cited_message_by_id_leaves_the_session_a_capsule(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "Hello, how are you today?", "s1")
        await say(rt, 2, "We decided to move the billing service to Postgres.", "s1")
        await say(rt, 3, "We decided to keep the nightly export on Fridays.", "s1")
        (msg,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content LIKE '%Postgres%'")
        (capsule,) = rows(s.data_dir, "SELECT evidence FROM memories WHERE layer='L1'")
        assert msg["memory_id"] in capsule["evidence"]  # the capsule cites (quotes) the erased message
        await app.erase(SCOPE, "memory", memory_id=msg["memory_id"])
        await rt.run_until_idle()
        refolded = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L1'")
        await say(rt, 4, "We decided to archive the old dashboards.", "s1")
        later = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L1'")
    assert len(refolded) == 1 and "nightly export on Fridays" in refolded[0]["content"], refolded
    assert "Postgres" not in refolded[0]["content"]
    assert len(later) == 1 and "old dashboards" in later[0]["content"], later


async def test_erasing_one_atom_by_id_leaves_its_anchor_a_scene(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "I decided to call Marco every Sunday evening.", "s1")
        await say(rt, 2, "I decided to go hiking with Marco near the lake.", "s2")
        await say(rt, 3, "My friend Marco is allergic to peanuts.", "s3")
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content LIKE '%peanuts%'")
        await app.erase(SCOPE, "memory", memory_id=atom["memory_id"])
        await rt.run_until_idle()
        await say(rt, 4, "I decided to buy Marco a new tent for his birthday.", "s4")
        scenes = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L3'")
    assert len(scenes) == 1, scenes  # Marco across s1, s2 and s4
    assert "new tent" in scenes[0]["content"] and "peanuts" not in scenes[0]["content"], scenes

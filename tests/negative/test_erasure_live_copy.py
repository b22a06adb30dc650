"""Found by the randomized replay check (seeds 12, 42, 155, 158, 165, 177): the same sentence said in two
sessions, one of them erased after the other's capsule and atoms formed. The write guard refused a derived
memory of the kept session "matching erased content" only when it was formed after the erasure: the source
stored the first capsule and refused its refolds, a replay (which derives after the erasure it replays)
refused them all, so rejections (and memories) differed. The erased sentence is still a live message of the
kept session, said before the erasure (the guard refuses an exact re-send at L0 after it), and recall serves
it: a derived memory that cites a stored raw message with the very text of an erased one is not refused for
it, in any order. A derived memory whose own messages only restate the erased text is still refused."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID_TWICE = "The release of the billing service moved to Monday the 14th because of the ZEBRA-4471 outage."


async def test_derived_memories_citing_a_live_copy_of_erased_text_replay_to_the_same_state(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, SAID_TWICE, session="s2"), make_turn(2, "I prefer dark mode in every editor.", session="s1"),
             make_turn(3, SAID_TWICE, session="s1")]
    async with store_with(s, turns) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await rt.publish([make_turn(4, "We decided to deploy the billing service on Tuesdays.", session="s1")])
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT reason FROM rejections") == []
    capsule = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L1' AND session_id='s1'")
    assert capsule and "Tuesdays" in capsule[0]["content"]  # the refold after the erasure was stored
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE session_id='s2'") == []
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_derived_memory_restating_erased_text_without_a_live_copy_is_still_refused(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, SAID_TWICE, session="s1")]) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "Reminder: " + SAID_TWICE, session="s3")])
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0' AND session_id='s3'")  # the raw message
    derived = rows(s.data_dir, "SELECT kind FROM memories WHERE layer<>'L0' AND content LIKE '%ZEBRA-4471%'")
    assert derived == []
    assert rows(s.data_dir, "SELECT 1 FROM rejections WHERE reason LIKE '%matches erased content%'")

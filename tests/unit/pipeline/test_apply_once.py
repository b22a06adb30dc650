"""The writer applies a memory upsert once (a re-derived one would undo later merges), and nothing else: the
id of any other proposal comes from its op and payload alone (``proposal()``), so a later decision may rightly
repeat an earlier one's. Found by a review of the apply-once change: a second erasure, a reviewer's second
reject and a node mentioned again after its erasure were skipped as "applied before"."""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn


async def test_a_second_user_erasure_erases_what_came_after_the_first(settings: Settings) -> None:
    settings = settings.model_copy(update={"embedder": "none"})
    first = make_turn(1, "My bank PIN is 9921.", session="s1")
    async with store_with(settings, [first]) as (rt, app):
        await app.erase(first.scope, "user")
        await rt.run_until_idle()
        assert not rows(settings.data_dir, "SELECT 1 FROM memories")
        # the user comes back, says something new, and asks to be erased again (same default reason)
        await rt.publish([make_turn(2, "I live at 12 Elm Street, Springfield.", session="s2")])
        await rt.run_until_idle()
        assert rows(settings.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%Elm Street%'")
        await app.erase(first.scope, "user")
        await rt.run_until_idle()
    left = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE content LIKE '%Elm Street%'")
    assert left == [], f"the second erasure was skipped as 'applied before': {left}"


async def test_a_second_session_erasure_erases_messages_added_to_the_session_later(settings: Settings) -> None:
    settings = settings.model_copy(update={"embedder": "none"})
    first = make_turn(1, "My bank PIN is 9921.", session="s1")
    async with store_with(settings, [first]) as (rt, app):
        await app.erase(first.scope, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "My new PIN is 4410.", session="s1")])
        await rt.run_until_idle()
        await app.erase(first.scope, "session", session_id="s1")
        await rt.run_until_idle()
    left = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE content LIKE '%4410%'")
    assert left == [], f"the second erasure of s1 was skipped as 'applied before': {left}"


async def test_a_reviewer_can_reject_again_after_approving(settings: Settings) -> None:
    settings = settings.model_copy(update={"embedder": "none"})
    turn = make_turn(1, "We decided to store the sessions in Redis.", session="s1")
    async with store_with(settings, [turn]) as (rt, app):
        (atom,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' LIMIT 1")
        mid = atom["memory_id"]
        for decision in ("reject", "approve", "reject"):
            await app.review_decide(turn.scope, mid, decision)
            await rt.run_until_idle()
            (row,) = rows(settings.data_dir, "SELECT trust_status FROM memories WHERE memory_id=?", (mid,))
            expected = "contradicted" if decision == "reject" else "verified"
            assert row["trust_status"] == expected, f"after {decision}: {row['trust_status']}"


async def test_an_entity_mentioned_again_after_an_erasure_is_in_the_graph_again(settings: Settings) -> None:
    """A node proposal's id is the same for every mention of the entity (its payload names no message); the
    erasure scrubbed the node, and its next mention is skipped as 'applied before', so the new message's
    edges to it are refused."""
    settings = settings.model_copy(update={"embedder": "none"})
    first = make_turn(1, "Meeting with Priya Raman about the Kestrel migration.", session="s1")
    async with store_with(settings, [first]) as (rt, app):
        before = rows(settings.data_dir, "SELECT name FROM graph_nodes")
        await app.erase(first.scope, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "The Kestrel migration starts on Monday.", session="s2")])
        await rt.run_until_idle()
    after = rows(settings.data_dir, "SELECT name FROM graph_nodes")
    refused = rows(settings.data_dir, "SELECT reason FROM rejections")
    assert not refused, (before, after, refused)

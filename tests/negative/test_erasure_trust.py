"""Found by the randomized replay check (seed 117): the trust sweep compares the atoms of one subject, and an
atom's verdict names the atom that contradicts or replaces it and quotes its values ("a later memory about
'release' states ['friday'] instead of ['monday']"). Erasing the session of that other atom left the
verdicts of the atoms kept naming an erased memory and quoting the erased value, and a replay (which cannot
open the erased session) verified the atoms kept against each other alone: another state. An erasure now
clears every verdict that names what it erased and has the subject verified again from what is left."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

VERDICTS = ("SELECT memory_id, session_id, content, trust_status, trust_reason, trust_contradicting_id "
            "FROM memories WHERE layer='L2' AND content LIKE 'The release%' ORDER BY memory_id")


async def test_an_erasure_clears_the_verdicts_that_name_what_it_erased(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, "The release is on Monday.", session="s1"),
             make_turn(2, "The release moved to Friday.", session="s2"),
             make_turn(3, "The release is actually on Wednesday.", session="s3")]
    async with store_with(s, turns) as (rt, app):
        before = rows(s.data_dir, VERDICTS)
        erased = {r["memory_id"] for r in before if r["session_id"] == "s2"}
        assert erased and any(r["trust_contradicting_id"] in erased for r in before)  # a verdict names s2's atom
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
    after = rows(s.data_dir, VERDICTS)
    assert {r["session_id"] for r in after} == {"s1", "s3"}
    assert not any(r["trust_contradicting_id"] in erased for r in after)
    assert not any("friday" in (r["trust_reason"] or "").lower() for r in after)
    target = await replayed_equal(s, tmp_path / "replayed")
    assert rows(target, VERDICTS) == after


async def test_the_weight_a_contradiction_lowered_comes_back_when_the_contradiction_is_erased(
        settings: Settings, tmp_path: Path) -> None:
    """Found by the randomized check (seed 198, with citations and feedback): an atom contradicted by one of
    another session was used (a helpful mark), and its weight counted the contradiction; erasing the other
    session cleared the verdict but kept the lowered weight, where a replay, which never met the contradiction,
    weighed the same signals in full. Since the weight counts use signals alone (``test_weight_order.py``), the
    contradiction never lowers it: the same weight before and after the erasure, and in the replay."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, "The release is on Monday.", session="s1"),
             make_turn(2, "The release moved to Friday.", session="s2")]
    weights = "SELECT memory_id, trust_status, lc_helpful, lc_weight FROM memories WHERE session_id='s1' AND layer='L2'"
    async with store_with(s, turns) as (rt, app):
        (kept,) = rows(s.data_dir, weights)
        assert kept["trust_status"] == "contradicted", kept
        await app.feedback(SCOPE, [kept["memory_id"]], "helpful")
        await rt.run_until_idle()
        (used,) = rows(s.data_dir, weights)
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
    (after,) = rows(s.data_dir, weights)
    assert after["trust_status"] != "contradicted" and after["lc_helpful"] == 1
    assert after["lc_weight"] == used["lc_weight"] > 1.0, (used, after)
    target = await replayed_equal(s, tmp_path / "replayed")
    assert rows(target, weights) == [after]

"""Retention reaches what was folded into what it forgets (found while tracing randomized replay seed 104).

An exact duplicate folds into the earliest atom of its content (``superseded_by`` names it, out of recall), and
retention named only memories that nothing superseded. So forgetting a canonical atom left its duplicates
pointing at a memory no longer there: one as old as the canonical was never forgotten (every later pass passed
over it: kept past retention, invisible), and a recent re-statement stayed out of recall although it was well
inside retention — what the user said last month was gone from every answer."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson

from altm.core import ControlAction, ControlEvent, TurnEvent
from altm.core.settings import Settings
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.replay import assert_same_state, replayed_equal
from tests.support.rows import dangling, rows
from tests.support.turns import SCOPE, T0, make_turn

SAID = "The staging cluster runs on Kubernetes 1.30 in Dublin."
LATER = T0 + timedelta(days=90)  # the first two sessions are past a 30-day retention, the third is not


def _turns() -> list[TurnEvent]:
    recent = make_turn(3, SAID, session="s3").model_copy(update={"timestamp": T0 + timedelta(days=70)})
    return [make_turn(1, SAID, session="s1"), make_turn(2, SAID, session="s2"), recent]


def _retention(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})


def _atoms(settings: Settings) -> dict[str, dict[str, object]]:
    return {str(r["session_id"]): r for r in rows(
        settings.data_dir, "SELECT memory_id, session_id, superseded_by, lc_state, evidence FROM memories "
        "WHERE layer='L2' AND content=?", (SAID,))}


def _merges(settings: Settings) -> list[dict[str, object]]:
    return rows(settings.data_dir, "SELECT event_id, decision_id, step, inputs, reason FROM governance_events "
                "WHERE decision = 'merge' ORDER BY event_id")


async def test_forgetting_a_canonical_atom_forgets_its_old_duplicates_and_frees_the_recent_one(
        settings: Settings) -> None:
    s = _retention(settings)
    async with store_with(s, _turns()) as (rt, app):
        before = _atoms(s)
        assert set(before) == {"s1", "s2", "s3"}
        assert before["s2"]["superseded_by"] == before["s3"]["superseded_by"] == before["s1"]["memory_id"]
        named = {str(r["memory_id"]) for r in app.admin.retention_candidates(LATER)}
        assert before["s2"]["memory_id"] in named  # as old as its canonical: past retention too
        assert before["s3"]["memory_id"] not in named
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        after = _atoms(s)
        hits = [h.memory_id for h in app.search(SCOPE, "s4", "staging cluster Kubernetes Dublin",
                                                preset_name="lexical").hits]
    assert set(after) == {"s3"}, after
    assert after["s3"]["superseded_by"] is None and after["s3"]["lc_state"] == "active", after["s3"]
    assert after["s3"]["memory_id"] in hits
    assert dangling(s.data_dir) == []
    fresh = s.data_dir.parent / "fresh-folded"  # the forget is on the log: a replay repeats it
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_recent_duplicates_of_a_forgotten_atom_fold_into_the_earliest_of_them(settings: Settings) -> None:
    """Two recent re-statements of a forgotten atom: the earlier is freed, the later folds into it (its
    evidence joining the earlier's), as they would have folded had the old atom never been there."""
    s = _retention(settings)
    again = make_turn(4, SAID, session="s4").model_copy(update={"timestamp": T0 + timedelta(days=75)})
    async with store_with(s, [*_turns(), again]) as (rt, app):
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        after = _atoms(s)
    assert set(after) == {"s3", "s4"}, after
    assert after["s3"]["superseded_by"] is None and after["s3"]["lc_state"] == "active", after["s3"]
    assert after["s4"]["superseded_by"] == after["s3"]["memory_id"] and after["s4"]["lc_state"] == "merged"
    assert set(orjson.loads(str(after["s3"]["evidence"]))) >= set(orjson.loads(str(after["s4"]["evidence"])))
    assert orjson.loads(str(after["s4"]["evidence"]))  # the recent message is still there to stand on
    assert dangling(s.data_dir) == []
    fresh = s.data_dir.parent / "fresh-recent"
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_rolling_back_the_forget_folds_the_duplicates_into_the_canonical_again(settings: Settings) -> None:
    """The refold is part of the forget's decision: its rollback puts every row back as it was."""
    s = _retention(settings)
    async with store_with(s, _turns()) as (rt, app):
        before, merges = _atoms(s), _merges(s)
        assert len({m["decision_id"] for m in merges}) == 2  # s2 and s3 into s1
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        assert _merges(s) == []  # they name a memory no longer there
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        after = _atoms(s)
    assert after == before and _merges(s) == merges
    assert dangling(s.data_dir) == []


async def test_a_forget_and_a_restatement_give_one_state_in_either_order(settings: Settings, tmp_path: Path) -> None:
    """Found by the randomized replay check with operations overlapping (seed 104): a retention pass requested
    before a re-statement arrived took effect after it in the source and before it in the replay. Folded into
    the old atom first, the re-statement left the old atom's evidence edge to the new message behind when the
    forget removed it, and the merge's record behind, naming a memory no longer there; forgotten first, there
    was neither. Every stored row is a function of what arrived, not of the order."""
    old, recent = make_turn(2, SAID, session="s2"), _turns()[2]
    first = _retention(settings.model_copy(update={"data_dir": tmp_path / "forget-first"}))
    async with store_with(first, [old]) as (_, app):
        named = sorted(str(r["memory_id"]) for r in app.admin.retention_candidates(LATER))
    assert len(named) >= 2  # the message and its atom at least
    forget = ControlEvent(event_id="ctl_forget_past_retention", scope=SCOPE, timestamp=LATER,
                          action=ControlAction.LIFECYCLE,
                          payload={"op": "forget", "memory_ids": named, "reason": "past retention", "tombstone": False})
    dirs = await in_each_order(first, tmp_path, [old], [("forget-first", [forget, recent]),
                                                       ("restated-first", [recent, forget])])
    assert [dangling(d) for d in dirs] == [[], []]
    assert rows(dirs[1], "SELECT memory_id FROM evidence_edges e WHERE NOT EXISTS "
                "(SELECT 1 FROM memories m WHERE m.memory_id = e.memory_id)") == []
    assert_same_state(dirs[0], dirs[1], "with the forget and the re-statement in the other order")


async def test_a_forget_takes_every_step_of_a_rolled_back_merge_into_what_it_forgets(settings: Settings) -> None:
    """Randomized replay seed 448: the merge's 'rolled_back' step names no memory, so it stayed when the forget
    took the merge's other steps and its rollback's record, while a replay that never met the merge had none."""
    s = _retention(settings)
    async with store_with(s, _turns()[:2]) as (rt, app):
        (merge,) = {str(m["decision_id"]) for m in _merges(s)}
        await app.rollback(SCOPE, merge, "not the same")
        await rt.run_until_idle()
        assert {str(m["step"]) for m in _merges(s)} >= {"applied", "rolled_back"}
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        left = rows(s.data_dir, "SELECT decision, step FROM governance_events WHERE decision_id = ? OR "
                    "json_extract(inputs, '$.decision_id') = ?", (merge, merge))
    assert left == []
    fresh = s.data_dir.parent / "fresh-rolled-back"
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_duplicates_of_an_erased_atom_fold_into_the_earliest_of_them_as_in_a_replay(
        settings: Settings, tmp_path: Path) -> None:
    """Randomized replay seed 588: an erasure released the duplicates folded into the atom it erased, and they
    stayed apart (both active), while a replay, which never met the erased atom, folded the later into the
    earlier. Released atoms reach governance, which folds them again as it would have."""
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, SAID, session="s1"), make_turn(2, SAID, session="s2"), make_turn(3, SAID, session="s3")]
    async with store_with(s, turns) as (rt, app):
        await app.admin.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        after = _atoms(s)
    assert set(after) == {"s2", "s3"}, after
    assert after["s2"]["superseded_by"] is None and after["s2"]["lc_state"] == "active", after["s2"]
    assert after["s3"]["superseded_by"] == after["s2"]["memory_id"] and after["s3"]["lc_state"] == "merged"
    assert dangling(s.data_dir) == []
    await replayed_equal(s, tmp_path / "replayed")

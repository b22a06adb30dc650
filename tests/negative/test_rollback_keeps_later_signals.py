"""Rolling back a promotion or demotion keeps the use signals that came after it (pins above all).

A rollback restores the rows a decision changed from the audit log's old values. For a memory that is the whole
row, lifecycle columns included, although the use signals those columns are tallied from (``lifecycle_signals``)
stay where they are: every pin, citation and helpful or harmful mark sent since the decision is kept in the
signal table, but the row's counters, weight, state and ``lc_pinned`` jump back to the moment before the
decision. Only a verdict given since is carried over (``REVIEWED_COLUMNS``); use signals are not.

What a user sees: a preference marked harmful is demoted; the user then *pins* it (keep this); an operator rolls the
demotion back (the harm mark was a mistake). The pin signal is still stored, but the row says ``lc_pinned = 0``,
so the next retention pass names the memory and forgets it: a pinned memory is forgotten, which the README rules
out ("pins keep it ≥ 1 and exempt it from demotion and forgetting"). The counters disagree with the signal table
in the same way after a rollback of a promotion followed by more feedback: the weight the memory ranks with is not
the weight its signals give (``altm.pipeline.lifecycle_rules``), until some later signal happens to re-tally it.

Expected: after a rollback of a lifecycle decision, the memory's lifecycle columns are those its remaining signals
give (the rolled-back decision's own signal taken out), so a later pin stands and retention keeps the memory.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core.settings import Settings
from altm.pipeline.lifecycle_rules import LifecycleRules
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

PREFERENCE = "I prefer tabs over spaces in Python code."
_LC = "SELECT lc_state, lc_weight, lc_pinned, lc_cited, lc_helpful, lc_harmful FROM memories WHERE memory_id=?"


def _decision(app: object, kind: str) -> str:
    events = app.governance_events(SCOPE)  # type: ignore[attr-defined]
    (decision,) = {e["decision_id"] for e in events if e["decision"] == kind}
    return str(decision)


def _expected(data_dir: Path, memory_id: str) -> dict[str, object]:
    """The lifecycle columns the memory's stored signals give (the writer's own rules)."""
    counts = {r["kind"]: r["n"] for r in rows(data_dir, "SELECT kind, COUNT(*) AS n FROM lifecycle_signals "
                                                        "WHERE memory_id=? GROUP BY kind", (memory_id,))}
    pins = rows(data_dir, "SELECT kind FROM lifecycle_signals WHERE memory_id=? AND kind IN ('pin','unpin') "
                "ORDER BY at DESC, signal_id DESC LIMIT 1", (memory_id,))
    pinned = bool(pins) and pins[0]["kind"] == "pin"
    rules = LifecycleRules()
    weight = rules.weight(cited=counts.get("cited_by_agent", 0), helpful=counts.get("helpful", 0),
                          harmful=counts.get("harmful", 0), injected=counts.get("injected", 0), pinned=pinned)
    return {"lc_pinned": int(pinned), "lc_weight": weight, "lc_helpful": counts.get("helpful", 0),
            "lc_harmful": counts.get("harmful", 0), "lc_cited": counts.get("cited_by_agent", 0),
            "lc_state": rules.state(weight, pinned=pinned, current="active")}


async def test_a_pin_given_after_a_demotion_survives_its_rollback_and_retention(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0})
    async with store_with(s, [make_turn(1, PREFERENCE)]) as (rt, app):
        (atom,) = [m for m in app.list_memories(SCOPE, layer="L2") if m["content"] == PREFERENCE]
        mid = str(atom["memory_id"])
        await app.feedback(SCOPE, [mid], "harmful")  # demoted
        await rt.run_until_idle()
        demotion = _decision(app, "demote")
        await app.feedback(SCOPE, [mid], "pin")  # the user: keep this one
        await rt.run_until_idle()
        assert rows(s.data_dir, _LC, (mid,))[0]["lc_pinned"] == 1
        await app.rollback(SCOPE, demotion)  # the harm mark was a mistake
        await rt.run_until_idle()
        (after_rollback,) = rows(s.data_dir, _LC, (mid,))
        pin_signals = rows(s.data_dir, "SELECT kind FROM lifecycle_signals WHERE memory_id=?", (mid,))
        await app.admin.retention(T0 + timedelta(days=400))
        await rt.run_until_idle()
        kept = rows(s.data_dir, "SELECT memory_id FROM memories WHERE memory_id=?", (mid,))
    assert pin_signals == [{"kind": "pin"}], pin_signals  # the pin is still stored as a signal...
    assert kept, ("retention forgot a memory the user pinned after the rolled-back demotion", after_rollback)
    assert after_rollback["lc_pinned"] == 1, (
        "the rollback of the demotion unpinned the memory (its pin signal stands)", after_rollback)


async def test_counters_after_a_rolled_back_promotion_are_those_of_the_signals_left(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, PREFERENCE)]) as (rt, app):
        (atom,) = [m for m in app.list_memories(SCOPE, layer="L2") if m["content"] == PREFERENCE]
        mid = str(atom["memory_id"])
        for _ in range(2):  # 1 + 2 × 0.25 = 1.5 ≥ 1.3: promoted on the second
            await app.feedback(SCOPE, [mid], "helpful")
            await rt.run_until_idle()
        promotion = _decision(app, "promote")
        for _ in range(3):  # more use after the promotion
            await app.feedback(SCOPE, [mid], "helpful")
            await rt.run_until_idle()
        await app.feedback(SCOPE, [mid], "pin")
        await rt.run_until_idle()
        await app.rollback(SCOPE, promotion)
        await rt.run_until_idle()
        (row,) = rows(s.data_dir, _LC, (mid,))
        expected = _expected(s.data_dir, mid)
    # 4 helpful signals and a pin are left: weight 2.0, promoted, pinned; the row has 1 helpful, weight 1.25
    assert expected["lc_helpful"] == 4 and expected["lc_pinned"] == 1
    assert {k: row[k] for k in expected} == expected, ("row vs its signals", dict(row), expected)

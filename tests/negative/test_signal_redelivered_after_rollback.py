"""A feedback event delivered again after its demotion was rolled back is counted again, and a replay disagrees.

Delivery is at least once (DESIGN §1.5: "processing an event twice changes nothing"; README: "the lifecycle
processor counts each [signal] once"): a host SDK that crashed between send and acknowledgement, or a producer
retry, puts the same control event (same ``event_id``) on the log a second time. The writer counts a signal once
by looking it up in ``lifecycle_signals`` (``ShardTx.signal_seen``). A rollback of the demotion that signal caused
*deletes* that row (``ShardTx.restore``, table ``lifecycle_signals``), so the redelivered copy is a new signal:
the memory is demoted again, by the same decision id, whose record already says ``rolled_back`` (so the operator's
rollback of it now answers "unchanged" and cannot undo it).

The replay does not agree with the source either: it places both copies of the event where the source's writer
first applied it (``altm.app.replay._in_the_writers_order``), before the rollback, so the replay ends with the
signal rolled back (active, weight 1.0) and the source with it counted (demoted, weight 0.571429): different
``lifecycle_signals`` and ``memories`` tables, different state hashes.

Expected: the second delivery changes nothing (the memory stays as the rollback left it) and the replay's state
equals the source's.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import ControlAction, ControlEvent
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

PREFERENCE = "I prefer tabs over spaces in Python code."
_LC = "SELECT lc_state, lc_weight, lc_harmful FROM memories WHERE memory_id=?"


async def _redelivered_after_rollback(s: Settings) -> tuple[dict[str, object], dict[str, object], str]:
    """The memory's lifecycle columns after the rollback and after the redelivery, and the rollback's outcome of
    a second rollback of the same demotion (asked after the redelivery)."""
    async with store_with(s, [make_turn(1, PREFERENCE)]) as (rt, app):
        (atom,) = [m for m in app.list_memories(SCOPE, layer="L2") if m["content"] == PREFERENCE]
        mid = str(atom["memory_id"])
        harm = ControlEvent(event_id="ctl_harm_once", scope=SCOPE, timestamp=T0 + timedelta(hours=1),
                            action=ControlAction.FEEDBACK, target_ids=(mid,), payload={"signal": "harmful"})
        await rt.publish([harm])
        await rt.run_until_idle()
        (demotion,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "demote"}
        await app.rollback(SCOPE, str(demotion))
        await rt.run_until_idle()
        (rolled_back,) = rows(s.data_dir, _LC, (mid,))
        assert rolled_back == {"lc_state": "active", "lc_weight": 1.0, "lc_harmful": 0}
        await rt.publish([harm])  # the same event again (at-least-once delivery)
        await rt.run_until_idle()
        (redelivered,) = rows(s.data_dir, _LC, (mid,))
        again = await app.admin.rollback(SCOPE, str(demotion))
        await rt.run_until_idle()
        return rolled_back, redelivered, app.admin.outcome(again).status


async def test_a_redelivered_harm_mark_after_its_rollback_changes_nothing(settings: Settings) -> None:
    rolled_back, redelivered, second_rollback = await _redelivered_after_rollback(
        settings.model_copy(update={"embedder": "none"}))
    assert redelivered == rolled_back, ("the same feedback event counted again after its rollback", redelivered,
                                        f"a second rollback of the demotion: {second_rollback}")


async def test_the_replay_of_a_redelivered_harm_mark_equals_the_source(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    await _redelivered_after_rollback(s)
    await replayed_equal(s, tmp_path / "replay")

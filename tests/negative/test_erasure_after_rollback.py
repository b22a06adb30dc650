"""Found by a randomized replay check of the change that drops the records of decisions naming erased
memories: a forget, its rollback, then an erasure of a restored memory (or of its session). The replay, which
carried the erasure's tombstones from its start, did not record the forget (it named a memory an erasure
buries), so it refused the rollback that came before the erasure, and everything the rollback restored stayed
forgotten there. And the rollback's record counts the rows it restored, some of them erased since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

OLD = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _old_turn(i: int, text: str, session: str) -> TurnEvent:
    return TurnEvent(scope=SCOPE, session_id=session, turn_id=f"{session}-t{i}", role=Role.USER, content=text,
                     timestamp=OLD + timedelta(minutes=i))


@pytest.mark.parametrize("erase", ["memory", "session"])
async def test_a_rollback_before_an_erasure_replays_to_the_same_state(settings: Settings, tmp_path: Path,
                                                                      erase: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0})
    turns = [_old_turn(1, "The staging cluster runs on Kubernetes 1.30 in Dublin.", "s1"),
             _old_turn(2, "I prefer dark mode in every editor.", "s2")]
    async with store_with(s, turns) as (rt, app):
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        if erase == "memory":
            (m,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND session_id='s2'")
            await app.erase(SCOPE, "memory", memory_id=m["memory_id"])
        else:
            await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE session_id='s1'") != []  # the rollback restored it
    await replayed_equal(s, tmp_path / "replayed")

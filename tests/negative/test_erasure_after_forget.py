"""An erasure reaches what retention forgot of it before (found by a review of issue 13's burial change):
forgetting keeps the removed values in the audit (a forget can be rolled back), and it took the forgotten
memories out of the evidence of what was derived from them, so a later erasure of the session found neither:
34 audit rows and an L4 facet still quoted the erased secret. And once forgetting removed the graph nodes only
the forgotten memories held, the erasure no longer met them as orphans to redact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core.settings import Settings
from tests.negative.test_erasure_bytes import TURNS, occurrences
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

LATER = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)


def _retention(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l1": 30.0,
                                       "retention_days_l2": 30.0})


async def test_forgotten_then_erased_leaves_no_trace(settings: Settings) -> None:
    s = _retention(settings)
    async with store_with(s, TURNS) as (rt, app):
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        assert occurrences(s.data_dir)  # the forget's audit keeps the values, and a facet derived from them
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    assert occurrences(s.data_dir) == {}


async def test_a_node_a_forget_removed_is_redacted_by_the_erasure(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})
    async with store_with(s, TURNS) as (rt, app):
        assert rows(s.data_dir, "SELECT node_id FROM graph_nodes WHERE name LIKE '%ZEBRA-4471-SECRET%'")
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    leaked = rows(s.data_dir, "SELECT audit_id FROM audit_log WHERE target_table='graph_nodes' AND "
                              "(old_value LIKE '%ZEBRA-4471-SECRET%' OR new_value LIKE '%ZEBRA-4471-SECRET%')")
    assert leaked == []

"""The vector index follows the shard: every change that removes memories removes their points (issue 12,
bug 3: forgotten and rolled-back memories kept their vectors), and the state hash covers the index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from altm.core import Settings
from altm.store import DataDirError
from altm.wiring import open_read_only, state_hash
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TWINS = [
    make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.", session="s1"),
    make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2"),
]


async def test_forget_and_rollback_keep_the_vector_index_in_step(settings: Settings) -> None:
    s = settings.model_copy(update={"retention_days_l0": 30.0, "retention_days_l2": 30.0})
    async with embedded(s) as d:
        rt, vectors = runtime_of(d), d.vectors
        assert vectors is not None
        await rt.publish(TWINS)
        await rt.run_until_idle()

        def stored() -> set[str]:
            return {r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM memories")}

        before = stored()
        assert set(vectors.ids()) == before
        later = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)
        assert await d.app.admin.retention(later) > 0
        await rt.run_until_idle()
        assert stored() < before and set(vectors.ids()) == stored()  # no orphan points

        (decision,) = {e["decision_id"] for e in d.app.governance_events(SCOPE) if e["decision"] == "forget"}
        await d.app.rollback(SCOPE, decision)
        await rt.run_until_idle()
        assert stored() == before and set(vectors.ids()) == before  # restored rows are embedded again


async def test_the_state_hash_covers_the_vector_index(settings: Settings) -> None:
    async with embedded(settings) as d:
        rt = runtime_of(d)
        await rt.publish(TWINS)
        await rt.run_until_idle()
        # a second handle would corrupt the one the pipeline writes through (the log's writer is refused first)
        with pytest.raises(DataDirError, match=r"open (in|for writing by) another process"):
            state_hash(settings.data_dir)
    full = state_hash(settings.data_dir)
    async with embedded(settings) as d:
        assert d.vectors is not None
        d.vectors.delete([d.vectors.ids()[0]])  # an orphan or a lost point is drift
    assert state_hash(settings.data_dir) != full


async def test_a_read_only_command_beside_a_running_pipeline_leaves_its_index_intact(settings: Settings) -> None:
    """A second handle that merely loaded the embedded index used to break the first one's next flush."""
    async with embedded(settings) as d:
        rt = runtime_of(d)
        await rt.publish(TWINS[:1])
        await rt.run_until_idle()
        async with open_read_only(settings) as reader:
            assert reader.vectors is None  # skipped, with a warning: the pipeline holds the index
            assert reader.app.search(SCOPE, "s1", "staging cluster", preset_name="lexical").hits
        await rt.publish(TWINS[1:])
        await rt.run_until_idle()  # the pipeline's index still flushes
        assert d.vectors is not None and set(d.vectors.ids()) == {
            r["memory_id"] for r in rows(settings.data_dir, "SELECT memory_id FROM memories")}

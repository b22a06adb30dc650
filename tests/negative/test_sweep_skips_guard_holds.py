"""The trust sweep named every atom the write guard holds for review on every pass, for ever, and held atoms older
than a never-verified one filled the pass's limit, so that one was never reached (red team rt24): the hold sets
no ``trust_verified_at`` (``_held_for_review``, altm/pipeline/writer/ops/memory.py) and ``set_trust`` answers
``unchanged`` for a held atom, so ``MaintenanceQueries.unverified`` (altm/store/_queries.py) found it again. Each
pass published a control event, a verdict proposal and an unchanged change per held atom (about 1.07 KB an atom,
every ``ALTM_SWEEP_INTERVAL_S``: some 78 MB a day of log at the default limit, with no input at all). Only a
reviewer lifts a hold; the sweep leaves held atoms to the review queue now."""

from __future__ import annotations

import pytest

import altm.wiring._deployment as deployment_module
from altm.core import Settings
from altm.store import ShardSet
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import make_turn

HELD = 20
ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."


@pytest.fixture
def close_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A guard similarity that finds every text close to every anti-pattern (what the local embedder does for
    near-topic statements): atoms sharing a term with the pattern are flagged, held for review."""
    monkeypatch.setattr(deployment_module, "guard_similarity", lambda _settings: (lambda _a, _b: 0.72))


async def test_the_sweep_converges_over_atoms_held_for_review(settings: Settings, close_meaning: None) -> None:
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(0, ANTI, session="s0")])
        await rt.run_until_idle()
        await rt.publish([make_turn(i, f"I decided to use pickle for the job queue number {i}.", session=f"s{i}")
                          for i in range(1, HELD + 1)])
        await rt.run_until_idle()
        held = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND trust_reason LIKE 'write guard:%'")
        assert len(held) == HELD
        # one atom verify never judged (its stage deferred it, a worker died before it): newer than the held ones
        await rt.publish([make_turn(99, "We decided the deploy day is Tuesday.", session="s99")])
        await rt.run_until_idle()
        (late,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content LIKE '%Tuesday%'")
        shards = ShardSet(s.data_dir, s.partitions)
        try:
            for shard in shards.existing():
                shard._db.execute("UPDATE memories SET trust_status='unverified', trust_method=NULL, "
                                  "trust_verified_at=NULL WHERE memory_id=?", (late["memory_id"],))
        finally:
            shards.close()
        passes = []
        for _ in range(3):
            passes.append(await app.admin.sweep(limit=HELD))
            await rt.run_until_idle()
    verdict = rows(s.data_dir, "SELECT trust_status FROM memories WHERE memory_id=?", (late["memory_id"],))
    assert passes[-1] == 0, f"every pass named the {HELD} held atoms again: {passes}"
    assert verdict[0]["trust_status"] != "unverified", "the never-verified atom behind the held ones was never reached"

"""A memory whose evidence retention forgot whole is flagged (``evidence_forgotten``) but keeps a verdict it was
given: it was flagged "uncertain" over whatever verdict it had, so an atom verify found contradicted by a later
atom still stored lost the contradiction (recall weighed it as uncertain, 0.9 where contradicted is 0.6, and
nothing named the atom that contradicts it). Fails on 4345f14 and on 777ede0."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

OLD = [t.model_copy(update={"timestamp": T0 - timedelta(days=30 - i)}) for i, t in enumerate([
    make_turn(1, "The deadline is December 15.", session="s1"),
    make_turn(2, "Actually, the deadline is January 10, not December 15.", session="s2")])]
ATOMS = ("SELECT memory_id, content, evidence, trust_status, trust_contradicting_id FROM memories "
         "WHERE layer='L2' ORDER BY valid_from")


async def test_a_contradicted_atom_stays_contradicted_when_its_evidence_is_forgotten(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 10.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish(OLD)
        await rt.run_until_idle()
        older, newer = rows(s.data_dir, ATOMS)
        assert (older["trust_status"], older["trust_contradicting_id"]) == ("contradicted", newer["memory_id"])
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0'")
        after = {r["memory_id"]: r for r in rows(s.data_dir, ATOMS)}
    assert newer["memory_id"] in after  # the atom that contradicts it is still stored
    kept = after[older["memory_id"]]
    assert (kept["trust_status"], kept["trust_contradicting_id"]) == ("contradicted", newer["memory_id"]), kept

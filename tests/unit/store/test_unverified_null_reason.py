"""The trust sweep leaves atoms the write guard holds to the review queue (their reason begins "write guard: "),
and only those: an uncertain atom without a reason is still named (SQL's NULL made ``NOT (… = ?)`` unknown, which
left it out: a review of the sweep's change)."""

from __future__ import annotations

from pathlib import Path

from altm.store import GUARD_HOLD, MaintenanceQueries, ShardSet


def test_an_uncertain_atom_without_a_reason_is_swept(tmp_path: Path) -> None:
    shards = ShardSet(tmp_path / "d", 1)
    try:
        db = shards.get(0)._db
        insert = ("INSERT INTO memories (memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, layer, "
                  "kind, content, content_hash, attributes, evidence, method, processor, recorded_at, valid_from, "
                  "trust_status, trust_reason) VALUES (?, 't', 'w', 'u', 'a', 's', 'L2', 'fact', ?, ?, '{}', '[]', "
                  "'heuristic', 'extract', 'then', ?, 'uncertain', ?)")
        db.execute(insert, ["mem_held", "held", "h1", "2026-01-01", f"{GUARD_HOLD}may re-assert mem_x"])
        db.execute(insert, ["mem_plain", "plain", "h2", "2026-01-02", None])
        db.execute(insert, ["mem_other", "other", "h3", "2026-01-03", "conflicts with an earlier memory"])
        named = [r["memory_id"] for r in MaintenanceQueries(shards).unverified(10)]
    finally:
        shards.close()
    assert named == ["mem_plain", "mem_other"]

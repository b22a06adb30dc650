"""A graph edge's evidence is the union of every memory that ever linked its ends (a ``CO_OCCURS`` edge between
two people of a long conversation gains one at nearly every turn), and each addition wrote the whole list to
the audit log twice (old and new value): the audit grew with the square of the edge's evidence (one session of
600 LoCoMo turns: one edge written 183 times, 0.76 MB of old values alone). An addition is now audited as what
it added, with the counts before and after; a rollback of it takes out what it added."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from altm.core import Role, Scope, Settings, TurnEvent, partition_for
from altm.store import Shard
from tests.support.memories import running
from tests.support.rows import EVIDENCE

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _turns(start: int, n: int) -> list[TurnEvent]:
    return [TurnEvent(scope=SCOPE, session_id=f"s{i // 10}", turn_id=f"t{i}", role=Role.USER,
                      content=f"Priya and Marcus went over the item number {i} of the list today.",
                      timestamp=T0 + timedelta(minutes=i)) for i in range(start, start + n)]


def _busiest_edge(shard: Shard) -> tuple[str, int, int]:
    """(edge id, its evidence, the audit bytes written about it) of the edge with the most evidence."""
    edge_id, evidence = max(((str(r[0]), len(orjson.loads(r[1]))) for r in shard._db.execute(
        f"SELECT edge_id, {EVIDENCE} FROM graph_edges WHERE edge_type='CO_OCCURS'")), key=lambda e: e[1])
    written = shard._db.execute("SELECT SUM(LENGTH(COALESCE(old_value, ''))) + SUM(LENGTH(new_value)) "
                                "FROM audit_log WHERE target_id=?", (edge_id,)).fetchone()[0]
    return edge_id, evidence, int(written)


async def test_an_edge_gaining_evidence_writes_its_audit_in_proportion_to_what_it_gains(settings: Settings) -> None:
    async with running(settings.model_copy(update={"embedder": "none"})) as rt:
        shard = rt.shards.get(partition_for(SCOPE.home, settings.partitions))
        for start in (0, 60):
            await rt.publish(_turns(start, 60))
            await rt.run_until_idle()
            if start == 0:
                first_id, first_evidence, first_written = _busiest_edge(shard)
        edge_id, evidence, written = _busiest_edge(shard)
    assert edge_id == first_id and evidence >= 2 * first_evidence - 2 and first_evidence >= 50
    # twice the evidence: twice the audit, not four times (on main: 3.5 times, 685 KB at 120 turns)
    assert written < 2.5 * first_written
    assert written < 1_500 * evidence


async def test_rolling_back_an_addition_takes_out_what_it_added_and_keeps_the_rest(settings: Settings) -> None:
    async with running(settings.model_copy(update={"embedder": "none"})) as rt:
        await rt.publish(_turns(0, 12))
        await rt.run_until_idle()
        shard = rt.shards.get(partition_for(SCOPE.home, settings.partitions))
        edge_id, before, _ = _busiest_edge(shard)
        proposal_id = shard._db.execute(
            "SELECT proposal_id FROM audit_log WHERE target_id=? AND action='update' ORDER BY audit_id LIMIT 1",
            (edge_id,)).fetchone()[0]
        with shard.transaction() as tx:
            (entry,) = [a for a in tx.decision_audit(proposal_id) if a.target_id == edge_id]
            assert entry.new is not None
            added = entry.new["evidence"]["added"]
            assert len(added) == 1 and entry.old is not None and entry.old["evidence"] == {"count": 1}
            assert tx.restore(entry, at=T0.isoformat(), proposal_id="p-undo") == "restored"
        row = shard._db.execute(f"SELECT {EVIDENCE}, weight, unit_weight FROM graph_edges WHERE edge_id=?",
                                (edge_id,)).fetchone()
    kept = orjson.loads(row[0])
    assert len(kept) == before - 1 and added[0] not in kept  # the later additions stay
    assert row[1] == row[2] * len(kept)


def _edge_row(edge_id: str, count: int) -> dict[str, object]:
    return {"edge_id": edge_id, "tenant_id": "t", "workspace_id": "w", "user_id": "u", "agent_id": "a",
            "src_id": "node_a", "dst_id": "node_b", "edge_type": "CO_OCCURS", "label": None, "unit_weight": 0.5,
            "weight": 0.5 * count, "confidence": 1.0, "rejected": 0, "evidence_count": count,
            "method": "heuristic", "recorded_at": T0.isoformat()}


def _evidence(shard: Shard, edge_id: str) -> tuple[list[str], float] | None:
    row = shard._db.execute(f"SELECT {EVIDENCE}, weight FROM graph_edges WHERE edge_id=?", (edge_id,)).fetchone()
    return None if row is None else (orjson.loads(row[0]), float(row[1]))


def test_a_forgets_pruning_is_audited_as_what_it_removed_and_rolls_back(tmp_path: Path) -> None:
    """Since version 13 an edge's evidence is a table: a forget finds the edges of what it forgot through its
    index, takes those out (audited as what it removed, not the whole list), and a rollback puts them back; an
    edge left with no evidence goes, audited with it, and comes back whole."""
    shard = Shard(tmp_path / "s.db", 0).open()
    at = T0.isoformat()
    try:
        with shard.transaction() as tx:
            tx.put_edge(_edge_row("e1", 3), None, added=["m1", "m2", "m3"], at=at, proposal_id="p-link", actor="link")
            tx.put_edge(_edge_row("e2", 1), None, added=["m2"], at=at, proposal_id="p-link", actor="link")
            tx.prune_graph(SCOPE, ["m2"], set(), at=at, proposal_id="p-forget", actor="lifecycle")
        assert _evidence(shard, "e1") == (["m1", "m3"], 1.0)
        assert _evidence(shard, "e2") is None  # its only evidence was forgotten
        with shard.transaction() as tx:
            entries = {a.target_id: a for a in tx.decision_audit("p-forget") if a.table == "graph_edges"}
            assert entries["e1"].new == {"evidence": {"count": 2, "removed": ["m2"]}, "weight": 1.0}
            assert entries["e2"].old is not None and entries["e2"].old["evidence"] == ["m2"]
            assert [tx.restore(entries[e], at=at, proposal_id="p-undo") for e in ("e1", "e2")] == [
                "restored", "reinserted"]
        assert _evidence(shard, "e1") == (["m1", "m2", "m3"], 1.5)
        assert _evidence(shard, "e2") == (["m2"], 0.5)
    finally:
        shard.close()

"""From the review of the edge evidence table (76839c4): rollbacks of graph edge changes in any order and across
the upgrade, the benchmark's generated store, the audit scan, and edges of erased memories."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import orjson

from altm.core import Scope
from altm.store import Shard
from tests.support.rows import EVIDENCE

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
AT = datetime(2026, 1, 1, tzinfo=UTC).isoformat()


def _edge_row(edge_id: str, count: int, unit: float = 0.5) -> dict[str, object]:
    return {"edge_id": edge_id, "tenant_id": "t", "workspace_id": "w", "user_id": "u", "agent_id": "a",
            "src_id": "node_a", "dst_id": "node_b", "edge_type": "CO_OCCURS", "label": None, "unit_weight": unit,
            "weight": unit * count, "confidence": 1.0, "rejected": 0, "evidence_count": count,
            "method": "heuristic", "recorded_at": AT}


def _edge(shard: Shard, edge_id: str) -> tuple[list[str], float, int] | None:
    row = shard._db.execute(f"SELECT {EVIDENCE}, weight, evidence_count FROM graph_edges WHERE edge_id=?",
                            (edge_id,)).fetchone()
    return None if row is None else (orjson.loads(row[0]), float(row[1]), int(row[2]))


def _entry(shard: Shard, proposal_id: str, edge_id: str):  # type: ignore[no-untyped-def]
    with shard.transaction() as tx:
        (entry,) = [a for a in tx.decision_audit(proposal_id) if a.table == "graph_edges" and a.target_id == edge_id]
    return entry


# -- 1. restoring a deletion replaces the edge that stands again, dropping what it gained since ---------------
def test_rolling_back_a_forget_that_deleted_an_edge_keeps_the_evidence_it_gained_since(tmp_path: Path) -> None:
    """A forget took an edge's only evidence (m1): the edge went, audited whole. A later turn (m9) links the same
    two nodes: the edge stands again, on m9. Rolling the forget back must give m1 back *to* that edge; it
    replaces the edge by the deleted image, so m9 (still stored, still naming both) is no longer evidence and
    the weight is one unit short. Had m9 come before the forget, the same rollback keeps it (removal delta):
    the state after {turns, forget, rollback} depends on the order of the turn and the forget."""
    shard = Shard(tmp_path / "s.db", 0).open()
    try:
        with shard.transaction() as tx:
            tx.put_edge(_edge_row("e1", 1), None, added=["m1"], at=AT, proposal_id="p-link1", actor="link")
            tx.prune_graph(SCOPE, ["m1"], set(), at=AT, proposal_id="p-forget", actor="lifecycle")
        assert _edge(shard, "e1") is None
        with shard.transaction() as tx:
            tx.put_edge(_edge_row("e1", 1), None, added=["m9"], at=AT, proposal_id="p-link9", actor="link")
        entry = _entry(shard, "p-forget", "e1")
        with shard.transaction() as tx:
            tx.restore(entry, at=AT, proposal_id="p-undo")
        # the other order (m9 first, then the forget, then its rollback) gives (["m1", "m9"], 1.0, 2)
        assert _edge(shard, "e1") == (["m1", "m9"], 1.0, 2)
    finally:
        shard.close()


# -- 1b. the same through a pre-13 audit row: the legacy pruning shape is restored as a whole image ----------
def test_rolling_back_a_forget_made_before_version_13_keeps_the_evidence_added_after_it(tmp_path: Path) -> None:
    """A forget made before the upgrade audited its pruning of e1 as the whole old row (evidence as a JSON
    string) and ``{"evidence": "[...]", "weight": w}``. After the upgrade the CO_OCCURS edge keeps gaining
    evidence (m4, a later turn). Rolling the old forget back goes through the whole-image path: the edge is
    deleted and put back as the old row, so m4 is no longer evidence (and the weight is one unit short),
    though the legacy row says exactly what it removed (old list minus new list: m1)."""
    from tests.unit.store.test_migrations import _at_version

    path = tmp_path / "s.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _at_version(conn, 12)
    old = {**_edge_row("e1", 3), "evidence": '["m1","m2","m3"]', "weight": 1.5}
    old.pop("evidence_count")
    now = {**old, "evidence": '["m2","m3"]', "weight": 1.0}
    cols = list(now)
    conn.execute(f"INSERT INTO graph_edges ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                 [now[c] for c in cols])
    conn.execute("INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
                 "new_value) VALUES (?, 'p-forget', 'lifecycle', 'delete', 'graph_edges', 'e1', ?, ?)",
                 [AT, orjson.dumps(old).decode(), orjson.dumps({"evidence": '["m2","m3"]', "weight": 1.0}).decode()])
    conn.close()
    shard = Shard(path, 0).open()  # migrates to the latest version
    try:
        assert _edge(shard, "e1") == (["m2", "m3"], 1.0, 2)
        with shard.transaction() as tx:  # a turn after the upgrade: the edge gains m4 (as _put_edge writes it)
            current = tx.edge("e1")
            assert current is not None
            tx.put_edge({**current, "evidence_count": 3, "weight": 1.5}, current, added=["m4"], at=AT,
                        proposal_id="p-link4", actor="link")
        entry = _entry(shard, "p-forget", "e1")
        with shard.transaction() as tx:
            tx.restore(entry, at=AT, proposal_id="p-undo")
        assert _edge(shard, "e1") == (["m1", "m2", "m3", "m4"], 2.0, 4)
    finally:
        shard.close()


# -- 2. restoring a removal on an edge a later forget deleted restores nothing --------------------------------
def test_rolling_back_two_forgets_oldest_first_gives_the_edge_back_all_its_evidence(tmp_path: Path) -> None:
    """e1 stands on m1 and m2. Forget F1 takes m1 (removal delta), forget F2 takes m2 (the edge goes, image
    [m2]). Rolling back F1 then F2 must leave e1 on m1 and m2 (both memories are back); F1's removal delta
    finds no edge and is reported done ("removed"), F2 then brings the edge back on m2 only: m1 is lost."""
    shard = Shard(tmp_path / "s.db", 0).open()
    try:
        with shard.transaction() as tx:
            tx.put_edge(_edge_row("e1", 2), None, added=["m1", "m2"], at=AT, proposal_id="p-link", actor="link")
            tx.prune_graph(SCOPE, ["m1"], set(), at=AT, proposal_id="p-f1", actor="lifecycle")
            tx.prune_graph(SCOPE, ["m2"], set(), at=AT, proposal_id="p-f2", actor="lifecycle")
        f1, f2 = _entry(shard, "p-f1", "e1"), _entry(shard, "p-f2", "e1")
        with shard.transaction() as tx:
            tx.restore(f1, at=AT, proposal_id="p-undo1")
            tx.restore(f2, at=AT, proposal_id="p-undo2")
        assert _edge(shard, "e1") == (["m1", "m2"], 1.0, 2)
    finally:
        shard.close()


# -- 3. the latency benchmark still writes the version-12 column order ---------------------------------------
def test_the_latency_benchmarks_generated_edges_are_well_formed(tmp_path: Path) -> None:
    """benchmarks/latency.py inserts 16 positional values into graph_edges, the 14th being the evidence JSON:
    since version 13 the 14th column is ``method`` and the 16th ``evidence_count``, so every generated edge has
    method '["mem_..."]', recorded_at 'heuristic', evidence_count a timestamp, and no evidence rows (a forget or
    an erasure over that store fails on int(evidence_count))."""
    from benchmarks import latency

    data = tmp_path / "data"
    latency.generate(data, 12, users=1)
    edges, cited = [], 0
    for path in sorted((data / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(path)
        try:
            edges += conn.execute("SELECT edge_id, method, evidence_count FROM graph_edges").fetchall()
            cited += conn.execute("SELECT COUNT(*) FROM graph_edge_evidence").fetchone()[0]
        finally:
            conn.close()
    assert edges
    assert {(m, c) for _, m, c in edges} == {("heuristic", 1)}, edges[:2]
    assert cited == len(edges)


# -- 4. the audit-coverage scan does not see the new state table ----------------------------------------------
def test_the_audit_coverage_scan_covers_graph_edge_evidence() -> None:
    """graph_edge_evidence is memory state (it is in the state hash, through graph_edges), but the scan of
    tests/unit/pipeline/test_audit_coverage.py matches ``graph_edges\\b`` only: an unaudited write to the new
    table would pass it. (Adding it shows put_edge writes it after ``_put_row`` and not after ``self._audit``:
    the scan must also count _put_row as the audit, or put_edge must audit itself.)"""
    from tests.unit.pipeline import test_audit_coverage as coverage

    assert coverage.MUTATION.search("INSERT OR IGNORE INTO graph_edge_evidence (edge_id, memory_id) VALUES (?, ?)")
    assert coverage.MUTATION.search("DELETE FROM graph_edge_evidence WHERE edge_id=? AND memory_id=?")


# -- 5. (pre-existing) a rollback after an erasure brings back evidence rows of the erased memory -------------
def test_rolling_back_a_forget_after_an_erasure_does_not_bring_back_edges_of_the_erased_memory(
        tmp_path: Path) -> None:
    """A merge left DUPLICATE_OF D -> C (evidence [C, D]); retention forgot D (the edge went, audited whole);
    then C was erased (memory target: the forget's audit rows are not redacted, so the rollback is allowed).
    Rolling the forget back reinserts the edge with C as its end and its evidence: graph_edge_evidence names
    an erased memory again."""
    shard = Shard(tmp_path / "s.db", 0).open()
    row = {**_edge_row("dup", 2, 1.0), "src_id": "D", "dst_id": "C", "edge_type": "DUPLICATE_OF"}
    try:
        with shard.transaction() as tx:
            tx.put_edge(row, None, added=["C", "D"], at=AT, proposal_id="p-merge", actor="govern")
            ends = tx.delete_edges_touching(["D"], at=AT, proposal_id="p-forget", actor="lifecycle")
            tx.prune_graph(SCOPE, ["D"], ends, at=AT, proposal_id="p-forget", actor="lifecycle")
            tx.scrub(SCOPE, ["C"], all_cache=False, at=AT, proposal_id="p-erase")
        shard._db.execute(  # the tombstone C's erasure leaves (the writer's erase op buries what it removes)
            "INSERT INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
            "normalised_text, reason, at, memory_id, layer) VALUES ('tomb_c', 't', 'w', 'u', 'a', 'h', '', "
            "'memory erased: a test', ?, 'C', 'L2')", (AT,))
        with shard.transaction() as tx:
            audits = tx.decision_audit("p-forget")
            assert not any(a.redacted for a in audits)  # governance.rollback lets it through
            for a in audits:
                tx.restore(a, at=AT, proposal_id="p-undo")
        assert shard._db.execute("SELECT COUNT(*) FROM graph_edge_evidence WHERE memory_id='C'").fetchone()[0] == 0
        assert _edge(shard, "dup") is None
    finally:
        shard.close()

"""The rollback part of a shard's write transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from altm.store._errors import ShardError
from altm.store._rows import (
    REVIEWED_COLUMNS,
    carry_over,
    changed_since,
    columns,
    memory_row,
)
from altm.store._tx._common import (
    RESTORABLE_SIGNAL,
    AuditEntry,
    Row,
    _edge_delta,
    _evidence_of,
    _signal_key,
    node_union,
)
from altm.store._tx._erasure import _TxErasure


class _TxRestore(_TxErasure):
    """Rollbacks: an audited change put back as it was before."""

    _KEYS: ClassVar[dict[str, str]] = {"memories": "memory_id", "graph_nodes": "node_id", "graph_edges": "edge_id",
                                       "held_actions": "action_id", "tombstones": "tombstone_id",
                                       "governance_events": "event_id"}

    def restore(self, entry: AuditEntry, *, at: str, proposal_id: str) -> str:
        """Undo one audited change (rollback): the row goes back to its old value (or away if it had none).
        Every restoration is audited in turn. Returns "removed", "restored" or "reinserted"."""
        table, target_id, old, new = entry.table, entry.target_id, entry.old, entry.new
        if table == "memories":
            return self._restore_memory(target_id, old, new, at=at, proposal_id=proposal_id)
        if table == "graph_edges":
            return self._restore_edge(target_id, old, new, at=at, proposal_id=proposal_id)
        if table in self._KEYS:
            key = self._KEYS[table]
            current = self._row(table, key, target_id)
            if old is None:
                if current is not None:
                    self._rollback_delete(table, key, current, at=at, proposal_id=proposal_id)
                return "removed"
            if table == "graph_nodes" and current is not None:  # made again, or respelled, since: both as one
                old = node_union(old, current)
            self._put_row(table, key, old, current, at=at, proposal_id=proposal_id, actor="rollback")
            return "restored" if current is not None else "reinserted"
        if table == "evidence_edges" and old is not None:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="insert", table=table,
                        target_id=target_id, old=None, new=old)
            self._db.execute("INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
                             (old["memory_id"], old["evidence_id"]))
            return "reinserted"
        if table == "lifecycle_signals":
            return self._restore_signal(target_id, old, new, at=at, proposal_id=proposal_id)
        if table == "rejections" and old is not None:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="update", table=table,
                        target_id=target_id, old=new, new=old)
            self._db.execute("UPDATE rejections SET review_status=? WHERE rejection_id=?",
                             (old["review_status"], int(target_id.removeprefix("rej_"))))
            return "restored"
        raise ShardError(f"cannot roll back a change to {table}")

    def _restore_signal(self, target_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str) -> str:
        """A use signal a decision counted goes (its whole row in the audit, under the signal's own key, so
        that :meth:`signal_seen` still knows it: its event delivered again counts nothing); one a rollback took
        is counted again when that rollback is rolled back."""
        if old is None and new is not None:
            memory_id = target_id.split("/")[0]
            row = self._db.execute("SELECT * FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                                   (memory_id, new["signal_id"], new["kind"])).fetchone()
            if row is not None:
                self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete",
                            table="lifecycle_signals", target_id=_signal_key(memory_id, new["signal_id"], new["kind"]),
                            old=dict(row), new=None)
                self._db.execute("DELETE FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                                 (memory_id, new["signal_id"], new["kind"]))
            return "removed"
        if old is not None and new is None and self.signal_erased(target_id):
            return "erased"  # its sender was erased since: a replay never counted it
        if old is not None and new is None and old.keys() >= RESTORABLE_SIGNAL:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="insert", table="lifecycle_signals",
                        target_id=target_id, old=None, new=old)
            self._db.execute(
                "INSERT OR IGNORE INTO lifecycle_signals (memory_id, signal_id, kind, at, level, seq, agent_id, "
                "session_id) VALUES (?,?,?,?,?,?,?,?)", [old.get(c) for c in (
                    "memory_id", "signal_id", "kind", "at", "level", "seq", "agent_id", "session_id")])
            return "reinserted"
        raise ShardError("cannot roll back this change to lifecycle_signals (a rollback recorded by an older "
                         "release kept no copy of the signal it removed)")

    def _rollback_delete(self, table: str, key: str, current: Row, *, at: str, proposal_id: str) -> None:
        """A rollback deletes ``current`` (audited with its value)."""
        image = self._edge_image(current) if table == "graph_edges" else current
        self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete", table=table,
                    target_id=str(current[key]), old=image, new=None)
        self._db.execute(f"DELETE FROM {table} WHERE {key}=?", (current[key],))

    def _restore_edge(self, edge_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str) -> str:
        """Undo one audited change of a graph edge, whatever came after it: an addition to its evidence loses
        what it added (what was added since stays), a removal gives back what it removed, an insert takes the
        edge away, and a deletion brings it back with what it cited, into the edge made again since if there
        is one. Evidence or an end erased since does not come back."""
        current = self.edge(edge_id)
        delta = _edge_delta(old, new)
        if delta is None and old is None:  # an insert
            if current is not None:
                self._rollback_delete("graph_edges", "edge_id", current, at=at, proposal_id=proposal_id)
            return "removed"
        added, removed = delta if delta is not None else ((), _evidence_of(old))
        outcome = "restored"
        if removed:
            outcome = self._edge_back(edge_id, current, old or {}, removed, at=at, proposal_id=proposal_id)
        if added:
            outcome = self._edge_without(edge_id, old or {}, added, at=at, proposal_id=proposal_id)
        return outcome

    def _edge_back(self, edge_id: str, current: Row | None, image: Row, evidence: Sequence[str], *, at: str,
                   proposal_id: str) -> str:
        """The edge cites ``evidence`` again: added to ``current``, or, when it is gone, made again from
        ``image`` (its audited row) with that evidence alone. An erased memory is neither evidence nor an end."""
        base = current if current is not None else {k: v for k, v in image.items() if k != "evidence"}
        if "src_id" not in base or any(self._edge_erased(base, str(base[end])) for end in ("src_id", "dst_id")):
            return "removed"  # no row to make it from (a partial image), or an end was erased since
        wanted = [e for e in evidence if not self._edge_erased(base, e)]
        back = self.new_edge_evidence(edge_id, wanted) if current is not None else sorted(set(wanted))
        if not back:
            return "removed" if current is None else "restored"
        count = (int(current["evidence_count"]) if current is not None else 0) + len(back)
        row = {**base, "evidence_count": count, "weight": float(base["unit_weight"]) * count}
        self.put_edge(row, current, added=back, at=at, proposal_id=proposal_id, actor="rollback")
        return "restored" if current is not None else "reinserted"

    def _edge_without(self, edge_id: str, old: Row, added: Sequence[str], *, at: str, proposal_id: str) -> str:
        """The edge loses what an addition added and takes the addition's other old values back."""
        current = self.edge(edge_id)
        if current is None:
            return "removed"  # gone since (a forget took its last evidence): nothing is left to take out
        taken = set(added) - set(self.new_edge_evidence(edge_id, sorted(set(added))))  # those it still cites
        count = int(current["evidence_count"]) - len(taken)
        if count <= 0:
            self._rollback_delete("graph_edges", "edge_id", current, at=at, proposal_id=proposal_id)
            return "removed"
        unit = float(old.get("unit_weight") or current["unit_weight"])
        row = {**current, **{k: v for k, v in old.items() if k in current and k != "evidence"},
               "evidence_count": count, "weight": unit * count}
        self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="update", table="graph_edges",
                    target_id=edge_id, old={**current, "evidence": {"count": int(current["evidence_count"])}},
                    new={**row, "evidence": {"count": count, "removed": sorted(taken)}})
        self._write_row("graph_edges", "edge_id", row, current)
        self._db.executemany("DELETE FROM graph_edge_evidence WHERE edge_id=? AND memory_id=?",
                             [(edge_id, mid) for mid in sorted(taken)])
        return "restored"

    def _restore_memory(self, memory_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str
                        ) -> str:
        """The memory as the audit row's old value has it, except for what changed since the decision left it
        as ``new`` (:func:`changed_since`: a verdict, a supersession, use signals, any column): a later decision
        outlives the rollback of an earlier one. A reviewer's verdict outlives it as it outlives an erasure of
        what it was judged by, and so does verify's (a contradiction found after a demotion stays when the
        demotion is rolled back); a supersession after a demotion stays when the demotion is rolled back, and a
        pin given after it stays pinned (the rollback tallies the signals left again: ``ops.governance``)."""
        current = self.memory_row(memory_id)
        if old is None:
            if current is not None:
                self.delete_memory(current, at=at, proposal_id=proposal_id, actor="rollback", redact=False)
            return "removed"
        prior = memory_row(old)
        if current is None:
            self.insert_memory(prior, at=at, proposal_id=proposal_id, actor="rollback")
            return "reinserted"
        now = columns(current)
        kept = changed_since(current, new) if new is not None else [
            c for c in REVIEWED_COLUMNS if now[c] is not None]  # the decision removed it: a verdict since stands
        if "superseded_by" not in kept and now["lc_state"] == "merged" and (new or {}).get("lc_state") == "merged":
            kept = [c for c in kept if c != "lc_state"]  # a merge undone: its state goes with it
        if set(kept) & set(REVIEWED_COLUMNS) or not isinstance(prior["trust_reason"], str | None):
            # a verdict given since, or one an erasure cleared (its reason quoted the erased memory: redacted)
            rejected = now["trust_method"] == "ground_truth" and current["lc_state"] == "rejected"
            kept = [*kept, *REVIEWED_COLUMNS, *(("lc_state",) if rejected else ())]
        self.update_memory(current, carry_over(prior, current, dict.fromkeys(kept)), at=at,
                           proposal_id=proposal_id, actor="rollback")
        return "restored"

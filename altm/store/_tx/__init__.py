"""The open write transaction of one shard: the only way to change memory state (DESIGN §1.2, §3).

:meth:`Shard.transaction` yields a :class:`ShardTx`; once the transaction has ended, the object refuses every
call. Each mutation writes its audit row (with the old value) first, in the same transaction. The reads here
are the ones the writer needs inside the transaction (they see its uncommitted writes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from altm.core import Scope, derive_id
from altm.store._tx._common import (
    MEMORY_ID,
    RESTORABLE_SIGNAL,
    AuditEntry,
    SignalTally,
    Tombstone,
    _json,
    merged_attributes,
    node_union,
    upsert_applied,
)
from altm.store._tx._restore import _TxRestore


class ShardTx(_TxRestore):
    """One shard's write transaction: every mutation of memory state, audited, and the reads made inside it."""

    def record_decision(self, decision_id: str, scope: Scope, decision: str, steps: Sequence[tuple[str, str]],
                        inputs: Mapping[str, Any], *, at: str) -> None:
        """Record the steps (evaluated → decided → applied/held/rolled_back) of an autonomous decision,
        each once, with its inputs and reason. Not one that names a memory an erasure removed (a replay meets
        such a decision again after the erasure, which deleted its record: see :meth:`_scrub_references`)."""
        named = sorted(set(MEMORY_ID.findall(" ".join([_json(dict(inputs)), *(reason for _, reason in steps)]))))
        if named and self._erased_among(named):
            return
        for step, reason in steps:
            self._db.execute(
                "INSERT OR IGNORE INTO governance_events (event_id, decision_id, tenant_id, workspace_id, user_id, "
                "agent_id, decision, step, inputs, reason, at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (derive_id("gov", decision_id, step), decision_id, scope.tenant_id, scope.workspace_id,
                 scope.user_id, scope.agent_id, decision, step, _json(dict(inputs)), reason, at))

    def store_offset(self, group_id: str, topic: str, partition: int, next_offset: int) -> None:
        """The next offset to apply; it never moves back (a stale writer of the same shard cannot rewind it)."""
        self._db.execute(
            "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) VALUES (?,?,?,?) "
            "ON CONFLICT(group_id, topic, partition) DO UPDATE SET next_offset=MAX(next_offset, excluded.next_offset)",
            (group_id, topic, partition, next_offset),
        )

    def unpublished_of(self, home: str) -> list[tuple[int, bytes]]:
        """(seq, value) of the outbox rows of the user ``home`` not published yet (an erasure drops its own)."""
        return [(int(r[0]), bytes(r[1])) for r in self._db.execute(
            "SELECT seq, value FROM outbox WHERE key=? AND published=0", (home,))]

    def drop_unpublished(self, seqs: Sequence[int]) -> None:
        """Outbox bookkeeping, not memory state: no audit row."""
        self._db.executemany("DELETE FROM outbox WHERE seq=?", [(q,) for q in seqs])

    def enqueue(self, topic: str, key: str | None, value: bytes, headers: bytes | None = None) -> None:
        self._db.execute("INSERT INTO outbox (topic, key, value, headers) VALUES (?,?,?,?)",
                         (topic, key, value, headers))



__all__ = ["MEMORY_ID", "RESTORABLE_SIGNAL", "AuditEntry", "ShardTx", "SignalTally", "Tombstone", "merged_attributes",
           "node_union", "upsert_applied"]

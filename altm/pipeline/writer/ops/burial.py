"""Tombstones carried on the log: the writer that buried content publishes the tombstones (hashes only) as a
``bury`` proposal after the erasure or forget; a shard restored from the log takes them over here, since the
erased content's own records no longer open there. Where they were made they are there already: unchanged."""

from __future__ import annotations

import orjson

from altm.core import BuryProposal, ChangeStatus, derive_id
from altm.pipeline.writer.guard import guard_key_id, guard_key_of
from altm.pipeline.writer.ops._base import Applied, OpContext, Rejection
from altm.store import ShardTx


def carry_burial(tx: ShardTx, p: BuryProposal, ctx: OpContext) -> Applied:
    """Insert the tombstones this shard lacks, when they were hashed with the guard key it holds for the user."""
    scope, burial = p.scope, p.burial
    for tomb in burial.tombstones:  # a tombstone's id names its user and memory: none of another scope home
        if tomb.tombstone_id != derive_id("tomb", scope.tenant_id, scope.workspace_id, scope.user_id, tomb.memory_id):
            raise Rejection(f"tombstone {tomb.tombstone_id} is not the one of memory {tomb.memory_id} in scope home "
                            f"{scope.home!r}", code="foreign_scope")
    missing = [t for t in burial.tombstones if not tx.has_tombstone(t.tombstone_id)]
    if not missing:
        return Applied(ChangeStatus.UNCHANGED)
    held = guard_key_id(guard_key_of(tx, scope.home, ctx.guard_keys))
    if held != burial.guard_key_id:
        raise Rejection(
            f"{len(missing)} tombstones of {scope.home!r} were hashed with guard key {burial.guard_key_id}, and this "
            f"shard holds {held} for that user: they would match nothing here (the key store that made them is not "
            "this deployment's, or the shard kept a key of its own from before guard keys were in the key store)",
            code="guard_key")
    for tomb in missing:
        tx.carry_tombstone({
            "tombstone_id": tomb.tombstone_id, "tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id,
            "user_id": scope.user_id, "agent_id": tomb.agent_id, "value_hash": tomb.value_hash, "normalised_text": "",
            "reason": tomb.reason, "at": tomb.at, "memory_id": tomb.memory_id, "layer": tomb.layer,
            "shingle_hashes": _json_list(tomb.shingle_hashes), "distinctive": int(tomb.distinctive),
            "term_hashes": _json_list(tomb.term_hashes)}, at=ctx.now, actor="writer", proposal_id=p.event_id)
    return Applied(ChangeStatus.COMMITTED)


def _json_list(hashes: tuple[str, ...]) -> str:
    """As ``ShardTx.tombstone`` stores them: a sorted JSON list."""
    return orjson.dumps(sorted(hashes)).decode()

"""Tombstones carried on the log: the writer that buried content publishes the tombstones (hashes only) as a
``bury`` proposal after the erasure or forget; a shard restored from the log takes them over here, since the
erased content's own records no longer open there. Where they were made they are there already: unchanged."""

from __future__ import annotations

import orjson

from altm.core import BuriedContent, BuryProposal, ChangeStatus, tombstone_id
from altm.pipeline.writer.guard import guard_key_id, held_guard_key
from altm.pipeline.writer.ops._base import Applied, OpContext, Rejection
from altm.store import ShardTx


def carry_burial(tx: ShardTx, p: BuryProposal, ctx: OpContext) -> Applied:
    """Insert the tombstones this shard lacks, when they were hashed with the guard key it holds for the user."""
    scope, burial = p.scope, p.burial
    for tomb in burial.tombstones:  # a tombstone's id names its user and memory: none of another scope home
        if tomb.tombstone_id != tombstone_id(scope.tenant_id, scope.workspace_id, scope.user_id, tomb.memory_id):
            raise Rejection(f"tombstone {tomb.tombstone_id} is not the one of memory {tomb.memory_id} in scope home "
                            f"{scope.home!r}", code="foreign_scope")
    news = [t for t in burial.tombstones if not _holds(tx.tombstone_hashes(t.tombstone_id), t)]
    if not news:
        return Applied(ChangeStatus.UNCHANGED)
    key = held_guard_key(tx, scope.home, ctx.guard_keys)
    if key is None:  # judged by a key some process made when it buried: a forged burial leaves none behind
        raise Rejection(f"{len(news)} tombstones of {scope.home!r} were hashed with guard key {burial.guard_key_id}, "
                        "and neither this shard nor the key store holds a guard key for that user: nothing of it "
                        "was buried in this deployment", code="guard_key")
    ours = guard_key_id(key)
    if ours != burial.guard_key_id:
        raise Rejection(
            f"{len(news)} tombstones of {scope.home!r} were hashed with guard key {burial.guard_key_id}, and this "
            f"shard holds {ours} for that user: they would match nothing here (the key store that made them is not "
            "this deployment's, or the shard kept a key of its own from before guard keys were in the key store)",
            code="guard_key")
    for tomb in news:  # in order: a tombstone too large for one record comes in parts (its hashes join)
        held = tx.tombstone_hashes(tomb.tombstone_id)
        if held is None:
            tx.carry_tombstone({
                "tombstone_id": tomb.tombstone_id, "tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id,
                "user_id": scope.user_id, "agent_id": tomb.agent_id, "value_hash": tomb.value_hash,
                "normalised_text": "", "reason": tomb.reason, "at": tomb.at, "memory_id": tomb.memory_id,
                "layer": tomb.layer, "shingle_hashes": _json_list(tomb.shingle_hashes),
                "distinctive": int(tomb.distinctive), "term_hashes": _json_list(tomb.term_hashes),
                "erasure_id": tomb.erasure_id, "forgotten_by": tomb.forgotten_by,
                "forgotten_reason": tomb.forgotten_reason},
                at=ctx.now, actor="writer", proposal_id=p.event_id)
        elif not _holds(held, tomb):
            tx.add_tombstone_hashes(tomb.tombstone_id, frozenset(tomb.shingle_hashes), frozenset(tomb.term_hashes),
                                    at=ctx.now, actor="writer", proposal_id=p.event_id)
    return Applied(ChangeStatus.COMMITTED)


def _holds(held: tuple[frozenset[str], frozenset[str]] | None, tomb: BuriedContent) -> bool:
    """The shard's tombstone already holds every hash of ``tomb`` (or of this part of it)."""
    return held is not None and set(tomb.shingle_hashes) <= held[0] and set(tomb.term_hashes) <= held[1]


def _json_list(hashes: tuple[str, ...]) -> str:
    """As ``ShardTx.tombstone`` stores them: a sorted JSON list."""
    return orjson.dumps(sorted(hashes)).decode()

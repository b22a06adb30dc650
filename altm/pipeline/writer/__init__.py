"""The writer: the only code that mutates memory state (DESIGN §1.2, "one door for writes").

For each proposal record it, in one shard transaction: validates (scope vs. partition key, size, evidence,
content hash, L0 append-only, targets that exist), writes the audit row before the mutation, applies it
idempotently, stores the consumer offset, and enqueues the resulting ``changes`` event (and any dead letter)
in the outbox. The runtime then publishes the outbox, so a crash between commit and publish loses nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, assert_never

import orjson

from altm.bus import Record
from altm.core import (
    ChangeEvent,
    ChangeStatus,
    DeadLetter,
    DecodeError,
    DeferActionProposal,
    EdgeType,
    EraseProposal,
    ForgetProposal,
    Layer,
    LifecycleState,
    MemoryUnit,
    MergeProposal,
    Proposal,
    ProposalEvent,
    RecordCycleProposal,
    ReviewProposal,
    RollbackProposal,
    SetTrustProposal,
    SignalProposal,
    SupersedeProposal,
    Supersession,
    UpsertEdgeProposal,
    UpsertMemoryProposal,
    UpsertNodeProposal,
    content_hash,
    decode_event,
    derive_id,
    encode,
    original_text,
)
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.pipeline.writer.guard import GuardUnavailable, WriteGuard, value_hash
from altm.store import ShardSet, ShardTx, SignalTally, comparable, memory_to_row, row_to_memory

log = logging.getLogger("altm.writer")

WRITER_GROUP = "altm-writer"
_PAYLOAD_KEEP = 64 * 1024


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _payload_in_home(payload: str | None, home: str) -> bool:
    try:
        scope = orjson.loads(payload or "{}").get("scope") or {}
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return bool(scope) and "/".join(str(scope.get(k)) for k in ("tenant_id", "workspace_id", "user_id")) == home


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _compression_level(tally: SignalTally) -> int:
    """C0 when pinned, never compressed, or used after the last compression; else the last compression level."""
    if tally.pinned or tally.compression is None:
        return 0
    level, seq = tally.compression
    if tally.last_use_seq is not None and tally.last_use_seq >= seq:
        return 0
    if level is None:
        raise TypeError(f"the compress signal #{seq} has no level")
    return level


class Rejection(Exception):
    """Raised inside an op handler: the proposal is refused with this reason (nothing is applied)."""


@dataclass
class WriteOutcome:
    skipped: bool = False
    changes: list[ChangeEvent] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    deferred_reason: str | None = None  # set when the proposal must be retried later


@dataclass
class _Applied:
    status: ChangeStatus
    memory: MemoryUnit | None = None
    also_changed: list[MemoryUnit] = field(default_factory=list)  # rows updated as a consequence
    removed: tuple[str, ...] = ()  # memories the change deleted (their vectors go too)


class Writer:
    def __init__(self, shards: ShardSet, settings: Settings) -> None:
        self.shards = shards
        self.settings = settings
        self.partitions = settings.partitions
        self.proposals_topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        self.changes_topic = topic_name(Topic.CHANGES, settings.topic_prefix)
        self.dlq_topic = topic_name(Topic.DLQ, settings.topic_prefix)
        self.guard = WriteGuard(settings.guard_overlap_threshold)
        self.rules = LifecycleRules()

    def resume_offset(self, topic: str, partition: int) -> int | None:
        """The next proposal offset to apply, as stored with the data (the source of truth on restart)."""
        return self.shards.get(partition).next_offset(WRITER_GROUP, topic, partition)

    def apply(self, record: Record, partitions: int, *, retry: bool = False) -> WriteOutcome:
        """Apply one proposal record. ``retry`` re-applies a record deferred earlier (its offset is stored)."""
        shard = self.shards.get(record.partition)
        stored = shard.next_offset(WRITER_GROUP, record.topic, record.partition)
        if not retry and stored is not None and record.offset < stored:
            return WriteOutcome(skipped=True)  # already applied: at-least-once delivery, idempotent effect
        now = _now()
        with shard.transaction() as tx:
            outcome = self._apply(tx, record, partitions, now)
            if not retry:
                tx.store_offset(WRITER_GROUP, record.topic, record.partition, record.offset + 1)
            for change in outcome.changes:
                tx.enqueue(self.changes_topic, change.key, encode(change))
            for dead in outcome.dead_letters:
                tx.enqueue(self.dlq_topic, record.key, encode(dead))
        return outcome

    # -------------------------------------------------------------------------------------------------
    def _apply(self, tx: ShardTx, record: Record, partitions: int, now: str) -> WriteOutcome:
        try:
            event = decode_event(record.value)
        except DecodeError as exc:
            return self._malformed(tx, record, str(exc), now)
        if not isinstance(event, Proposal):
            return self._malformed(
                tx, record, f"the proposals topic carries proposals, got a {event.event_type} event", now
            )
        try:
            self._check_route(event, record, partitions)
            applied = self._dispatch(tx, event, now)
        except GuardUnavailable as exc:
            log.error("write guard failed on %s[%d]@%d, proposal deferred: %s", record.topic, record.partition,
                      record.offset, exc)
            return WriteOutcome(changes=[self._change(event, record, ChangeStatus.DEFERRED, reason=str(exc))],
                                deferred_reason=str(exc))
        except Rejection as exc:
            reason = str(exc)
            tx.add_rejection(
                at=now, proposal_id=event.event_id, memory_id=event.target_id, reason=reason,
                source=(record.topic, record.partition, record.offset),
                payload=original_text(record.value[:_PAYLOAD_KEEP]),
            )
            return WriteOutcome(changes=[self._change(event, record, ChangeStatus.REJECTED, reason=reason)])
        changes = [self._change(event, record, applied.status, memory=applied.memory, removed=applied.removed)]
        changes += [self._change(event, record, ChangeStatus.COMMITTED, memory=m, target_id=m.memory_id)
                    for m in applied.also_changed]
        return WriteOutcome(changes=changes)

    def _malformed(self, tx: ShardTx, record: Record, reason: str, now: str) -> WriteOutcome:
        tx.add_rejection(
            at=now, proposal_id=None, memory_id=None, reason=f"malformed proposal: {reason}",
            source=(record.topic, record.partition, record.offset),
            payload=original_text(record.value[:_PAYLOAD_KEEP]),
        )
        dead = DeadLetter(
            stage="writer", error=f"malformed proposal: {reason}", original=original_text(record.value),
            source_topic=record.topic, source_partition=record.partition, source_offset=record.offset,
            timestamp=datetime.now(UTC),
        )
        return WriteOutcome(dead_letters=[dead])

    def _dispatch(self, tx: ShardTx, event: ProposalEvent, now: str) -> _Applied:
        match event:
            case UpsertMemoryProposal():
                return self._upsert_memory(tx, event, now)
            case UpsertNodeProposal():
                return self._upsert_node(tx, event, now)
            case UpsertEdgeProposal():
                return self._upsert_edge(tx, event, now)
            case SetTrustProposal():
                return self._set_trust(tx, event, now)
            case SupersedeProposal():
                return self._supersede(tx, event, now)
            case MergeProposal():
                return self._merge(tx, event, now)
            case DeferActionProposal():
                return self._defer_action(tx, event, now)
            case EraseProposal():
                return self._erase(tx, event, now)
            case ReviewProposal():
                return self._review(tx, event, now)
            case SignalProposal():
                return self._signal(tx, event, now)
            case ForgetProposal():
                return self._forget(tx, event, now)
            case RollbackProposal():
                return self._rollback(tx, event, now)
            case RecordCycleProposal():
                return self._record_cycle(tx, event, now)
            case _:
                assert_never(event)

    def _check_route(self, event: Proposal, record: Record, partitions: int) -> None:
        home = event.scope.home
        if record.key != home:
            raise Rejection(
                f"scope home {home!r} does not match the record key {record.key!r}: a proposal must be "
                "keyed by its own scope home"
            )
        expected = partition_for(home, partitions)
        if expected != record.partition:
            raise Rejection(
                f"scope home {home!r} belongs to partition {expected}, but the proposal arrived on "
                f"partition {record.partition}"
            )
        payload_scope = event.memory if isinstance(event, UpsertMemoryProposal) else event.node if isinstance(
            event, UpsertNodeProposal) else event.edge if isinstance(event, UpsertEdgeProposal) else None
        if payload_scope is not None and payload_scope.scope.home != home:
            raise Rejection(
                f"payload scope home {payload_scope.scope.home!r} differs from the proposal's {home!r}"
            )

    def _target_row(self, tx: ShardTx, event: Proposal, memory_id: str, what: str) -> dict[str, Any]:
        row = tx.memory_row(memory_id)
        if row is None:
            raise Rejection(f"{what} {memory_id} is not in this shard")
        home = f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}"
        if home != event.scope.home:
            raise Rejection(f"{what} {memory_id} belongs to scope home {home!r}, not {event.scope.home!r}")
        return row

    # -- op handlers -----------------------------------------------------------------------------------
    def _upsert_memory(self, tx: ShardTx, event: UpsertMemoryProposal, now: str) -> _Applied:
        mem = event.memory
        size = len(mem.content.encode("utf-8"))
        if size > self.settings.max_content_bytes:
            raise Rejection(
                f"content is {size} bytes, over the limit of {self.settings.max_content_bytes} "
                "(ALTM_MAX_CONTENT_BYTES)"
            )
        if mem.content_hash != content_hash(mem.content):
            raise Rejection("content_hash does not match the content")
        if mem.layer is Layer.L0 and mem.evidence:
            raise Rejection("an L0 message is raw input and cannot cite evidence")
        if mem.layer is not Layer.L0 and not mem.evidence:
            raise Rejection(f"a derived {mem.layer.value} memory needs evidence reaching L0")
        for ev in mem.evidence:
            if tx.memory_row(ev) is None:
                raise Rejection(f"evidence {ev} is not in this shard (derived memories cite stored memories)")
        verdict = self.guard.check(tx, mem)
        if verdict is not None:
            raise Rejection(f"write guard: {verdict.reason}")
        new_row = memory_to_row(mem, datetime.fromisoformat(now))
        old_row = tx.memory_row(mem.memory_id)
        also: list[MemoryUnit] = []
        if old_row is None:
            if mem.layer is Layer.L0:
                new_row["context"] = self._previous_content(tx, new_row)
            tx.insert_memory(new_row, at=now, proposal_id=event.event_id, actor=event.processor)
            if mem.layer is Layer.L0:
                also = self._relink_successor(tx, new_row, event, now)
        else:
            # A re-derivation may not reset what other stages wrote (trust, lifecycle, supersession).
            for col in (
                "context", "superseded_at", "superseded_by", "valid_to", "trust_status", "trust_method",
                "trust_confidence", "trust_reason", "trust_contradicting_id", "trust_verified_at",
                "lc_state", "lc_weight", "lc_injected", "lc_cited", "lc_helpful", "lc_harmful", "lc_pinned",
                "lc_compression", "recorded_at",
            ):
                new_row[col] = old_row[col]
            if comparable(old_row) == comparable(new_row):
                return _Applied(ChangeStatus.UNCHANGED)
            if mem.layer is Layer.L0:
                raise Rejection(
                    f"L0 is append-only: {mem.memory_id} (source {mem.source_id!r}) is already stored with "
                    "different content"
                )
            tx.update_memory(old_row, new_row, at=now, proposal_id=event.event_id, actor=event.processor)
        return _Applied(ChangeStatus.COMMITTED, row_to_memory(new_row), also)

    def _previous_content(self, tx: ShardTx, row: dict[str, Any]) -> str | None:
        prev = tx.session_neighbour(row, "previous")
        return None if prev is None else str(prev["content"])

    def _relink_successor(self, tx: ShardTx, row: dict[str, Any], event: Proposal, now: str
                          ) -> list[MemoryUnit]:
        """A message that arrived late becomes the context of the one after it (order-independent)."""
        nxt = tx.session_neighbour(row, "next")
        if nxt is None or nxt["context"] == row["content"]:
            return []
        updated = {**nxt, "context": row["content"]}
        tx.update_memory(nxt, updated, at=now, proposal_id=event.event_id, actor="writer")
        return [row_to_memory(updated)]

    def _upsert_node(self, tx: ShardTx, event: UpsertNodeProposal, now: str) -> _Applied:
        node = event.node
        row = {
            "node_id": node.node_id, "tenant_id": node.scope.tenant_id, "workspace_id": node.scope.workspace_id,
            "user_id": node.scope.user_id, "agent_id": node.scope.agent_id, "node_type": node.node_type.value,
            "name": node.name, "attributes": _json(node.attributes), "method": node.method.value,
        }
        old = tx.node(node.node_id)
        if old is not None and all(old[k] == v for k, v in row.items()):
            return _Applied(ChangeStatus.UNCHANGED)  # the node already holds these values
        tx.put_node({**row, "recorded_at": now}, old, at=now, proposal_id=event.event_id, actor=event.processor)
        return _Applied(ChangeStatus.COMMITTED)

    def _upsert_edge(self, tx: ShardTx, event: UpsertEdgeProposal, now: str) -> _Applied:
        edge = event.edge
        for end in (edge.src_id, edge.dst_id):
            if tx.memory_row(end) is None and tx.node(end) is None:
                raise Rejection(f"edge end {end} is neither a memory nor a graph node in this shard")
        for ev in edge.evidence:
            if tx.memory_row(ev) is None:
                raise Rejection(f"edge evidence {ev} is not in this shard")
        old = tx.edge(edge.edge_id)
        evidence = sorted(set(edge.evidence) | set(orjson.loads(old["evidence"]) if old else ()))
        confidence = max(edge.confidence, float(old["confidence"]) if old else 0.0)
        row = {
            "edge_id": edge.edge_id, "tenant_id": edge.scope.tenant_id, "workspace_id": edge.scope.workspace_id,
            "user_id": edge.scope.user_id, "agent_id": edge.scope.agent_id, "src_id": edge.src_id,
            "dst_id": edge.dst_id, "edge_type": edge.edge_type.value, "label": edge.label,
            "unit_weight": edge.unit_weight, "weight": edge.unit_weight * len(evidence),
            "confidence": confidence, "rejected": int(old["rejected"]) if old else 0,
            "evidence": _json(evidence), "method": edge.method.value,
        }
        if old is not None and all(old[k] == v for k, v in row.items()):
            return _Applied(ChangeStatus.UNCHANGED)  # the edge already holds these values
        tx.put_edge({**row, "recorded_at": now}, old, at=now, proposal_id=event.event_id, actor=event.processor)
        return _Applied(ChangeStatus.COMMITTED)

    def _set_trust(self, tx: ShardTx, event: SetTrustProposal, now: str) -> _Applied:
        verdict = event.verdict
        old = self._target_row(tx, event, verdict.memory_id, "verdict target")
        t = verdict.trust
        new = {
            **old, "trust_status": t.status.value, "trust_method": t.method.value if t.method else None,
            "trust_confidence": t.confidence, "trust_reason": t.reason,
            "trust_contradicting_id": t.contradicting_id,
        }
        if comparable(new) == comparable(old):
            return _Applied(ChangeStatus.UNCHANGED)
        new["trust_verified_at"] = (t.verified_at.isoformat() if t.verified_at else now)
        tx.update_memory(old, new, at=now, proposal_id=event.event_id, actor=event.processor)
        return _Applied(ChangeStatus.COMMITTED, row_to_memory(new))

    def _supersede(self, tx: ShardTx, event: SupersedeProposal, now: str) -> _Applied:
        sup = event.supersession
        old = self._target_row(tx, event, sup.old_id, "superseded memory")
        new_mem = self._target_row(tx, event, sup.new_id, "superseding memory")
        if old["superseded_by"] == sup.new_id:
            return _Applied(ChangeStatus.UNCHANGED)
        if old["superseded_by"] is not None:
            raise Rejection(f"{sup.old_id} is already superseded by {old['superseded_by']}")
        closed = {
            **old, "superseded_by": sup.new_id, "superseded_at": now,
            "valid_to": new_mem["valid_from"] or old["valid_to"],
        }
        tx.update_memory(old, closed, at=now, proposal_id=event.event_id, actor=event.processor)
        self._evidence_edge(tx, event, now, EdgeType.SUPERSEDES, sup.new_id, sup.old_id)
        self._gov(tx, event, now, "supersede", [
            ("evaluated", f"{sup.new_id} is a new version of {sup.old_id}"), ("decided", sup.reason),
            ("applied", f"{sup.old_id} valid until {closed['valid_to']}, superseded_by {sup.new_id}")],
            {"old_id": sup.old_id, "new_id": sup.new_id})
        return _Applied(ChangeStatus.COMMITTED, row_to_memory(closed))

    def _merge(self, tx: ShardTx, event: MergeProposal, now: str) -> _Applied:
        merge = event.merge
        canonical = self._target_row(tx, event, merge.canonical_id, "canonical memory")
        dup = self._target_row(tx, event, merge.duplicate_id, "duplicate memory")
        if dup["superseded_by"] == merge.canonical_id:
            return _Applied(ChangeStatus.UNCHANGED)
        if canonical["content_hash"] != dup["content_hash"] or canonical["kind"] != dup["kind"]:
            raise Rejection("only exact duplicates (same kind and content hash) are merged without review")
        evidence = sorted(set(orjson.loads(canonical["evidence"])) | set(orjson.loads(dup["evidence"])))
        merged = {**canonical, "evidence": _json(evidence)}
        if merged != canonical:
            tx.update_memory(canonical, merged, at=now, proposal_id=event.event_id, actor=event.processor)
        folded = {**dup, "superseded_by": merge.canonical_id, "superseded_at": now,
                  "lc_state": LifecycleState.MERGED.value}
        tx.update_memory(dup, folded, at=now, proposal_id=event.event_id, actor=event.processor)
        self._evidence_edge(tx, event, now, EdgeType.DUPLICATE_OF, merge.duplicate_id, merge.canonical_id)
        self._gov(tx, event, now, "merge", [
            ("evaluated", f"same kind and content hash {canonical['content_hash'][:12]}"),
            ("decided", merge.reason), ("applied", f"{merge.duplicate_id} folded into {merge.canonical_id}")],
            {"canonical_id": merge.canonical_id, "duplicate_id": merge.duplicate_id})
        return _Applied(ChangeStatus.COMMITTED, row_to_memory(merged))

    def _defer_action(self, tx: ShardTx, event: DeferActionProposal, now: str) -> _Applied:
        d = event.deferred
        s = event.scope
        row = {
            "action_id": d.action_id, "tenant_id": s.tenant_id, "workspace_id": s.workspace_id,
            "user_id": s.user_id, "agent_id": s.agent_id, "action": d.action, "target_ids": _json(list(d.target_ids)),
            "reason": d.reason, "inputs": _json(d.inputs),
        }
        old = tx.deferred_action(d.action_id)
        if old is not None:
            return _Applied(ChangeStatus.UNCHANGED)
        tx.put_deferred_action({**row, "status": "pending", "recorded_at": now}, None,
                               at=now, proposal_id=event.event_id, actor=event.processor)
        self._gov(tx, event, now, d.action, [("evaluated", f"{d.action} of {list(d.target_ids)}"),
                                                ("decided", "not without a model or review"),
                                                ("deferred", d.reason)], {"action_id": d.action_id, **d.inputs})
        return _Applied(ChangeStatus.COMMITTED)

    def _erase(self, tx: ShardTx, event: EraseProposal, now: str) -> _Applied:
        """Remove content everywhere in the shard, leave tombstones so nothing re-creates it, audit it all."""
        er = event.erasure
        s = event.scope
        seeds = tx.erasure_seeds(s, er)
        if er.target == "memory" and not seeds:
            raise Rejection(f"no memory {er.memory_id} in scope {s.home}")
        doomed = self._with_derivatives(tx, seeds)
        successors: dict[str, dict[str, Any]] = {}
        for mid in sorted(doomed):
            row = tx.memory_row(mid)
            if row is None:
                continue
            if row["layer"] == "L0":
                nxt = tx.session_neighbour(row, "next")
                if nxt is not None and nxt["memory_id"] not in doomed:
                    successors[nxt["memory_id"]] = nxt
            tx.tombstone(row, reason=f"{er.target} erased: {er.reason}", at=now,
                            value_hash=value_hash(row["content"]))
            tx.delete_memory(row, at=now, proposal_id=event.event_id, actor=event.processor)
        for nxt in successors.values():  # the next message's context held erased content
            fresh = tx.memory_row(nxt["memory_id"])
            if fresh is not None:
                tx.update_memory(fresh, {**fresh, "context": self._previous_content(tx, fresh)}, at=now,
                                    proposal_id=event.event_id, actor="writer")
        tx.redact_audit("memories", sorted(successors))
        tx.scrub(s, sorted(doomed), all_cache=True, at=now, proposal_id=event.event_id)
        return _Applied(ChangeStatus.COMMITTED, removed=tuple(sorted(doomed)))

    def _review(self, tx: ShardTx, event: ReviewProposal, now: str) -> _Applied:
        """Apply a reviewer's decision (it arrived as a control event, so a replay reproduces it)."""
        review = event.review
        who = f"reviewer: {review.note}" if review.note else "reviewer"
        if review.item_kind == "memory":
            old = self._target_row(tx, event, review.item_id, "reviewed memory")
            approve = review.decision == "approve"
            new = {**old, "trust_status": "verified" if approve else "contradicted", "trust_method": "ground_truth",
                   "trust_confidence": 1.0, "trust_reason": f"{review.decision}d by {who}",
                   "trust_verified_at": now, "lc_state": old["lc_state"] if approve else "rejected"}
            tx.update_memory(old, new, at=now, proposal_id=event.event_id, actor="review")
            return _Applied(ChangeStatus.COMMITTED, row_to_memory(new))
        if review.item_kind == "action":
            action = tx.deferred_action(review.item_id)
            if action is None or action["tenant_id"] != event.scope.tenant_id or \
                    action["user_id"] != event.scope.user_id:
                raise Rejection(f"no deferred action {review.item_id} in scope {event.scope.home}")
            if action["status"] != "pending":
                if action["status"] == ("approved" if review.decision == "approve" else "rejected"):
                    return _Applied(ChangeStatus.UNCHANGED)
                raise Rejection(f"deferred action {review.item_id} was already {action['status']}")
            if review.decision == "approve" and action["action"] == "supersede":
                old_id, new_id = orjson.loads(action["target_ids"])
                approved = SupersedeProposal(
                    event_id=event.event_id, scope=event.scope, timestamp=event.timestamp, processor=event.processor,
                    cause_event_id=event.cause_event_id,
                    supersession=Supersession(old_id=old_id, new_id=new_id, reason=f"approved by {who}"))
                self._supersede(tx, approved, now)
            tx.put_deferred_action(
                {**action, "status": "approved" if review.decision == "approve" else "rejected"}, action,
                at=now, proposal_id=event.event_id, actor="review")
            return _Applied(ChangeStatus.COMMITTED)
        rejection_id = int(review.item_id.removeprefix("rej_"))
        row = tx.rejection(rejection_id)
        if row is None or not _payload_in_home(row["payload"], event.scope.home):
            raise Rejection(f"no rejection {review.item_id} in scope {event.scope.home}")
        status = "dismissed" if review.decision == "reject" else "approved"
        tx.mark_rejection(row, status, at=now, proposal_id=event.event_id, actor="review")
        return _Applied(ChangeStatus.COMMITTED)

    @staticmethod
    def _gov(tx: ShardTx, event: Proposal, now: str, decision: str, stages: list[tuple[str, str]],
             inputs: dict[str, Any]) -> None:
        """Record an autonomous decision's stages (evaluated → decided → applied/deferred) with its inputs."""
        tx.record_decision(event.event_id, event.scope, decision, stages, inputs, at=now)

    def _signal(self, tx: ShardTx, event: SignalProposal, now: str) -> _Applied:
        """Count a use signal once, then recompute counters, weight and state from all signals."""
        sig = event.signal
        old = self._target_row(tx, event, sig.memory_id, "signalled memory")
        if tx.signal_seen(sig):
            return _Applied(ChangeStatus.UNCHANGED)  # the same signal again: counted once
        tx.insert_signal(sig, at=now, proposal_id=event.event_id, actor="lifecycle")
        tally = tx.signal_tally(sig.memory_id)
        pinned = tally.pinned
        cited, helpful, harmful, injected = (tally.counts.get(k, 0) for k in
                                             ("cited_by_agent", "helpful", "harmful", "injected"))
        weight = self.rules.weight(cited=cited, helpful=helpful, harmful=harmful, injected=injected, pinned=pinned,
                                   contradicted=old["trust_status"] == "contradicted")
        level = _compression_level(tally)
        new = {**old, "lc_injected": injected, "lc_cited": cited, "lc_helpful": helpful, "lc_harmful": harmful,
               "lc_pinned": int(pinned), "lc_weight": weight, "lc_compression": level,
               "lc_state": self.rules.state(weight, pinned=pinned, current=old["lc_state"])}
        if comparable(new) == comparable(old):
            return _Applied(ChangeStatus.UNCHANGED)
        tx.update_memory(old, new, at=now, proposal_id=event.event_id, actor="lifecycle")
        if new["lc_state"] != old["lc_state"] and new["lc_state"] in ("promoted", "demoted"):
            inputs = {"memory_id": sig.memory_id, "cited": cited, "helpful": helpful, "harmful": harmful,
                      "injected": injected, "pinned": pinned, "weight": weight}
            self._gov(tx, event, now, new["lc_state"][:-1], [  # promote / demote
                ("evaluated", f"{sig.kind} signal; weight {old['lc_weight']} -> {weight}"),
                ("decided", f"weight {weight} crosses the {new['lc_state'][:-1]} threshold"),
                ("applied", f"state {old['lc_state']} -> {new['lc_state']}")], inputs)
        return _Applied(ChangeStatus.COMMITTED, row_to_memory(new))

    def _forget(self, tx: ShardTx, event: ForgetProposal, now: str) -> _Applied:
        """Retention: remove memories (pinned ones are exempt), audited with the removed value; derived
        memories that cited them keep their remaining evidence, or are flagged when none remains."""
        fg = event.forget
        forgotten: list[str] = []
        for mid in fg.memory_ids:
            row = self._target_row(tx, event, mid, "memory to forget")
            if row["lc_pinned"]:
                continue
            if fg.tombstone:
                tx.tombstone(row, reason=f"forgotten: {fg.reason}", at=now, value_hash=value_hash(row["content"]))
            tx.delete_memory(row, at=now, proposal_id=event.event_id, actor="lifecycle", redact=False)
            forgotten.append(mid)
        if not forgotten:
            return _Applied(ChangeStatus.UNCHANGED)
        repaired = self._repair_evidence(tx, forgotten, event, now)
        skipped = [m for m in fg.memory_ids if m not in forgotten]
        self._gov(tx, event, now, "forget", [
            ("evaluated", f"{len(fg.memory_ids)} memories past retention"),
            ("decided", fg.reason),
            ("applied", f"{len(forgotten)} forgotten, {len(skipped)} pinned and kept, {len(repaired)} repaired")],
            {"candidates": list(fg.memory_ids), "forgotten": forgotten, "pinned": skipped,
             "repaired": [m.memory_id for m in repaired]})
        return _Applied(ChangeStatus.COMMITTED, removed=tuple(forgotten), also_changed=repaired)

    def _repair_evidence(self, tx: ShardTx, gone: list[str], event: Proposal, now: str) -> list[MemoryUnit]:
        dependants = tx.dependants(gone)
        repaired = []
        for mid in dependants:
            row = tx.memory_row(mid)
            if row is None:
                continue
            remaining = [e for e in orjson.loads(row["evidence"]) if e not in set(gone)]
            new = {**row, "evidence": _json(remaining)}
            if not remaining:  # nothing left to stand on: kept, flagged for review
                attrs = orjson.loads(row["attributes"])
                attrs["evidence_forgotten"] = True
                new.update({"attributes": _json(attrs), "trust_status": "uncertain", "trust_method": "confidence",
                            "trust_reason": "its evidence was forgotten by the retention policy"})
            tx.update_memory(row, new, at=now, proposal_id=event.event_id, actor="lifecycle")
            repaired.append(row_to_memory(new))
        tx.delete_edges_touching(gone, at=now, proposal_id=event.event_id, actor="lifecycle")
        return repaired

    def _rollback(self, tx: ShardTx, event: RollbackProposal, now: str) -> _Applied:
        """Restore exactly the rows a decision changed, newest first, from the audit log's old values."""
        rb = event.rollback
        s = event.scope
        stages = tx.decision_stages(rb.decision_id, s)
        if not stages:
            raise Rejection(f"no governance decision {rb.decision_id} in scope {s.home}")
        if any(stage == "rolled_back" for _, stage in stages):
            return _Applied(ChangeStatus.UNCHANGED)
        audits = tx.decision_audit(rb.decision_id)
        if any(a.redacted for a in audits):
            raise Rejection(f"decision {rb.decision_id} touched erased content; erasure cannot be undone")
        restored: list[MemoryUnit] = []
        removed: list[str] = []
        for a in audits:
            kind = tx.restore(a, at=now, proposal_id=event.event_id)
            if a.table == "memories" and kind == "removed":
                removed.append(a.target_id)
            elif a.table == "memories" and a.old is not None:
                restored.append(row_to_memory(a.old))
        decision = stages[0][0]
        self._gov(tx, event, now, "rollback", [("applied", rb.reason)],
                  {"decision_id": rb.decision_id, "decision": decision, "rows": len(audits)})
        tx.record_decision(rb.decision_id, s, decision, [("rolled_back", rb.reason)], {"by": event.event_id}, at=now)
        return _Applied(ChangeStatus.COMMITTED, removed=tuple(removed), also_changed=restored)

    def _record_cycle(self, tx: ShardTx, event: RecordCycleProposal, now: str) -> _Applied:
        """Store a runtime cycle's state. A cycle only moves forward: prepared → committed or aborted."""
        cycle = event.cycle
        if cycle.scope.home != event.scope.home:
            raise Rejection(f"cycle {cycle.cycle_id} belongs to {cycle.scope.home!r}, not {event.scope.home!r}")
        s = cycle.scope
        row = {
            "cycle_id": cycle.cycle_id, "tenant_id": s.tenant_id, "workspace_id": s.workspace_id,
            "user_id": s.user_id, "agent_id": s.agent_id, "session_id": cycle.session_id, "turn_id": cycle.turn_id,
            "state": cycle.state.value, "idempotency_key": cycle.idempotency_key, "request_hash": cycle.request_hash,
            "bundle_memory_ids": _json(list(cycle.bundle_memory_ids)), "bundle": None,
            "token_budget": cycle.token_budget, "commit_hash": cycle.commit_hash,
            "created_at": cycle.created_at.isoformat(),
            "closed_at": cycle.closed_at.isoformat() if cycle.closed_at else None, "abort_reason": cycle.abort_reason,
        }
        old = tx.cycle(cycle.cycle_id)
        if old is not None:
            if old["state"] == row["state"] or row["state"] == "prepared":
                return _Applied(ChangeStatus.UNCHANGED)  # a retry, or a prepare replayed after its close
            if old["state"] != "prepared":
                raise Rejection(f"cycle {cycle.cycle_id} is already {old['state']}; it cannot become {row['state']}")
        tx.put_cycle(row, old, at=now, proposal_id=event.event_id, actor="protocol")
        return _Applied(ChangeStatus.COMMITTED)

    @staticmethod
    def _with_derivatives(tx: ShardTx, seeds: list[str]) -> set[str]:
        """Memories derived from erased ones are erased too (their content came from it)."""
        doomed = set(seeds)
        frontier = list(seeds)
        while frontier:
            frontier = [m for m in tx.dependants(frontier) if m not in doomed]
            doomed.update(frontier)
        return doomed

    def _evidence_edge(
        self, tx: ShardTx, event: Proposal, now: str, edge_type: EdgeType, src: str, dst: str
    ) -> None:
        s = event.scope
        edge_id = derive_id("edge", s.path, edge_type.value, src, dst)
        if tx.edge(edge_id) is not None:
            return
        row = {
            "edge_id": edge_id, "tenant_id": s.tenant_id, "workspace_id": s.workspace_id, "user_id": s.user_id,
            "agent_id": s.agent_id, "src_id": src, "dst_id": dst, "edge_type": edge_type.value, "label": None,
            "unit_weight": 1.0, "weight": 2.0, "confidence": 1.0, "rejected": 0,
            "evidence": _json(sorted({src, dst})), "method": "ground_truth", "recorded_at": now,
        }
        tx.put_edge(row, None, at=now, proposal_id=event.event_id, actor=event.processor)

    @staticmethod
    def _change(
        event: Proposal, record: Record, status: ChangeStatus, *, reason: str | None = None,
        memory: MemoryUnit | None = None, target_id: str | None = None, removed: tuple[str, ...] = (),
    ) -> ChangeEvent:
        mem = memory or (event.memory if isinstance(event, UpsertMemoryProposal) else None)
        return ChangeEvent(
            event_id=derive_id("chg", event.event_id, status.value, *([target_id] if target_id else [])),
            scope=event.scope,
            timestamp=event.timestamp,
            proposal_id=event.event_id,
            op=event.op,
            status=status,
            memory_id=target_id or event.target_id,
            layer=mem.layer if mem else None,
            kind=mem.kind if mem else None,
            reason=reason,
            memory=memory if status is ChangeStatus.COMMITTED else None,
            removed_ids=removed,
            source_topic=record.topic,
            source_partition=record.partition,
            source_offset=record.offset,
        )

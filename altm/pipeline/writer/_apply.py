"""The writer's transaction envelope: one proposal record, one shard transaction (DESIGN §1.2).

For each record it skips what is below the stored offset, then in one ``BEGIN IMMEDIATE``: decodes, checks the
route (scope home vs. record key and partition), applies the op (validation, audit, mutation), stores the
consumer offset, and enqueues the resulting ``changes`` events (and any dead letter) in the outbox. A refused
proposal becomes a ``rejected`` change and a rejections row; a guard that cannot decide, a ``deferred`` outcome
the driver retries. The runtime publishes the outbox, so a crash between commit and publish loses nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson

from altm.bus import (
    Headers,
    Record,
    change_header,
    lineage_headers,
    lineage_of,
    pack_headers,
    source_header,
    source_ms,
)
from altm.bus.sealing import DERIVED, KeyStore, KeyStoreError, is_shredded
from altm.core import (
    Burial,
    BuriedContent,
    BuryProposal,
    ChangeEvent,
    ChangeStatus,
    DeadLetter,
    DecodeError,
    EraseProposal,
    ForgetProposal,
    LinkMemoryProposal,
    MemoryUnit,
    MergeProposal,
    Proposal,
    ProposalEvent,
    SignalProposal,
    UpsertEdgeProposal,
    UpsertMemoryProposal,
    UpsertNodeProposal,
    decode_event,
    derive_id,
    encode,
    original_text,
)
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.pipeline.writer.guard import (
    RECOMPUTED,
    GuardKeys,
    GuardUnavailable,
    TextSimilarity,
    WriteGuard,
    guard_key_id,
    hash_legacy_tombstones,
)
from altm.pipeline.writer.ops import Applied, Erased, OpContext, Rejection, apply_op
from altm.pipeline.writer.ops.burial import carry_burial
from altm.store import ShardSet, ShardTx, StoreUnavailable

log = logging.getLogger("altm.writer")

WRITER_GROUP = "altm-writer"
_PAYLOAD_KEEP = 64 * 1024


@dataclass
class WriteOutcome:
    skipped: bool = False
    changes: list[ChangeEvent] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    deferred_reason: str | None = None  # set when the proposal must be retried later
    refusal: str | None = None  # the class of a rejection's or deferral's reason (a bounded metric label)
    erased: EraseProposal | None = None  # an erasure this proposal applied (its data keys are destroyed)
    burials: list[BuryProposal] = field(default_factory=list)  # the tombstones it left, for the log


class Writer:
    """Applies proposal records to their shards. With ``keys`` (the log is sealed), an applied erasure of a
    session, agent or user also destroys its data keys: its records on the log can no longer be read. With a
    ``similarity`` (the local embedder's), the write guard judges anti-patterns by meaning as well as terms.
    Users' guard keys come from ``guard_keys`` (default: the key store's), so the tombstones the writer carries
    on the log (``bury`` proposals) match in a shard restored elsewhere; without either, each shard has its own.
    """

    def __init__(self, shards: ShardSet, settings: Settings, keys: KeyStore | None = None,
                 similarity: TextSimilarity | None = None, guard_keys: GuardKeys | None = None) -> None:
        self.shards = shards
        self.keys = keys
        self.guard_keys: GuardKeys | None = guard_keys if guard_keys is not None else keys
        self._last_destroy = float("-inf")
        self.settings = settings
        self.partitions = settings.partitions
        self.proposals_topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        self.guard = WriteGuard(settings.guard_overlap_threshold, similarity)
        self.rules = LifecycleRules()

    def resume_offset(self, topic: str, partition: int) -> int | None:
        """The next proposal offset to apply, as stored with the data (the source of truth on restart)."""
        return self.shards.get(partition).next_offset(WRITER_GROUP, topic, partition)

    def upgrade(self, partition: int) -> None:
        """Bring the shard's data up to this version where SQL alone cannot: tombstones written before they
        were hashed get their keyed shingle hashes, and their text is blanked."""
        shard = self.shards.get(partition)
        if shard.has_legacy_tombstones():
            with shard.transaction() as tx:
                hash_legacy_tombstones(tx, at=datetime.now(UTC).isoformat(), keys=self.guard_keys)
        if self.keys is not None:
            self._adopt_guard_keys(partition)

    def _adopt_guard_keys(self, partition: int) -> None:
        """Guard keys this shard made before the key store kept them become the key store's (the first one
        stored wins): tombstones carried from this shard then match wherever it is restored."""
        assert self.keys is not None
        held = self.shards.get(partition).guard_keys()
        try:
            stored = self.keys.adopt_guard_keys(held) if held else {}
        except KeyStoreError as exc:  # tried again when the writer next starts
            log.warning("the guard keys of partition %d could not be put in the key store: %s", partition, exc)
            return
        for home, key in held:
            if stored[home] != key:
                log.warning("the shard of partition %d holds a guard key for %s other than the key store's: the "
                            "tombstones it carries on the log for that user will not match in a restored shard",
                            partition, home)

    def apply(self, record: Record, partitions: int, *, retry: bool = False) -> WriteOutcome:
        """Apply one proposal record. ``retry`` re-applies a record deferred earlier (its offset is stored)."""
        return self.apply_batch([record], partitions, retry=retry)[0]

    def apply_batch(self, records: Sequence[Record], partitions: int, *, retry: bool = False,
                    headers: Sequence[Headers] | None = None,
                    on_deferred: Callable[[Record, str], None] | None = None,
                    lookahead: Sequence[Record] = (), enqueue: bool = True,
                    reapplied: bool = False, until_deferred: bool = False) -> list[WriteOutcome]:
        """Apply proposal records, one shard transaction per partition for all of its records (each op in its
        own savepoint: a refused or deferred proposal leaves the others of the batch untouched). Outcomes come
        in the order of ``records``. ``headers`` (one per record) go with the record's changes (a trace).
        ``on_deferred`` keeps a proposal the guard could not decide for a retry; it runs inside the partition's
        transaction (on the shard's connection), so a deferral commits with its offset or not at all, and an
        erasure later in the batch drops it like any other deferred work of what it erases.
        A ``bury`` proposal in the batch after the erasure or forget that made it (a restore: the log read
        ahead) is taken over as that proposal is applied, so what comes between is judged as the shard that
        made the tombstones judged it, with them, and is not published again. (Applied live, a proposal's
        ``bury`` is published after its batch: never in it.) ``lookahead``: records of the log after the
        batch, read for their ``bury`` proposals only (the rest of a restore's chunk, and beyond).
        ``enqueue=False`` (a standby copy, whose owner published what they made) puts nothing in the outbox: the
        outcomes carry the changes. ``reapplied``: the records are read from the log, applied by their owner
        before (a restore, a standby copy; a record deferred there carries ``REAPPLIED_HEADER``): an erasure among
        them leaves alone the keys made after its owner applied it (see ``_shred``). ``until_deferred`` (a
        standby copy): a partition's records after one it deferred are left for later (``skipped``, their
        offsets not stored), so they are judged after it, as on its owner, once its retry has applied it."""
        ahead = _burials_ahead([*records, *lookahead])
        outcomes: dict[int, WriteOutcome] = {}
        by_partition: dict[int, list[int]] = {}
        for i, rec in enumerate(records):
            by_partition.setdefault(rec.partition, []).append(i)
        for partition, indexes in by_partition.items():
            shard = self.shards.get(partition)
            topic = records[indexes[0]].topic
            first_look = shard.next_offset(WRITER_GROUP, topic, partition)
            if not retry and first_look is not None and all(records[i].offset < first_look for i in indexes):
                outcomes.update({i: WriteOutcome(skipped=True) for i in indexes})  # redelivered: no transaction
                continue
            applied: list[int] = []
            held = False  # ``until_deferred``: a record of this partition was deferred
            with shard.transaction() as tx:
                # under the write lock: what another writer of this shard applied meanwhile counts too
                stored = shard.next_offset(WRITER_GROUP, topic, partition)
                for i in indexes:
                    if held or (not retry and stored is not None and records[i].offset < stored):
                        outcomes[i] = WriteOutcome(skipped=True)  # applied before (at-least-once, idempotent),
                        continue                                  # or held back behind a deferral
                    # each its own "now": a row recorded and superseded in one batch differ in time
                    ctx = OpContext(now=datetime.now(UTC).isoformat(), settings=self.settings, guard=self.guard,
                                    rules=self.rules, source_ms=source_ms(records[i]) or None,
                                    guard_keys=self.guard_keys)
                    outcomes[i] = self._apply_in(tx, records[i], partitions, ctx, retry=retry,
                                                 extra=headers[i] if headers is not None else (), ahead=ahead,
                                                 enqueue=enqueue, reapplied=reapplied)
                    applied.append(i)
                    reason = outcomes[i].deferred_reason
                    if reason is not None and on_deferred is not None:
                        on_deferred(records[i], reason)
                    held = until_deferred and reason is not None
                if applied and not retry:  # once for the batch, in its transaction (the offset never moves back)
                    tx.store_offset(WRITER_GROUP, topic, partition, max(records[i].offset for i in applied) + 1)
            if any(outcomes[i].erased is not None for i in applied):
                self.destroy_retired_keys()
                shard.purge()  # the erased content leaves the index segments and the write-ahead log too
        return [outcomes[i] for i in range(len(records))]

    def _apply_in(self, tx: ShardTx, record: Record, partitions: int, ctx: OpContext, *,
                  retry: bool, extra: Headers = (), ahead: Mapping[str, Sequence[BuryProposal]],
                  enqueue: bool = True, reapplied: bool = False) -> WriteOutcome:
        """One record inside the partition's transaction: apply and enqueue its changes (its offset is stored
        once for the batch, by :meth:`apply_batch`)."""
        # a record whose data key is destroyed, or made from a host record whose key is: nothing to apply,
        # nothing to report (a replay could not open it, or what it was made from)
        lineage = lineage_of(record)
        again = reapplied or is_reapplied(record.headers)
        shredded = is_shredded(record) or self._shredded(lineage)
        if shredded and again:
            tx.mark_skipped_shredded()  # what later records name may be missing here (see ``_ABOUT_WHAT_WAS_SHREDDED``)
        outcome = (WriteOutcome(skipped=True) if shredded
                   else self._apply(tx, record, partitions, ctx, ahead, reapplied=again))
        if outcome.erased is not None:  # before the commit: a crash now re-applies the erasure later
            self._shred(outcome.erased, _owner_applied_ms(outcome.erased, record, ahead) if again else None)
        if not enqueue:
            return outcome
        source = source_header(source_ms(record))  # the changes carry their turn's time on
        carried = lineage_headers(lineage)  # the stages that read a change carry it on
        # a restore's changes, or those of what was derived from them: what the stages derive again, its owner derived
        if again or is_rederived(record.headers):
            carried = (*carried, (REDERIVED_HEADER, b"1"))
        for change in outcome.changes:  # the outbox names the topic's kind; the prefix is applied when published
            tx.enqueue(Topic.CHANGES.value, change.key, encode(change),
                       pack_headers((source, change_header(change), *extra, *carried)))
        for dead in outcome.dead_letters:
            tx.enqueue(Topic.DLQ.value, record.key, encode(dead), pack_headers((source, *extra)))
        for burial in outcome.burials:  # back to the proposals log, after this record: a restore applies it
            tx.enqueue(Topic.PROPOSALS.value, burial.key, encode(burial), pack_headers((source, *extra)))
        return outcome

    def _apply(self, tx: ShardTx, record: Record, partitions: int, ctx: OpContext,
               ahead: Mapping[str, Sequence[BuryProposal]], *, reapplied: bool = False) -> WriteOutcome:
        try:
            event = decode_event(record.value)
        except DecodeError as exc:
            return _malformed(tx, record, str(exc), ctx.now)
        if not isinstance(event, Proposal):
            return _malformed(tx, record, f"the proposals topic carries proposals, got a {event.event_type} event",
                              ctx.now)
        if _applied_before(tx, event):
            return WriteOutcome(changes=[_change(event, record, ChangeStatus.UNCHANGED,
                                                 reason=f"proposal {event.event_id} was applied before")])
        try:
            _check_route(event, record, partitions)
            with tx.savepoint():  # an op refused or failing half-way leaves nothing behind
                applied = apply_op(tx, event, ctx)
            _take_burials(tx, ahead.get(event.event_id, ()), ctx)
        except GuardUnavailable as exc:
            log.error("write guard failed on %s[%d]@%d, proposal deferred: %s", record.topic, record.partition,
                      record.offset, exc)
            return WriteOutcome(changes=[_change(event, record, ChangeStatus.DEFERRED, reason=str(exc))],
                                deferred_reason=str(exc), refusal="guard_unavailable")
        except Erased as exc:  # void: nothing to do, nothing to review
            return WriteOutcome(changes=[_change(event, record, ChangeStatus.UNCHANGED, reason=str(exc))])
        except Rejection as exc:
            if reapplied and exc.code == "unknown_target" and isinstance(event, _ABOUT_WHAT_WAS_SHREDDED) \
                    and tx.skipped_shredded():
                # applied again from the log: its owner applied it to a memory this shard could not restore (sealed
                # with a key an erasure destroyed since, and taken by that erasure there too): nothing to do here
                why = f"applied again from the log, its target not restored: {exc}"
                return WriteOutcome(changes=[_change(event, record, ChangeStatus.UNCHANGED, reason=why)])
            if is_rederived(record.headers):  # its owner derived it first; a refusal it earned there is on the log
                return WriteOutcome(changes=[_change(event, record, ChangeStatus.UNCHANGED,
                                                     reason=f"derived again in a restore and refused: {exc}")])
            return _rejected(tx, event, record, str(exc), ctx.now, exc.code)
        except StoreUnavailable:
            raise  # not the proposal's fault: nothing is committed, the record is applied again later
        except Exception as exc:  # no proposal may stop the partition: refused, loudly, with the reason
            log.exception("the writer could not apply %s[%d]@%d", record.topic, record.partition, record.offset)
            return _rejected(tx, event, record, f"the proposal could not be applied: {type(exc).__name__}: {exc}",
                             ctx.now, "internal_error")
        erased = event if isinstance(event, EraseProposal) and applied.status is ChangeStatus.COMMITTED else None
        if erased is not None:
            tx.owe_purge()  # done by apply_batch once this commits, or by the next open if the process dies first
        on_log = {b.event_id for b in ahead.get(event.event_id, ())}  # a restore: published already
        return WriteOutcome(changes=_changes(event, record, applied), erased=erased,
                            burials=[b for b in _burials(tx, event, applied.buried) if b.event_id not in on_log])

    def _shredded(self, lineage: Sequence[str]) -> bool:
        """Whether a data key of ``lineage`` (the host records behind a proposal) is destroyed: an erasure was
        applied since that host record was read, and a replay, which cannot open it any more, makes nothing
        of it."""
        keys = self.keys
        return keys is not None and any(keys.destroyed(kid) for kid in lineage)

    def _shred(self, p: EraseProposal, made_before_ms: int | None) -> None:
        """Destroy the erased session's, agent's or user's data keys; retire the user's keys of derived records
        without a session (scenes, facets, graph nodes may quote the erased content), destroyed after a grace
        period in which records already sealed with them are still applied. Every such key when the erasure is
        applied first; applied again from the log (a restore, a standby copy), only those made before
        ``made_before_ms`` (when its owner applied it): the keys the owner made since, for the user's next
        records, stay."""
        if self.keys is None:
            return
        scope, erasure, before = p.scope, p.erasure, made_before_ms
        match erasure.target:
            case "session":
                self.keys.shred(scope.home, scope.agent_id, erasure.session_id, made_before_ms=before)
            case "agent":
                self.keys.shred(scope.home, scope.agent_id, made_before_ms=before)
            case "user":
                self.keys.shred(scope.home, made_before_ms=before)
            case _:
                return  # one memory: its tombstone keeps it from coming back; the session's key stays
        self.keys.retire(scope.home, DERIVED, made_before_ms=before)
        self.keys.retire("", DERIVED, made_before_ms=before)  # dead letters of input whose owner could not be read

    def destroy_retired_keys(self) -> int:
        """Destroy derived-record keys retired longer than the grace period ago (at most every few seconds)."""
        now = time.monotonic()
        if self.keys is None or now - self._last_destroy < min(30.0, self.settings.retired_key_grace_s):
            return 0
        self._last_destroy = now
        return self.keys.destroy_retired(self.settings.retired_key_grace_s)


def _burials_ahead(records: Sequence[Record]) -> dict[str, list[BuryProposal]]:
    """The ``bury`` proposals among ``records``, by the proposal that made them."""
    found: dict[str, list[BuryProposal]] = {}
    for rec in records:
        if b'"op":"bury"' not in rec.value:
            continue
        try:
            event = decode_event(rec.value)
        except DecodeError:
            continue  # refused in its own place
        if isinstance(event, BuryProposal) and event.cause_event_id:
            found.setdefault(event.cause_event_id, []).append(event)
    return found


REAPPLIED_HEADER = "altm-reapplied"
"""Header of a proposal deferred where it was applied again from the log (a restore, a standby copy): its retry
is a re-application too."""


_ABOUT_WHAT_WAS_SHREDDED = (SignalProposal, EraseProposal, MergeProposal)
"""Proposals readable after an erasure (a use signal or a merge, under the user's key; an erasure, in the clear)
about a memory that may have been sealed with a key that erasure destroyed: a restore, a standby copy or a read
replica that skipped such records finds no such memory, where the owner found it and the erasure later took it.
A shard that skipped none files the refusal, as its owner did."""


REDERIVED_HEADER = "altm-rederived"
"""Header of a change a restore published again (its owner had published it: the new owner's stages derive from
it again, see ``WriterDriver``), carried by the stages onto what they propose from it. Such a proposal that the
writer refuses is void, not a rejection for review: the owner derived it from the same change when it came first,
and a refusal that earned is on the log (the restore filed it again); one refused only now was derived from
what the log removed since (a message retention forgot), which a store that followed the log never re-derives."""


def is_rederived(headers: Headers) -> bool:
    return any(k == REDERIVED_HEADER for k, _ in headers)


def is_reapplied(headers: Headers) -> bool:
    """Whether a record with these headers was deferred where it was applied again from the log (see
    ``REAPPLIED_HEADER``): a restore's or a standby copy's, which its owner had applied."""
    return any(k == REAPPLIED_HEADER for k, _ in headers)


def _owner_applied_ms(p: EraseProposal, record: Record, ahead: Mapping[str, Sequence[BuryProposal]]) -> int | None:
    """When the owner applied erasure ``p``: the time of the tombstones its ``bury`` carries (read ahead on the
    log), else the erasure's record time (its owner applied it later; keys made between the two are the owner's
    derived records' of that moment, a window of the pipeline's latency). None (every key) when neither is known."""
    times = [t.at for b in ahead.get(p.event_id, ()) for t in b.burial.tombstones]
    if times:
        try:
            return int(datetime.fromisoformat(min(times)).timestamp() * 1000) + 1
        except ValueError:
            pass
    return record.timestamp_ms or None


def burials_to_find(records: Sequence[Record]) -> bool:
    """Whether an erasure, or a forget that leaves tombstones, is among ``records``: its ``bury`` proposals (one,
    or several parts) may come after them, so a restore reads the log further ahead for them (a part among
    ``records`` says nothing of the others)."""
    for rec in records:
        if b'"op":"erase"' not in rec.value and b'"op":"forget"' not in rec.value:
            continue
        try:
            event = decode_event(rec.value)
        except DecodeError:
            continue
        if isinstance(event, EraseProposal) or (isinstance(event, ForgetProposal) and event.forget.tombstone):
            return True
    return False


def _take_burials(tx: ShardTx, burials: Sequence[BuryProposal], ctx: OpContext) -> None:
    """The tombstones a proposal left where it was first applied, read from the log ahead (see
    ``Writer.apply_batch``). One that does not fit here is refused loudly when its own record comes; it never
    refuses the proposal."""
    for burial in burials:
        try:
            with tx.savepoint():
                carry_burial(tx, burial, ctx)
        except StoreUnavailable:
            raise
        except Exception as exc:  # refused (or deferred) in its own place, as if not read ahead
            log.warning("the tombstones of %s read ahead are left to their own record: %s", burial.cause_event_id, exc)


_BURIAL_BYTES = 256 * 1024
"""At most this many bytes of tombstones per ``bury`` proposal (well under Kafka's default record limit)."""


def _burials(tx: ShardTx, p: Proposal, buried: Sequence[BuriedContent]) -> list[BuryProposal]:
    """The tombstones ``p`` left, as ``bury`` proposals of its scope (ids derived from it: applying it again
    makes the same ones, and the writer applies each once). Sized by their encoded bytes; a tombstone larger
    than one proposal goes in parts."""
    if not buried:
        return []
    key = tx.existing_guard_key(p.scope.home)
    assert key is not None  # burying made it
    chunks: list[list[BuriedContent]] = [[]]
    size = 0
    for part in (piece for tomb in buried for piece in _parts(tomb)):
        weight = _size(part)
        if chunks[-1] and size + weight > _BURIAL_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(part)
        size += weight
    return [BuryProposal(event_id=derive_id("bury", p.event_id, str(i)), scope=p.scope, timestamp=p.timestamp,
                         processor="writer", cause_event_id=p.event_id,
                         burial=Burial(guard_key_id=guard_key_id(key), tombstones=tuple(chunk)))
            for i, chunk in enumerate(chunks)]


def _size(tomb: BuriedContent) -> int:
    return len(tomb.model_dump_json())


def _parts(tomb: BuriedContent) -> list[BuriedContent]:
    """``tomb`` whole when it fits in a proposal, else in parts of its hashes (the same ids in each)."""
    if _size(tomb) <= _BURIAL_BYTES:
        return [tomb]
    base = _size(tomb.model_copy(update={"shingle_hashes": (), "term_hashes": ()}))
    if base > _BURIAL_BYTES // 2:  # its reason alone: the record is dead-lettered by the runtime, loudly
        return [tomb]
    parts, shingled, termed, size = [], list[str](), list[str](), base
    for kind, value in [*(("s", h) for h in tomb.shingle_hashes), *(("t", h) for h in tomb.term_hashes)]:
        if size + len(value) + 3 > _BURIAL_BYTES:
            parts.append(tomb.model_copy(update={"shingle_hashes": tuple(shingled), "term_hashes": tuple(termed)}))
            shingled, termed, size = [], [], base
        (shingled if kind == "s" else termed).append(value)
        size += len(value) + 3
    parts.append(tomb.model_copy(update={"shingle_hashes": tuple(shingled), "term_hashes": tuple(termed)}))
    return parts


def _rejected(tx: ShardTx, p: Proposal, record: Record, reason: str, now: str, code: str) -> WriteOutcome:
    """A refused proposal: a rejections row (for review) and a ``rejected`` change with the reason. A memory
    recomputed whole (a session capsule, a scene) keeps one pending rejection, its latest version's."""
    if isinstance(p, UpsertMemoryProposal) and p.memory.layer in RECOMPUTED:
        tx.drop_earlier_refusals(p.memory.memory_id, at=now, proposal_id=p.event_id)
    tx.add_rejection(
        at=now, proposal_id=p.event_id, memory_id=p.target_id, reason=reason,
        source=(record.topic, record.partition, record.offset), payload=_kept_payload(p, record.value),
    )
    return WriteOutcome(changes=[_change(p, record, ChangeStatus.REJECTED, reason=reason)], refusal=code)


def _kept_payload(p: Proposal, value: bytes) -> str:
    """What a rejection keeps of the refused proposal: its bytes, or, past 64 KiB, a summary that is still
    JSON with its scope (the review queue lists, and a reviewer decides, only rejections whose payload names
    their scope; cut bytes would name none). The whole record stays on the log at ``source``."""
    if len(value) <= _PAYLOAD_KEEP:
        return original_text(value)
    return orjson.dumps({
        "event_type": "proposal", "op": p.op.value, "event_id": p.event_id, "processor": p.processor,
        "scope": p.scope.model_dump(mode="json"), "target_id": p.target_id, "truncated": True, "bytes": len(value),
        "sha256": hashlib.sha256(value).hexdigest(), "head": original_text(value[:4096]),
        # what it cites, so an erasure of those finds it (``ShardTx._rejections_about``) and scrubs its head
        **({"memory": {"memory_id": p.memory.memory_id, "evidence": list(p.memory.evidence)}}
           if isinstance(p, UpsertMemoryProposal) else {}),
    }).decode()


def _malformed(tx: ShardTx, record: Record, reason: str, now: str) -> WriteOutcome:
    """Bytes that are no proposal: a rejections row and a dead letter (the stream moves on)."""
    tx.add_rejection(
        at=now, proposal_id=None, memory_id=None, reason=f"malformed proposal: {reason}",
        source=(record.topic, record.partition, record.offset),
        payload=original_text(record.value[:_PAYLOAD_KEEP]),
    )
    dead = DeadLetter.of(
        record.value, stage="writer", error=f"malformed proposal: {reason}", source_topic=record.topic,
        source_partition=record.partition, source_offset=record.offset, timestamp=datetime.now(UTC),
    )
    return WriteOutcome(dead_letters=[dead])


def _applied_before(tx: ShardTx, p: Proposal) -> bool:
    """A memory upsert delivered again (a stage re-derived it): the same payload, already applied and maybe
    built on since (applied again, it would undo later merges of the memory's evidence). Only upserts: the
    ids of other proposals come from their op and payload alone, so a later decision may rightly repeat an
    earlier one's (a second erasure of a user, a reviewer's reject after an approve, an entity mentioned
    again after its node was scrubbed). An upsert whose memory is gone (erased, forgotten) is judged again:
    the guard refuses erased content loudly."""
    return isinstance(p, UpsertMemoryProposal) and tx.upsert_applied(p.memory.memory_id, p.event_id)


def _check_route(p: ProposalEvent, record: Record, partitions: int) -> None:
    """A proposal is keyed by its own scope home, on that home's partition, with a payload of the same home."""
    home = p.scope.home
    if record.key != home:
        raise Rejection(
            f"scope home {home!r} does not match the record key {record.key!r}: a proposal must be "
            "keyed by its own scope home", code="wrong_route"
        )
    expected = partition_for(home, partitions)
    if expected != record.partition:
        raise Rejection(
            f"scope home {home!r} belongs to partition {expected}, but the proposal arrived on "
            f"partition {record.partition}", code="wrong_route"
        )
    match p:
        case UpsertMemoryProposal(memory=payload) | UpsertNodeProposal(node=payload) | UpsertEdgeProposal(
                edge=payload) if payload.scope.home != home:
            raise Rejection(f"payload scope home {payload.scope.home!r} differs from the proposal's {home!r}",
                            code="wrong_route")
        case LinkMemoryProposal(links=links):
            for part in (links.scope, *(n.scope for n in links.nodes), *(e.scope for e in links.edges)):
                if part.home != home:
                    raise Rejection(f"payload scope home {part.home!r} differs from the proposal's {home!r}",
                                    code="wrong_route")


def _changes(p: Proposal, record: Record, applied: Applied) -> list[ChangeEvent]:
    """The change the proposal made, then one ``committed`` change per row it updated as a consequence, then the
    changes of the refused proposals it applied after all (as theirs: the changes a replay makes applying them)."""
    return [_change(p, record, applied.status, memory=applied.memory, removed=applied.removed,
                    mentioned=applied.mentioned)] + [
        _change(p, record, ChangeStatus.COMMITTED, memory=m, target_id=m.memory_id) for m in applied.also_changed
    ] + [change for again, done in applied.readmitted for change in _changes(again, record, done)]


def _change(
    p: Proposal, record: Record, status: ChangeStatus, *, reason: str | None = None,
    memory: MemoryUnit | None = None, target_id: str | None = None, removed: tuple[str, ...] = (),
    mentioned: tuple[str, ...] = (),
) -> ChangeEvent:
    mem = memory or (p.memory if isinstance(p, UpsertMemoryProposal) else None)
    return ChangeEvent(
        event_id=derive_id("chg", p.event_id, status.value, *([target_id] if target_id else [])),
        scope=p.scope,
        timestamp=p.timestamp,
        proposal_id=p.event_id,
        op=p.op,
        status=status,
        memory_id=target_id or p.target_id,
        layer=mem.layer if mem else None,
        kind=mem.kind if mem else None,
        reason=reason,
        memory=memory if status is ChangeStatus.COMMITTED else None,
        removed_ids=removed,
        mentioned_ids=mentioned,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
    )

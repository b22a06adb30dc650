"""Runtime-neutral drivers: how a stage and the writer handle records, whichever runtime feeds them.

Each input record ends in exactly one of: outputs published, a dead letter (cannot be processed), or a
deferred work item (retry later: model failure, invalid output, a guard that could not decide). Nothing is
dropped silently. A runtime feeds batches to ``handle`` and commits the input offsets after it returns
(the outputs are published by then: at-least-once delivery, idempotent effects), and calls ``retry_due``
now and then. The embedded runtime and the Kafka worker's lanes are thin loops around these two classes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from altm.bus import (
    Headers,
    OutgoingRecord,
    Record,
    change_marker,
    dead_letter_record,
    lineage_headers,
    lineage_of,
    pack_headers,
    source_header,
    source_ms,
    unpack_headers,
)
from altm.bus.sealing import is_shredded, sealed_by
from altm.core import (
    ChangeEvent,
    DecodeError,
    Deferred,
    Event,
    LinkMemoryProposal,
    ProcessingError,
    Proposal,
    Settings,
    Topic,
    TurnEvent,
    UpsertMemoryProposal,
    UpsertNodeProposal,
    decode_event,
    encode,
    topic_name,
    under_prefix,
)
from altm.pipeline._telemetry import (
    end_record_spans,
    observe_stage,
    observe_writer,
    outbox_depth,
    start_record_spans,
    writer_transactions,
)
from altm.pipeline.processors import BatchFailure, Processor, ProcessorContext
from altm.pipeline.writer import (
    REAPPLIED_HEADER,
    REDERIVED_HEADER,
    WRITER_GROUP,
    Writer,
    burials_to_find,
    is_reapplied,
    is_rederived,
)
from altm.store import DeferredWork, OutboxRow, Shard, WorkItem

log = logging.getLogger("altm.pipeline")
HOLD_ATTEMPTS = 5
"""A standby copy applies nothing past a proposal it deferred until it has been tried this many times (then it
goes on, as its owner did)."""
BURIAL_PEEK = 5000
"""How far past a restore's chunk the writer driver looks for the ``bury`` of an erasure or forget in it."""
T = TypeVar("T")

Publish = Callable[[Sequence[OutgoingRecord]], Awaitable[None]]
"""Publish records in order and return once the bus has them all (the drivers never await one by one)."""
Fetch = Callable[[int, int, int], Awaitable[list[Record]]]
"""``fetch(partition, start, end)``: proposal records ``start`` ≤ offset < ``end`` of one partition, read from
the log (opened when it is sealed): at most a chunk of them, none when the log no longer holds them."""
Changes = Callable[[Sequence[ChangeEvent]], Awaitable[None]]
"""Where a standby copy's changes go (the worker's own index), instead of the outbox."""


class LogBindingError(RuntimeError):
    """A shard's stored offsets belong to another log: applying this log's records would skip or repeat."""


@dataclass
class StageResult:
    outgoing: list[OutgoingRecord] = field(default_factory=list)
    proposed: set[str] = field(default_factory=set)  # ids of the memory and node upserts among ``outgoing``
    repeats: int = 0  # proposals left out: proposed earlier in the batch, or an upsert the writer applied before
    unwanted: int = 0  # input records skipped on their change marker
    deferred: list[tuple[Record, str]] = field(default_factory=list)
    finished: list[tuple[str, int]] = field(default_factory=list)  # (layer, source turn's publish ms) per input
    dead_reasons: list[str] = field(default_factory=list)  # the class of each dead letter's reason (a metric label)

    def skipped(self) -> dict[str, int]:
        """Work left out, by what (the ``altm_stage_skipped_total`` labels)."""
        return {"changes": self.unwanted, "upserts": self.repeats}


def _layer_of(event: Event) -> str:
    """A bounded label: the layer an input record is about (a turn is L0)."""
    if isinstance(event, TurnEvent):
        return "L0"
    layer = getattr(event, "layer", None)
    memory = getattr(event, "memory", None)
    if layer is None and memory is not None:
        layer = memory.layer
    return layer.value if layer is not None else "none"


def _proposal_records(proposals: Sequence[Proposal], settings: Settings, sources: dict[str, int],
                      default_ms: int, traces: dict[str, Headers]) -> list[OutgoingRecord]:
    """Proposals as records, each with the publish time of the turn behind the event that caused it, the
    trace context of that event's span in this stage and the keys of the host records behind that event."""
    out_topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    return [OutgoingRecord(out_topic, encode(p), key=p.key,
                           headers=(source_header(sources.get(p.cause_event_id or "", default_ms)),
                                    *traces.get(p.cause_event_id or "", ())))
            for p in proposals]


def _new(proposals: Sequence[Proposal], ctx: ProcessorContext, result: StageResult) -> list[Proposal]:
    """``proposals`` less upserts that would change nothing: a memory, node or link upsert proposed earlier in this
    batch (its id is derived from the whole payload, and the writer answers a repeat ``unchanged``: a memory
    upsert is applied once, a node is a join of what was proposed), and a memory upsert the writer applied
    before to a memory it still stores. A scene recomputed from the same atoms, or the node each mention of an
    entity proposes, is not sent again. Other decisions are always sent: a reviewer's approve, reject, approve
    of one item are three decisions, the third with the first one's id.

    Known race, accepted: with a node left out because an earlier event of the batch proposed it, an erasure
    applied between the two (which scrubs the node if nothing else links to it) makes the later event's edge
    to it a rejection (``missing_evidence``, recorded) instead of re-creating the node."""
    out: list[Proposal] = []
    for p in proposals:
        if isinstance(p, UpsertMemoryProposal | UpsertNodeProposal | LinkMemoryProposal):
            applied = (isinstance(p, UpsertMemoryProposal) and ctx.reader is not None
                       and ctx.reader.upsert_applied(p.scope, p.memory.memory_id, p.event_id))
            if applied or p.event_id in result.proposed:
                result.repeats += 1
                continue
            result.proposed.add(p.event_id)
        out.append(p)
    return out


def _decode(processor: Processor, record: Record, ctx: ProcessorContext) -> Event | tuple[OutgoingRecord, str]:
    """The record's event, or a dead letter for it with the class of the reason."""
    try:
        event = decode_event(record.value)
    except DecodeError as exc:
        return (dead_letter_record(ctx.settings, record, stage=processor.name, error=str(exc), original=record.value),
                "undecodable")
    if record.key != event.key:
        error = (
            f"scope home {event.key!r} does not match the record key {record.key!r}: every topic is keyed "
            "by the scope home tenant/workspace/user"
        )
        return (dead_letter_record(ctx.settings, record, stage=processor.name, error=error, original=record.value),
                "wrong_key")
    return event


async def _one(processor: Processor, record: Record, event: Event, ctx: ProcessorContext,
               result: StageResult, trace_of: Headers) -> None:
    settings = ctx.settings
    try:
        proposals = await processor.process(event, ctx)
    except Deferred as exc:
        result.deferred.append((record, str(exc)))
        return
    except ProcessingError as exc:
        result.dead_reasons.append("processing_error")
        result.outgoing.append(
            dead_letter_record(settings, record, stage=processor.name, error=str(exc), original=record.value))
        return
    except Exception as exc:  # a processor bug must not stall the partition: dead-letter it, loudly
        log.exception("processor %s failed on %s[%d]@%d", processor.name, record.topic, record.partition,
                      record.offset)
        error = f"internal error in {processor.name}: {type(exc).__name__}: {exc}"
        result.dead_reasons.append("internal_error")
        result.outgoing.append(
            dead_letter_record(settings, record, stage=processor.name, error=error, original=record.value))
        return
    _processed(record, event, proposals, ctx, result, trace_of)


def _processed(record: Record, event: Event, proposals: Sequence[Proposal], ctx: ProcessorContext,
               result: StageResult, trace_of: Headers) -> None:
    """What one record's processing gave: its proposals' records, and the record counted as finished."""
    result.outgoing.extend(_proposal_records(_new(proposals, ctx, result), ctx.settings, {}, source_ms(record),
                                             {event.event_id: trace_of}))
    result.finished.append((_layer_of(event), source_ms(record)))


def wanted(processor: Processor, record: Record) -> bool:
    """Whether ``processor`` has a use for ``record``, told by its change marker alone (no marker: yes). A
    record it has none for is skipped without being opened or decoded (most changes matter to one stage)."""
    marker = change_marker(record)
    return marker is None or processor.accepts(marker)


async def run_records(processor: Processor, records: Sequence[Record], ctx: ProcessorContext) -> StageResult:
    """Decode, check keys, process (batched when the processor supports it); skip what it has no use for."""
    result = StageResult()
    decoded: list[tuple[Record, Event]] = []
    for rec in records:
        if is_shredded(rec):  # erased: its data key is destroyed; skipped without a dead letter
            continue
        if not wanted(processor, rec):
            result.unwanted += 1
            continue
        ev = _decode(processor, rec, ctx)
        if isinstance(ev, tuple):
            result.outgoing.append(ev[0])
            result.dead_reasons.append(ev[1])
        else:
            decoded.append((rec, ev))
    if not decoded:
        return result
    spans = start_record_spans(processor.name, [rec for rec, _ in decoded])
    hosts = {topic_name(t, ctx.settings.topic_prefix) for t in (Topic.TURNS, Topic.CONTROL)}
    try:
        await _process(processor, decoded, ctx, result, {ev.event_id: (*h, *lineage_headers(_lineage(rec, hosts)),
                                                                       *_rederived(rec, hosts))
                                                         for (rec, ev), (_, h) in zip(decoded, spans, strict=True)})
    finally:
        end_record_spans(spans)
    return result


def _rederived(record: Record, hosts: set[str]) -> Headers:
    """A change a restore published again marks what is proposed from it (``REDERIVED_HEADER``); the header on a
    host record (a turn, a control event) is the host's, and is not taken: it would make a refusal void."""
    return ((REDERIVED_HEADER, b"1"),) if record.topic not in hosts and is_rederived(record.headers) else ()


def _lineage(record: Record, hosts: set[str]) -> tuple[str, ...]:
    """The data keys of the host records behind ``record`` (:data:`~altm.bus.LINEAGE_HEADER`): a host record's
    own key (what a host put in its headers is not taken: it could make other records look erased), or the
    keys a derived record carries."""
    if record.topic in hosts:
        kid = sealed_by(record)
        return () if kid is None else (kid,)
    return lineage_of(record)


async def _process(processor: Processor, decoded: Sequence[tuple[Record, Event]], ctx: ProcessorContext,
                   result: StageResult, traces: dict[str, Headers]) -> None:
    """Batched when the processor supports it, else record by record (each failure its own). A batched form
    that fails (not a deferral) is handled as the processor says (:class:`BatchFailure`): raised, so the
    runtime tries the batch again; or processed record by record, the record that broke it dead-lettered or
    kept as deferred work."""
    try:
        batched = await processor.process_batch([ev for _, ev in decoded], ctx)
    except Deferred as exc:
        result.deferred.extend((rec, str(exc)) for rec, _ in decoded)
        return
    except Exception as exc:
        if processor.on_batch_failure is BatchFailure.RETRY:
            raise
        if processor.on_batch_failure is BatchFailure.DEFER_EACH:
            await _each_or_defer(processor, decoded, ctx, result, traces, exc)
            return
        log.warning("processor %s failed on a batch of %d record(s); processing them one by one",
                    processor.name, len(decoded), exc_info=True)
        batched = None
    if batched is not None:
        sources = {ev.event_id: source_ms(rec) for rec, ev in decoded}
        latest = max(sources.values())
        result.outgoing.extend(_proposal_records(_new(batched, ctx, result), ctx.settings, sources, latest, traces))
        result.finished.extend((_layer_of(ev), source_ms(rec)) for rec, ev in decoded)
        return
    for rec, ev in decoded:
        await _one(processor, rec, ev, ctx, result, traces.get(ev.event_id, ()))


async def _each_or_defer(processor: Processor, decoded: Sequence[tuple[Record, Event]], ctx: ProcessorContext,
                         result: StageResult, traces: dict[str, Headers], failure: Exception) -> None:
    """Record by record after a batch failed with ``failure`` (``BatchFailure.DEFER_EACH``): one that fails
    alone is deferred; when the first does (a batch of one already has), the rest are deferred untried (what
    the stage needs is likely away: not one failing call per record)."""
    def why(exc: Exception) -> str:
        return f"{processor.name} failed: {type(exc).__name__}: {exc}"

    if len(decoded) == 1:
        result.deferred.append((decoded[0][0], why(failure)))
        return
    log.warning("processor %s failed on a batch of %d record(s); processing them one by one", processor.name,
                len(decoded), exc_info=failure)
    for i, (rec, ev) in enumerate(decoded):
        try:
            proposals = await processor.process(ev, ctx)
        except Deferred as exc:
            result.deferred.append((rec, str(exc)))
            continue
        except Exception as exc:
            log.warning("processor %s failed on %s[%d]@%d alone; kept for a retry: %s", processor.name, rec.topic,
                        rec.partition, rec.offset, why(exc))
            if i == 0:
                result.deferred.extend((r, why(exc)) for r, _ in decoded)
                return
            result.deferred.append((rec, why(exc)))
            continue
        _processed(rec, ev, proposals, ctx, result, traces.get(ev.event_id, ()))


def next_offsets(records: Sequence[Record]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for rec in records:
        out[(rec.topic, rec.partition)] = max(out.get((rec.topic, rec.partition), 0), rec.offset + 1)
    return out


def _defer(work: DeferredWork, stage: str, record: Record, reason: str, *, reapplied: bool = False) -> None:
    """Keep ``record`` for a retry (``reapplied``: it was read from the log, applied by its owner before)."""
    headers = record.headers
    if reapplied and not is_reapplied(record.headers):
        headers = (*headers, (REAPPLIED_HEADER, b"1"))
    work.add(stage, record.topic, record.partition, record.offset, record.key, record.value, reason,
             headers=pack_headers(headers), timestamp_ms=record.timestamp_ms)


def _record(item: WorkItem) -> Record:
    """A deferred record as it was read: its headers (source turn's publish time, trace) and timestamp too."""
    return Record(item.topic, item.partition, item.offset, item.key, item.value, timestamp_ms=item.timestamp_ms,
                  headers=unpack_headers(item.headers))


class StageDriver:
    """One processor over records from either runtime: process, publish, defer or dead-letter."""

    def __init__(self, processor: Processor, ctx: ProcessorContext, work: DeferredWork, publish: Publish) -> None:
        self.processor = processor
        self.ctx = ctx
        self.work = work
        self.publish = publish

    @property
    def name(self) -> str:
        return self.processor.name

    def wants(self, record: Record) -> bool:
        """Whether to open ``record`` for this stage: one it turns down reaches ``handle`` sealed and is skipped
        there on its marker (a runtime that opens records itself asks first; see :func:`wanted`)."""
        return wanted(self.processor, record)

    async def handle(self, records: Sequence[Record]) -> int:
        """Process a batch; its outputs are published when this returns (commit the inputs after it)."""
        if not records:
            return 0
        start = time.perf_counter()
        result = await run_records(self.processor, records, self.ctx)
        for rec, reason in result.deferred:
            _defer(self.work, self.name, rec, reason)
        await self.publish(result.outgoing)  # then observed: a batch that is handled again counts once
        observe_stage(self.name, records, result.outgoing, len(result.deferred), result.finished, result.dead_reasons,
                      time.perf_counter() - start, skipped=result.skipped())
        return len(records)

    async def retry_due(self, partitions: set[int] | None = None) -> int:
        """Retry deferred work whose time has come (of ``partitions`` only, when given)."""
        done = 0
        for item in self.work.due(self.name, partitions):
            rec = _record(item)
            start = time.perf_counter()
            result = await run_records(self.processor, [rec], self.ctx)
            if result.deferred:
                _defer(self.work, self.name, rec, result.deferred[0][1])
                continue
            await self.publish(result.outgoing)
            observe_stage(self.name, [rec], result.outgoing, 0, result.finished, result.dead_reasons,
                          time.perf_counter() - start, skipped=result.skipped())
            self.work.done(item)
            done += 1
        return done


async def until_done(call: Callable[[], Awaitable[T]], what: str, *, first_delay_s: float = 0.5,
                     max_delay_s: float = 30.0) -> T:
    """``call()``, again after a growing pause while it raises (each failure logged with ``what``)."""
    delay = first_delay_s
    while True:
        try:
            return await call()
        except Exception:
            log.exception("%s failed; retrying in %.1fs", what, delay)
        await asyncio.sleep(delay)
        delay = min(max_delay_s, delay * 2)


async def handle_until_done(driver: StageDriver | WriterDriver, records: Sequence[Record], *,
                            first_delay_s: float = 0.5, max_delay_s: float = 30.0) -> int:
    """``driver.handle(records)`` until it returns: for a runtime (the Kafka worker's lanes) that would otherwise
    acknowledge a batch whose outputs were never published. Processor errors never reach here (the driver
    dead-letters or defers them); what does is the bus or a store failing, and waiting it out stalls this
    partition instead of losing its records."""
    return await until_done(lambda: driver.handle(records), f"{driver.name} on a batch of {len(records)} "
                            "record(s)", first_delay_s=first_delay_s, max_delay_s=max_delay_s)


def check_log_binding(shard: Shard, identity: str, topic: str, end_offset: int | None) -> None:
    """Refuse a shard whose stored writer offsets belong to another log; bind an unbound one to this log.

    A shard from before bindings existed is accepted when its stored offset does not lie beyond the end of
    this log (``end_offset``; None when unknown, and then only a shard without offsets is accepted)."""
    bound = shard.bound_log()
    if bound == identity:
        return
    if bound is not None:
        raise LogBindingError(
            f"shard {shard.path} holds the offsets of another log ({bound}), not of this one ({identity}): "
            "open the data dir with the deployment's own bus (e.g. --broker kafka://HOST:PORT), or use a fresh "
            "data dir")
    stored = shard.next_offset(WRITER_GROUP, topic, shard.partition)
    if stored is not None and (end_offset is None or stored > end_offset):
        raise LogBindingError(
            f"shard {shard.path} has applied proposals up to offset {stored} of {topic}[{shard.partition}], "
            f"but this log ends at {end_offset if end_offset is not None else 'an unknown offset'}: the shard "
            "belongs to another log (a Kafka deployment's data dir, or an embedded log that was removed). Open "
            "the data dir with the deployment's own bus (--broker kafka://HOST:PORT), or use a fresh data dir")
    shard.bind_log(identity)


class WriterDriver:
    """The writer over proposal records from either runtime: apply, defer what the guard could not decide,
    publish the outbox. Flushes of one partition never overlap (the writer and a timer may both flush).

    With ``fetch`` (the Kafka runtime), the proposals log is the shard's changelog: a partition whose shard
    has not applied every proposal before the ones it is handed (a worker took over a partition it never
    owned, or owned long ago, with a data dir of its own) first applies the missing ones, read from the log,
    in order. No model is called: proposals carry what the models said."""

    name = "writer"

    def __init__(self, writer: Writer, work: DeferredWork, publish: Publish, identity: str,
                 fetch: Fetch | None = None) -> None:
        self.writer = writer
        self.work = work
        self.publish = publish
        self.identity = identity
        self.fetch = fetch
        self.topic = writer.proposals_topic
        self._locks: dict[int, asyncio.Lock] = {}
        self._restoring: dict[int, asyncio.Lock] = {}
        self._bound: set[int] = set()
        self.restored: dict[int, int] = {}  # partition → proposals applied from the log to fill a gap

    def bind(self, partition: int, end_offset: int | None) -> int | None:
        """Check the shard of ``partition`` belongs to this log; returns where its writer resumes."""
        shard = self.writer.shards.get(partition)
        check_log_binding(shard, self.identity, self.topic, end_offset)
        self.writer.upgrade(partition)
        self._bound.add(partition)
        return self.writer.resume_offset(self.topic, partition)

    def wants(self, record: Record) -> bool:
        """The writer opens every proposal."""
        return True

    async def handle(self, records: Sequence[Record]) -> int:
        """Apply a batch (after what the shard misses before it, see the class); the resulting changes are
        published when this returns."""
        touched = sorted({rec.partition for rec in records})
        for partition in touched:
            if partition not in self._bound:
                self.bind(partition, None)
        if self.fetch is None:
            return await self._apply(records, touched)
        async with contextlib.AsyncExitStack() as held:  # a batch cancelled while it waits for one partition's
            for partition in touched:                       # restore releases the locks it took, and only those
                await held.enter_async_context(self._restoring.setdefault(partition, asyncio.Lock()))
            for partition in touched:
                await self._fill(partition, min(r.offset for r in records if r.partition == partition))
            return await self._apply(records, touched)

    async def catch_up(self, partition: int, end: int) -> int:
        """Apply what the shard of ``partition`` misses before ``end`` (a partition this worker was given and
        has had no proposal for yet); returns how many proposals that was."""
        if self.fetch is None:
            return 0
        if partition not in self._bound:
            self.bind(partition, None)
        async with self._restoring.setdefault(partition, asyncio.Lock()):
            await self._retry_held(partition)
            return await self._fill(partition, end)

    async def _retry_held(self, partition: int) -> None:
        """Proposals this worker's standby copy of ``partition`` deferred (held back: nothing after them was
        applied), tried again, due or not, before a restore applies what follows them; one still undecided
        stays for ``retry_due``, and the restore goes on, as the owner did."""
        await self._retry([i for i in self.work.pending({partition}) if i.stage == self.name])

    async def follow(self, partition: int, end: int, embed: Changes, *, transaction: int) -> int:
        """A standby copy of a partition another worker owns: apply the proposals its shard misses before
        ``end`` (what the owner has committed), at most ``transaction`` of them per transaction, and hand the
        changes they make to ``embed`` (this worker's own index). They never go to the outbox: the owner
        published them before it committed ``end``. Returns how many proposals were applied; taking the
        partition over then restores only what came after.

        What the outbox holds from when this worker owned the partition (a batch whose flush a rebalance
        cancelled) stays there while the owner has not committed past this shard's offset: given the partition
        back at once, this worker skips those proposals (its shard has them) and its restore's flush publishes
        them. Once the owner has committed past it, the owner applied them too and published its own changes:
        they go, before anything newer is applied here (published later, they would follow newer changes)."""
        if self.fetch is None:
            return 0
        if partition not in self._bound:
            self.bind(partition, None)
        async with self._restoring.setdefault(partition, asyncio.Lock()):
            if not await self._retry_copied(partition, embed):
                return 0  # what the guard could not decide comes first, as on the owner
            shard = self.writer.shards.get(partition)
            if end >= (self.writer.resume_offset(self.topic, partition) or 0) and shard.outbox_depth():
                await self.publish_burials(partition)  # the owner cannot make them: they go to the log first
                async with self._locks.setdefault(partition, asyncio.Lock()):  # never under a flush
                    dropped = shard.drop_unpublished()
                log.info("%s[%d]: dropped %d outbox row(s) left from owning it (its owner published their "
                         "changes)", self.topic, partition, dropped)
            return await self._fill(partition, end, embed, transaction=transaction)

    async def _fill(self, partition: int, end: int, embed: Changes | None = None, *,
                    transaction: int | None = None) -> int:
        """Apply the proposals of ``partition`` from the shard's next offset up to ``end``, in chunks read from the
        log (one transaction each, or of ``transaction`` proposals), their changes published (or handed to
        ``embed``: a standby copy, which logs and counts nothing of it)."""
        quiet = embed is not None
        assert self.fetch is not None
        applied = 0
        read: list[Record] = []  # read past the last chunk (for its burials): the next chunk, not read again
        while (start := self.writer.resume_offset(self.topic, partition) or 0) < end:
            chunk = [r for r in read if r.offset < end] if read and read[0].offset == start else []
            chunk = chunk or await self.fetch(partition, start, end)
            lost_until = chunk[0].offset if chunk else end
            if lost_until > start:  # the broker no longer holds them (retention): say so, loudly
                log.error("the shard of %s[%d] misses offsets %d..%d and the log no longer holds them: the "
                          "memories they made are not in this worker's data dir", self.topic, partition, start,
                          lost_until - 1)
            if not chunk:
                break
            if applied == 0 and not quiet:
                log.info("restoring %s[%d] from the log: offsets %d..%d", self.topic, partition, start, end - 1)
            read = await self._read_past(partition, chunk)
            beyond = [r for r in read if b'"op":"bury"' in r.value]
            step = transaction or len(chunk)
            for at in range(0, len(chunk), step):  # the event loop runs between two (the worker's own lanes)
                ahead = [*chunk[at + step:], *beyond]
                if embed is None:
                    await self._apply(chunk[at:at + step], [partition], ahead, reapplied=True)
                else:
                    taken, held = await self._copy(chunk[at:at + step], ahead, embed)
                    if held:  # a copy goes no further than a proposal it had to defer
                        return applied + at + taken
            applied += len(chunk)
        if applied and not quiet:
            self.restored[partition] = self.restored.get(partition, 0) + applied
            log.info("restored %s[%d]: %d proposals applied from the log", self.topic, partition, applied)
        return applied

    async def _read_past(self, partition: int, chunk: Sequence[Record]) -> list[Record]:
        """The ``BURIAL_PEEK`` records after ``chunk`` when an erasure or forget in it may have left ``bury``
        proposals there (its owner published them with the next flush), else none: the writer takes those over
        with the proposal that made them, so what came between is judged with the tombstones, as the owner
        judged it."""
        assert self.fetch is not None
        if not burials_to_find(chunk):
            return []
        after = chunk[-1].offset + 1
        return await self.fetch(partition, after, after + BURIAL_PEEK)

    async def _copy(self, records: Sequence[Record], lookahead: Sequence[Record],
                    embed: Changes) -> tuple[int, bool]:
        """A standby copy's transaction: applied, nothing enqueued in the outbox, the changes to ``embed``.
        Returns how many records it took (applied or deferred), and whether one was deferred (the guard could
        not decide): it is kept for a retry, and what follows it waits for the next tick."""
        for partition in sorted({rec.partition for rec in records if is_shredded(rec)}):
            self.writer.shards.get(partition).mark_short_copy()  # see ``copy_is_short``
        outcomes = self.writer.apply_batch(
            records, self.writer.partitions, lookahead=lookahead, enqueue=False, reapplied=True, until_deferred=True,
            on_deferred=lambda rec, why: _defer(self.work, self.name, rec, why, reapplied=True))
        changes = [change for outcome in outcomes for change in outcome.changes]
        if changes:
            await embed(changes)
        deferred = [i for i, outcome in enumerate(outcomes) if outcome.deferred_reason is not None]
        return (deferred[0] + 1, True) if deferred else (len(records), False)

    def copy_is_short(self, partition: int) -> bool:
        """Whether this worker's standby copy of ``partition`` skipped proposals it could not open (sealed with a
        key an erasure retired): a restore publishes the changes of what it applies again, so the stages derive
        again what it could not open (a scene, a facet, a link), and a copy, which publishes nothing, cannot.
        Taken over, such a copy is dropped and the shard restored from the log instead (``drop_short_copy``). The
        mark is kept in the shard (a worker started again still knows)."""
        shards = self.writer.shards
        return shards.has(partition) and shards.get(partition).short_copy()  # every other shard left unopened

    async def drop_short_copy(self, partition: int, drop: Callable[[int], None]) -> bool:
        """Drop the standby copy of ``partition`` when it is short (``copy_is_short``), under the partition's
        restore lock (a copy's tick never applies to it meanwhile); its next shard is bound to the log again and
        restored whole. Returns whether it was dropped."""
        async with self._restoring.setdefault(partition, asyncio.Lock()):
            if not self.copy_is_short(partition):
                return False
            drop(partition)
            self._bound.discard(partition)
            return True

    async def _retry_copied(self, partition: int, embed: Changes) -> bool:
        """A standby copy's deferred proposals, retried as the copy applies (nothing enqueued, the changes to
        ``embed``) before it applies anything newer. Returns whether the copy may go on: none is left waiting
        that was tried fewer than ``HOLD_ATTEMPTS`` times (one that never decides would hold it back for good,
        the owner's erasures too)."""
        for item in self.work.due(self.name, {partition}):
            rec = _record(item)
            (outcome,) = self.writer.apply_batch([rec], self.writer.partitions, retry=True, enqueue=False,
                                                 reapplied=True)
            if outcome.deferred_reason is not None:
                _defer(self.work, self.name, rec, outcome.deferred_reason, reapplied=True)
                continue
            self.work.done(item)
            if outcome.changes:
                await embed(outcome.changes)
        return not any(item.stage == self.name and item.attempts < HOLD_ATTEMPTS
                       for item in self.work.pending({partition}))

    async def _apply(self, records: Sequence[Record], touched: Sequence[int],
                     lookahead: Sequence[Record] = (), *, reapplied: bool = False) -> int:
        start = time.perf_counter()
        spans = start_record_spans(self.name, records)
        try:  # one transaction per partition; the changes carry each record's span as their parent; a proposal
            # the guard could not decide is kept for a retry in the same transaction (fail closed, never lost)
            outcomes = self.writer.apply_batch(
                records, self.writer.partitions, headers=[h for _, h in spans], lookahead=lookahead,
                reapplied=reapplied,
                on_deferred=lambda rec, why: _defer(self.work, self.name, rec, why, reapplied=reapplied))
        except BaseException:
            writer_transactions("failed")  # this batch's: its partitions before the failing one did commit
            raise
        finally:
            end_record_spans(spans)
        # a partition whose records were all applied before opens no transaction (a redelivery, a retried batch)
        writer_transactions("committed", len({r.partition for r, o in zip(records, outcomes, strict=True)
                                              if not o.skipped}))
        observe_writer(records, outcomes, time.perf_counter() - start)  # what was committed, published or not
        for partition in touched:
            await self.flush(partition)
        return len(records)

    async def retry_due(self, partitions: set[int] | None = None) -> int:
        self.writer.destroy_retired_keys()  # derived-record keys retired by an erasure, after their grace
        return await self._retry(self.work.due(self.name, partitions))

    async def _retry(self, items: Sequence[WorkItem]) -> int:
        """Deferred proposals applied again (their changes published); one still undecided is deferred again.
        Returns how many were applied."""
        done = 0
        for item in items:
            start = time.perf_counter()
            outcome = self.writer.apply(_record(item), self.writer.partitions, retry=True)
            writer_transactions("committed")
            observe_writer([_record(item)], [outcome], time.perf_counter() - start)
            if outcome.deferred_reason is not None:
                _defer(self.work, self.name, _record(item), outcome.deferred_reason)
                continue
            self.work.done(item)
            await self.flush(item.partition)
            done += 1
        return done

    async def flush(self, partition: int) -> None:
        """Publish the changes (and dead letters) committed but not yet published, in commit order."""
        lock = self._locks.setdefault(partition, asyncio.Lock())
        async with lock:
            shard = self.writer.shards.get(partition)
            depth = shard.outbox_depth()
            outbox_depth(partition, depth)  # what stays there while the bus is unreachable
            while pending := shard.pending_outbox():
                await self.publish(self._outgoing(pending))
                shard.mark_published(pending[-1][0])
                depth = max(0, depth - len(pending))
                outbox_depth(partition, depth)

    async def publish_burials(self, partition: int) -> int:
        """The tombstones the shard of a partition this worker does not own holds in its outbox, published to the
        proposals log, where the partition's owner applies them: an erasure applied just before the partition
        moved (or while the broker was away) made them, and nobody else can, since its session's keys were
        destroyed when it was applied. Published again they change nothing (the writer applies a ``bury``
        once). Returns how many."""
        async with self._locks.setdefault(partition, asyncio.Lock()):
            shard = self.writer.shards.get(partition)
            rows = shard.pending_burials()
            if not rows:
                return 0
            await self.publish(self._outgoing(rows))
            shard.mark_sent([seq for seq, *_ in rows])
        log.info("%s[%d]: published %d bury proposal(s) left in the outbox of a shard another worker owns",
                 self.topic, partition, len(rows))
        return len(rows)

    def _outgoing(self, rows: Sequence[OutboxRow]) -> list[OutgoingRecord]:
        """Outbox rows as the records to publish, under this deployment's topic names."""
        return [OutgoingRecord(self.outbox_topic(topic), value, key=key, headers=unpack_headers(headers))
                for _, topic, key, value, headers in rows]

    def outbox_topic(self, stored: str) -> str:
        """The topic an outbox row goes to under this deployment's prefix. Rows name the topic's kind
        (``changes``, ``dlq``, ``proposals``); rows written before that hold a full name, whose kind is its last
        part, so a changed ``ALTM_TOPIC_PREFIX`` never leaves a partition publishing to topics nobody reads."""
        return under_prefix(stored, self.writer.settings.topic_prefix)

    async def flush_all(self, partitions: Iterable[int]) -> None:
        for partition in sorted(partitions):
            await self.flush(partition)

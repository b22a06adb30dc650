"""The Kafka runtime: the same processors and the writer, over Apache Kafka, in ``altm worker`` processes.

A worker is one member of the consumer group ``<prefix>workers`` over the four input topics. The range
assignor gives it the same partition numbers of every topic, so everything about one user (the turns, the
proposals its writer applies, the changes its stages derive from) is on one worker, beside that partition's
shard. One fetch loop reads batches and queues them on *lanes* (:mod:`._lane`): the writer, capture, embed, the
deriving stages of the changes topic together, and each control stage; lanes run side by side and feed the
runtime-neutral drivers (:mod:`altm.pipeline._drivers`), whose outputs are sent without awaiting each one and
awaited together before the batch counts as handled. A partition whose lanes queue more than a few batches is
paused until they catch up.

Offsets: a partition's committed offset is the least of what its lanes have handled, committed every second,
as soon as every lane has run out of work (the group's lag shows a worker that is done at once, not up to a
second later), at a rebalance and at a stop. At a rebalance a worker starts no new batch of the partitions it
gives up, waits for the batches in flight (``ALTM_WORKER_REVOKE_WAIT_S``, then cancels them: not handled, not
committed), commits what was handled and drops what it had queued: the next owner reads on from exactly there.
Nothing is acknowledged before its outputs are published, so delivery is at-least-once and effects are idempotent: the
writer stores its proposals offset in the shard transaction and skips anything below it, and changes go
through the shard's outbox.

The proposals log is each shard's changelog (see ``WriterDriver``): a partition this worker is given is first
restored up to the group's committed offset, and its stages wait for that (they read the shard). With
``ALTM_WORKER_STANDBY`` the worker also keeps warm copies of the partitions it does not own (:mod:`._standby`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from altm.bus import BusError, OutgoingRecord, Record, TopicPartition, turns_end, unpack_headers
from altm.bus.kafka import MAX_RECORD_BYTES, GroupMember, KafkaBus, RangeReader, parse_broker_url, record_size
from altm.bus.sealing import Sealer
from altm.core import DeadLetter, Settings, Topic, encode, partition_for, topic_name, under_prefix
from altm.pipeline._drivers import StageDriver, WriterDriver
from altm.pipeline._telemetry import consumer_lag
from altm.pipeline.processors import Processor, ProcessorContext
from altm.pipeline.runtime._claim import DataDirClaim
from altm.pipeline.runtime.kafka._lane import Driver, Gate, Lane, lanes_of
from altm.pipeline.runtime.kafka._order import LaneOrder
from altm.pipeline.runtime.kafka._standby import STANDBY_EVERY_S, StandbyCopies
from altm.pipeline.writer import TextSimilarity, Writer, is_reapplied
from altm.store import DeferredWork, ShardSet, shard_files
from altm.vectors import VectorIndex

log = logging.getLogger("altm.worker")
RESTORE_CHUNK = 5000
"""Proposals read from the broker and applied in one transaction while a shard is restored."""
QUEUED_BATCHES = 4
SEARCHABLE_PATH = frozenset({"capture", "writer", "embed"})
"""The lanes that make a turn searchable; the deriving lane of the changes topic yields to them (see
``_searchable_first``)."""
"""A partition is paused once a lane has this many batches (``ALTM_POLL_BATCH`` records each) of it queued."""



def _needs_alone(settings: Settings) -> str | None:
    """Why a worker with these settings needs its data dir to itself (see ``DataDirClaim``), or None."""
    if settings.worker_standby:
        return "ALTM_WORKER_STANDBY keeps copies of every partition there"
    if settings.worker_drop_unowned_after_s is not None:
        return "ALTM_WORKER_DROP_UNOWNED_AFTER_S deletes the shards of the partitions it does not own"
    return None


def worker_claim(settings: Settings) -> DataDirClaim:
    """The claim a worker with these settings takes on its data dir (not taken yet). ``altm worker`` takes it
    before anything touches the data dir or the broker, hands it to the runtime, and releases it once the runtime
    stopped and the shards and the vector index are closed."""
    return DataDirClaim(Path(settings.data_dir), alone=_needs_alone(settings))


class KafkaRuntime:
    """Builds a worker's lanes over drivers; ``altm worker`` (wiring) starts and stops it."""

    def __init__(self, settings: Settings, shards: ShardSet, ctx: ProcessorContext,
                 processors: Sequence[Processor], identity: str, sealer: Sealer | None = None,
                 similarity: TextSimilarity | None = None, vectors: VectorIndex | None = None, *,
                 claim: DataDirClaim | None = None) -> None:
        if not settings.broker:
            raise ValueError("the Kafka runtime needs a broker (ALTM_BROKER or --broker kafka://HOST:PORT)")
        self.settings = settings
        self.bootstrap = parse_broker_url(settings.broker)
        self._ranges = RangeReader(self.bootstrap, max_records=RESTORE_CHUNK)  # the log's ranges, read by one consumer
        self.sealer = sealer
        self.partitions = settings.partitions
        self.shards = shards
        self.work = DeferredWork(shards, settings)
        self.stages = [StageDriver(p, ctx, self.work, self._publish) for p in processors]
        keys = sealer.keys if sealer is not None else None
        self.writer = WriterDriver(Writer(shards, settings, keys, similarity), self.work, self._publish, identity,
                                   self._fetch_proposals)
        self.vectors = vectors  # this worker's own index: a dropped partition's points go with its shard
        self._embed_stage = next((stage for stage in self.stages if stage.name == "embed"), None)
        self.standby = StandbyCopies(self.writer, shards, vectors, self._embed_stage, self._committed_proposals,
                                     self.partitions)
        prefix = settings.topic_prefix
        self.lanes = [Lane(self.writer.topic, [self.writer], batch=settings.poll_batch, opener=self._open,
                           ready=lambda partition: True, emptied=self._lane_emptied)]
        for group in lanes_of(self.stages):
            self.lanes.append(self._lane_of(group))
        self._searchable = [lane for lane in self.lanes if lane.name in SEARCHABLE_PATH]
        control = topic_name(Topic.CONTROL, prefix)
        self._turns_topic = topic_name(Topic.TURNS, prefix)
        self._control_topic = control
        capture = next((lane for lane in self.lanes if lane.name == "capture"), None)
        self.order = LaneOrder(capture, [lane for lane in self.lanes if lane.topic == control],
                               [lane for lane in self.lanes if lane.topic != control and lane is not capture],
                               ends=self._end_offsets, handled=self._handled, positions=self._positions,
                               owned=lambda: self._owned(Topic.CONTROL), ready=self._is_ready)
        self._by_topic: dict[str, list[Lane]] = {}
        for lane in self.lanes:
            self._by_topic.setdefault(lane.topic, []).append(lane)
        self.bus = KafkaBus(self.bootstrap, client_id="altm-worker")
        self._member: GroupMember | None = None  # made in ``start`` (aiokafka needs the running loop)
        self._ready: set[int] = set()  # proposal partitions restored since they were assigned (``_restored``)
        self._epochs: dict[int, int] = {}  # proposal partition → how many times it was revoked
        self._unowned_since: dict[int, float] = {}  # partition with a shard here → since when not owned
        self._next: dict[TopicPartition, int] = {}  # the offset after the last record queued, per partition
        self._committed: dict[TopicPartition, int] = {}  # what this worker last committed
        self._paused: set[TopicPartition] = set()
        # what this worker owns: set when the group assigns it, cleared when it is revoked (aiokafka still
        # reports the previous assignment while the group joins, so ``member.assignment()`` would not do)
        self._owned_tps: frozenset[TopicPartition] = frozenset()
        self._commit_lock = asyncio.Lock()  # a commit never straddles a rebalance (it would carry the new
        # generation for a partition another worker now owns, and could move its offset back)
        self._restore_now = asyncio.Event()
        self._commit_now = asyncio.Event()  # every lane ran out of work: commit now, not at the next tick
        self._tasks: list[asyncio.Task[None]] = []
        # partitions revoked at the last rebalance (given back or not); with standby copies (a data dir of its
        # own) every partition at the start: deferred work a stop kept from being handed over goes at the first
        self._given_up: set[int] = set(range(self.partitions)) if settings.worker_standby else set()
        self._handovers: set[asyncio.Task[bool]] = set()
        # the data dir's claim: one handed in (taken) is its caller's to release, after it closed the shards
        # and the index; one of its own is taken at the start and released at the stop
        self._claim = claim if claim is not None else worker_claim(settings)
        self._releases_claim = claim is None
        self._hand_over_due: set[int] = set()  # partitions whose hand-over failed: the deferred-work timer retries
        self._burials_due: set[int] = set()  # unowned partitions whose tombstones are still to be published

    def _lane_of(self, group: list[StageDriver]) -> Lane:
        """A lane of stages: the deriving lane yields to the searchable path; capture and the control lanes keep
        the control order (:mod:`._order`)."""
        source = group[0].processor.input_topic
        control, capture = source is Topic.CONTROL, group[0].name == "capture"
        deriving = source is Topic.CHANGES and (len(group) > 1 or group[0].name not in SEARCHABLE_PATH)
        gate: Gate | None = ((lambda p: self.order.control_gate(p)) if control
                             else (lambda p: self.order.capture_gate(p)) if capture else None)
        return Lane(topic_name(source, self.settings.topic_prefix), group, batch=self.settings.poll_batch,
                    opener=self._open, ready=self._is_ready, gate=gate, marker=turns_end if control else None,
                    hold=self._searchable_first if deriving else None, emptied=self._lane_emptied)

    # lifecycle

    @property
    def member(self) -> GroupMember:
        if self._member is None:
            raise BusError("the Kafka runtime is not started")
        return self._member

    @property
    def group_id(self) -> str:
        return f"{self.settings.topic_prefix}workers"

    async def start(self) -> None:
        """Claim the data dir, join the group and start the lanes, the fetch loop and the timers."""
        self._claim.take()
        try:
            await self._join()
        except BaseException:
            self._release_claim()
            raise

    async def _join(self) -> None:
        self._member = GroupMember(
            self.bootstrap, self.group_id, sorted(self._by_topic), self, client_id="altm-worker",
            session_timeout_s=self.settings.worker_session_timeout_s, max_records=self.settings.poll_batch * 4)
        await self.bus.start()
        try:
            await self._ranges.start()
            await self.member.start()
        except BaseException:
            await self._ranges.stop()
            await self.bus.stop()
            raise
        for lane in self.lanes:
            lane.start()
        s = self.settings
        self._tasks = [asyncio.create_task(self._fetch_loop(), name="altm-fetch"),
                       self._every(1.0, self._commit, "committing offsets", self._commit_now),
                       self._every(1.0, self._flush_owned, "flushing the outbox (is the broker reachable?)"),
                       self._every(2.0, self._restore_owned, "restoring owned partitions from the log",
                                   self._restore_now),
                       self._every(5.0, self._retry_deferred, "retrying deferred work"),
                       self._every(5.0, self._observe_lag, "measuring consumer lag"),
                       asyncio.create_task(self.order.run(), name="altm-control-order"),
                       asyncio.create_task(self.order.ask(), name="altm-control-ends")]
        if s.worker_standby:
            self._tasks.append(self._every(STANDBY_EVERY_S, self._follow_unowned, "keeping the standby copies warm"))
        if s.worker_drop_unowned_after_s is not None:
            self._tasks.append(self._every(min(10.0, s.worker_drop_unowned_after_s), self._drop_unowned,
                                           "dropping unowned shards"))

    async def stop(self) -> None:
        """Finish the batches in flight, commit what was handled, publish the outboxes and leave the group; the
        data dir's claim, if the runtime took it, goes however the stop ends (cut short by a caller's timeout
        too)."""
        try:
            await self._leave()
        finally:
            self._release_claim()

    def _release_claim(self) -> None:
        if self._releases_claim:
            self._claim.release()

    async def _leave(self) -> None:
        fetch, timers = self._tasks[:1], self._tasks[1:]
        for task in fetch:
            task.cancel()
        await asyncio.gather(*fetch, return_exceptions=True)
        await asyncio.gather(*(lane.stop(self.settings.worker_revoke_wait_s) for lane in self.lanes))
        for task in timers:
            task.cancel()
        for handover in self._handovers:
            handover.cancel()
        await asyncio.gather(*timers, *self._handovers, return_exceptions=True)
        self._tasks = []
        try:
            for last in (self._commit, self._flush_owned):
                try:
                    await last()
                except Exception:  # the broker away, a leader missing: the next owner resumes from what was
                    log.warning("at stop: %s failed (the next owner resumes from what was committed)",  # committed
                                last.__name__, exc_info=True)
        finally:  # leave the group whatever happened: its partitions go to the others at once
            try:
                await self.member.stop()
            finally:
                try:
                    await self._ranges.stop()
                finally:
                    await self.bus.stop()

    def _every(self, seconds: float, call: Callable[[], Awaitable[None]], what: str,
               now: asyncio.Event | None = None) -> asyncio.Task[None]:
        """``call()`` every ``seconds`` (or at once when ``now`` is set), as a task of this runtime: a failure is
        logged and the next tick tries again (a broker outage or a rebalance mid-way)."""
        async def loop() -> None:
            while True:
                if now is None:
                    await asyncio.sleep(seconds)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(now.wait(), seconds)
                    now.clear()
                try:
                    await call()
                except Exception:
                    log.warning("%s failed; the next tick tries again", what, exc_info=True)

        return asyncio.create_task(loop(), name=f"altm-{call.__name__.strip('_')}")

    # the group's side (GroupMember calls these inside a rebalance)

    async def revoked(self, tps: frozenset[TopicPartition]) -> None:
        """No lane starts a batch of these; those in flight finish (or are cancelled); what was handled is
        committed and what was queued is dropped."""
        parts: dict[str, set[int]] = {}
        for tp in tps:
            parts.setdefault(tp.topic, set()).add(tp.partition)
        self._owned_tps = self._owned_tps - tps
        wait_s = self.settings.worker_revoke_wait_s
        await asyncio.gather(*(lane.settle(parts.get(lane.topic, ()), wait_s) for lane in self.lanes))
        async with self._commit_lock:
            try:
                await self._commit_unlocked(tps)
            except BusError:  # the next owner handles those records again: effects are idempotent
                log.warning("committing the offsets of revoked partitions failed", exc_info=True)
        for lane in self.lanes:
            lane.forget(parts.get(lane.topic, ()))
        self.order.forget(sorted(parts.get(self._control_topic, ())))
        for tp in tps:
            self._next.pop(tp, None)
            self._committed.pop(tp, None)
            self._paused.discard(tp)
        for partition in parts.get(self.writer.topic, ()):  # restored again if it comes back (another worker
            self._ready.discard(partition)                  # may have written to it meanwhile)
            self._epochs[partition] = self._epochs.get(partition, 0) + 1
            self._unowned_since.setdefault(partition, time.monotonic())
            self._given_up.add(partition)
        log.info("gave up %d partition(s)", len(tps))

    async def assigned(self, tps: frozenset[TopicPartition]) -> None:
        """Restore the new partitions' shards (in a task: never inside the rebalance)."""
        by_topic: dict[str, set[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, set()).add(tp.partition)
        self._owned_tps = self._owned_tps | tps
        if len({frozenset(p) for p in by_topic.values()}) > 1:
            log.error("the group's assignment is not co-partitioned (%s): a stage may read a shard another worker "
                      "writes; is an older worker (faust) still in the group?", sorted(tps))
        self._restore_now.set()
        kept = by_topic.get(self.writer.topic, set())
        lost, self._given_up = self._given_up - kept, set()
        self._hand_over_due -= kept  # its deferred work is this worker's own again
        if lost:  # in a task: never inside the rebalance
            self._handovers.add(task := asyncio.create_task(self._hand_over_lost(lost), name="altm-hand-over"))
            task.add_done_callback(self._handovers.discard)
        self._handovers.add(task := asyncio.create_task(self._burials_elsewhere(kept), name="altm-burials"))
        task.add_done_callback(self._handovers.discard)
        log.info("given %d partition(s): %s", len(tps), sorted(kept))

    # fetching, queueing, committing

    async def _fetch_loop(self) -> None:
        while True:
            try:
                batches = await self.member.fetch(0.02 if self._paused else 0.2)
            except Exception:
                log.warning("fetching from the broker failed; trying again in 1 s", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            try:
                for tp, records in batches.items():
                    self._queue(tp, records)
                self._pace()
            except Exception:  # never the end of the loop: what was not queued is fetched again after a rebalance
                log.exception("queueing fetched records failed")

    def _queue(self, tp: TopicPartition, records: Sequence[Record]) -> None:
        after = self._next.get(tp)
        fresh = [r for r in records if after is None or r.offset >= after]  # never a record twice
        if not fresh:
            return
        self._next[tp] = fresh[-1].offset + 1
        if tp.topic == self._turns_topic:
            self.order.fetched_turns(tp.partition, fresh[0].offset)
        for lane in self._by_topic.get(tp.topic, ()):
            lane.put(tp.partition, fresh)
        if tp.topic == self._control_topic:
            self.order.wake.set()

    def _pace(self) -> None:
        """Pause a partition a lane has several batches of queued; resume it at half of that."""
        high = QUEUED_BATCHES * self.settings.poll_batch
        pause, resume = [], []
        for tp in self._owned_tps:
            queued = max((lane.queued(tp.partition) for lane in self._by_topic.get(tp.topic, ())), default=0)
            if tp in self._paused and queued <= high // 2:
                resume.append(tp)
            elif tp not in self._paused and queued >= high:
                pause.append(tp)
        if pause:
            self.member.pause(pause)
            self._paused.update(pause)
        if resume:
            self.member.resume(resume)
            self._paused.difference_update(resume)

    def committable(self, tps: frozenset[TopicPartition]) -> dict[TopicPartition, int]:
        """Per partition, the least of what its lanes have handled, where that moved since the last commit."""
        out: dict[TopicPartition, int] = {}
        for tp in tps:
            done = [lane.done.get(tp.partition) for lane in self._by_topic.get(tp.topic, ())]
            if not done or any(d is None for d in done):
                continue
            offset = min(d for d in done if d is not None)
            if offset > self._committed.get(tp, -1):
                out[tp] = offset
        return out

    def _lane_emptied(self, lane: Lane) -> None:
        """``lane`` handled a batch and has nothing queued: when no other lane has work either, what they handled
        is committed now (the batch that emptied ``lane`` counts as done: its outputs are published)."""
        if all(other is lane or other.idle() for other in self.lanes):
            self._commit_now.set()

    async def _commit(self) -> None:
        async with self._commit_lock:
            await self._commit_unlocked(self._owned_tps)

    async def _commit_unlocked(self, tps: frozenset[TopicPartition]) -> None:
        offsets = self.committable(tps)
        if offsets:
            await self.member.commit(offsets)
            self._committed.update(offsets)

    async def _publish(self, records: Sequence[OutgoingRecord]) -> None:
        """Seal and send every record, then wait for all acknowledgements (pipelined, in order per partition)."""
        out = []
        for rec in records:
            rec = self._fitting(rec)
            if self.sealer is not None:
                rec = self.sealer.seal(rec)
            if rec.partition is None:
                part = partition_for(rec.key, self.partitions) if rec.key is not None else 0
                rec = OutgoingRecord(rec.topic, rec.value, rec.key, rec.headers, part)
            out.append(rec)
        await self.bus.publish_many(out)

    def _fitting(self, rec: OutgoingRecord) -> OutgoingRecord:
        """``rec``, or a dead letter in its place when it is too large for a Kafka record (the producer would
        refuse it, and the lane would retry its batch for ever)."""
        size = record_size(rec)
        if size <= MAX_RECORD_BYTES:
            return rec
        error = (f"a {size}-byte record for {rec.topic} exceeds the {MAX_RECORD_BYTES} bytes a Kafka record may "
                 "hold here: dead-lettered instead of sent")
        log.error("%s (key %s)", error, rec.key)
        dead = DeadLetter.of(rec.value, stage="publish", error=error, timestamp=datetime.now(UTC),
                             source_topic=rec.topic)
        return OutgoingRecord(topic_name(Topic.DLQ, self.settings.topic_prefix), encode(dead), rec.key,
                              rec.headers, rec.partition)

    def _open(self, record: Record, drivers: Sequence[Driver]) -> Record:
        """The record opened when it is sealed and one of ``drivers`` wants it (``wants``)."""
        if self.sealer is None or not any(d.wants(record) for d in drivers):
            return record
        return self.sealer.open(record)

    # restoring and dropping shards

    async def _searchable_first(self) -> None:
        """Turns are made searchable first, as in the embedded runtime: the deriving lane starts a batch when
        capture, the writer and embed have nothing queued, or once they have handled ``ALTM_DERIVE_EVERY_STEPS``
        batches since it waited (derivation is never starved by a steady stream of turns)."""
        start = sum(lane.batches for lane in self._searchable)
        every = self.settings.derive_every_steps
        while (any(lane.takeable() for lane in self._searchable)
               and sum(lane.batches for lane in self._searchable) - start < every):
            waits = [asyncio.ensure_future(lane.progressed.wait()) for lane in self._searchable]
            try:
                await asyncio.wait(waits, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            for lane in self._searchable:
                lane.progressed.clear()

    async def _handled(self, lane: Lane, tp: TopicPartition) -> int:
        """What ``lane`` has handled of ``tp``; before it handled anything there, what the group committed."""
        done = lane.done.get(tp.partition)
        if done is None:
            done = self._committed.get(tp)
        if done is None:
            done = await self.member.committed(tp) or 0
            self._committed.setdefault(tp, done)
        return done

    async def _end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return await self.member.end_offsets(tps)

    def _positions(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """How far the fetch loop has fetched (and queued) each of ``tps``."""
        positions = self.member.positions(tps)
        return {tp: max(self._next.get(tp, -1), positions.get(tp, -1)) for tp in tps}

    def _is_ready(self, partition: int) -> bool:
        return partition in self._ready

    async def _committed_proposals(self, partitions: Sequence[int]) -> dict[int, int | None]:
        """What the group has committed of these proposals partitions (their owners' progress), in one request."""
        found = await self.member.committed_many([TopicPartition(self.writer.topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in found.items()}

    async def _fetch_proposals(self, partition: int, start: int, end: int) -> list[Record]:
        """Proposals of one partition read from the broker (the shard's changelog: see ``WriterDriver``)."""
        records = await self._ranges.read(self.writer.topic, partition, start, end, limit=RESTORE_CHUNK)
        return [self.sealer.open(r, retired=False) for r in records] if self.sealer is not None else records

    async def _restored(self, partition: int) -> None:
        """Once per assignment of ``partition``: its shard has applied every proposal the log held when this
        worker got it (a worker with a data dir of its own may be given a partition another worker filled);
        what comes after, the writer's lane applies as usual. Stages wait for it, so what they derive reads the
        whole shard, as on the worker that had it before.

        Up to the log's end, not only to what the group committed: the worker that had the partition may have
        applied proposals past its last commit and published their changes (killed before its next commit),
        and a stage that read such a change before this worker's writer applied its proposal again would derive
        from a shard behind the change. Every change on the log when the partition is given here came from a
        proposal before this end (a change is published after its proposal is applied); what comes later is
        this worker's own, published after its writer applied it."""
        if partition in self._ready:
            return
        epoch = self._epochs.get(partition, 0)
        tp = TopicPartition(self.writer.topic, partition)
        if tp not in self._owned_tps:
            return
        # its standby copy could not open what an erasure shredded: restored whole, so the stages derive it again
        await self.writer.drop_short_copy(partition, lambda p: self._drop(
            p, "its standby copy skipped records an erasure shredded; restored from the log instead, so the stages "
               "derive them again"))
        end = (await self.member.end_offsets([tp])).get(tp)
        if end:
            await self.writer.catch_up(partition, end)
            await self.writer.flush(partition)
        # revoked meanwhile (and maybe given back after another worker wrote to it): restored again next time
        if self._epochs.get(partition, 0) == epoch and tp in self._owned_tps:
            self._ready.add(partition)
            for lane in self.lanes:
                lane.wake()

    async def _restore_owned(self) -> None:
        """Restore the shards of the proposal partitions this worker owns, before their stages run: recall then
        finds those users' memories before any new turn of theirs comes."""
        for partition in sorted(self._owned(Topic.PROPOSALS) - self._ready):
            try:  # each on its own: one that cannot be read now never keeps the others waiting
                await self._restored(partition)
            except Exception:
                log.warning("restoring partition %d from the log failed; the next tick tries again", partition,
                            exc_info=True)

    async def _follow_unowned(self) -> None:
        """``ALTM_WORKER_STANDBY``: a tick of the warm copies of the partitions this worker does not own."""
        await self.standby.tick(self._owned(Topic.PROPOSALS))

    async def _drop_unowned(self) -> None:
        """Delete the shards (and their vector points) of partitions this worker has not owned for
        ``worker_drop_unowned_after_s``: with a data dir of its own, a copy it keeps of a partition another
        worker now owns would miss that worker's erasures."""
        after = self.settings.worker_drop_unowned_after_s
        if after is None:
            return
        owned = self._owned(Topic.PROPOSALS)
        now = time.monotonic()
        for partition in owned:
            self._unowned_since.pop(partition, None)
        for partition, _ in shard_files(Path(self.settings.data_dir)):
            if partition in owned or partition >= self.partitions:
                continue
            since = self._unowned_since.setdefault(partition, now)
            if now - since >= after and await self._hand_over({partition}):
                await self._publish_burials(partition)  # its tombstones exist nowhere else
                if partition not in self._burials_due:
                    self._drop(partition)

    async def _burials_elsewhere(self, kept: set[int]) -> bool:
        """The tombstones left in the outbox of this data dir's shards of partitions other workers own, published
        to the log for their owners (see ``WriterDriver.publish_burials``); one that fails is tried again by the
        flush timer while its shard is open here."""
        for partition, _ in shard_files(Path(self.settings.data_dir)):
            if partition not in kept and partition < self.partitions:
                await self._publish_burials(partition)
        return not self._burials_due

    async def _publish_burials(self, partition: int) -> None:
        try:
            await self.writer.publish_burials(partition)
        except Exception:
            self._burials_due.add(partition)
            log.warning("publishing the tombstones left in the outbox of partition %d failed; tried again",
                        partition, exc_info=True)
        else:
            self._burials_due.discard(partition)

    async def _hand_over_lost(self, partitions: set[int]) -> bool:
        """The hand-over of partitions a rebalance took away; one that fails is tried again by the deferred-work
        timer (``_retry_deferred``) until it succeeds or the partition comes back."""
        if await self._hand_over(partitions):
            return True
        self._hand_over_due |= partitions - self._owned(Topic.PROPOSALS)  # one given back meanwhile is kept
        return False

    async def _hand_over(self, partitions: set[int]) -> bool:
        """Deferred work of partitions another worker now owns, published again to its input topic (the new
        owner handles it there: effects are idempotent) and then removed here: with a data dir of its own, the
        new owner never had it. Returns whether nothing is left (a failure keeps it here, for the next try)."""
        try:  # what a restore or a standby copy deferred was applied by its owner already: never handed over
            items = [i for i in self.work.pending(partitions) if not is_reapplied(unpack_headers(i.headers))]
            if items:
                prefix = self.settings.topic_prefix  # the topic it came from, as this deployment names it now
                await self._publish([OutgoingRecord(under_prefix(i.topic, prefix), i.value, i.key,
                                                    unpack_headers(i.headers)) for i in items])
                for item in items:
                    self.work.done(item)
                log.info("handed %d deferred record(s) of partition(s) %s over to their new owner", len(items),
                         sorted(partitions))
        except Exception:
            log.warning("handing deferred work of partitions %s over failed; it stays here for now",
                        sorted(partitions), exc_info=True)
            return False
        return True

    def _drop(self, partition: int, why: str = "another worker owns it") -> None:
        ids = self.shards.drop(partition)
        if self.vectors is not None and ids and not self.vectors.shared:  # a server's points are the owner's too
            self.vectors.delete(ids)
            self.vectors.flush()
        self._unowned_since.pop(partition, None)
        self._ready.discard(partition)
        log.info("dropped the shard of partition %d (%d memories): %s", partition, len(ids), why)

    def _owned(self, topic: Topic) -> set[int]:
        name = topic_name(topic, self.settings.topic_prefix)
        return {tp.partition for tp in self._owned_tps if tp.topic == name}

    # timers

    async def _retry_deferred(self) -> None:
        """Deferred work of the partitions this worker owns (workers may share a data dir), and that of the
        partitions it gave up whose hand-over failed."""
        due = self._hand_over_due - self._owned(Topic.PROPOSALS)
        if due and await self._hand_over(due):
            self._hand_over_due -= due
        for stage in self.stages:
            await stage.retry_due(self._owned(stage.processor.input_topic))
        await self.writer.retry_due(self._owned(Topic.PROPOSALS))

    async def _flush_owned(self) -> None:
        """Publish changes committed but not yet delivered (by an earlier run, or while the broker was away),
        for the partitions whose proposals this worker owns (workers may share a data dir), and the tombstones
        left in the outbox of partitions it gave up whose publishing failed."""
        owned = self._owned(Topic.PROPOSALS)
        await self.writer.flush_all(owned)
        for partition in sorted(self._burials_due - owned):
            await self._publish_burials(partition)
        self._burials_due -= owned  # owned again: its flush publishes them

    async def _observe_lag(self) -> None:
        """The consumer lag gauges per stage and assigned partition: the broker's high watermark minus what the
        lane has handled (before it handled anything there: minus the group's committed offset)."""
        assigned = sorted(self._owned_tps)
        ends = await self.member.end_offsets(assigned) if assigned else {}
        for lane in self.lanes:
            lags: dict[TopicPartition, int] = {}
            for tp in (t for t in assigned if t.topic == lane.topic and t in ends):
                lags[tp] = max(0, ends[tp] - await self._handled(lane, tp))
            for driver in lane.drivers:
                consumer_lag(driver.name, lags)

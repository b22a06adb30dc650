"""A read replica of a Kafka deployment, for the retrieval service (``altm serve --broker`` with
``ALTM_READ_REPLICA=true``): it follows the proposals log (every partition) into shards of its own with the
writer's own code, and embeds what it applies into a vector index of its own. It publishes nothing and calls
no chat model: the proposals carry what the models said. Wherever the workers' partitions are, the replica has
every user's memories, as fresh as its lag on the proposals topic.

It opens records sealed with a key an erasure retired as shredded (the owning worker opens them for a grace
period, to apply what was in flight): a replica may meet a scene or facet sealed before the erasure only after
it, without the evidence it quotes, and must not keep it, not even in a rejection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from altm.bus import OutgoingRecord, Record
from altm.bus.sealing import Sealer
from altm.core import ChangeEvent, DecodeError, Settings, Topic, decode_event, topic_name
from altm.models import EmbeddingModel
from altm.pipeline._drivers import WriterDriver, until_done
from altm.pipeline.processors import EmbedProcessor, ProcessorContext
from altm.pipeline.runtime._claim import DataDirClaim
from altm.pipeline.writer import GuardKeys, TextSimilarity, Writer
from altm.store import DeferredWork, ShardSet
from altm.vectors import VectorIndex

log = logging.getLogger("altm.replica")


class LogReader(Protocol):
    """Every partition of the proposals topic from given offsets, without a consumer group (wiring gives the
    Kafka adapter's ``PartitionReader``)."""

    async def start(self, starts: Mapping[int, int]) -> None: ...

    async def stop(self) -> None: ...

    async def poll(self, timeout_s: float = 0.5) -> list[Record]: ...


class ReplicaRuntime:
    """Follows the proposals log into ``shards`` (see the module's docstring). ``start`` and ``stop`` are
    explicit; ``applied`` counts the records it has applied. Nothing stops it but ``stop``: a failure to read,
    open or apply is logged and tried again, the records in hand kept (a replica that stopped moving while
    the service kept answering would serve stale memories without a word)."""

    RETRY_DEFERRED_S = 5.0

    def __init__(self, settings: Settings, shards: ShardSet, reader: LogReader, *, sealer: Sealer | None = None,
                 embedding: EmbeddingModel | None = None, vectors: VectorIndex | None = None,
                 similarity: TextSimilarity | None = None, guard_keys: GuardKeys | None = None) -> None:
        self.settings = settings
        self.shards = shards
        self.sealer = sealer
        # no key store: destroying data keys after an erasure is the owning worker's job, not a replica's; the
        # users' guard keys (``guard_keys``: the deployment's key store) make its tombstones match the owner's
        self.writer = Writer(shards, settings, None, similarity, guard_keys=guard_keys)
        self.embed = EmbedProcessor(embedding, vectors)
        self.ctx = ProcessorContext(settings=settings)
        self.reader = reader
        self.driver: WriterDriver | None = None
        self._task: asyncio.Task[None] | None = None
        self._claim = DataDirClaim(Path(settings.data_dir),
                                   alone="a read replica writes the shards of every partition there")
        self.applied = 0

    async def start(self, identity: str) -> None:
        """Follow the log ``identity`` names (the shards refuse another log's offsets) from where the shards
        stopped."""
        if self._task is not None:
            return
        self._claim.take()
        try:
            await self._follow_from(identity)
        except BaseException:
            self._claim.release()
            raise

    async def _follow_from(self, identity: str) -> None:
        driver = WriterDriver(self.writer, DeferredWork(self.shards, self.settings), self._embed, identity)
        starts = {p: driver.bind(p, None) or 0 for p in range(self.settings.partitions)}
        await self.reader.start(starts)
        self.driver = driver
        self._task = asyncio.create_task(self._follow(driver), name="altm-replica")

    async def stop(self) -> None:
        try:
            await self._stop_following()
        finally:
            self._claim.release()

    async def _stop_following(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("the replica's follow task had failed")
        await self.reader.stop()

    async def _follow(self, driver: WriterDriver) -> None:
        retry_at = time.monotonic() + self.RETRY_DEFERRED_S
        while True:
            try:
                records = await self.reader.poll()
            except Exception:
                log.warning("reading the proposals log failed; trying again", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            if records:
                await self._apply(driver, records)
            if time.monotonic() >= retry_at:  # what the guard could not decide, as the owner retries it
                await self._retry_deferred(driver)
                retry_at = time.monotonic() + self.RETRY_DEFERRED_S

    async def _apply(self, driver: WriterDriver, records: list[Record]) -> None:
        """Open and apply records read from the log, until it works (they are not read again)."""
        async def apply() -> None:
            opened = [self.sealer.open(r, retired=False) for r in records] if self.sealer else records
            await driver.handle(opened)

        await until_done(apply, f"the replica on {len(records)} record(s)")
        self.applied += len(records)

    async def _retry_deferred(self, driver: WriterDriver) -> None:
        try:
            await driver.retry_due()
        except Exception:
            log.warning("retrying the replica's deferred proposals failed; trying again later", exc_info=True)

    async def _embed(self, records: Sequence[OutgoingRecord]) -> None:
        """What the writer would publish: the changes go to the replica's own embedder, nowhere else."""
        changes = topic_name(Topic.CHANGES, self.settings.topic_prefix)
        events = []
        for rec in records:
            if rec.topic != changes:
                continue
            try:
                event = decode_event(rec.value)
            except DecodeError:
                continue
            if isinstance(event, ChangeEvent):
                events.append(event)
        if events:
            await self.embed.process_batch(events, self.ctx)

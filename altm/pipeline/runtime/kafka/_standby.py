"""Standby copies (``ALTM_WORKER_STANDBY``): a worker keeps a warm copy of every partition it does not own.

Every ``STANDBY_EVERY_S`` its shard applies, from the proposals log, what the owner has committed (read as a
restore reads it, ``STANDBY_TRANSACTION`` proposals per transaction); the changes go into this worker's own
vector index and are published nowhere (the owner published them before it committed). When the partition is
given to this worker, its restore has only the last seconds left. What the index could not take (the embedder
away) is noted and embedded again later, as the shard then holds it; a stop loses the notes, so the first tick
after a start checks the index against the shards.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from altm.core import ChangeEvent, Scope
from altm.pipeline._drivers import StageDriver, WriterDriver
from altm.pipeline.processors import EmbedProcessor
from altm.store import MemoryReader, ShardSet
from altm.vectors import VectorIndex

log = logging.getLogger("altm.worker")

STANDBY_EVERY_S = 2.0
"""How often a worker with ``ALTM_WORKER_STANDBY`` brings its copies of the partitions it does not own up to
what their owners have committed."""
STANDBY_TRANSACTION = 500
"""Proposals a standby copy applies in one transaction (it reads ``RESTORE_CHUNK`` at a time, as a restore does):
few enough that the worker's own lanes wait a fraction of a second for it, where they wait for a restore anyway."""
EMBED_AGAIN = 1000
"""Memories a standby copy embeds again per tick and partition (``StandbyCopies._embed_again``)."""


class StandbyCopies:
    """The copies of one worker. ``committed(partitions)``: what the group has committed of those proposals
    partitions (how far their owners are; None where nothing), in one request."""

    def __init__(self, writer: WriterDriver, shards: ShardSet, vectors: VectorIndex | None,
                 embed_stage: StageDriver | None,
                 committed: Callable[[Sequence[int]], Awaitable[Mapping[int, int | None]]],
                 partitions: int) -> None:
        self.writer = writer
        self.shards = shards
        self.vectors = vectors  # this worker's own index
        self.embed_stage = embed_stage
        self.committed = committed
        self.partitions = partitions
        self.applied: dict[int, int] = {}  # partition → proposals its copy applied here
        self.unembedded: dict[int, dict[str, Scope]] = {}  # memories a copy's index did not take yet
        self._index_checked = False  # the index against the shards, once per start (``_check_index``)

    async def tick(self, owned: set[int]) -> None:
        """Bring every copy of a partition not in ``owned`` up to its owner; embed what waits to be embedded
        again (owned by now or not)."""
        if not self._index_checked:
            try:  # never in the way of the copies (an erasure must not wait for the index)
                await self._check_index()
            except Exception:
                log.warning("checking this worker's vector index against its shards failed; the next tick tries "
                            "again", exc_info=True)
        ends = await self._owners_progress([p for p in range(self.partitions) if p not in owned])
        for partition in range(self.partitions):
            if self.unembedded.get(partition):
                try:
                    await self._embed_again(partition)
                except Exception:
                    log.warning("the standby copy of partition %d could not embed %d memories yet; the next tick "
                                "tries again", partition, len(self.unembedded.get(partition, {})), exc_info=True)
            if partition in owned or partition not in ends:
                continue
            try:  # each on its own: one that cannot be read now never keeps the others behind
                await self.follow(partition, ends[partition])
            except Exception:
                log.warning("keeping the standby copy of partition %d warm failed; the next tick tries again",
                            partition, exc_info=True)

    async def _owners_progress(self, partitions: Sequence[int]) -> Mapping[int, int | None]:
        """What the owners of ``partitions`` have committed, in one request; none this tick when the group's
        coordinator cannot be asked (what waits to be embedded again still is)."""
        if not partitions:
            return {}
        try:
            return await self.committed(partitions)
        except Exception:
            log.warning("the committed offsets of %d partitions could not be read; the standby copies wait for the "
                        "next tick", len(partitions), exc_info=True)
            return {}

    async def _check_index(self) -> None:
        """Once per start, before the first tick: what a standby copy could not embed is noted in memory only,
        so a stop lost it. Every memory of a shard here without a point in this worker's index is noted again
        (embedded by ``_embed_again``), and a point whose memory no shard here holds any more (erased while
        its deletion could not reach the index) is deleted."""
        embed = self.embed_stage.processor if self.embed_stage is not None else None
        if self.vectors is None or not isinstance(embed, EmbedProcessor) or embed.idle:
            self._index_checked = True
            return
        indexed, stored = set(await asyncio.to_thread(self.vectors.ids)), set[str]()  # a large index: off the loop
        for shard in self.shards.existing():
            scopes = shard.memory_scopes()
            stored.update(scopes)
            if missing := {mid: scope for mid, scope in scopes.items() if mid not in indexed}:
                self.unembedded.setdefault(shard.partition, {}).update(missing)
                log.info("the index of this worker misses %d memories of partition %d: embedding them",
                         len(missing), shard.partition)
        if not self.vectors.shared and (orphans := sorted(indexed - stored)):  # a server's: others' points too
            self.vectors.delete(orphans)
            self.vectors.flush()
            log.info("deleted %d vector points whose memories no shard here holds", len(orphans))
        self._index_checked = True

    async def follow(self, partition: int, end: int | None) -> None:
        """The copy of ``partition`` up to ``end``, what its owner has committed."""
        if not end:
            return

        async def embed(changes: Sequence[ChangeEvent]) -> None:
            await self._embed_copy(partition, changes)

        applied = await self.writer.follow(partition, end, embed, transaction=STANDBY_TRANSACTION)
        if applied:
            self.applied[partition] = self.applied.get(partition, 0) + applied
            log.debug("standby copy of partition %d: %d proposal(s) applied", partition, applied)

    async def _embed_copy(self, partition: int, changes: Sequence[ChangeEvent]) -> None:
        """A standby copy's changes, into this worker's own index (never published: the owner did). The memories
        of those the index cannot take now are noted and embedded as the shard then holds them (see
        ``_embed_again``); the copy goes on applying meanwhile (an erasure must not wait for the embedder).
        A stop loses the notes; the next start finds those memories again (``_check_index``)."""
        if self.embed_stage is None or not changes:
            return
        try:
            await self.embed_stage.processor.process_batch(changes, self.embed_stage.ctx)
        except Exception:
            noted = self.unembedded.setdefault(partition, {})
            for change in changes:
                if change.memory is not None:
                    noted[change.memory.memory_id] = change.memory.scope
                noted.update(dict.fromkeys(change.removed_ids, change.scope))
            log.warning("the standby copy of partition %d could not embed %d change(s) now; tried again at the "
                        "next tick", partition, len(changes), exc_info=True)

    async def _embed_again(self, partition: int) -> None:
        """The memories a standby copy's index could not take, as the shard holds them now: those still there
        embedded, the points of the others (erased, forgotten since) deleted; at most ``EMBED_AGAIN`` per tick
        (an index lost whole is rebuilt over several ticks, and the copy applies between them)."""
        embed = self.embed_stage.processor if self.embed_stage is not None else None
        waiting = self.unembedded.pop(partition, {})
        if not waiting or not isinstance(embed, EmbedProcessor):
            return
        noted = dict(itertools.islice(waiting.items(), EMBED_AGAIN))
        if len(waiting) > len(noted):
            self.unembedded[partition] = {k: v for k, v in waiting.items() if k not in noted}
        reader = MemoryReader(self.shards)
        held = reader.get_each(noted.items())
        try:  # read again once the vectors are computed: the writer lane may have erased some meanwhile
            await embed.put(held, sorted(set(noted) - {m.memory_id for m in held}),
                            current=lambda memories: reader.get_each((m.memory_id, m.scope) for m in memories))
        except BaseException:
            self.unembedded.setdefault(partition, {}).update(noted)
            raise

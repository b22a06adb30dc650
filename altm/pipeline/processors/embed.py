"""embed: committed memories → vectors in the index (upsert by memory id, idempotent).

Embedding is batched over a poll batch. The vectors are a derived store: this processor writes them itself
(the design's "embed ──► vector index"), never memory rows, and emits no proposals.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    Event,
    Layer,
    MemoryUnit,
    Proposal,
    ProposalOp,
    Scope,
)
from altm.core.topics import Topic
from altm.models import EmbeddingModel
from altm.pipeline.processors._base import (
    BatchFailure,
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
)
from altm.vectors import VectorIndex, VectorPoint


def vector_payload(mem: MemoryUnit, indexed_ms: int | None = None) -> dict[str, Any]:
    """The filterable fields of a memory's point, and when the embed stage indexed it (``indexed_ms``: the
    moment it became vector-searchable; freshness, not state — the state hash covers the point ids only)."""
    return {
        "indexed_ms": indexed_ms if indexed_ms is not None else int(time.time() * 1000),
        "tenant_id": mem.scope.tenant_id,
        "workspace_id": mem.scope.workspace_id,
        "user_id": mem.scope.user_id,
        "agent_id": mem.scope.agent_id,
        "session_id": mem.session_id or "",
        "layer": mem.layer.value,
        "kind": mem.kind.value,
        "trust_status": mem.trust.status.value,
        "content_hash": mem.content_hash,
    }


def embedding_text(mem: MemoryUnit) -> str:
    """The memory's own text. A message's conversational context (the message it follows) is indexed by
    the word index only: with score fusion, session prior and neighbours it no longer helps the vectors
    (LoCoMo R@10 0.858 with it, 0.859 without), and it doubled the cost of embedding a turn."""
    return mem.content


def _stored(ctx: ProcessorContext) -> Callable[[Sequence[MemoryUnit]], Sequence[MemoryUnit]] | None:
    """How to read memories as the shard holds them now (None without a reader). A change may reach embed
    after later ones were applied: a retry of deferred work, work a partition's previous owner handed over, a
    stage behind its writer. The shard may then hold the memory changed (a capsule folded again under the same
    id: its own later change embeds it), removed (an erasure whose deletion went through already) or stored
    again after a removal (a capsule forgotten, then folded again): embed writes what the shard holds."""
    reader = ctx.reader
    if reader is None:
        return None
    return lambda memories: reader.get_each((m.memory_id, m.scope) for m in memories)


def _restored(event: Event) -> MemoryUnit | None:
    """A memory a rollback put back (its point went with the change the rollback undid), or a persona facet
    another op stood on another atom of its statement (an erasure, a review or a retention pass re-cites it under
    the same id, with that atom's words, scope and time: its point must follow)."""
    if not isinstance(event, ChangeEvent) or event.status is not ChangeStatus.COMMITTED:
        return None
    if event.op is ProposalOp.ROLLBACK or (event.op in _RECITING and event.layer is Layer.L4):
        return event.memory
    return None


_RECITING = frozenset({ProposalOp.ERASE, ProposalOp.REVIEW, ProposalOp.FORGET})
"""Ops whose changes may carry a persona facet made again from another atom (see ``_restored``)."""


class EmbedProcessor(Processor):
    """Keeps the vector index in step with the shard: committed memories are embedded and upserted, and any
    committed change that removed memories (erase, forget, rollback) deletes their points."""

    name = "embed"
    input_topic = Topic.CHANGES
    on_batch_failure = BatchFailure.DEFER_EACH  # a memory that breaks it waits aside; its retry reads the shard

    def __init__(self, embedding: EmbeddingModel | None = None, vectors: VectorIndex | None = None,
                 reuse: VectorIndex | None = None) -> None:
        self.embedding = embedding
        self.vectors = vectors
        self.reuse = reuse  # a replay's source index: a memory with the same id and content takes its vector
        self.reused = 0  # vectors taken from ``reuse`` instead of computed

    @property
    def idle(self) -> bool:
        return self.embedding is None or self.vectors is None

    def accepts(self, marker: ChangeMarker) -> bool:
        """Committed memories (and those a rollback put back), and committed changes that removed memories."""
        return marker.status is ChangeStatus.COMMITTED and (
            committed_upsert(marker) or marker.op is ProposalOp.ROLLBACK or marker.removes
            or (marker.op in _RECITING and marker.layer is Layer.L4))

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        await self.process_batch([event], ctx)
        return []

    async def process_batch(self, events: Sequence[Event], ctx: ProcessorContext) -> Sequence[Proposal]:
        if self.vectors is None or self.embedding is None:
            return []
        latest: dict[str, MemoryUnit] = {}
        removed: dict[str, Scope] = {}
        for event in events:
            if isinstance(event, ChangeEvent) and event.status is ChangeStatus.COMMITTED:
                for mid in event.removed_ids:  # a change may carry a memory and remove others (a review, a forget)
                    removed[mid] = event.scope
                    latest.pop(mid, None)
            mem = committed_memory(event) or _restored(event)
            if mem is not None:
                latest[mem.memory_id] = mem
                removed.pop(mem.memory_id, None)
        if ctx.reader is not None and removed:  # stored again since (forgotten, then folded again): it keeps its point
            again = {m.memory_id for m in ctx.reader.get_each(removed.items())}
            removed = {mid: scope for mid, scope in removed.items() if mid not in again}
        if ctx.reader is not None:  # about to be erased (a replay that has not reached its erasure): no model reads
            reader = ctx.reader     # it (a remote embedder was sent a message erased by its id)
            latest = {mid: m for mid, m in latest.items()
                      if not reader.erasure_pending(m.scope, [m.memory_id, *m.evidence])}
        await self.put(list(latest.values()), list(removed), current=_stored(ctx))
        return []

    def _new_content(self, memories: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        """``memories`` less the persona facets whose point holds their content already: those get their payload
        (scope, trust) again with the vector they have, without embedding (a facet re-cited with the same words)."""
        assert self.vectors is not None
        facets = [m.memory_id for m in memories if m.layer is Layer.L4]
        held = self.vectors.points(facets) if facets else {}
        same = [m for m in memories if m.memory_id in held
                and held[m.memory_id].payload.get("content_hash") == m.content_hash]
        if same:
            now_ms = int(time.time() * 1000)
            self.vectors.upsert([VectorPoint(m.memory_id, held[m.memory_id].vector, vector_payload(m, now_ms))
                                 for m in same])
        kept = {m.memory_id for m in same}
        return [m for m in memories if m.memory_id not in kept]

    async def put(self, memories: Sequence[MemoryUnit], gone: Sequence[str],
                  current: Callable[[Sequence[MemoryUnit]], Sequence[MemoryUnit]] | None = None) -> None:
        """Points for ``memories`` as they are, none for ``gone`` (durable when this returns). ``current``: the
        memories as the store holds them, read right before the upsert (an erasure may overtake the stage
        while the vectors are computed); a point goes only to those whose content is unchanged, as the store
        holds them, and those no longer stored lose theirs."""
        if self.vectors is None or self.embedding is None:
            return
        if gone:
            self.vectors.delete(list(gone))
        memories = self._new_content(memories)
        if memories:
            vectors = dict(zip((m.memory_id for m in memories), await self._vectors(memories, self.embedding),
                               strict=True))
            if current is not None:  # no await from here to the upsert: nothing overtakes it any more
                now = {m.memory_id: m for m in current(memories)}
                if left := [m.memory_id for m in memories if m.memory_id not in now]:
                    self.vectors.delete(left)
                kept = [now[m.memory_id] for m in memories
                        if m.memory_id in now and now[m.memory_id].content_hash == m.content_hash]
            else:
                kept = list(memories)
            now_ms = int(time.time() * 1000)
            self.vectors.upsert([VectorPoint(m.memory_id, vectors[m.memory_id], vector_payload(m, now_ms))
                                 for m in kept])
        if gone or memories:
            self.vectors.flush()  # durable before the stage commits its offsets (a deletion of ``current``'s too)

    async def _vectors(self, mems: Sequence[MemoryUnit], embedding: EmbeddingModel) -> list[Sequence[float]]:
        """One vector per memory: from ``reuse`` where it holds the memory with the same content (same model:
        the same collection), computed for the rest."""
        known = self.reuse.points([m.memory_id for m in mems]) if self.reuse is not None else {}
        same = {m.memory_id: known[m.memory_id].vector for m in mems if m.memory_id in known
                and known[m.memory_id].payload.get("content_hash") == m.content_hash}
        todo = [m for m in mems if m.memory_id not in same]
        computed = dict(zip((m.memory_id for m in todo),
                            await embedding.aembed([embedding_text(m) for m in todo]) if todo else [], strict=True))
        self.reused += len(same)
        return [same[m.memory_id] if m.memory_id in same else computed[m.memory_id] for m in mems]

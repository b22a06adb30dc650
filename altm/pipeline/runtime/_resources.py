"""Building what processors may use (read-only stores, embedder, vector index, model clients)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from altm.core import Scope
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.models import (
    Embedder,
    LLMSettings,
    LocalEmbedder,
    ModelClients,
    Stage,
    stage_settings,
)
from altm.pipeline.processors import ProcessorContext
from altm.store import MemoryReader, ShardLLMCache, ShardSet
from altm.vectors import VectorIndex


@functools.lru_cache(maxsize=1)
def shared_local_embedder() -> LocalEmbedder:
    """One ONNX session per process (loading it costs ~0.5 s and ~100 MB)."""
    return LocalEmbedder()


class RemoteEmbedderInfo(Embedder):
    """Collection naming for a remote embedding model (the vectors come from the model layer)."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id = model_id
        self.dim = dim

    def embed(self, texts: object) -> list[list[float]]:  # pragma: no cover - never called
        raise RuntimeError("remote embeddings go through ModelClients.embed")


def choose_embedder(settings: Settings) -> Embedder | None:
    remote = stage_settings(Stage.EMBEDDING)
    if remote.configured:
        if not remote.dimensions:
            raise ValueError("a remote embedding model needs ALTM_EMBEDDING_LLM_DIMENSIONS (vectors of different "
                             "sizes never share a collection)")
        return RemoteEmbedderInfo(remote.model or "", remote.dimensions)
    if settings.embedder == "none":
        return None
    if settings.embedder != "local":
        raise ValueError(f"unknown embedder {settings.embedder!r}; expected 'local' or 'none'")
    return shared_local_embedder()


def open_vector_index(settings: Settings, embedder: Embedder) -> VectorIndex:
    if settings.vector_backend == "edge":
        from altm.vectors.edge import EdgeVectorIndex

        index: VectorIndex = EdgeVectorIndex(Path(settings.data_dir) / "vectors", embedder.collection, embedder.dim)
    elif settings.vector_backend == "qdrant":
        from qdrant_client import QdrantClient

        from altm.vectors.server import QdrantServerIndex

        client = QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key) if settings.qdrant_url \
            else QdrantClient(":memory:")
        index = QdrantServerIndex(client, embedder.collection, embedder.dim)
    else:
        raise ValueError(f"unknown vector backend {settings.vector_backend!r}; expected 'edge' or 'qdrant'")
    index.open()
    return index


@dataclass
class RuntimeResources:
    ctx: ProcessorContext
    vectors: VectorIndex | None
    models: ModelClients

    async def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
        await self.models.aclose()


def build_resources(
    settings: Settings, shards: ShardSet, llm_settings: dict[Stage, LLMSettings] | None = None
) -> RuntimeResources:
    """``llm_settings`` overrides the environment (``ALTM_<STAGE>_LLM_*``), e.g. in tests."""

    def cache_for(scope: Scope) -> ShardLLMCache:
        return ShardLLMCache(shards.get(partition_for(scope.home, shards.partitions)))

    models = ModelClients(cache_for, llm_settings)
    embedder = choose_embedder(settings)
    vectors = open_vector_index(settings, embedder) if embedder is not None else None
    ctx = ProcessorContext(settings=settings, reader=MemoryReader(shards), embedder=embedder, vectors=vectors,
                           models=models)
    return RuntimeResources(ctx=ctx, vectors=vectors, models=models)

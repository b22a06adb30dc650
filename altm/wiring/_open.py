"""Opening the application over a data dir: with the embedded runtime (read-write) or read-only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from altm.app.protocol import MemoryApp
from altm.core import Event
from altm.core.settings import Settings
from altm.pipeline.runtime import EmbeddedRuntime
from altm.pipeline.runtime._resources import choose_embedder, open_vector_index
from altm.recall.retrieval import Retriever
from altm.store import ShardSet


def app_for_runtime(runtime: EmbeddedRuntime) -> MemoryApp:
    ctx = runtime.ctx
    return MemoryApp(runtime.settings, runtime.shards, Retriever(runtime.shards, ctx.embedder, ctx.vectors),
                     runtime.publish, ctx.models)


@asynccontextmanager
async def embedded_app(settings: Settings, *, background: bool = False) -> AsyncIterator[
        tuple[EmbeddedRuntime, MemoryApp]]:
    runtime = EmbeddedRuntime(settings)
    await runtime.start(background=background)
    try:
        yield runtime, app_for_runtime(runtime)
    finally:
        await runtime.stop()


@contextmanager
def read_only_app(settings: Settings, partitions: int) -> Iterator[MemoryApp]:
    """Recall, emergence and drilldown without starting the pipeline (no writes possible)."""
    shards = ShardSet(settings.data_dir, partitions, read_only=True)
    embedder = choose_embedder(settings)
    vectors = None
    if embedder is not None and (Path(settings.data_dir) / "vectors" / embedder.collection).exists():
        vectors = open_vector_index(settings, embedder)

    async def refuse(events: Sequence[Event]) -> None:
        raise RuntimeError("this application was opened read-only")

    try:
        yield MemoryApp(settings, shards, Retriever(shards, embedder, vectors), refuse)
    finally:
        if vectors is not None:
            vectors.close()
        shards.close()

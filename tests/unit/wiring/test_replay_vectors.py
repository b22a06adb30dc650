"""A replay takes the source's vectors (issue 13, item 5: replay with zero model calls, counted): a memory
with the same id and content keeps the vector the source computed, so the local embedder embeds nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prometheus_client import REGISTRY

from altm.core import ChangeEvent, ChangeStatus, Kind, Layer, MemoryUnit, Method, ProposalOp, Settings
from altm.models import shared_local_minilm
from altm.pipeline import ProcessorContext
from altm.pipeline.processors import EmbedProcessor, derived_memory
from altm.vectors import VectorPoint
from altm.vectors.edge import EdgeVectorIndex
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


def _embedded_texts() -> float:
    return REGISTRY.get_sample_value("altm_embedder_texts_total", {"backend": "local"}) or 0.0


def _points(data_dir: Path) -> dict[str, VectorPoint]:
    model = shared_local_minilm()
    index = EdgeVectorIndex(data_dir / "vectors", model.collection, model.dim, read_only=True)
    index.open()
    try:
        return index.points(index.ids())
    finally:
        index.close()


async def test_a_replay_takes_the_source_s_vectors_and_embeds_nothing(settings: Settings, tmp_path: Path) -> None:
    turns = [make_turn(i, f"We decided to move service {i} to the eu-west region on Friday.", session=f"s{i % 2}")
             for i in range(1, 7)]
    async with store_with(settings, turns):
        pass
    before = _embedded_texts()
    summary = await replay_into(settings.data_dir, tmp_path / "rebuilt")
    assert summary.events == len(turns)
    assert _embedded_texts() == before  # not one text embedded again
    assert state_hash(settings.data_dir) == state_hash(tmp_path / "rebuilt")
    source, rebuilt = _points(settings.data_dir), _points(tmp_path / "rebuilt")
    assert source.keys() == rebuilt.keys() and len(source) > len(turns)
    assert all(list(source[m].vector) == list(rebuilt[m].vector) for m in source)


class _Index:
    def __init__(self, points: dict[str, VectorPoint]) -> None:
        self.stored = points
        self.upserted: list[VectorPoint] = []

    def points(self, ids: Sequence[str]) -> dict[str, VectorPoint]:
        return {i: self.stored[i] for i in ids if i in self.stored}

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        self.upserted += points

    def delete(self, ids: Sequence[str]) -> None:
        return None

    def flush(self) -> None:
        return None


class _Embedding:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return [[1.0, 0.0] for _ in texts]


async def test_only_a_memory_with_the_same_content_takes_the_stored_vector(settings: Settings) -> None:
    def memory(part: str, content: str) -> MemoryUnit:
        return derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content=content,
                              evidence=["mem_e"], processor="test", method=Method.HEURISTIC, id_parts=[part],
                              valid_from=None)

    same, changed = memory("a", "Billing moved to Postgres."), memory("b", "Billing moved to MySQL.")
    reuse = _Index({same.memory_id: VectorPoint(same.memory_id, [0.0, 1.0], {"content_hash": same.content_hash}),
                    changed.memory_id: VectorPoint(changed.memory_id, [0.5, 0.5], {"content_hash": "old"})})
    vectors, embedding = _Index({}), _Embedding()
    embed = EmbedProcessor(embedding, vectors, reuse)  # type: ignore[arg-type]
    events = [ChangeEvent(event_id=f"c{i}", scope=SCOPE, timestamp=make_turn(1).timestamp, proposal_id="p",
                          op=ProposalOp.UPSERT_MEMORY, status=ChangeStatus.COMMITTED, memory=m)
              for i, m in enumerate((same, changed))]
    await embed.process_batch(events, ProcessorContext(settings=settings))
    assert embedding.texts == ["Billing moved to MySQL."] and embed.reused == 1
    assert {p.memory_id: list(p.vector) for p in vectors.upserted} == {same.memory_id: [0.0, 1.0],
                                                                       changed.memory_id: [1.0, 0.0]}


async def test_a_replay_judges_anti_patterns_by_meaning_without_embedding(settings: Settings, tmp_path: Path) -> None:
    """The write guard compares a derived memory with a stored anti-pattern by meaning (the local embedder's
    vectors of both texts): a replay embedded those texts again (3 in 500 LoCoMo turns), its only model calls.
    The guard's vectors are kept in the shard's model cache, which a replay copies and an erasure clears."""
    turns = [make_turn(1, "Don't deploy on Fridays because nobody is around when it breaks; deploy on Tuesdays."),
             make_turn(2, "I prefer deploying late in the week when the office is quiet."),  # shares a term
             make_turn(3, "We decided the release goes out on Friday evening.")]
    before = _embedded_texts()
    async with store_with(settings, turns):
        pass
    guard_vectors = rows(settings.data_dir, "SELECT 1 FROM llm_cache WHERE model LIKE 'guard-vector:%'")
    assert guard_vectors  # the guard compared meanings in the source
    assert _embedded_texts() > before
    before = _embedded_texts()
    await replay_into(settings.data_dir, tmp_path / "rebuilt")
    assert _embedded_texts() == before  # not one text embedded: vectors and guard vectors came from the source
    assert state_hash(settings.data_dir) == state_hash(tmp_path / "rebuilt")


async def test_an_erasure_clears_the_guards_vectors_of_the_user(settings: Settings) -> None:
    turns = [make_turn(1, "Don't deploy on Fridays because nobody is around when it breaks; deploy on Tuesdays."),
             make_turn(2, "I prefer deploying late in the week when the office is quiet.")]
    query = "SELECT 1 FROM llm_cache WHERE model LIKE 'guard-vector:%'"
    async with store_with(settings, turns) as (rt, app):
        assert rows(settings.data_dir, query)
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        assert rows(settings.data_dir, query) == []  # a vector says something of its text

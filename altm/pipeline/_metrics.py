"""Pipeline metrics (Prometheus, the process's default registry). Labels are bounded sets: stage names, proposal
ops, change statuses, record outcomes — never a user, scope or memory id."""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram

TRACER = trace.get_tracer("altm.pipeline")
"""Spans of records that carry a trace context: one per record and stage (never content in attributes)."""

STAGE_RECORDS = Counter(
    "altm_stage_records", "Input records a stage handled, by outcome (in, published, deferred, dead_lettered, "
    "shredded)", ["stage", "outcome"])
STAGE_OUTPUTS = Counter("altm_stage_outputs", "Records a stage published (proposals, changes, dead letters)",
                        ["stage", "topic"])
STAGE_SKIPPED = Counter(
    "altm_stage_skipped", "Work a stage left out because it would change nothing, by what: changes (records it has "
    "no use for, skipped on their marker unopened), upserts (proposals not sent: repeated in the batch, or applied "
    "by the writer before)", ["stage", "what"])
STAGE_BATCH_SECONDS = Histogram(
    "altm_stage_batch_seconds", "Time to handle one batch of input records, outputs published", ["stage"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
WRITER_PROPOSALS = Counter("altm_writer_proposals", "Proposals the writer applied, by op and outcome",
                           ["op", "status"])
FRESHNESS_SECONDS = Histogram(
    "altm_freshness_seconds", "From the source turn's publication to a stage finishing a record of it: the writer "
    "storing it (word-searchable, or derived), the embed stage indexing it (vector-searchable)", ["stage", "layer"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0))
WRITER_REFUSALS = Counter(
    "altm_writer_refusals", "Proposals the writer rejected or deferred, by op, status and the class of the reason: "
    "unknown_target, foreign_scope, conflict, invalid, missing_evidence, guard (the write guard refused it), "
    "wrong_route, internal_error, guard_unavailable (deferred)", ["op", "status", "reason"])
DEAD_LETTERS = Counter(
    "altm_dead_letters", "Records dead-lettered, by stage and reason: undecodable, wrong_key (the record key is not "
    "the event's scope home), processing_error, internal_error (a processor bug), malformed_proposal (writer), "
    "invalid_input (a line of file input)", ["stage", "reason"])
WRITER_TRANSACTIONS = Counter("altm_writer_transactions", "Shard transactions of the writer, by outcome (committed, "
                              "failed: rolled back, the batch is retried)", ["outcome"])
OUTBOX_RECORDS = Gauge("altm_outbox_records", "Changes and dead letters committed by the writer and not yet "
                       "published, per partition (grows while the bus is unreachable)", ["partition"])
CONSUMER_LAG = Gauge(
    "altm_consumer_lag_records", "Records after the consumer's position, per consumer (a stage of the embedded "
    "runtime; the worker group on Kafka), topic and partition", ["consumer", "topic", "partition"])

"""Pipeline metrics (Prometheus, the process's default registry). Labels are bounded sets: stage names, proposal
ops, change statuses, record outcomes — never a user, scope or memory id."""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Histogram

TRACER = trace.get_tracer("altm.pipeline")
"""Spans of records that carry a trace context: one per record and stage (never content in attributes)."""

STAGE_RECORDS = Counter(
    "altm_stage_records", "Input records a stage handled, by outcome (in, published, deferred, dead_lettered, "
    "shredded)", ["stage", "outcome"])
STAGE_OUTPUTS = Counter("altm_stage_outputs", "Records a stage published (proposals, changes, dead letters)",
                        ["stage", "topic"])
STAGE_BATCH_SECONDS = Histogram(
    "altm_stage_batch_seconds", "Time to handle one batch of input records, outputs published", ["stage"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
WRITER_PROPOSALS = Counter("altm_writer_proposals", "Proposals the writer applied, by op and outcome",
                           ["op", "status"])
FRESHNESS_SECONDS = Histogram(
    "altm_freshness_seconds", "From the source turn's publication to a stage finishing a record of it: the writer "
    "storing it (word-searchable, or derived), the embed stage indexing it (vector-searchable)", ["stage", "layer"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0))

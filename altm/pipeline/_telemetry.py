"""Telemetry of the drivers: metrics per stage and per writer outcome, freshness, and a trace span per record
that carries a trace context. Kept apart from what the drivers do with records; nothing here changes it."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from opentelemetry import propagate, trace
from opentelemetry.trace import Span

from altm.bus import Headers, OutgoingRecord, Record, TopicPartition, source_ms, trace_context
from altm.bus.sealing import is_shredded
from altm.core import ChangeStatus, Topic
from altm.pipeline._metrics import (
    CONSUMER_LAG,
    DEAD_LETTERS,
    FRESHNESS_SECONDS,
    OUTBOX_RECORDS,
    STAGE_BATCH_SECONDS,
    STAGE_OUTPUTS,
    STAGE_RECORDS,
    STAGE_SKIPPED,
    TRACER,
    WRITER_PROPOSALS,
    WRITER_REFUSALS,
    WRITER_TRANSACTIONS,
)
from altm.pipeline.writer import WriteOutcome


def start_record_spans(stage: str, records: Sequence[Record]) -> list[tuple[Span | None, Headers]]:
    """A span per input record that carries a trace context (a child of the span that produced the record),
    and the headers its outputs carry to be children of it; records without a trace get none."""
    out: list[tuple[Span | None, Headers]] = []
    for rec in records:
        parent = trace_context(rec)
        if parent is None:
            out.append((None, ()))
            continue
        span = TRACER.start_span(f"altm.stage.{stage}", context=parent,
                                 attributes={"altm.partition": rec.partition, "altm.offset": rec.offset})
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        out.append((span, tuple((k, v.encode()) for k, v in sorted(carrier.items()))))
    return out


def end_record_spans(spans: Sequence[tuple[Span | None, Headers]]) -> None:
    for span, _ in spans:
        if span is not None:
            span.end()


def topic_kind(topic: str) -> str:
    """``altm.proposals`` → ``proposals``: a bounded label, whatever the deployment's prefix."""
    return next((t.value for t in Topic if topic.endswith(t.value)), "other")


def observe_stage(stage: str, records: Sequence[Record], outgoing: Sequence[OutgoingRecord], deferred: int,
                  finished: Sequence[tuple[str, int]], dead_reasons: Sequence[str], seconds: float, *,
                  skipped: Mapping[str, int] | None = None) -> None:
    """One batch of a stage: records in by outcome, outputs by topic, work skipped, time, and freshness per
    finished input."""
    STAGE_BATCH_SECONDS.labels(stage=stage).observe(seconds)
    for what, n in (skipped or {}).items():
        if n:
            STAGE_SKIPPED.labels(stage=stage, what=what).inc(n)
    now_ms = time.time() * 1000
    for layer, published_ms in finished:
        if published_ms > 0:
            FRESHNESS_SECONDS.labels(stage=stage, layer=layer).observe(max(0.0, now_ms - published_ms) / 1000)
    STAGE_RECORDS.labels(stage=stage, outcome="in").inc(len(records))
    shredded = sum(1 for r in records if is_shredded(r))
    if shredded:
        STAGE_RECORDS.labels(stage=stage, outcome="shredded").inc(shredded)
    if deferred:
        STAGE_RECORDS.labels(stage=stage, outcome="deferred").inc(deferred)
    for rec in outgoing:
        STAGE_OUTPUTS.labels(stage=stage, topic=topic_kind(rec.topic)).inc()
    dead = sum(1 for rec in outgoing if topic_kind(rec.topic) == Topic.DLQ.value)
    if dead:
        STAGE_RECORDS.labels(stage=stage, outcome="dead_lettered").inc(dead)
    for reason in dead_reasons:
        DEAD_LETTERS.labels(stage=stage, reason=reason).inc()


def observe_writer(records: Sequence[Record], outcomes: Sequence[WriteOutcome], seconds: float) -> None:
    """One batch of the writer: what it did with each proposal, time, and freshness of what it stored."""
    STAGE_BATCH_SECONDS.labels(stage="writer").observe(seconds)
    STAGE_RECORDS.labels(stage="writer", outcome="in").inc(len(records))
    now_ms = time.time() * 1000
    for record, outcome in zip(records, outcomes, strict=True):
        layers = [c.layer for c in outcome.changes if c.status is ChangeStatus.COMMITTED and c.layer is not None]
        if layers and source_ms(record) > 0:  # word-searchable (L0) or derived (L1-L4) from this moment
            FRESHNESS_SECONDS.labels(stage="writer", layer=layers[0].value).observe(
                max(0.0, now_ms - source_ms(record)) / 1000)
        if outcome.dead_letters:
            WRITER_PROPOSALS.labels(op="malformed", status="dead_lettered").inc()
            DEAD_LETTERS.labels(stage="writer", reason="malformed_proposal").inc(len(outcome.dead_letters))
        elif outcome.changes:
            change = outcome.changes[0]
            op = change.op.value if change.op else "unknown"
            WRITER_PROPOSALS.labels(op=op, status=change.status.value).inc()
            if outcome.refusal is not None:
                WRITER_REFUSALS.labels(op=op, status=change.status.value, reason=outcome.refusal).inc()
        elif outcome.skipped:
            WRITER_PROPOSALS.labels(op="any", status="skipped").inc()


def dead_lettered(stage: str, reason: str) -> None:
    DEAD_LETTERS.labels(stage=stage, reason=reason).inc()


def writer_transactions(outcome: str, n: int = 1) -> None:
    if n:
        WRITER_TRANSACTIONS.labels(outcome=outcome).inc(n)


def outbox_depth(partition: int, depth: int) -> None:
    OUTBOX_RECORDS.labels(partition=str(partition)).set(depth)


_LAG_SERIES: dict[str, set[tuple[str, str]]] = {}


def consumer_lag(consumer: str, lags: Mapping[TopicPartition, int]) -> None:
    """Set ``consumer``'s lag gauges to ``lags``; the series of partitions no longer in it (revoked by a
    rebalance) are removed, so a sum over workers never counts a partition twice."""
    now = {(topic_kind(tp.topic), str(tp.partition)) for tp in lags}
    for topic, partition in _LAG_SERIES.get(consumer, set()) - now:
        CONSUMER_LAG.remove(consumer, topic, partition)
    _LAG_SERIES[consumer] = now
    for tp, lag in lags.items():
        CONSUMER_LAG.labels(consumer=consumer, topic=topic_kind(tp.topic), partition=str(tp.partition)).set(lag)

"""Recall metrics (Prometheus, the process's default registry): per-channel latency and bundle size. Labels are
bounded (channel and step names), never a user, scope or memory id. And the tracer of recall and of the
runtime protocol (OpenTelemetry API: a no-op until a process configures an SDK, see ``ALTM_TRACES``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from prometheus_client import Counter, Histogram

TRACER = trace.get_tracer("altm")
"""Spans carry names, presets, counts and sizes: never memory content."""


@contextmanager
def span(name: str, attributes: dict[str, str | int | bool] | None = None) -> Iterator[trace.Span]:
    """A span of ``TRACER`` that records a failure by its exception's type only: an exception's message may
    quote what a caller sent (an idempotency key, a query), and traces leave the process."""
    with TRACER.start_as_current_span(name, attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise

RECALL_STEP_SECONDS = Histogram(
    "altm_recall_step_seconds", "Time of one recall step (a channel: lexical, vector...; fusion, graph, assemble)",
    ["step"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
BUNDLE_TOKENS = Histogram("altm_bundle_tokens", "Tokens of a context bundle prepare_turn returned",
                          buckets=(50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000))
RECALL_DEGRADED = Counter("altm_recall_degraded_total",
                          "Recalls answered without a channel whose model or index failed (the vector channel)",
                          ["channel"])
PREPARE_SECONDS = Histogram("altm_prepare_turn_seconds", "Time to answer prepare_turn (recall, bundle, publish)",
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))

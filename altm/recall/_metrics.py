"""Recall metrics (Prometheus, the process's default registry): per-channel latency and bundle size. Labels are
bounded (channel and step names), never a user, scope or memory id. And the tracer of recall and of the
runtime protocol (OpenTelemetry API: a no-op until a process configures an SDK, see ``ALTM_TRACES``)."""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Histogram

TRACER = trace.get_tracer("altm")
"""Spans carry names, presets, counts and sizes: never memory content."""

RECALL_STEP_SECONDS = Histogram(
    "altm_recall_step_seconds", "Time of one recall step (a channel: lexical, vector...; fusion, graph, assemble)",
    ["step"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
BUNDLE_TOKENS = Histogram("altm_bundle_tokens", "Tokens of a context bundle prepare_turn returned",
                          buckets=(50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000))
PREPARE_SECONDS = Histogram("altm_prepare_turn_seconds", "Time to answer prepare_turn (recall, bundle, publish)",
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))

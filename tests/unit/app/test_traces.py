"""Issue 16, item 2 (in part): prepare_turn and commit_turn are OpenTelemetry spans, recall is a child span of
prepare_turn, and each recall channel and step a child of recall; no span carries memory content."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from altm.core.settings import Settings
from altm.wiring import WiringError, configure_tracing
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The SDK with an in-memory exporter (a process has one tracer provider: installed once, then reused)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[str]:
    assert parent.context is not None
    return sorted(s.name for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id)


async def test_prepare_and_commit_are_one_span_tree_each(settings: Settings, spans: InMemorySpanExporter) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    async with store_with(s, [make_turn(1, "The billing deadline is December 15.", session="s1")]) as (_, app):
        spans.clear()
        prepared = await app.prepare_turn(SCOPE, "s2", "t1", "when is the billing deadline?", 800)
        await app.commit_turn(prepared.cycle_id, "December 15.", cited_memory_ids=prepared.bundle.memory_ids[:1])
    finished = list(spans.get_finished_spans())
    (prepare,) = [x for x in finished if x.name == "altm.prepare_turn"]
    (commit,) = [x for x in finished if x.name == "altm.commit_turn"]
    assert prepare.parent is None and commit.parent is None  # each its own trace
    assert prepare.attributes is not None and prepare.attributes["altm.bundle.items"] == len(prepared.bundle.items)
    assert _children(finished, prepare) == ["recall.search"]
    (search,) = [x for x in finished if x.name == "recall.search"]
    steps = _children(finished, search)
    assert {"recall.fts", "recall.vector", "recall.fusion", "recall.assemble", "recall.nearest"} <= set(steps)
    for span in finished:  # names, presets, counts and sizes: never what was said
        assert not any("deadline" in str(v) for v in (span.attributes or {}).values()), span.name


def test_traces_are_off_by_default_and_unknown_exporters_are_refused() -> None:
    assert configure_tracing(Settings()) is False
    with pytest.raises(WiringError, match="unknown ALTM_TRACES"):
        configure_tracing(Settings(traces="jaeger"))


async def test_one_turns_path_through_the_stages_is_one_trace(settings: Settings, spans: InMemorySpanExporter
                                                              ) -> None:
    """The trace context travels in record headers (traceparent): prepare_turn publishes the turn inside its
    span, capture's span is its child, the writer's span a child of capture's, and every stage that reads the
    writer's changes (embed, the deriving stages) a child of the writer's."""
    s = settings.model_copy(update={"embedder": "local"})
    async with store_with(s, []) as (rt, app):
        spans.clear()
        await app.prepare_turn(SCOPE, "s1", "t1", "We decided to move the billing service to eu-west by Friday.",
                               800)
        await rt.run_until_idle()
    finished = list(spans.get_finished_spans())
    (prepare,) = [x for x in finished if x.name == "altm.prepare_turn"]
    assert prepare.context is not None
    trace_id = prepare.context.trace_id
    by_name: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        if span.context is not None and span.context.trace_id == trace_id:
            by_name.setdefault(span.name, []).append(span)
    (capture,) = by_name["altm.stage.capture"]
    assert capture.parent is not None and capture.parent.span_id == prepare.context.span_id
    writers = by_name["altm.stage.writer"]
    assert capture.context is not None and any(
        w.parent is not None and w.parent.span_id == capture.context.span_id for w in writers)
    writer_ids = {w.context.span_id for w in writers if w.context is not None}
    embeds = by_name["altm.stage.embed"]
    assert embeds and all(e.parent is not None and e.parent.span_id in writer_ids for e in embeds)
    derived = {name for name in by_name if name.startswith("altm.stage.")} - {
        "altm.stage.capture", "altm.stage.writer", "altm.stage.embed"}
    assert derived  # the deriving stages (fold, extract, link, ...) are in the same trace


async def test_a_failed_call_is_recorded_by_its_type_only(settings: Settings, spans: InMemorySpanExporter) -> None:
    """An exception's message may quote what the caller sent (here its idempotency key): spans leave the process,
    so they record the exception's type, not its text."""
    from altm.app import IdempotencyConflict

    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (_, app):
        await app.prepare_turn(SCOPE, "s1", "t1", "first", 800, idempotency_key="patient-jane-doe-visit")
        spans.clear()
        with pytest.raises(IdempotencyConflict):
            await app.prepare_turn(SCOPE, "s1", "t1", "different", 800, idempotency_key="patient-jane-doe-visit")
    (failed,) = [x for x in spans.get_finished_spans() if x.name == "altm.prepare_turn"]
    assert failed.status.description == "IdempotencyConflict"
    assert not failed.events and "jane" not in str(failed.to_json())


def test_worker_metrics_can_be_turned_off() -> None:
    from altm.wiring._worker import serve_metrics

    assert serve_metrics(Settings(worker_metrics_port=0)) is False

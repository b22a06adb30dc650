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

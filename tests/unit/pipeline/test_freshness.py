"""Issue 16, item 3 (in part): freshness. Every derived record carries the publish time of the turn it comes
from (``altm-source-ms``), from capture through the writer's outbox to the embed stage and the deriving
stages, and each stage observes how old that turn is when it finishes a record of it."""

from __future__ import annotations

from prometheus_client import REGISTRY

from altm.app.stats import collect_stats, percentile
from altm.bus import SOURCE_MS_HEADER, source_ms
from altm.core.settings import Settings
from altm.store import HASHED_TABLES
from tests.support.memories import store_with
from tests.support.turns import make_turn

TURNS = [make_turn(i, f"We decided to move service {i} to the eu-west region by Friday.", session="s1")
         for i in range(1, 6)]


def _count(stage: str, layer: str, what: str = "count") -> float:
    return REGISTRY.get_sample_value(f"altm_freshness_seconds_{what}", {"stage": stage, "layer": layer}) or 0.0


async def test_the_turns_publish_time_travels_with_what_is_derived_from_it(settings: Settings) -> None:
    before = {(stage, layer): _count(stage, layer) for stage in ("writer", "embed") for layer in ("L0", "L2")}
    sum_before = _count("writer", "L0", "sum")
    async with store_with(settings.model_copy(update={"embedder": "local"}), TURNS) as (rt, _):
        turns = await rt.log.read_all(["altm.turns"])
        proposals = await rt.log.read_all(["altm.proposals"])
        changes = await rt.log.read_all(["altm.changes"])
    published = {r.timestamp_ms for r in turns}
    assert proposals and all(any(n == SOURCE_MS_HEADER for n, _ in r.headers) for r in proposals)
    assert changes and all(any(n == SOURCE_MS_HEADER for n, _ in r.headers) for r in changes)
    assert {source_ms(r) for r in proposals} <= published  # every one names a turn's own publish time
    assert {source_ms(r) for r in changes} <= published
    assert _count("writer", "L0") - before[("writer", "L0")] == len(TURNS)  # word-searchable
    assert _count("embed", "L0") - before[("embed", "L0")] >= len(TURNS)  # vector-searchable
    assert _count("writer", "L2") - before[("writer", "L2")] >= 1  # derived: the decisions
    mean_s = (_count("writer", "L0", "sum") - sum_before) / len(TURNS)
    assert 0.0 <= mean_s < 30.0  # seconds from publication to word-searchable, in this small embedded run


async def test_each_memory_keeps_its_turns_publish_time_and_stats_report_p50_p95(settings: Settings) -> None:
    """Issue 16, item 3: freshness from stored times. A memory keeps the publish time of its source turn
    (``source_ms``) beside ``recorded_at``; ``altm stats`` reports p50/p95 per layer; the state hash ignores both
    (they are wall-clock facts of one run, not of the input)."""
    async with store_with(settings.model_copy(update={"embedder": "none"}), TURNS) as (rt, _):
        published = {r.timestamp_ms for r in await rt.log.read_all(["altm.turns"])}
        stored = [dict(r) for s in rt.shards.existing() for r in s._db.execute(
            "SELECT layer, source_ms, recorded_at FROM memories")]
    l0 = [r for r in stored if r["layer"] == "L0"]
    assert len(l0) == len(TURNS) and {r["source_ms"] for r in l0} == published
    assert all(r["source_ms"] in published for r in stored if r["source_ms"] is not None)
    assert any(r["layer"] == "L2" and r["source_ms"] for r in stored)  # derived memories know it too
    stats = collect_stats(settings.data_dir)
    assert stats["freshness"]["L0"]["count"] == len(TURNS)
    for figures in stats["freshness"].values():
        assert 0.0 <= figures["p50_s"] <= figures["p95_s"] < 30.0
    assert "source_ms" not in HASHED_TABLES["memories"]


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    assert percentile([2.0], 0.95) == 2.0

"""Issue 16, item 3 (in part): freshness. Every derived record carries the publish time of the turn it comes
from (``altm-source-ms``), from capture through the writer's outbox to the embed stage and the deriving
stages, and each stage observes how old that turn is when it finishes a record of it."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from prometheus_client import REGISTRY

from altm.app.stats import collect_stats, percentile
from altm.bus import SOURCE_MS_HEADER, source_ms
from altm.core.settings import Settings
from altm.wiring import state_hash, vector_freshness
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
    expected = sorted((datetime.fromisoformat(r["recorded_at"]).timestamp() * 1000 - r["source_ms"]) / 1000
                      for r in l0)
    assert abs(stats["freshness"]["L0"]["p50_s"] - percentile(expected, 0.5)) < 0.002  # the SQL, checked in Python
    assert abs(stats["freshness"]["L0"]["p95_s"] - percentile(expected, 0.95)) < 0.002
    for figures in stats["freshness"].values():
        assert 0.0 <= figures["p50_s"] <= figures["p95_s"] < 30.0
    before = state_hash(settings.data_dir)
    for shard_file in sorted((settings.data_dir / "shards").glob("shard-*.db")):
        with sqlite3.connect(shard_file) as db:  # another run's publish times: the same state
            db.execute("UPDATE memories SET source_ms = source_ms + 12345")
    assert state_hash(settings.data_dir) == before


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    assert percentile([2.0], 0.95) == 2.0


async def test_vector_searchable_freshness_comes_from_the_points_indexed_time(settings: Settings) -> None:
    """Each point records when the embed stage indexed it (``indexed_ms``); with the turn's publish time in the
    shard, `altm stats` reports the delay to vector-searchable."""
    s = settings.model_copy(update={"embedder": "local"})
    async with store_with(s, TURNS):
        pass
    vector = vector_freshness(s.data_dir, s)
    word = collect_stats(s.data_dir)["freshness"]["L0"]
    assert vector is not None and vector["count"] == len(TURNS)
    assert 0.0 <= vector["p50_s"] <= vector["p95_s"] < 30.0
    assert vector["p95_s"] >= word["p50_s"]  # indexed after the writer stored the turn, never before
    none = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir.parent / "none"})
    async with store_with(none, TURNS):
        pass
    assert vector_freshness(none.data_dir, none) is None  # no embedder, no index: nothing to report

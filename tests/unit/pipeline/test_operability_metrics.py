"""Issue 16, item 1 (the rest): dead letters by stage and reason, writer transactions, outbox depth, consumer lag
per partition, model calls, tokens, cost and cache hits per task, and embedder throughput — values after a known
run, read from the process's registry (what /metrics exposes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from altm.app.ingest import ingest_file
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, running, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE, make_turn


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _lag_samples(consumer: str) -> dict[tuple[str, str], float]:
    return {(s.labels["topic"], s.labels["partition"]): s.value for metric in REGISTRY.collect()
            if metric.name == "altm_consumer_lag_records" for s in metric.samples
            if s.labels["consumer"] == consumer}


async def test_dead_letters_transactions_outbox_lag_and_embedder_after_a_known_ingest(
        settings: Settings, tmp_path: Path) -> None:
    good = [make_turn(i, f"We decided to move service {i} to the eu-west region.", session="s1").model_dump(mode="json")
            for i in range(1, 5)]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([*map(json.dumps, good), '{"not": "a turn"}']) + "\n")
    before = {
        "dead": _value("altm_dead_letters_total", stage="ingest", reason="invalid_input"),
        "tx": _value("altm_writer_transactions_total", outcome="committed"),
        "texts": _value("altm_embedder_texts_total", backend="local"),
        "batches": _value("altm_embedder_batch_seconds_count", backend="local"),
    }
    async with running(settings.model_copy(update={"embedder": "local"})) as rt:
        summary = await ingest_file(rt, source)
        assert summary.dead_lettered_at_input == 1
        assert _value("altm_dead_letters_total", stage="ingest", reason="invalid_input") - before["dead"] == 1
        assert _value("altm_writer_transactions_total", outcome="committed") - before["tx"] >= 1
        assert _value("altm_embedder_texts_total", backend="local") - before["texts"] >= len(good)
        assert _value("altm_embedder_batch_seconds_count", backend="local") > before["batches"]
        writer_lag = _lag_samples("writer")
        assert ("proposals", "0") in writer_lag and set(writer_lag.values()) == {0.0}  # idle: nothing behind
        assert {("turns", str(p)) for p in range(settings.partitions)} <= set(_lag_samples("capture"))
        for shard in rt.shards.existing():  # the series exists (set by the writer's flush) and is empty
            assert REGISTRY.get_sample_value("altm_outbox_records", {"partition": str(shard.partition)}) == 0.0


async def test_the_lag_gauge_counts_what_a_stage_has_not_read_yet(settings: Settings) -> None:
    async with running(settings.model_copy(update={"embedder": "none"})) as rt:
        await rt.publish([make_turn(i, f"Note {i}: the cache is warm.", session="s1") for i in range(1, 8)])
        await rt.lag()  # nothing consumed yet
        assert sum(_lag_samples("capture").values()) == 7
        await rt.run_until_idle()
        assert sum(_lag_samples("capture").values()) == 0


def _extraction(body: dict[str, Any]) -> str:
    return json.dumps({"atoms": [{"kind": "preference", "content": "The user prefers tabs.", "subject": "tabs"}]})


async def test_model_calls_tokens_cost_and_cache_hits_per_task(settings: Settings) -> None:
    task = ModelTask.L2.value
    before = {outcome: _value("altm_model_calls_total", task=task, outcome=outcome) for outcome in ("ok", "cached")}
    tokens_before = _value("altm_model_tokens_total", task=task, direction="prompt")
    cost_before = _value("altm_model_cost_usd_total", task=task)
    with openai_double(_extraction) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="test-extractor", max_retries=0,
                                         usd_per_1k_prompt_tokens=2.0, usd_per_1k_completion_tokens=4.0)}
        s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(1, "I prefer tabs over spaces.")])
            await rt.run_until_idle()
            await rt.rewind(["extract"])  # the same prompt again: answered by the shard's LLM cache
            await rt.run_until_idle()
        assert len(api.chat_requests) == 1
    assert _value("altm_model_calls_total", task=task, outcome="ok") - before["ok"] == 1
    assert _value("altm_model_calls_total", task=task, outcome="cached") - before["cached"] == 1
    assert _value("altm_model_tokens_total", task=task, direction="prompt") - tokens_before == 50  # the double's usage
    # 50 prompt tokens at $2/1k + 50 completion tokens at $4/1k
    assert abs(_value("altm_model_cost_usd_total", task=task) - cost_before - 0.3) < 1e-9


async def test_refused_proposals_are_counted_by_the_class_of_their_reason(settings: Settings) -> None:
    def refusals(op: str, reason: str) -> float:
        return REGISTRY.get_sample_value("altm_writer_refusals_total",
                                         {"op": op, "status": "rejected", "reason": reason}) or 0.0

    before = {op: refusals(op, "unknown_target") for op in ("review", "rollback")}
    async with embedded(settings.model_copy(update={"embedder": "none"})) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We decided to never store secrets in the repo.", session="s1")])
        await d.app.review_decide(SCOPE, "act_" + "0" * 32, "approve")  # no such held action
        await d.app.rollback(SCOPE, "prop_" + "0" * 32)  # no such decision
        await rt.run_until_idle()
    for op in ("review", "rollback"):
        assert refusals(op, "unknown_target") - before[op] == 1, op


def test_lag_series_of_revoked_partitions_are_removed() -> None:
    """Review of the metrics: a partition a rebalance took away kept its last lag forever, and a sum over
    workers counted it twice."""
    from altm.bus import TopicPartition
    from altm.pipeline._telemetry import consumer_lag

    consumer_lag("probe", {TopicPartition("altm.proposals", 0): 500, TopicPartition("altm.proposals", 1): 7})
    assert _lag_samples("probe") == {("proposals", "0"): 500.0, ("proposals", "1"): 7.0}
    consumer_lag("probe", {TopicPartition("altm.proposals", 1): 0})  # partition 0 went to another worker
    assert _lag_samples("probe") == {("proposals", "1"): 0.0}
    consumer_lag("probe", {})
    assert _lag_samples("probe") == {}

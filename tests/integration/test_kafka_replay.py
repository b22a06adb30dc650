"""Ingest through Kafka (a faust worker with a model), replay the topics into a fresh data dir: the same
state hash, and not one model call during the replay."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from altm.app.ingest import IngestSummary, publish_file
from altm.bus.kafka import KafkaBus
from altm.core import all_topic_specs
from altm.core.settings import Settings
from altm.interfaces.cli import sample_path
from altm.wiring import replay_into, state_hash
from tests.integration.test_kafka import _shard_l0_count
from tests.support.openai_double import openai_double
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka


def answer(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    atoms = [{"kind": "preference", "content": f"Stated preference: {text[:80]}"}] if "prefer" in text else []
    return json.dumps({"atoms": atoms})


async def test_replay_from_kafka_costs_no_model_calls(kafka_bootstrap: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"r{uuid.uuid4().hex[:10]}."
    settings = Settings(partitions=4, topic_prefix=prefix, embedder="none")
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await publish_file(bus, settings, sample_path(), IngestSummary())
    finally:
        await bus.stop()
    with openai_double(answer) as api:
        llm_env = {"ALTM_L2_LLM_BASE_URL": api.base_url, "ALTM_L2_LLM_MODEL": "extractor",
                   "ALTM_L2_LLM_MAX_RETRIES": "0"}
        worker_dir = tmp_path / "worker"
        env = {**os.environ, **llm_env, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none"}
        worker = start_worker(kafka_bootstrap, worker_dir, env, capture=True)
        try:
            for _ in range(180):
                if _shard_l0_count(worker_dir) >= 29:
                    break
                await asyncio.sleep(0.5)
            await wait_until_idle(kafka_bootstrap, prefix, worker, data_dir=worker_dir)
        finally:
            stop(worker)
        calls_during_ingest = len(api.chat_requests)
        assert calls_during_ingest > 0  # the worker really used the model
        for k, v in llm_env.items():
            monkeypatch.setenv(k, v)
        replayed = tmp_path / "replayed"
        summary = await replay_into(worker_dir, replayed, broker=f"kafka://{kafka_bootstrap}", settings=settings,
                                    cache_from=worker_dir)
        assert summary.events == 29
        assert len(api.chat_requests) == calls_during_ingest  # zero model calls on the replay
    assert state_hash(replayed) == state_hash(worker_dir)

"""The retrieval service of a Kafka deployment: `altm serve --broker` reads the workers' shards and
publishes prepare_turn's user message to Kafka, where a worker captures it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from altm.app.ingest import IngestSummary, publish_file
from altm.app.stats import collect_stats
from altm.bus.kafka import KafkaBus
from altm.bus.sealing import GUARD
from altm.core import all_topic_specs
from altm.core.settings import Settings
from altm.interfaces.cli import app, sample_path
from altm.wiring import open_bus, plain, resolve
from tests.integration.test_kafka import _shard_l0_count
from tests.support.processes import free_port
from tests.support.rows import rows, rows_of
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka


async def test_serve_with_a_broker(kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"s{uuid.uuid4().hex[:10]}."
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await publish_file(bus, Settings(topic_prefix=prefix), sample_path(), IngestSummary())
    finally:
        await bus.stop()
    data = tmp_path / "data"
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none"}
    broker = f"kafka://{kafka_bootstrap}"
    worker = start_worker(kafka_bootstrap, data, env)
    port = free_port()
    server = None
    try:
        for _ in range(120):
            if _shard_l0_count(data) >= 29:
                break
            await asyncio.sleep(0.5)
        await wait_until_idle(kafka_bootstrap, prefix, worker, data_dir=data)
        key = (
            CliRunner()
            .invoke(app, ["keys", "create", "--data-dir", str(data), "--name", "t", "--scope-prefix", "acme"])
            .output.strip()
        )
        server = subprocess.Popen(  # noqa: ASYNC220
            [
                sys.executable,
                "-m",
                "altm",
                "serve",
                "--data-dir",
                str(data),
                "--broker",
                broker,
                "--partitions",
                "4",
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(60):
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.5)
            r = await client.post(
                "/v1/prepare",
                headers={"Authorization": f"Bearer {key}"},
                json={
                    "scope": "acme/platform/dana/coder",
                    "session_id": "k1",
                    "turn_id": "k1-t1",
                    "content": "When is the billing migration deadline?",
                    "token_budget": 600,
                },
            )
            assert r.status_code == 200, r.text
            assert any("January 10" in i["text"] for i in r.json()["bundle"]["items"])
        for _ in range(60):  # the worker captured the user message prepare_turn published
            if _shard_l0_count(data) == 30:
                break
            await asyncio.sleep(0.5)
        assert _shard_l0_count(data) == 30
    finally:
        stop(server, worker)


async def test_admin_commands_on_a_worker_data_dir_go_through_its_kafka_bus(
        kafka_bootstrap: str, kafka_segments: Path, tmp_path: Path) -> None:
    """Issue 12, bug 2: `altm erase` on a Kafka worker's data dir started an embedded pipeline, printed
    "erased (user)" and erased nothing. Now it publishes through the bus the data dir recorded.

    Issue 14, F4: the topic segments on the broker's disk hold only ciphertext, and after the erasure the
    erased user's records no longer open (their keys are gone from the key store)."""
    prefix = f"a{uuid.uuid4().hex[:10]}."
    data = tmp_path / "data"
    hosts = resolve(Settings(data_dir=data, bus=f"kafka://{kafka_bootstrap}", topic_prefix=prefix))
    bus = open_bus(hosts)  # sealed with the data dir's key store, as `altm ingest --broker` does
    canary = f"PLAIN-CANARY-{uuid.uuid4().hex}".encode()
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await publish_file(bus, hosts, sample_path(), IngestSummary())
        await plain(bus).publish(f"{prefix}dlq", b'{"canary":"' + canary + b'"}', key="x")  # not sealed
    finally:
        await bus.stop()
    metrics_port = free_port()
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none",
           "ALTM_WORKER_METRICS_PORT": str(metrics_port)}
    worker = start_worker(kafka_bootstrap, data, env)
    try:
        for _ in range(120):
            if _shard_l0_count(data) >= 29:
                break
            await asyncio.sleep(0.5)
        await wait_until_idle(kafka_bootstrap, prefix, worker, data_dir=data)
        assert (data / "deployment.json").exists() and not (data / "log.db").exists()
        dana = rows(data, "SELECT 1 FROM memories WHERE user_id='dana'")
        assert dana
        # issue 16: the worker's own /metrics on loopback, with what it just did
        async with httpx.AsyncClient() as http:
            exposition = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
        assert _sample(exposition, 'altm_stage_records_total{outcome="in",stage="capture"}') >= 29
        assert _sample(exposition, 'altm_writer_proposals_total{op="upsert_memory",status="committed"}') >= 29
        assert "altm_stage_batch_seconds_bucket" in exposition
        assert _sample(exposition, 'altm_writer_transactions_total{outcome="committed"}') >= 1
        lag_series = 'altm_consumer_lag_records{consumer="writer",partition="0",topic="proposals"}'
        async with httpx.AsyncClient() as http:  # the worker refreshes its lag gauges every 5 s
            for _ in range(40):
                exposition = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
                if lag_series in exposition:
                    break
                await asyncio.sleep(0.5)
        assert _sample(exposition, lag_series) == 0  # idle: the worker has read everything
        stats = collect_stats(data)  # `altm stats` on a worker's data dir: shards only, freshness from stored times
        assert stats["dlq"] is None and stats["freshness"]["L0"]["count"] >= 29
        assert 0 <= stats["freshness"]["L0"]["p50_s"] <= stats["freshness"]["L0"]["p95_s"]
        segments = _segment_bytes(kafka_segments, prefix)
        assert segments.count(canary) == 1  # the search sees plain bytes where there are any
        for text in (b"payments team at Acme", b"Flask to FastAPI", b"December 15"):
            assert segments.count(text) == 0, text  # turns, proposals and changes: ciphertext only
        result = await asyncio.to_thread(
            CliRunner(env={"ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none"}).invoke,
            app, ["erase", "--data-dir", str(data), "--scope", "acme/platform/dana/coder", "--user"])
        assert result.exit_code == 0, result.output
        assert "erased (user)" in result.output
        assert rows(data, "SELECT 1 FROM memories WHERE user_id='dana'") == []  # applied by the worker
        assert rows(data, "SELECT 1 FROM tombstones WHERE user_id='dana'")
        assert rows(data, "SELECT 1 FROM memories WHERE user_id='sam'")  # another tenant's user untouched
        assert not (data / "log.db").exists()  # no embedded log was created beside the worker's shards
        # every data key of dana's is destroyed; her guard key stays (her tombstones are hashed with it)
        assert rows_of(data / "keys.db", "SELECT session FROM data_keys WHERE home='acme/platform/dana'") == [
            {"session": GUARD}]
        reader = open_bus(hosts)
        await reader.start()
        try:
            opened = await reader.read_all([f"{prefix}{t}" for t in ("turns", "proposals", "changes")])
        finally:
            await reader.stop()
        assert not any(b"Flask to FastAPI" in r.value for r in opened)  # dana's records no longer open
        assert any(r.key and not r.key.endswith("/dana") for r in opened)  # everyone else's still do
    finally:
        stop(worker)


def _segment_bytes(log_dir: Path, prefix: str) -> bytes:
    """Every segment file of the topics with ``prefix`` on the broker's disk, concatenated."""
    files = [p for d in log_dir.iterdir() if d.is_dir() and d.name.startswith(prefix) for p in d.iterdir()
             if p.is_file() and p.suffix == ".log"]
    assert files, f"no segments of {prefix}* under {log_dir}"
    return b"".join(p.read_bytes() for p in files)


def _sample(exposition: str, series: str) -> float:
    """The value of one series (name and labels as Prometheus prints them) in a /metrics text."""
    for line in exposition.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} is not in the exposition")

"""A shard restored from the proposals log files no rejection its owner never had after an erasure of one
memory and, later, of its session.

Finding: an erasure of one memory destroys no key (its tombstone keeps it from coming back), and its ``erase``
proposal stays readable (``altm/bus/sealing/_sealer.py:87-98``, ``_is_erasure``: erasures carry ids, no content).
A later erasure of the memory's session destroys that session's key, so a restore skips the memory's ``upsert``
as shredded (``altm/pipeline/runtime/kafka/_runtime.py:466``) but still reads the earlier ``erase`` of that memory
and applies it to a shard that never held it: the writer refuses it (``no memory ... in scope``) and files the
refusal as a pending rejection (``altm/pipeline/writer/_apply.py:256-260``, ``_rejected``: the proposal is
neither re-derived nor known as erased there). The owner applied the erasure (``committed``) and has no
rejection; the restored worker's review queue shows one, its state hash differs from the owner's and from the
embedded runtime's on the same input, and every takeover of the partition files it again. (A replay treats "a
decision about an erased memory" as void, ``unchanged`` / "was erased", README "Trust and erasure"; a restore
does not, although the later session erasure on the log says the memory is gone.)

Reproduction: coder says one thing in session s2; an erasure of its L1 memory; an erasure of session s2. The
owner on Kafka equals the embedded run; a worker with a fresh data dir restoring the partition files a pending
rejection of the memory erasure.

Expected: the restored shard equals the owner's (every state table, ``altm.wiring.state_hash``); an erasure of a
memory the restored shard cannot hold because a later erasure shredded it is void there (``unchanged``), not a
rejection.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from altm.app.replay import read_host_records
from altm.bus import TURNS_END_HEADER, OutgoingRecord, publish_marked
from altm.bus._order import _ordering
from altm.bus.kafka import KafkaBus
from altm.core import Role, Settings, Topic, TurnEvent, topic_name
from altm.pipeline import ProcessorContext, default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.store import MemoryReader, ShardSet
from altm.wiring._adapters import guard_similarity, open_bus, open_sealer, resolve
from altm.wiring._worker import prepare_kafka
from tests.support.memories import store_with
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.scenarios import OLD
from tests.support.turns import SCOPE
from tests.support.workers import wait_until_idle

pytestmark = pytest.mark.kafka

ERASED = TurnEvent(scope=SCOPE, session_id="s2", turn_id="s2-t2", role=Role.USER,
                   content="I prefer dark mode in every editor.", timestamp=OLD + timedelta(minutes=1))


def _settings(data_dir: Path, grace_s: float, *, keystore: Path | None = None) -> Settings:
    return Settings(data_dir=data_dir, partitions=4, embedder="none", retired_key_grace_s=grace_s,
                    seal_log=keystore is not None, keystore=f"sqlite:///{keystore}" if keystore is not None else None)


async def host_records(source: Settings) -> list[OutgoingRecord]:
    """The host events of an embedded deployment's log, in the order its writer took them up."""
    origin = resolve(source)
    bus = open_bus(origin, read_only=True)
    await bus.start()
    try:
        records = await read_host_records(bus, origin.topic_prefix)
    finally:
        await bus.stop()
    return [OutgoingRecord(r.topic, r.value, r.key, tuple(h for h in r.headers if h[0] != TURNS_END_HEADER))
            for r in records]


async def send(bootstrap: str, prefix: str, records: list[OutgoingRecord], source_prefix: str,
               data_dir: Path) -> None:
    """The host events on Kafka under ``prefix``, as they were sent: a control event that does not order
    derivation (feedback, a compaction pass) once the worker is idle (after what it names was derived)."""
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        turns = topic_name(Topic.TURNS, source_prefix)
        batch: list[OutgoingRecord] = []
        for r in records:
            kind = Topic.TURNS if r.topic == turns else Topic.CONTROL
            rec = OutgoingRecord(topic_name(kind, prefix), r.value, r.key, r.headers)
            if kind is Topic.CONTROL and not _ordering(rec):
                await publish_marked(bus, prefix, batch)
                batch = []
                await wait_until_idle(bootstrap, prefix, data_dir=data_dir)
            batch.append(rec)
        await publish_marked(bus, prefix, batch)
    finally:
        await bus.stop()


@asynccontextmanager
async def worker(settings: Settings) -> AsyncIterator[KafkaRuntime]:
    """One worker in this process, built as ``altm worker`` builds it (sealed, the shared key store)."""
    settings = resolve(settings)
    identity = await prepare_kafka(settings)
    shards = ShardSet(settings.data_dir, settings.partitions)
    sealer = open_sealer(settings)
    runtime = KafkaRuntime(settings, shards, ProcessorContext(settings=settings, reader=MemoryReader(shards)),
                           default_processors(), identity, sealer, guard_similarity(settings))
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
        shards.close()
        if sealer is not None:
            sealer.keys.close()


async def test_a_restore_files_no_rejection_of_a_memory_erasure_whose_session_was_erased_later(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)  # the order, not its bound
    source = _settings(tmp_path / "source", 600.0)
    async with store_with(source, [ERASED]) as (runtime, app):
        episode = str(rows(source.data_dir, "SELECT memory_id FROM memories WHERE layer='L1'")[0]["memory_id"])
        await app.erase(SCOPE, "memory", memory_id=episode)
        await runtime.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await runtime.run_until_idle()
    records = await host_records(source)

    prefix = f"m{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    owner = _settings(tmp_path / "owner", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    await prepare_kafka(resolve(owner))
    async with worker(owner):
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, owner.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")  # holds: the owner equals the embedded run
    assert not rows(owner.data_dir, "SELECT 1 FROM rejections")

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})  # the partitions move to a new worker
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    filed = rows(restored.data_dir, "SELECT memory_id, reason FROM rejections WHERE review_status='pending'")
    assert not filed, f"the restore filed rejections its owner never had: {[r['reason'] for r in filed]}"
    assert_same_state(owner.data_dir, restored.data_dir, "after a restore from the proposals log")

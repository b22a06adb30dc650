"""Control events in a Kafka deployment keep the order a replay applies them in (``altm.bus._order``,
``altm.pipeline.runtime.kafka._order``): an erasure (a retention pass, a rollback) meets the turns sent before it
derived, and the turns sent after it are captured after it. Before, each control lane took its events as soon as
they were fetched: an erasure sent right after turns met them half-derived (or not captured at all, and they
outlived it), and what it did depended on how far the stages had got."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from altm.bus import Record, host_record, marked
from altm.bus.kafka import KafkaBus
from altm.core import ControlAction, ControlEvent, Erasure, Event, Scope, Topic, all_topic_specs, derive_id
from altm.core.settings import Settings
from altm.pipeline import ProcessorContext, default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.store import MemoryReader, ShardSet
from tests.integration.test_kafka_restore import Handle, _turns
from tests.support.rows import rows
from tests.support.turns import make_turn
from tests.support.workers import wait_until_idle

pytestmark = pytest.mark.kafka


def _erase_session(scope: Scope, session: str) -> ControlEvent:
    erasure = Erasure(target="session", session_id=session, reason="erasure requested")
    ts = datetime(2026, 12, 1, tzinfo=UTC)
    return ControlEvent(event_id=derive_id("ctl", scope.path, "erase", "session", "", session, ts.isoformat()),
                        scope=scope, timestamp=ts, action=ControlAction.ERASE, session_id=session,
                        payload=erasure.model_dump())


def _slowed(handle: Handle, seconds: float) -> Handle:
    async def slow(records: Sequence[Record]) -> int:
        await asyncio.sleep(seconds)
        return await handle(records)
    return slow


async def _publish(bootstrap: str, prefix: str, events: Sequence[Event]) -> None:
    """Published as a deployment does: each control event that orders derivation carries its turns end."""
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await bus.publish_many(await marked(bus, prefix, [host_record(Settings(topic_prefix=prefix), e)
                                                          for e in events]))
    finally:
        await bus.stop()


@asynccontextmanager
async def _worker(bootstrap: str, prefix: str, data_dir: Path,
                  slow: Callable[[str, Topic], float]) -> AsyncIterator[KafkaRuntime]:
    """One worker in this process, its stages slowed by ``slow(name, input topic)`` seconds a batch."""
    settings = Settings(data_dir=data_dir, partitions=4, broker=f"kafka://{bootstrap}", topic_prefix=prefix,
                        embedder="none", worker_session_timeout_s=6, derive_every_steps=1)
    shards = ShardSet(settings.data_dir, 4)
    runtime = KafkaRuntime(settings, shards, ProcessorContext(settings=settings, reader=MemoryReader(shards)),
                           default_processors(), "log-id")
    for stage in runtime.stages:
        seconds = slow(stage.name, stage.processor.input_topic)
        if seconds:
            stage.handle = _slowed(stage.handle, seconds)  # type: ignore[method-assign,assignment]
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
        shards.close()


async def test_an_erasure_sent_right_after_turns_meets_them_derived(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Derivation behind the control events, as under load: before, 8 of 8 erasures were taken up before the
    sessions they erase (or the one after) were folded."""
    prefix = f"c{uuid.uuid4().hex[:10]}."
    turns = _turns(range(0, 2))  # 8 users, sessions s0 and s1
    users = sorted({t.scope for t in turns}, key=lambda s: s.user_id)
    await _publish(kafka_bootstrap, prefix, [*turns, *(_erase_session(scope, "s0") for scope in users)])
    data_dir = tmp_path / "worker"
    met: list[tuple[str, list[str]]] = []  # per erasure taken up: its user, the sessions that had a capsule then
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 120.0)  # the order, not its bound

    def slow(name: str, topic: Topic) -> float:
        return 0.5 if topic is Topic.CHANGES and name != "embed" else 0.0

    async with _worker(kafka_bootstrap, prefix, data_dir, slow) as runtime:
        control = next(stage for stage in runtime.stages if stage.name == "control")
        handle = control.handle

        async def noting(records: Sequence[Record]) -> int:
            for rec in records:
                user = str(rec.key).rsplit("/", 1)[-1]
                met.append((user, sorted(str(r["session_id"]) for r in rows(
                    data_dir, "SELECT session_id FROM memories WHERE layer='L1' AND user_id=?", (user,)))))
            return await handle(records)

        control.handle = noting  # type: ignore[method-assign]
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=data_dir)
        assert runtime.order.taken_up == len(users)
    assert sorted(user for user, _ in met) == sorted(s.user_id for s in users)
    early = [(user, sessions) for user, sessions in met if sessions != ["s0", "s1"]]
    assert not early, f"erasures taken up before the turns sent before them were folded: {early}"
    assert not rows(data_dir, "SELECT 1 FROM memories WHERE session_id='s0'")  # and each erased its session


async def test_the_turns_before_an_erasure_are_erased_and_the_ones_after_it_kept(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Turns of s1, the erasure of s1 and a turn of s1 again, sent together, with capture slower than the control
    lane. Before, the erasure was applied before the turns were captured: they outlived it."""
    prefix = f"c{uuid.uuid4().hex[:10]}."
    users = [Scope(tenant_id="t", workspace_id="w", user_id=f"user{u}", agent_id="a") for u in range(4)]
    events: list[Event] = []
    for scope in users:
        events += [make_turn(1, "We decided to deploy the billing service on Tuesdays.", scope=scope),
                   make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", scope=scope),
                   _erase_session(scope, "s1"),
                   make_turn(3, "Priya owns the billing service and reviews every schema change.", scope=scope)]
    await _publish(kafka_bootstrap, prefix, events)
    data_dir = tmp_path / "worker"
    async with _worker(kafka_bootstrap, prefix, data_dir, lambda name, _: 0.5 if name == "capture" else 0.0):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=data_dir)
    kept = rows(data_dir, "SELECT user_id, content FROM memories WHERE layer='L0'")
    assert sorted((r["user_id"], r["content"]) for r in kept) == [
        (s.user_id, "Priya owns the billing service and reviews every schema change.") for s in users]
    folded = rows(data_dir, "SELECT 1 FROM audit_log WHERE actor='fold' AND action='insert'")
    assert folded, "the erasures were applied before the turns sent before them were folded"


async def test_the_host_sdk_delivers_an_erasure_with_the_turns_end_of_what_was_sent_before_it(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """The host SDK's outbox learns the turns end only when it delivers: the turns before the erasure are
    acknowledged first. Before, its control events carried none (the workers could not order them)."""
    from altm.bus import turns_end
    from altm.core import topic_name
    from altm.interfaces.sdk import HostProducer

    prefix = f"c{uuid.uuid4().hex[:10]}."
    settings = Settings(topic_prefix=prefix, partitions=4)
    scope = Scope(tenant_id="t", workspace_id="w", user_id="ann", agent_id="a")
    await _publish(kafka_bootstrap, prefix, [make_turn(0, scope=scope)])  # one turn on the log before
    producer = HostProducer(f"kafka://{kafka_bootstrap}", tmp_path / "outbox.db", settings=settings)
    await producer.start()
    try:
        pin = ControlEvent(event_id=derive_id("ctl", scope.path, "pin"), scope=scope,
                           timestamp=datetime(2026, 12, 1, tzinfo=UTC), action=ControlAction.PIN,
                           target_ids=("mem_x",), payload={})
        await producer.publish_many([make_turn(1, scope=scope), make_turn(2, scope=scope),
                                     _erase_session(scope, "s1"), make_turn(3, scope=scope), pin])
        await producer.flush(timeout_s=30)
    finally:
        await producer.stop()
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        control = await bus.read_all([topic_name(Topic.CONTROL, prefix)])
    finally:
        await bus.stop()
    assert [turns_end(r) for r in control] == [3, None]  # after the three turns before it; a pin orders nothing

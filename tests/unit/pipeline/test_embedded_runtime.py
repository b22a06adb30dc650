from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
import pytest

from altm.bus import OutgoingRecord
from altm.core import ChangeStatus, decode_dead_letter, decode_event, encode
from altm.core.settings import Settings
from altm.pipeline import EmbeddedRuntime, WriterDriver
from altm.pipeline.processors import CaptureProcessor
from altm.wiring import open_deployment, plain, state_hash
from tests.support.memories import embedded, running, runtime_of
from tests.support.turns import SCOPE, make_turn


async def _dlq(rt: EmbeddedRuntime) -> list[dict[str, object]]:
    return [decode_dead_letter(rec.value).model_dump() for rec in await rt.log.read_all(["altm.dlq"])]


def _l0_contents(rt: EmbeddedRuntime) -> list[str]:
    return sorted(
        r[0] for s in rt.shards.existing() for r in s._db.execute("SELECT content FROM memories WHERE layer='L0'")
    )


@asynccontextmanager
async def capture_only(settings: Settings) -> AsyncIterator[EmbeddedRuntime]:
    """The runtime mechanics, isolated from memory formation (one processor, the writer)."""
    async with embedded(settings.model_copy(update={"embedder": "none"}), processors=[CaptureProcessor()]) as d:
        yield runtime_of(d)


async def test_turns_become_l0_memories_with_changes(settings: Settings) -> None:
    async with capture_only(settings) as rt:
        await rt.publish([make_turn(i) for i in range(5)])
        handled = await rt.run_until_idle()
        assert handled == 10  # 5 turns through capture, 5 proposals through the writer
        assert len(_l0_contents(rt)) == 5
        changes = [decode_event(r.value) for r in await rt.log.read_all(["altm.changes"])]
        assert len(changes) == 5
        assert all(c.event_type == "change" and c.status is ChangeStatus.COMMITTED for c in changes)
        assert await rt.lag() == 0


async def test_replaying_the_same_turns_is_idempotent(settings: Settings) -> None:
    async with running(settings) as rt:
        await rt.publish([make_turn(i) for i in range(3)])
        await rt.run_until_idle()
    first = state_hash(settings.data_dir)  # (the state hash reads the vector index: not beside its writer)
    async with running(settings) as rt:
        await rt.publish([make_turn(i) for i in range(3)])  # duplicates at new offsets
        await rt.run_until_idle()
        assert len(_l0_contents(rt)) == 3
    assert state_hash(settings.data_dir) == first


async def test_restart_resumes_from_offsets_stored_with_the_data(settings: Settings) -> None:
    async with capture_only(settings) as rt:
        await rt.publish([make_turn(i) for i in range(3)])
        await rt.run_until_idle()
    async with capture_only(settings) as rt:
        await rt.publish([make_turn(3)])
        assert await rt.run_until_idle() == 2
        assert len(_l0_contents(rt)) == 4
        audits = sum(s._db.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] for s in rt.shards.existing())
        assert audits == 4


async def test_unpublished_changes_survive_a_crash_between_commit_and_publish(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    deployment = await open_deployment(s, pipeline=True, processors=[CaptureProcessor()])
    await deployment.start()
    rt = runtime_of(deployment)
    await rt.publish([make_turn(1)])
    await rt._stages[0].step()  # capture
    writer_stage = rt._stages[-1]
    records = await writer_stage.consumer.poll(10)
    assert isinstance(writer_stage.driver, WriterDriver)
    for rec in records:
        writer_stage.driver.writer.apply(rec, 4)
    # crash: the shard committed, the change was never published, the group offset never committed
    await deployment.close()
    assert plain(rt.log)._conn is None  # type: ignore[attr-defined]
    async with capture_only(settings) as rt2:
        await rt2.run_until_idle()
        changes = await rt2.log.read_all(["altm.changes"])
        assert len(changes) == 1  # published once on restart, not re-applied
        assert len(_l0_contents(rt2)) == 1


@pytest.mark.parametrize(
    ("value", "key", "error"),
    [
        (b'{"event_type": "turn", "scope": {"tenant_id": "acme"', SCOPE.home, "invalid JSON"),
        (orjson.dumps({**orjson.loads(encode(make_turn(1))), "role": 7}), SCOPE.home, "role"),
        (b'{"event_type": "telepathy"}', SCOPE.home, "unknown event_type 'telepathy'"),
        (encode(make_turn(1)), "someone/else/entirely", "does not match the record key"),
        (encode(make_turn(1, "x" * 2000)), SCOPE.home, "over the limit of 1000"),
    ],
    ids=["truncated-json", "wrong-types", "unknown-event-type", "scope-key-mismatch", "oversized-content"],
)
async def test_bad_input_is_dead_lettered_and_the_stream_keeps_going(
    settings: Settings, value: bytes, key: str, error: str
) -> None:
    settings = settings.model_copy(update={"max_content_bytes": 1000})
    async with running(settings) as rt:
        await rt.log.publish_many([OutgoingRecord("altm.turns", value, key=key, partition=0)])
        await rt.publish([make_turn(2, "the following good event")])
        await rt.run_until_idle()
        (dead,) = await _dlq(rt)
        assert error in str(dead["error"]) and dead["stage"] == "capture"
        assert dead["original"] == value.decode("utf-8")
        assert _l0_contents(rt) == ["the following good event"]


async def test_background_mode_processes_as_events_arrive_and_stops_cleanly(settings: Settings) -> None:
    deployment = await open_deployment(settings, pipeline=True)
    await deployment.start(background=True)
    rt = runtime_of(deployment)
    await rt.publish([make_turn(1)])
    for _ in range(100):
        if _l0_contents(rt):
            break
        await asyncio.sleep(0.02)
    assert len(_l0_contents(rt)) == 1
    await deployment.close()
    assert rt._task is None
    leftovers = [t for t in asyncio.all_tasks() if t.get_name() in ("altm-embedded-runtime", "altm-maintenance")]
    assert leftovers == []


async def test_hosts_cannot_publish_proposals(settings: Settings) -> None:
    from altm.core import ChangeEvent

    async with running(settings) as rt:
        change = ChangeEvent(event_id="c", scope=SCOPE, timestamp=make_turn(1).timestamp, proposal_id="p",
                             status=ChangeStatus.COMMITTED)
        with pytest.raises(ValueError, match="hosts publish turn and control events"):
            await rt.publish([change])


def _layers(rt: EmbeddedRuntime) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in rt.shards.existing():
        for layer, n in s._db.execute("SELECT layer, COUNT(*) FROM memories GROUP BY layer"):
            out[layer] = out.get(layer, 0) + n
    return out


async def test_turns_are_made_searchable_before_they_are_derived(settings: Settings) -> None:
    turns = [make_turn(i, f"We decided to move service {i} to region eu-{i} on Friday.") for i in range(12)]
    async with embedded(settings.model_copy(update={"derive_every_steps": 1000})) as d:
        rt = runtime_of(d)
        await rt.publish(turns)
        steps = 0
        while (d.vectors.count() if d.vectors else 0) < len(turns):
            assert await rt.step() > 0
            steps += 1
            assert steps < 50
        # every turn is in the word index and the vector index; nothing has been derived from them yet
        assert _layers(rt) == {"L0": len(turns)}
        assert rt.stage_metrics()["fold"].records == 0 and rt.stage_metrics()["extract"].records == 0
        await rt.run_until_idle()  # the deriving stages run once the searchable path is idle
        layers = _layers(rt)
        assert layers["L0"] == len(turns) and layers.get("L1", 0) >= 1 and layers.get("L2", 0) >= 1


async def test_deriving_stages_are_not_starved_by_a_busy_searchable_path(settings: Settings) -> None:
    async with running(settings.model_copy(update={"derive_every_steps": 2, "poll_batch": 1})) as rt:
        await rt.publish([make_turn(i, f"We decided to deploy build {i} on Friday.") for i in range(6)])
        for _ in range(4):  # the searchable path is never idle in these steps
            await rt.step()
        assert rt.stage_metrics()["fold"].records + rt.stage_metrics()["extract"].records > 0

"""A review of the key store on Kafka (altm/bus/kafka/_keys.py) found these; each test failed before its fix:
races with other processes, hostile or malformed records on the key topic, closing while a call waits, a key
topic that is not compacted, a destroyed key left on disk when nothing follows it, and scans of every key."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from altm.bus.kafka import KafkaKeyStore, KeyTopicMissing
from altm.bus.kafka._keys import _Entry
from altm.bus.sealing import KeyStoreError, Owner
from tests.support.keys import FAST_COMPACTION, MASTER, key_on_disk, open_store, topic_bytes, until

pytestmark = pytest.mark.kafka

def _topic() -> str:
    return f"rk{uuid.uuid4().hex[:10]}.keys"


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """What anyone with produce access to the key topic can write (a stray tool, another version, an insider)."""

    async def send() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for key, value in records:
                await producer.send_and_wait(topic, value, key=key, partition=0)
        finally:
            await producer.stop()

    asyncio.run(send())


def _read_to_the_end(store: KafkaKeyStore) -> None:
    """An unknown kid makes the store read the topic up to its end first."""
    with pytest.raises(KeyStoreError, match="not in the key store"):
        store.get("0" * 32)


def _lag_reader(store: KafkaKeyStore, seconds: float = 3.0) -> None:
    """The store's reader falls ``seconds`` behind once (a slow fetch, a GC pause, a busy CPU, or the reader's own
    1 s sleep after a failed fetch); it catches up afterwards."""
    consumer = store._consumer
    assert consumer is not None
    original = consumer.getmany

    async def slow(*args: object, **kwargs: object) -> object:
        consumer.getmany = original
        await asyncio.sleep(seconds)
        return await original(*args, **kwargs)

    consumer.getmany = slow
    time.sleep(1.2)  # the fetch in flight ends (nothing arrives meanwhile: its 1 s poll times out)


# -- 1. a shred misses keys this process has not read yet -------------------------------------------------------

def test_a_shred_destroys_a_key_another_process_made_before_it(kafka_bootstrap: str) -> None:
    """SqliteKeyStore.shred sees every key committed before it; here the writer's shred acts on whatever its
    reader has applied so far, so a key another process (a worker, the host SDK) made a moment before the
    erasure survives it for good (without the lag: about 1 shred in 3 misses a key made just before it)."""
    topic = _topic()
    writer, worker = open_store(kafka_bootstrap, topic), open_store(kafka_bootstrap, topic)
    try:
        _lag_reader(writer)
        kid, _ = worker.current(Owner("t/w/erased", "a", "s"))
        assert writer.shred("t/w/erased") == 1, "the erasure left a key of the erased user alive"
        assert until(lambda: worker.get(kid) is None, 5)
    finally:
        writer.close()
        worker.close()


# -- 2. a retire or a rewrap from a stale view brings a destroyed key back ---------------------------------------

@pytest.mark.parametrize("change", ["retire", "rewrap"])
def test_a_key_destroyed_elsewhere_does_not_come_back(kafka_bootstrap: str, change: str) -> None:
    """retire and rewrap rewrite a key's whole record (with its wrapped bytes) from this process's view; when
    that view has not yet read another process's destroy, the rewritten record lands after the destroy and the
    key is alive again in every process, and for good on the broker (compaction keeps the newest record).
    Without the lag: 11 retires in 40 made right after a shred elsewhere brought the key back."""
    topic = _topic()
    new_master = secrets.token_bytes(32)
    a, b = open_store(kafka_bootstrap, topic), open_store(kafka_bootstrap, topic)
    try:
        kid, _ = a.current(Owner("t/w/u", "", "~derived"))
        assert until(lambda: kid in b._entries, 5)
        _lag_reader(b)
        assert a.shred("t/w/u") == 1
        if change == "retire":
            b.retire("t/w/u", "~derived")
        else:
            b.rewrap(new_master)
        later = open_store(kafka_bootstrap, topic, master_key=new_master if change == "rewrap" else MASTER,
                       read_only=True)
        try:
            assert later.get(kid) is None, f"a {change} brought back a destroyed key"
        finally:
            later.close()
        assert a.get(kid) is None, f"a {change} elsewhere brought back the key this store destroyed"
    finally:
        a.close()
        b.close()


# -- 3. one malformed record stops every reader, and no process can open the store --------------------------------

@pytest.mark.parametrize("junk", [b"null", b"[]", b"1", b'"x"'])
def test_a_malformed_record_does_not_stop_the_key_store(kafka_bootstrap: str, junk: bytes) -> None:
    """_apply catches ValueError/KeyError/TypeError, but JSON that is not an object raises AttributeError
    (``d.get``) outside any handler in _follow: the reader task dies in every process that reads it. Known keys
    keep serving (destroys made elsewhere are never applied again), every write fails, and a store that starts
    later cannot open at all ("the key store's reader stopped") until someone overwrites that record."""
    topic = _topic()
    a = open_store(kafka_bootstrap, topic)
    try:
        kid, _ = a.current(Owner("t/w/u"))
        _produce(kafka_bootstrap, topic, [(b"junk", junk)])
        b = open_store(kafka_bootstrap, topic, wait_s=3)
        try:
            assert b.shred("t/w/u") == 1
            assert until(lambda: a.get(kid) is None, 5), "a destroy made elsewhere is never applied here"
        finally:
            b.close()
    finally:
        a.close()


def test_a_record_with_a_retired_ms_of_the_wrong_type_does_not_block_destroying_retired_keys(
        kafka_bootstrap: str) -> None:
    """retired_ms is taken from the record as it is: one string there makes every destroy_retired (in every
    process, every time) raise TypeError, so no retired key is ever destroyed again (an erasure's derived keys
    stay readable forever)."""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic)
    try:
        kid, _ = store.current(Owner("t/w/u", "", "~derived"))
        assert store.retire("t/w/u", "~derived") == 1
        bad = {"home": "x", "wrapped": "AAAA", "master_id": "", "created_ms": 1, "retired_ms": "soon"}
        _produce(kafka_bootstrap, topic, [(b"f" * 32, orjson.dumps(bad))])
        _read_to_the_end(store)
        assert store.destroy_retired(0) >= 1
        assert store.get(kid) is None
    finally:
        store.close()


def test_a_record_claiming_another_owner_for_a_key_does_not_dodge_its_shred(kafka_bootstrap: str) -> None:
    """The owner is neither bound to the wrapped key (only the kid is associated data) nor kept from the first
    record: a copy of a user's key record under another owner moves the key out of the user's erasure, and
    the key keeps opening the user's records after the shred."""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic)
    try:
        kid, key = store.current(Owner("t/w/victim"))
        moved = _Entry(Owner("t/w/someone-else"), store._entries[kid].wrapped, store._entries[kid].master_id,
                       store._entries[kid].created_ms)
        _produce(kafka_bootstrap, topic, [(kid.encode(), moved.value())])
        _read_to_the_end(store)
        store.shred("t/w/victim")
        served = None
        with contextlib.suppress(KeyStoreError):
            served = store.get(kid)
        assert served != key, "the user's key survived the user's erasure"
    finally:
        store.close()


# -- 4. close() while a call is pending ---------------------------------------------------------------------------

def test_close_while_a_call_is_pending_does_not_hold_the_caller(kafka_bootstrap: str) -> None:
    """close() cancels the reader and stops the loop while a write still waits in _caught_up (it polls every
    0.5 s): its future never completes, so the caller (holding _writing) waits the full wait_s + 30 s and the
    loop is closed with the task still pending ("Task was destroyed but it is pending")."""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic)
    _lag_reader(store, 5.0)
    outcome: dict[str, float | str | Exception] = {}

    def seal() -> None:
        started = time.monotonic()
        try:
            store.current(Owner("t/w/u"))
            outcome["result"] = "ok"
        except Exception as exc:
            outcome["result"] = exc
        outcome["took"] = time.monotonic() - started

    caller = threading.Thread(target=seal)
    caller.start()
    time.sleep(0.3)
    store.close()
    caller.join(60)
    took = outcome["took"]
    assert isinstance(took, float) and took < 5.0, f"the pending call waited {took} s after close(): {outcome}"


# -- 5. a destroyed key stays on the broker's disk while nothing else is written to the topic ----------------------

def test_a_destroyed_key_leaves_the_disk_without_later_writes(kafka_bootstrap: str, kafka_segments: Path) -> None:
    """Kafka rolls a segment on segment.ms only when it appends to the partition, and never cleans the active
    segment: after the last write to the key topic (the shred), its records, the destroyed key's among them,
    stay on disk however long segment.ms and max.compaction.lag.ms are, unlike the module's "within about two
    hours". (Here both bounds are 1 s; measured: still on disk 41 s after the shred, gone ~15 s after one more
    append. The existing test passes only because it keeps appending fillers.)"""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic, topic_config=FAST_COMPACTION)
    try:
        _, needle = key_on_disk(store, kafka_segments, topic, "t/w/gone")
        store.shred("t/w/gone")  # the erasure is the last thing written to the topic
        assert until(lambda: needle not in topic_bytes(kafka_segments, topic), 45), \
            "the destroyed key is still in the topic's segments"
    finally:
        store.close()


def test_a_destroyed_key_leaves_the_disk_when_the_process_that_destroyed_it_stopped_at_once(
        kafka_bootstrap: str, kafka_segments: Path) -> None:
    """The roll record was scheduled only by the process that destroyed the key: one that stopped right after
    the shred left the key in the active segment until anyone appended again. Any store that starts now
    schedules it (from the topic's own segment.ms, not its own defaults)."""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic, topic_config=FAST_COMPACTION)
    try:
        _, needle = key_on_disk(store, kafka_segments, topic, "t/w/gone")
        store.shred("t/w/gone")
    finally:
        store.close()  # before its roll
    later = open_store(kafka_bootstrap, topic)  # another process, started with the defaults
    try:
        assert until(lambda: needle not in topic_bytes(kafka_segments, topic), 45), \
            "the destroyed key is still in the topic's segments"
    finally:
        later.close()


# -- 6. the key topic's configuration is never checked, and describing it may create it -----------------------------

def test_an_existing_key_topic_that_is_not_compacted_is_not_used(kafka_bootstrap: str) -> None:
    """_ensure_topic accepts any topic of that name: one made with the broker's defaults (cleanup.policy=delete,
    retention.ms 7 days: what auto-creation makes, or a hand-made topic) deletes every key after a week, and
    with it every record of the log and every "destroyed" marker. The store should refuse it or fix it."""
    topic = _topic()

    async def make() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": "delete"})])
        finally:
            await admin.close()

    async def policy() -> str:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            (resp,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            return next(str(c[1]) for c in resp.resources[0][4] if c[0] == "cleanup.policy")
        finally:
            await admin.close()

    asyncio.run(make())
    time.sleep(0.5)
    try:
        store = open_store(kafka_bootstrap, topic)
    except KeyStoreError:
        return  # refused: fine
    try:
        assert asyncio.run(policy()) == "compact", "the key store uses a topic that deletes its keys"
    finally:
        store.close()


def test_looking_for_the_key_topic_does_not_ask_the_broker_to_create_it(kafka_bootstrap: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """AIOKafkaAdminClient.describe_topics sends a MetadataRequest with allow_auto_topic_creation=True: on a
    broker with auto.create.topics.enable=true (Kafka's default; this test broker and the compose file turn it
    off) the first describe makes the key topic with the broker's defaults (not compacted; 7-day retention),
    and _ensure_topic then accepts it. Even a read-only process (SDK, replica) makes it that way."""
    from aiokafka.protocol import metadata

    topic = _topic()
    asked: list[tuple[list[str] | None, bool | None]] = []
    original = metadata.MetadataRequest.__init__

    def spy(self: metadata.MetadataRequest, topics: list[str] | None = None,
            allow_auto_topic_creation: bool | None = None) -> None:
        asked.append((topics, allow_auto_topic_creation))
        original(self, topics, allow_auto_topic_creation)

    monkeypatch.setattr(metadata.MetadataRequest, "__init__", spy)
    with pytest.raises(KeyTopicMissing):
        open_store(kafka_bootstrap, topic, read_only=True)
    creating = [a for a in asked if a[0] and topic in a[0] and a[1] is not False]
    assert not creating, f"metadata requests that let the broker auto-create {topic}: {creating}"


# -- 7. current() scans every key ever made, under the lock, for every sealed record -------------------------------

def test_current_does_not_scan_every_key(kafka_bootstrap: str) -> None:
    """_current walks all entries (destroyed ones too, kept forever) under _lock on every call, and the Sealer
    calls current() for every record it seals: measured 41 ms per call with 50,000 keys (one per session),
    i.e. at most ~24 sealed records/s per process, with the reader and every get() blocked meanwhile."""
    topic = _topic()
    store = open_store(kafka_bootstrap, topic)
    try:
        store.current(Owner("t/w/me"))

        async def fill() -> None:
            producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=20)
            await producer.start()
            try:
                sent = [await producer.send(topic, _Entry(Owner(f"t/w/u{i}", "a", f"s{i}"), None, "", 1, None, 1)
                                            .value(), key=uuid.uuid4().hex.encode(), partition=0)
                        for i in range(20_000)]
                await asyncio.gather(*sent)
            finally:
                await producer.stop()

        asyncio.run(fill())
        _read_to_the_end(store)
        started = time.perf_counter()
        for _ in range(50):
            store.current(Owner("t/w/me"))
        per_call_ms = (time.perf_counter() - started) * 1000 / 50
        assert per_call_ms < 2.0, f"current() takes {per_call_ms:.1f} ms with 20,000 keys"
    finally:
        store.close()

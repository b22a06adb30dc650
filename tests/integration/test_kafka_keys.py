"""The log's data keys on a compacted Kafka topic (issue 13: the SQLite key store was the one file every
process of a Kafka deployment still had to share). Several processes (here: several stores) see the same keys;
a destroyed key opens nothing anywhere, even in a store that starts after compaction; and the destroyed key's
bytes leave the broker's disk."""

from __future__ import annotations

import asyncio
import base64
import functools
import secrets
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as KafkaTP

from altm.bus.kafka import KafkaKeyStore, KeyTopicMissing
from altm.bus.kafka._keys import _Entry
from altm.bus.sealing import GUARD, KeyStoreError, Owner, guard_kid
from altm.bus.sealing._keys import wrap_key
from altm.core import Settings
from altm.wiring import WiringError, open_keystore
from tests.support.keys import FAST_COMPACTION, MASTER, key_on_disk, open_store, topic_bytes, until

pytestmark = pytest.mark.kafka

def test_keys_made_in_one_store_open_in_another_and_a_shred_reaches_both(kafka_bootstrap: str) -> None:
    topic = f"k{uuid.uuid4().hex[:10]}.keys"
    a = open_store(kafka_bootstrap, topic)
    b = open_store(kafka_bootstrap, topic)
    try:
        owner = Owner("t/w/u1", "a", "s1")
        kid, key = a.current(owner)
        assert a.current(owner) == (kid, key)  # one key per owner, not one per call
        assert b.get(kid) == key  # made a moment ago elsewhere: read up to the end before it is called unknown
        other_kid, _ = a.current(Owner("t/w/u2"))
        assert not a.destroyed(kid)
        assert a.shred("t/w/u1") == 1
        assert a.get(kid) is None  # at once in the store that destroyed it
        assert a.destroyed(kid)
        assert until(lambda: b.get(kid) is None)  # and soon in every other
        assert b.destroyed(kid) and not b.destroyed(other_kid) and not b.destroyed("0" * 32)
        assert b.get(other_kid) is not None  # another user's key is untouched
        later = open_store(kafka_bootstrap, topic)
        try:
            assert later.get(kid) is None  # destroyed, not unknown: its records are shredded, not foreign
            with pytest.raises(KeyStoreError, match="not in the key store"):
                later.get("0" * 32)
            assert later.counts() == (1, 0)
        finally:
            later.close()
        new_kid, _ = a.current(owner)  # the owner's next records get a fresh key
        assert new_kid != kid
    finally:
        a.close()
        b.close()


def test_retired_keys_open_until_they_are_destroyed(kafka_bootstrap: str) -> None:
    topic = f"k{uuid.uuid4().hex[:10]}.keys"
    store = open_store(kafka_bootstrap, topic)
    try:
        owner = Owner("t/w/u", "", "derived")
        kid, key = store.current(owner)
        assert store.retire("t/w/u", "derived") == 1
        assert store.retired(kid) and store.get(kid) == key
        assert store.current(owner)[0] != kid  # new records get a fresh key
        assert store.destroy_retired(3600) == 0
        assert store.destroy_retired(0) == 1
        assert store.get(kid) is None
    finally:
        store.close()


def test_a_store_with_another_master_key_refuses_to_open_keys(kafka_bootstrap: str) -> None:
    topic = f"k{uuid.uuid4().hex[:10]}.keys"
    a = open_store(kafka_bootstrap, topic)
    try:
        kid, _ = a.current(Owner("t/w/u"))
        wrong = open_store(kafka_bootstrap, topic, master_key=secrets.token_bytes(32), read_only=True)
        try:
            with pytest.raises(KeyStoreError, match="master key"):
                wrong.get(kid)
        finally:
            wrong.close()
        new = secrets.token_bytes(32)
        assert a.rewrap(new) == 1
        rotated = open_store(kafka_bootstrap, topic, master_key=new, read_only=True)
        try:
            assert rotated.get(kid) is not None and rotated.master_ids() == {a.master_ids().pop()}
            with pytest.raises(KeyStoreError, match="read-only"):
                rotated.current(Owner("t/w/other"))
        finally:
            rotated.close()
    finally:
        a.close()


def test_a_read_only_store_does_not_make_the_topic(kafka_bootstrap: str) -> None:
    with pytest.raises(KeyTopicMissing):
        open_store(kafka_bootstrap, f"k{uuid.uuid4().hex[:10]}.keys", read_only=True)


def test_the_wiring_opens_a_kafka_key_store_only_with_the_master_key(kafka_bootstrap: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path, keystore=f"kafka://{kafka_bootstrap}",
                        topic_prefix=f"w{uuid.uuid4().hex[:8]}.")
    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    with pytest.raises(WiringError, match="ALTM_MASTER_KEY"):
        open_keystore(settings)
    monkeypatch.setenv("ALTM_MASTER_KEY", base64.urlsafe_b64encode(MASTER).decode())
    assert open_keystore(settings, read_only=True) is None  # nothing sealed yet: no topic, nothing to open
    store = open_keystore(settings)
    assert isinstance(store, KafkaKeyStore) and store.topic == f"{settings.topic_prefix}keys"
    store.close()


def test_a_destroyed_key_leaves_the_brokers_disk(kafka_bootstrap: str, kafka_segments: Path) -> None:
    """Compaction drops the records that held a destroyed key (here with segments that roll every second; the
    topic's default bounds are an hour each)."""
    topic = f"k{uuid.uuid4().hex[:10]}.keys"
    store = open_store(kafka_bootstrap, topic, topic_config=FAST_COMPACTION)
    try:
        kid, needle = key_on_disk(store, kafka_segments, topic, "t/w/gone")
        store.shred("t/w/gone")

        def compacted() -> bool:
            store.current(Owner(f"t/w/filler-{uuid.uuid4().hex[:6]}"))  # appends roll the segment
            return needle not in topic_bytes(kafka_segments, topic)

        assert until(compacted, 90), "the destroyed key is still in the topic's segments"
    finally:
        store.close()
    again = open_store(kafka_bootstrap, topic, read_only=True)
    try:
        assert again.get(kid) is None  # still known as destroyed after compaction
    finally:
        again.close()


def test_the_sealing_commands_show_and_rotate_a_kafka_key_store(kafka_bootstrap: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from altm.interfaces.cli import app

    prefix = f"c{uuid.uuid4().hex[:8]}."
    monkeypatch.setenv("ALTM_KEYSTORE", f"kafka://{kafka_bootstrap}")
    monkeypatch.setenv("ALTM_TOPIC_PREFIX", prefix)
    monkeypatch.setenv("ALTM_MASTER_KEY", base64.urlsafe_b64encode(MASTER).decode())
    store = open_store(kafka_bootstrap, f"{prefix}keys")
    kid, key = store.current(Owner("t/w/u"))
    guard = store.guard_key("t/w/u")
    store.close()
    status = CliRunner().invoke(app, ["sealing", "status", "--data-dir", str(tmp_path)])
    assert status.exit_code == 0, status.output
    assert '"data_keys":1' in status.output.replace(" ", "") and f"{prefix}keys" in status.output
    assert '"guard_keys":1' in status.output.replace(" ", "")
    new = secrets.token_bytes(32)
    monkeypatch.setenv("ALTM_NEW_MASTER_KEY", base64.urlsafe_b64encode(new).decode())
    rotated = CliRunner().invoke(app, ["sealing", "rotate-master", "--data-dir", str(tmp_path)])
    assert rotated.exit_code == 0 and "rewrapped 2 key(s): 1 data key(s), 1 guard key(s)" in rotated.output, \
        rotated.output
    after = open_store(kafka_bootstrap, f"{prefix}keys", master_key=new, read_only=True)
    try:
        assert after.get(kid) == key and after.find_guard_key("t/w/u") == guard
    finally:
        after.close()


def test_a_users_guard_key_is_the_same_everywhere_survives_erasure_and_after_compaction(kafka_bootstrap: str) -> None:
    """The key of the write guard's tombstone hashes (issue 13): one per user in every process, never destroyed
    by an erasure, and a second one written for the same user (two processes at once) is superseded by the
    first, also on the compacted topic (the first is sent again after it)."""
    topic = f"k{uuid.uuid4().hex[:10]}.keys"
    a = open_store(kafka_bootstrap, topic)
    b = open_store(kafka_bootstrap, topic)
    try:
        adopted = secrets.token_bytes(32)
        assert a.find_guard_key("t/w/u") is None  # looking one up makes none
        key = a.guard_key("t/w/u", adopt=adopted)
        assert key == adopted and b.find_guard_key("t/w/u") == key  # made a moment ago by another process
        assert b.guard_key("t/w/u") == key
        assert b.guard_key("t/w/u", adopt=secrets.token_bytes(32)) == key  # the first one stored wins
        a.current(Owner("t/w/u", "a", "s1"))
        assert a.counts() == (1, 0)  # data keys only
        assert a.shred("t/w/u") == 1  # the user's data key, not the guard key
        assert until(lambda: b.guard_key("t/w/u") == key)
        # a second record for the same guard key id, as a process making it at the same moment would write
        first_ms = a._entries[guard_kid("t/w/u")].created_ms
        for made_ms in (first_ms + 1, first_ms):  # also in the same millisecond: told apart by the key itself
            kid, rival = _rival_guard_record(a, "t/w/u", made_ms)
            assert until(functools.partial(_first_again, kafka_bootstrap, topic, kid, rival))
            assert a.guard_key("t/w/u") == key and b.guard_key("t/w/u") == key
        later = open_store(kafka_bootstrap, topic)
        try:
            assert later.guard_key("t/w/u") == key
        finally:
            later.close()
    finally:
        a.close()
        b.close()


def _rival_guard_record(store: KafkaKeyStore, home: str, created_ms: int) -> tuple[str, bytes]:
    """Publish another key under ``home``'s guard key id; returns the id and the record's value."""
    kid = guard_kid(home)
    entry = _Entry(Owner(home, "", GUARD), wrap_key(store._aead, kid, secrets.token_bytes(32)), store._master_id,
                   created_ms)
    store._call(store._write([(kid, entry)]))
    return kid, entry.value()


def _first_again(bootstrap: str, topic: str, kid: str, rival: bytes) -> bool:
    """The last record of ``kid`` is the first key again (sent after the rival), not the rival."""
    return _last_value(bootstrap, topic, kid) not in (None, rival)


def _last_value(bootstrap: str, topic: str, kid: str) -> bytes | None:
    """The value of the last record of ``kid`` on the key topic (what compaction keeps)."""

    async def read() -> bytes | None:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = KafkaTP(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            end = (await consumer.end_offsets([tp]))[tp]
            last = None
            while (await consumer.position(tp)) < end:
                for msg in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, ()):
                    if msg.key == kid.encode():
                        last = msg.value
            return last
        finally:
            await consumer.stop()

    return asyncio.run(read())


def test_a_writer_hands_a_shards_guard_keys_to_the_key_store_in_one_write(kafka_bootstrap: str,
                                                                         tmp_path: Path) -> None:
    """Found by a review: the first start after guard keys moved into the key store wrote one key-topic record
    per user and waited for each to be read back (a round trip per user). They go in one write now, and each
    user still gets the first key stored (one made elsewhere before wins over the shard's)."""
    from altm.pipeline.writer import Writer
    from altm.store import ShardSet

    settings = Settings(data_dir=tmp_path, partitions=1, embedder="none")
    store = open_store(kafka_bootstrap, f"k{uuid.uuid4().hex[:10]}.keys")
    shards = ShardSet(tmp_path, 1)
    try:
        homes = [f"t/w/u{i}" for i in range(40)]
        with shards.get(0).transaction() as tx:
            made = {h: tx.guard_key(h) for h in homes}  # random ones, as shards made them before
        earlier = store.guard_key(homes[0])  # one user's key another process stored first
        writes = 0
        real = store._write

        async def counted(records):  # type: ignore[no-untyped-def]
            nonlocal writes
            writes += 1
            await real(records)

        store._write = counted  # type: ignore[method-assign]
        Writer(shards, settings, store).upgrade(0)
        assert writes == 1
        assert store.find_guard_key(homes[0]) == earlier
        assert all(store.find_guard_key(h) == made[h] for h in homes[1:])
    finally:
        shards.close()
        store.close()

"""Tombstones carried on the log (issue 13): a shard restored from the proposals log on another worker meets
the erased content's records shredded (their keys are destroyed), so before this it held no tombstone of the
erasure and the guard let the erased text come back. The writer now publishes the tombstones it leaves
(keyed hashes, no text) as a ``bury`` proposal, and users' guard keys live in the key store, the same in every
process."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from altm.bus import OutgoingRecord, Record
from altm.bus.sealing import Owner, SealedBus, SqliteKeyStore, is_sealed
from altm.core import (
    Burial,
    BuriedContent,
    BuryProposal,
    ChangeEvent,
    ChangeStatus,
    Settings,
    Topic,
    decode_event,
    derive_id,
    encode,
    partition_for,
    topic_name,
)
from altm.pipeline import WriterDriver
from altm.pipeline.processors import CaptureProcessor, ProcessorContext
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, ShardSet
from altm.store._rows import TOMBSTONE_COLUMNS
from tests.negative.test_erasure_bytes import SECRET, TURNS, occurrences
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows, rows_of
from tests.support.turns import SCOPE, make_turn

LATER = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)
_TOMBSTONES = f"SELECT {', '.join(TOMBSTONE_COLUMNS)} FROM tombstones ORDER BY tombstone_id"


async def _erased_deployment(settings: Settings) -> tuple[list[Record], list[Record], SqliteKeyStore]:
    """An embedded deployment that stored TURNS and erased session s-secret: its proposals as a restoring
    worker reads them (opened as the Kafka runtime's restore opens them: a key an erasure retired counts as
    destroyed), its raw proposals log, and its key store."""
    async with embedded(settings) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(list(TURNS))
        await rt.run_until_idle()
        await deployment.app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        bus = deployment.bus
        assert isinstance(bus, SealedBus)
        topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        raw = await bus.inner.read_all([topic])
        opened = [bus.sealer.open(r, retired=False) for r in raw]
    return opened, raw, SqliteKeyStore(settings.data_dir / "keys.db")


def _restore(settings: Settings, target: Path, records: list[Record], keys: SqliteKeyStore | None) -> ShardSet:
    """What a worker with a data dir of its own does with a partition it takes over: apply the log's proposals."""
    shards = ShardSet(target, settings.partitions)
    writer = Writer(shards, settings.model_copy(update={"data_dir": target}),
                    guard_keys=keys)
    writer.apply_batch(sorted(records, key=lambda r: (r.partition, r.offset)), settings.partitions)
    return shards


async def _capture(settings: Settings, text: str, session: str) -> Record:
    (prop,) = await CaptureProcessor().process(make_turn(1, text, session=session), ProcessorContext(settings=settings))
    return Record(topic_name(Topic.PROPOSALS, settings.topic_prefix), partition_for(prop.key, settings.partitions),
                  10_000, prop.key, encode(prop))


def _renumbered(log: Sequence[Record]) -> list[Record]:
    """``log`` at offsets 0.. in its order (one partition's records, with some inserted or left out)."""
    return [Record(r.topic, r.partition, i, r.key, r.value, r.headers, r.timestamp_ms) for i, r in enumerate(log)]


async def _resent_after_erasure(settings: Settings, opened: Sequence[Record]) -> tuple[list[Record], int, int]:
    """The erasure's partition of ``opened``, with a re-send of the erased text right after the erasure (before
    its ``bury``), renumbered: the log, the re-send's offset and the partition."""
    erase_at = next(i for i, r in enumerate(opened) if b'"op":"erase"' in r.value)
    between = await _capture(settings, TURNS[0].content, "s-again")
    partition = opened[erase_at].partition
    log = [r for r in opened if r.partition == partition]
    at = log.index(opened[erase_at]) + 1
    return _renumbered([*log[:at], between, *log[at:]]), at, partition


async def test_a_shard_restored_from_the_log_keeps_the_tombstones_of_an_erasure(settings: Settings,
                                                                                tmp_path: Path) -> None:
    opened, _, keys = await _erased_deployment(settings)
    assert keys.counts()[0] >= 1
    source_tombstones = rows(settings.data_dir, _TOMBSTONES)
    assert len(source_tombstones) >= 5  # the erased session's messages and what was derived from them
    shards = _restore(settings, tmp_path / "restored", opened, keys)
    try:
        assert rows(tmp_path / "restored", _TOMBSTONES) == source_tombstones  # hashes included: the same key
        assert not rows(tmp_path / "restored", "SELECT 1 FROM memories WHERE session_id='s-secret'")
        assert not rows(tmp_path / "restored", "SELECT 1 FROM rejections")
        assert occurrences(tmp_path / "restored") == {}
        resent = await _capture(settings, TURNS[0].content, "s-again")
        writer = Writer(shards, settings.model_copy(update={"data_dir": tmp_path / "restored"}),
                        guard_keys=keys)
        (outcome,) = writer.apply_batch([resent], settings.partitions)
    finally:
        shards.close()
        keys.close()
    assert [c.status for c in outcome.changes] == [ChangeStatus.REJECTED]
    assert "erased content" in (outcome.changes[0].reason or "")


async def _forgotten_deployment(settings: Settings) -> tuple[list[Record], SqliteKeyStore]:
    """An embedded deployment that stored TURNS and forgot them by retention: its proposals as a restore reads
    them, and its key store."""
    async with embedded(settings) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(list(TURNS))
        await rt.run_until_idle()
        assert await deployment.app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        bus = deployment.bus
        assert isinstance(bus, SealedBus)
        raw = await bus.inner.read_all([topic_name(Topic.PROPOSALS, settings.topic_prefix)])
        opened = [bus.sealer.open(r, retired=False) for r in raw]
    return opened, SqliteKeyStore(settings.data_dir / "keys.db")


def _published_burials(data_dir: Path) -> list[str]:
    """Ids of the ``bury`` proposals a shard's outbox holds for the proposals log."""
    return sorted(decode_event(r["value"]).event_id
                  for r in rows(data_dir, "SELECT value FROM outbox WHERE topic=?", (Topic.PROPOSALS.value,)))


async def test_a_restore_does_not_publish_again_the_burials_it_read_on_the_log(settings: Settings,
                                                                              tmp_path: Path) -> None:
    """Found by a review: a restore re-applying a forget published its ``bury`` again, though the record was
    on the log it read: every failover grew the proposals log by the deployment's burials."""
    s = settings.model_copy(update={"retention_days_l0": 30.0, "retention_days_l2": 30.0, "retention_tombstones": True})
    opened, keys = await _forgotten_deployment(s)
    on_log = sorted(decode_event(r.value).event_id for r in opened if b'"op":"bury"' in r.value)
    shards = _restore(s, tmp_path / "restored", opened, keys)
    shards.close()
    keys.close()
    hashes = "SELECT tombstone_id, value_hash, shingle_hashes, term_hashes FROM tombstones ORDER BY 1"
    assert on_log and rows(tmp_path / "restored", hashes) == rows(s.data_dir, hashes)  # the forget made them again
    assert _published_burials(tmp_path / "restored") == []


async def test_a_restore_publishes_a_burial_its_log_lacks(settings: Settings, tmp_path: Path) -> None:
    """The log ends before the forget's ``bury`` (it was on its way): the restore publishes it."""
    s = settings.model_copy(update={"retention_days_l0": 30.0, "retention_days_l2": 30.0, "retention_tombstones": True})
    opened, keys = await _forgotten_deployment(s)
    on_log = sorted(decode_event(r.value).event_id for r in opened if b'"op":"bury"' in r.value)
    shards = _restore(s, tmp_path / "restored", [r for r in opened if b'"op":"bury"' not in r.value], keys)
    shards.close()
    keys.close()
    assert on_log and _published_burials(tmp_path / "restored") == on_log


async def test_the_burial_on_the_log_is_readable_holds_no_text_and_changes_nothing_where_it_was_made(
        settings: Settings) -> None:
    _, raw, keys = await _erased_deployment(settings)
    keys.close()
    burials = [r for r in raw if b'"op":"bury"' in r.value]
    assert burials, "the erasure's tombstones are on the proposals log"
    for rec in burials:
        assert not is_sealed(rec.value)  # a restore reads it after the session's keys are destroyed
        assert SECRET not in rec.value and b"vault" not in rec.value
        event = decode_event(rec.value)
        assert isinstance(event, BuryProposal) and event.scope.home == SCOPE.home
    inserted = rows(settings.data_dir, "SELECT target_id FROM audit_log WHERE target_table='tombstones'")
    assert len(inserted) == len(rows(settings.data_dir, "SELECT 1 FROM tombstones"))  # none carried again here


async def test_a_burial_hashed_with_another_guard_key_is_refused_with_the_reason(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    opened, _, keys = await _erased_deployment(settings)
    keys.close()
    other = SqliteKeyStore(tmp_path / "other-keys.db")  # another deployment's key store: its own key for the user
    other.guard_key(SCOPE.home)
    shards = _restore(settings, tmp_path / "restored", opened, other)
    try:
        reasons = [r["reason"] for r in rows(tmp_path / "restored", "SELECT reason FROM rejections")]
        assert not rows(tmp_path / "restored", "SELECT 1 FROM tombstones")
    finally:
        shards.close()
        other.close()
    assert reasons and all("hashed with guard key" in r and "this shard holds" in r for r in reasons)


async def test_a_tombstone_of_another_scope_home_is_refused(settings: Settings) -> None:
    tomb = BuriedContent(tombstone_id="tomb_not_this_users", memory_id="mem_x", value_hash="0" * 64,
                         distinctive=True, reason="session erased", at="2026-01-01T00:00:00+00:00")
    p = BuryProposal(event_id="bury-x", scope=SCOPE, timestamp=TURNS[0].timestamp, processor="writer",
                     burial=Burial(guard_key_id="0" * 16, tombstones=(tomb,)))
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        rec = Record(topic_name(Topic.PROPOSALS, settings.topic_prefix), partition_for(p.key, settings.partitions), 0,
                     p.key, encode(p))
        (outcome,) = Writer(shards, settings).apply_batch([rec], settings.partitions)
    finally:
        shards.close()
    assert outcome.changes[0].status is ChangeStatus.REJECTED
    assert "is not the one of memory mem_x" in (outcome.changes[0].reason or "")


def test_guard_keys_are_one_per_user_survive_erasures_and_are_not_data_keys(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    a, b = SqliteKeyStore(path), SqliteKeyStore(path)
    try:
        adopted = b"\x01" * 32
        assert a.find_guard_key("t/w/u") is None  # looking one up makes none
        key = a.guard_key("t/w/u", adopt=adopted)
        assert b.find_guard_key("t/w/u") == key
        assert key == adopted and b.guard_key("t/w/u") == key  # the same in every process
        assert b.guard_key("t/w/u", adopt=b"\x02" * 32) == key  # the first one stored wins
        assert a.guard_key("t/w/other") != key
        a.current(Owner("t/w/u", "a", "s1"))
        assert a.counts() == (1, 0)  # one data key; guard keys seal nothing
        assert a.shred("t/w/u") == 1  # a user's erasure destroys the data key only
        assert b.guard_key("t/w/u") == key
    finally:
        a.close()
        b.close()


def test_a_guard_key_a_shard_made_before_the_key_store_kept_them_becomes_the_key_stores(settings: Settings) -> None:
    shards = ShardSet(settings.data_dir, settings.partitions)
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    try:
        partition = partition_for(SCOPE.home, settings.partitions)
        with shards.get(partition).transaction() as tx:
            made = tx.guard_key(SCOPE.home)  # a random one, as every shard made them before
        Writer(shards, settings, keys).upgrade(partition)
        assert keys.guard_key(SCOPE.home) == made  # so tombstones it carries match in a restored shard
    finally:
        shards.close()
        keys.close()


async def test_a_restore_judges_what_came_between_an_erasure_and_its_burial_with_the_tombstones(
        settings: Settings, tmp_path: Path) -> None:
    """The bury record comes after its erasure on the log (the outbox's next flush); a re-send of the erased
    text in between was refused where the erasure was first applied (the tombstones were there), so a restore,
    which reads the log ahead, takes the tombstones over with the erasure, not at the bury record."""
    opened, _, keys = await _erased_deployment(settings)
    log, _, partition = await _resent_after_erasure(settings, opened)
    shards = ShardSet(tmp_path / "restored", settings.partitions)

    async def fetch(p: int, start: int, end: int) -> list[Record]:
        return [r for r in log if start <= r.offset < end]

    async def nowhere(records: Sequence[OutgoingRecord]) -> None:
        return None

    s = settings.model_copy(update={"data_dir": tmp_path / "restored"})
    driver = WriterDriver(Writer(shards, s, guard_keys=keys), DeferredWork(shards, s), nowhere, "log",
                          fetch)
    try:
        await driver.catch_up(partition, len(log))
        refused = rows(tmp_path / "restored", "SELECT reason FROM rejections")
        resent = rows(tmp_path / "restored", "SELECT 1 FROM memories WHERE session_id='s-again'")
    finally:
        shards.close()
        keys.close()
    assert not resent and any("erased content" in r["reason"] for r in refused)


async def _no_embedder(changes: Sequence[ChangeEvent]) -> None:
    return None


@pytest.mark.parametrize("way", ["restore", "standby"])
async def test_a_burial_beyond_the_chunk_of_its_erasure_still_judges_what_came_between(
        settings: Settings, tmp_path: Path, way: str) -> None:
    """Found by a review: a restore reads the log in chunks (5,000 records), a standby copy applies them in
    transactions of 500; an erasure at the end of one and its ``bury`` in the next left what came between
    judged without the tombstones (admitted on the restored shard, refused where the erasure was made)."""
    opened, _, keys = await _erased_deployment(settings)
    log, at, partition = await _resent_after_erasure(settings, opened)
    assert any(b'"op":"bury"' in r.value for r in log[at + 1:])
    shards = ShardSet(tmp_path / "restored", settings.partitions)
    chunk = at if way == "restore" else len(log)  # the restore's chunk ends with the erasure

    async def fetch(p: int, start: int, end: int) -> list[Record]:
        return [r for r in log if start <= r.offset < end][:chunk]

    async def nowhere(records: Sequence[OutgoingRecord]) -> None:
        return None

    s = settings.model_copy(update={"data_dir": tmp_path / "restored"})
    driver = WriterDriver(Writer(shards, s, guard_keys=keys), DeferredWork(shards, s), nowhere, "log",
                          fetch)
    try:
        if way == "restore":
            await driver.catch_up(partition, len(log))
        else:  # the standby's transaction ends with the erasure
            await driver.follow(partition, len(log), _no_embedder, transaction=at)
        refused = rows(tmp_path / "restored", "SELECT reason FROM rejections")
        resent = rows(tmp_path / "restored", "SELECT 1 FROM memories WHERE session_id='s-again'")
    finally:
        shards.close()
        keys.close()
    assert not resent and any("erased content" in r["reason"] for r in refused)


@pytest.mark.parametrize("chunk_ends", ["after the last part", "between the parts"])
async def test_every_part_of_a_burial_is_read_ahead(settings: Settings, tmp_path: Path, chunk_ends: str) -> None:
    """Found by a review: tombstones over 256 KiB go in several ``bury`` proposals; with one part in the
    restore's chunk the look-ahead stopped there, so the parts past the chunk came at their own place and what
    came between was judged without them."""
    opened, _, keys = await _erased_deployment(settings)
    erase = next(r for r in opened if b'"op":"erase"' in r.value)
    bury_rec = next(r for r in opened if b'"op":"bury"' in r.value)
    bury = decode_event(bury_rec.value)
    assert isinstance(bury, BuryProposal)
    tombs = bury.burial.tombstones
    first = [t for t in tombs if str(getattr(t.layer, "value", t.layer)) == "L4"]  # alone, it refuses nothing
    rest = [t for t in tombs if t not in first]
    assert first and rest
    parts = [bury.model_copy(update={"event_id": derive_id("bury", bury.cause_event_id or "", str(i)),
                                     "burial": bury.burial.model_copy(update={"tombstones": tuple(ts)})})
             for i, ts in enumerate([first, rest])]
    part_records = [Record(bury_rec.topic, bury_rec.partition, 0, bury_rec.key, encode(p)) for p in parts]
    between = await _capture(settings, TURNS[0].content, "s-again")
    log = [r for r in opened if r.partition == erase.partition and r is not bury_rec]
    at = log.index(erase) + 1
    log = [*log[:at], part_records[0], between, part_records[1], *log[at:]]
    log = _renumbered(log)
    chunk = at + 3 if chunk_ends == "after the last part" else at + 2
    shards = ShardSet(tmp_path / "restored", settings.partitions)

    async def fetch(p: int, start: int, end: int) -> list[Record]:
        return [r for r in log if start <= r.offset < end][:chunk]

    async def nowhere(records: Sequence[OutgoingRecord]) -> None:
        return None

    s = settings.model_copy(update={"data_dir": tmp_path / "restored"})
    driver = WriterDriver(Writer(shards, s, guard_keys=keys), DeferredWork(shards, s), nowhere, "log", fetch)
    try:
        await driver.catch_up(erase.partition, len(log))
        resent = rows(tmp_path / "restored", "SELECT 1 FROM memories WHERE session_id='s-again'")
    finally:
        shards.close()
        keys.close()
    assert not resent  # the restated erased turn is refused, as where the erasure was made


async def test_what_restated_the_erased_text_while_the_erasure_was_on_its_way_stays_refused_after_a_restore(
        settings: Settings, tmp_path: Path) -> None:
    """End to end (found by a review): the user says the erased message again while the erasure is on its way;
    the owner refuses the memories derived from it; a shard restored from that log must refuse them too."""
    async with embedded(settings) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(list(TURNS))
        await rt.run_until_idle()
        await deployment.app.erase(SCOPE, "session", session_id="s-secret")
        await rt.publish([make_turn(7, TURNS[0].content, session="s-again")])
        await rt.run_until_idle()
        bus = deployment.bus
        assert isinstance(bus, SealedBus)
        raw = await bus.inner.read_all([topic_name(Topic.PROPOSALS, settings.topic_prefix)])
        opened = [bus.sealer.open(r, retired=False) for r in raw]
    query = "SELECT memory_id, layer, session_id FROM memories WHERE content LIKE '%ZEBRA-4471-SECRET%' ORDER BY 1"
    here = rows(settings.data_dir, query)
    assert rows(settings.data_dir, "SELECT 1 FROM rejections WHERE reason LIKE '%matches erased content%'")
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    shards = _restore(settings, tmp_path / "restored", opened, keys)
    shards.close()
    keys.close()
    assert rows(tmp_path / "restored", query) == here


async def test_a_tombstone_too_large_for_one_record_is_carried_in_parts_and_joined(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    """Found by a review: one long message's tombstone was one bury record of 906 KB at the default 64 KiB
    content limit (1.36 MB at 96 KiB: dead-lettered on Kafka, so no restored shard got it). Records are sized by
    their encoded bytes, and a tombstone larger than one goes in parts whose hashes the writer joins."""
    long_text = " ".join(f"w{i} f{i * 7}" for i in range(4500))  # 9,000 distinct words, under 64 KiB
    async with embedded(settings) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(1, long_text, session="s-long")])
        await rt.run_until_idle()
        await deployment.app.erase(SCOPE, "session", session_id="s-long")
        await rt.run_until_idle()
        bus = deployment.bus
        assert isinstance(bus, SealedBus)
        raw = await bus.inner.read_all([topic_name(Topic.PROPOSALS, settings.topic_prefix)])
    burials = [r for r in raw if b'"op":"bury"' in r.value]
    assert len(burials) >= 2 and all(len(r.value) < 300_000 for r in burials)
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    shards = _restore(settings, tmp_path / "restored", [r for r in raw if b'"op":"bury"' in r.value], keys)
    shards.close()
    keys.close()
    assert rows(tmp_path / "restored", _TOMBSTONES) == rows(settings.data_dir, _TOMBSTONES)


def test_text_in_a_burials_hashes_is_not_a_burial() -> None:
    """Hashes are hex (found by a review: any string was taken, so text could sit in the tombstones table)."""
    with pytest.raises(ValidationError):
        BuriedContent(tombstone_id="tomb_x", memory_id="mem_x", value_hash="0" * 64, distinctive=True,
                      shingle_hashes=("my vault code is ZEBRA",), reason="erased", at="2026-01-01T00:00:00+00:00")
    with pytest.raises(ValidationError):
        BuriedContent(tombstone_id="tomb_x", memory_id="mem_x", value_hash="0" * 64, distinctive=True,
                      term_hashes=("s:ZEBRA-4471-SECRET",), reason="erased", at="2026-01-01T00:00:00+00:00")


def test_a_burial_for_a_user_nothing_buried_makes_no_guard_key(settings: Settings) -> None:
    """Found by a review: a ``bury`` proposal for a user of whom nothing was ever buried made that user a guard key
    in the key store (and kept it) before it was refused: a record anyone who can write the proposals topic can
    forge, one key-store entry per invented user. A burial is judged by the key some process already holds."""
    home = f"{SCOPE.tenant_id}/{SCOPE.workspace_id}/{SCOPE.user_id}"
    tomb = BuriedContent(tombstone_id=derive_id("tomb", SCOPE.tenant_id, SCOPE.workspace_id, SCOPE.user_id, "mem_x"),
                         memory_id="mem_x", value_hash="0" * 64, distinctive=True, reason="session erased",
                         at="2026-01-01T00:00:00+00:00")
    p = BuryProposal(event_id="bury-forged", scope=SCOPE, timestamp=TURNS[0].timestamp, processor="writer",
                     burial=Burial(guard_key_id="0" * 16, tombstones=(tomb,)))
    shards = ShardSet(settings.data_dir, settings.partitions)
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    try:
        rec = Record(topic_name(Topic.PROPOSALS, settings.topic_prefix), partition_for(p.key, settings.partitions), 0,
                     p.key, encode(p))
        (outcome,) = Writer(shards, settings, keys).apply_batch([rec], settings.partitions)
        assert not rows_of(settings.data_dir / "keys.db", "SELECT 1 FROM data_keys WHERE session=?", ("~guard",))
        with shards.get(rec.partition).transaction() as tx:
            assert tx.existing_guard_key(home) is None
    finally:
        shards.close()
        keys.close()
    assert outcome.changes[0].status is ChangeStatus.REJECTED
    assert outcome.refusal == "guard_key" and "holds a guard key for that user" in (outcome.changes[0].reason or "")


async def test_a_restore_reads_each_record_of_the_log_once(settings: Settings, tmp_path: Path) -> None:
    """Found by a review: the records read past a chunk for its burials were read again as the next chunk."""
    opened, _, keys = await _erased_deployment(settings)
    erase_at = next(i for i, r in enumerate(opened) if b'"op":"erase"' in r.value)
    partition = opened[erase_at].partition
    log = [r for r in opened if r.partition == partition]
    log = _renumbered(log)
    cut = log.index(next(r for r in log if b'"op":"erase"' in r.value)) + 1
    read: list[int] = []

    async def fetch(p: int, start: int, end: int) -> list[Record]:
        got = [r for r in log if start <= r.offset < end][:cut]  # the first chunk ends with the erasure
        read.extend(r.offset for r in got)
        return got

    async def nowhere(records: Sequence[OutgoingRecord]) -> None:
        return None

    s = settings.model_copy(update={"data_dir": tmp_path / "restored"})
    shards = ShardSet(s.data_dir, s.partitions)
    driver = WriterDriver(Writer(shards, s, guard_keys=keys), DeferredWork(shards, s), nowhere, "log", fetch)
    try:
        assert await driver.catch_up(partition, len(log)) == len(log)
    finally:
        shards.close()
        keys.close()
    assert sorted(read) == list(range(len(log)))

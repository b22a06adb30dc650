"""Crypto-shredding of the log (issue 14, F4): every record is sealed under the data key of its owner (user,
agent, session), kept in a key store off the log; an erasure destroys the keys, so the erased content leaves
the log without rewriting it, and replays skip what no longer opens, silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.bus import OutgoingRecord, Record
from altm.bus.sealing import (
    DERIVED,
    GUARD,
    MAGIC,
    KeyStoreError,
    Owner,
    SealedBus,
    Sealer,
    SealError,
    SqliteKeyStore,
    is_sealed,
    is_shredded,
    owner_of,
)
from altm.core import ChangeEvent, ChangeStatus, ControlEvent, Scope, decode_event, encode, partition_for
from altm.core.settings import Settings
from altm.wiring import plain, replay_into
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SECRET = b"ZEBRA-4471-SECRET"
TOPICS = ["altm.turns", "altm.control", "altm.proposals", "altm.changes", "altm.dlq"]
TURNS = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
         make_turn(2, "I prefer that ZEBRA-4471-SECRET is rotated monthly.", session="s-secret"),
         make_turn(3, "We decided that ZEBRA-4471-SECRET goes into the Vault service.", session="s-secret"),
         make_turn(4, "Unrelated: the billing deadline is March 3.", session="s1")]
OTHER = Scope(tenant_id="acme", workspace_id="platform", user_id="sam", agent_id="coder")


def _sealer(rt: object) -> Sealer:
    bus = rt.log  # type: ignore[attr-defined]
    assert isinstance(bus, SealedBus)
    return bus.sealer


async def _stored(rt: object) -> list[Record]:
    """Every record of every topic as it lies in the log file (sealed)."""
    return await plain(rt.log).read_all(TOPICS)  # type: ignore[attr-defined]


async def _opened_text(rt: object) -> bytes:
    return b"\n".join(r.value for r in await rt.log.read_all(TOPICS))  # type: ignore[attr-defined]


async def test_the_log_holds_only_ciphertext_and_every_reader_through_the_bus_sees_plain_events(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (rt, _app):
        stored = await _stored(rt)
        assert stored and all(is_sealed(r.value) for r in stored)  # nothing on the log is plain
        assert (s.data_dir / "log.db").read_bytes().count(SECRET) == 0
        opened = await _opened_text(rt)
        assert opened.count(SECRET) >= 6  # turns, proposals and changes all carry it, readable through the bus
        assert {r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")} >= {
            t.content for t in TURNS}


async def test_erasing_a_session_destroys_its_keys_and_its_records_no_longer_open(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        sealer = _sealer(rt)
        assert (await _opened_text(rt)).count(SECRET) == 0  # gone from every topic, for every reader
        assert (await _opened_text(rt)).count(b"billing deadline is March 3") >= 1  # the other session stays
        opened = [sealer.open(r) for r in await _stored(rt)]
        turns = [r for r in opened if r.topic == "altm.turns"]
        assert sum(is_shredded(r) for r in turns) == 3 and sum(not is_shredded(r) for r in turns) == 1
        erasures = [decode_event(r.value) for r in opened if r.topic == "altm.control" and not is_shredded(r)]
        assert [e.action.value for e in erasures if isinstance(e, ControlEvent)] == ["erase"]  # stays readable
        assert len(erasures) == 1
        keys = sealer.keys
        assert isinstance(keys, SqliteKeyStore)
    assert not any(r for r in _key_rows(s.data_dir / "keys.db") if r[1] == "s-secret")
    assert (s.data_dir / "keys.db").read_bytes().count(b"s-secret") == 0  # no trace of the key row on disk


def _key_rows(path: Path) -> list[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return [(str(a), str(b)) for a, b in db.execute("SELECT home, session FROM data_keys")]


async def test_a_replay_after_shredding_skips_the_erased_records_silently(settings: Settings,
                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    contents = {r["content"] for r in rows(target, "SELECT content FROM memories")}
    assert "Unrelated: the billing deadline is March 3." in contents
    assert not any("ZEBRA" in c for c in contents)
    assert rows(target, "SELECT 1 FROM rejections") == []  # no noise: nothing refused,
    async with store_with(s.model_copy(update={"data_dir": target}), []) as (rt2, _):
        assert await rt2.log.read_all(["altm.dlq"]) == []  # nothing dead-lettered
        assert (await _opened_text(rt2)).count(SECRET) == 0
    for path in (p for p in target.rglob("*") if p.is_file()):
        assert path.read_bytes().count(SECRET) == 0, path


async def test_erasing_a_user_shreds_all_of_it_and_nobody_else(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    theirs = make_turn(9, "Sam's own ZEBRA-4471-SECRET copy stays.", session="s1", scope=OTHER)
    async with store_with(s, [*TURNS, theirs]) as (rt, app):
        await app.erase(SCOPE, "user")
        await rt.run_until_idle()
        sealer = _sealer(rt)
        mine = [sealer.open(r) for r in await _stored(rt) if r.key == SCOPE.home]
        assert mine and all(is_shredded(r) for r in mine if r.topic == "altm.turns")
        readable = [r for r in mine if not is_shredded(r)]
        # only the erasure, its outcome, and the tombstones it left (keyed hashes) with their outcome
        assert readable and all(b"erase" in r.value or b'"op":"bury"' in r.value for r in readable)
        assert any(b'"op":"bury"' in r.value for r in readable)
        opened = await rt.log.read_all(TOPICS)
        assert not any(SECRET in r.value for r in opened if r.key == SCOPE.home)
        assert any(SECRET in r.value for r in opened if r.key == OTHER.home)  # sam's turn and what came of it
    keys = _key_rows(s.data_dir / "keys.db")  # the erased user's guard key stays (its tombstones match by it)
    assert {h for h, session in keys if session != GUARD} == {OTHER.home}
    assert (SCOPE.home, GUARD) in keys


async def test_retired_derived_keys_open_records_in_flight_until_their_grace_ends(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})  # default grace: 10 minutes
    async with store_with(s, TURNS) as (rt, app):
        sealer = _sealer(rt)
        kid, _ = sealer.keys.current(Owner(SCOPE.home, SCOPE.agent_id, DERIVED))
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        assert sealer.keys.get(kid) is not None  # retired, not yet destroyed
        assert sealer.keys.current(Owner(SCOPE.home, SCOPE.agent_id, DERIVED))[0] != kid  # new records: new key
        assert sealer.keys.destroy_retired(0.0) >= 1
        assert sealer.keys.get(kid) is None


def test_owners_follow_the_content_and_erasures_stay_readable() -> None:
    turn = make_turn(1, "hello", session="s7")
    assert owner_of(encode(turn), SCOPE.home) == Owner(SCOPE.home, SCOPE.agent_id, "s7")
    assert owner_of(b"\xff not json", "t/w/u") == Owner("t/w/u", "", DERIVED)
    assert owner_of(b'{"event_type":"control","action":"erase"}', "t/w/u") is None
    assert owner_of(b'{"event_type":"proposal","op":"erase"}', "t/w/u") is None
    dead = b'{"event_type":"dead_letter","original":' + __import__("orjson").dumps(encode(turn).decode()) + b"}"
    assert owner_of(dead, SCOPE.home) == Owner(SCOPE.home, SCOPE.agent_id, "s7")  # a dead turn: its session


def test_a_sealed_value_does_not_open_under_another_record_key_or_when_damaged(tmp_path: Path) -> None:
    sealer = Sealer(SqliteKeyStore(tmp_path / "keys.db"))
    rec = sealer.seal(OutgoingRecord("altm.turns", encode(make_turn(1, "secret text")), key=SCOPE.home))
    assert is_sealed(rec.value) and b"secret text" not in rec.value
    assert sealer.open_value(rec.value, SCOPE.home) == encode(make_turn(1, "secret text"))
    with pytest.raises(SealError, match="another record key"):
        sealer.open_value(rec.value, OTHER.home)
    damaged = rec.value[:-1] + bytes([rec.value[-1] ^ 1])
    with pytest.raises(SealError):
        sealer.open_value(damaged, SCOPE.home)
    moved = Record("altm.turns", 0, 5, OTHER.home, rec.value)
    assert sealer.open(moved) is moved  # stays sealed: the stage dead-letters it without its content


async def test_a_sealed_record_that_does_not_open_is_dead_lettered_and_the_partition_moves_on(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS[:1]) as (rt, _app):
        stored = next(r for r in await _stored(rt) if r.topic == "altm.turns")
        await plain(rt.log).publish_many([OutgoingRecord("altm.turns", stored.value, key=OTHER.home)])
        await rt.publish([make_turn(5, "the next good message", session="s2")])
        await rt.run_until_idle()
        dead = await rt.log.read_all(["altm.dlq"])
        assert len(dead) == 1 and SECRET not in dead[0].value
        changes = [decode_event(r.value) for r in await rt.log.read_all(["altm.changes"])]
        committed = [c for c in changes if isinstance(c, ChangeEvent) and c.status is ChangeStatus.COMMITTED]
        assert len(committed) >= 2  # both good turns stored


def test_the_master_key_rotates_without_touching_the_log(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    keys = SqliteKeyStore(tmp_path / "keys.db")
    sealer = Sealer(keys)
    sealed = sealer.seal_value(encode(make_turn(1, "kept across rotation")), SCOPE.home)
    new_master = b"\x07" * 32
    assert keys.rewrap(new_master) == 1
    keys.close()
    with pytest.raises(KeyStoreError, match="wrapped by master key"):  # the old master no longer unwraps
        Sealer(SqliteKeyStore(tmp_path / "keys.db")).open_value(sealed, SCOPE.home)
    rotated = Sealer(SqliteKeyStore(tmp_path / "keys.db", master_key=new_master))
    assert rotated.open_value(sealed, SCOPE.home) == encode(make_turn(1, "kept across rotation"))


def test_sealing_cli_reports_the_store_and_rotates_the_master_key(settings: Settings, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from altm.interfaces.cli import app

    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    sealed = Sealer(keys).seal_value(encode(make_turn(1, "survives rotation")), SCOPE.home)
    guard = keys.guard_key(SCOPE.home)  # wrapped by the master key too (found by a review: status left it out)
    keys.close()
    before = (settings.data_dir / "keys.db.master").read_text()
    status = CliRunner().invoke(app, ["sealing", "status", "--data-dir", str(settings.data_dir)])
    assert status.exit_code == 0 and '"data_keys":1' in status.output.replace(" ", "")
    assert '"guard_keys":1' in status.output.replace(" ", "")
    rotated = CliRunner().invoke(app, ["sealing", "rotate-master", "--data-dir", str(settings.data_dir)])
    assert rotated.exit_code == 0 and "rewrapped 2 key(s): 1 data key(s), 1 guard key(s)" in rotated.output
    assert SqliteKeyStore(settings.data_dir / "keys.db").find_guard_key(SCOPE.home) == guard
    assert (settings.data_dir / "keys.db.master").read_text() != before
    assert Sealer(SqliteKeyStore(settings.data_dir / "keys.db")).open_value(sealed, SCOPE.home) == encode(
        make_turn(1, "survives rotation"))


def test_the_host_sdk_seals_events_before_its_outbox(tmp_path: Path) -> None:
    from altm.interfaces.sdk import HostProducer

    producer = HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db",
                            sealer=Sealer(SqliteKeyStore(tmp_path / "keys.db")))
    import asyncio

    asyncio.run(producer.publish_many([make_turn(1, "sealed at the host ZEBRA-4471-SECRET")]))
    ((_, rec),) = producer._outbox.oldest(10)
    assert is_sealed(rec.value) and SECRET not in rec.value
    assert (tmp_path / "outbox.db").read_bytes().count(SECRET) == 0



# -- from the review of the change (each failed before its fix) --------------------------------------------


async def test_an_erasure_drops_the_erased_sessions_deferred_work(settings: Settings) -> None:
    """A deferred input record was kept in the clear and retried after the erasure, deriving the erased
    content again under a new key of the erased session."""
    from altm.store import DeferredWork

    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        work = DeferredWork(rt.shards, s)
        part = partition_for(SCOPE.home, s.partitions)
        work.add("extract", "altm.turns", part, 0, SCOPE.home, encode(TURNS[0]), "model down")
        work.add("extract", "altm.turns", part, 3, SCOPE.home, encode(TURNS[3]), "model down")
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        kept = [(int(r["offset"]), r["value"]) for r in rows(s.data_dir, "SELECT offset, value FROM deferred_work")]
    assert [offset for offset, _ in kept] == [3] and all(SECRET not in bytes(v) for _, v in kept)


def test_a_record_sealed_with_another_key_store_is_an_error_not_a_shredded_record(tmp_path: Path) -> None:
    """`altm publish --broker` sealed with ./keys.db: the workers took its records for shredded ones and
    dropped every one without a word."""
    theirs = Sealer(SqliteKeyStore(tmp_path / "a" / "keys.db", master_key=b"\x01" * 32))
    ours = Sealer(SqliteKeyStore(tmp_path / "b" / "keys.db", master_key=b"\x02" * 32))
    sealed = theirs.seal_value(encode(make_turn(1, "hello")), SCOPE.home)
    with pytest.raises(KeyStoreError, match="sealed with another key store"):
        ours.open_value(sealed, SCOPE.home)
    kid = sealed[len(MAGIC):len(MAGIC) + 32].decode()
    assert not theirs.keys.destroyed(kid)
    theirs.keys.shred(SCOPE.home)
    assert theirs.open_value(sealed, SCOPE.home) is None  # destroyed: shredded, silently
    assert theirs.keys.destroyed(kid) and not ours.keys.destroyed(kid)  # a store says nothing of others' keys


def test_a_destroyed_key_is_never_used_again_by_another_process(tmp_path: Path) -> None:
    """Each process cached the current key for 2 s: a host sealed new turns with a key the writer had just
    destroyed, and they were lost."""
    host = Sealer(SqliteKeyStore(tmp_path / "keys.db", master_key=b"\x03" * 32))
    writer = SqliteKeyStore(tmp_path / "keys.db", master_key=b"\x03" * 32)
    before = host.seal_value(encode(make_turn(1, "before")), SCOPE.home)
    writer.shred(SCOPE.home, SCOPE.agent_id, "s1")
    after = host.seal_value(encode(make_turn(2, "after")), SCOPE.home)
    assert host.open_value(before, SCOPE.home) is None
    assert host.open_value(after, SCOPE.home) == encode(make_turn(2, "after"))


def test_an_interrupted_master_rotation_is_finished_not_made_worse(settings: Settings,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A second `rotate-master` after a crash between rewrapping and the rename overwrote the pending key:
    no master key unwrapped the store any more."""
    import base64

    from typer.testing import CliRunner

    from altm.interfaces.cli import app

    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    path = settings.data_dir / "keys.db"
    keys = SqliteKeyStore(path)
    sealed = Sealer(keys).seal_value(encode(make_turn(1, "kept")), SCOPE.home)
    pending_key = b"\x09" * 32
    (settings.data_dir / "keys.db.master.new").write_text(base64.urlsafe_b64encode(pending_key).decode())
    keys.rewrap(pending_key)  # ... and the process dies before the rename
    keys.close()
    out = CliRunner().invoke(app, ["sealing", "rotate-master", "--data-dir", str(settings.data_dir)])
    assert out.exit_code == 0 and "finished an interrupted rotation" in out.output
    assert Sealer(SqliteKeyStore(path)).open_value(sealed, SCOPE.home) == encode(make_turn(1, "kept"))
    again = CliRunner().invoke(app, ["sealing", "rotate-master", "--data-dir", str(settings.data_dir)])
    assert again.exit_code == 0 and "rewrapped 1" in again.output
    assert Sealer(SqliteKeyStore(path)).open_value(sealed, SCOPE.home) == encode(make_turn(1, "kept"))


async def test_decisions_about_erased_memories_replay_without_rejections(settings: Settings,
                                                                          tmp_path: Path) -> None:
    """Feedback on a memory of an erased session outlived the session's key: the replay met it, found no
    memory and recorded rejections."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        secret_ids = [r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' "
                                                              "AND session_id='s-secret'")]
        await app.feedback(SCOPE, secret_ids[:1], "helpful")
        await app.erase(SCOPE, "memory", memory_id=secret_ids[1])
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    # the session folded again after the first erasure: its capsule quoted the secret and was refused; the
    # session's erasure left that rejection without its content (tests/negative/test_erasure_capsule.py)
    assert not any(SECRET.decode() in str(r["payload"]) for r in rows(s.data_dir, "SELECT payload FROM rejections"))
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    assert rows(target, "SELECT reason FROM rejections") == []


async def test_seal_log_false_still_opens_a_sealed_log(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as _:
        pass
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s.model_copy(update={"seal_log": False}))
    assert "Unrelated: the billing deadline is March 3." in {
        r["content"] for r in rows(target, "SELECT content FROM memories")}
    assert (target / "log.db").read_bytes().count(b"billing deadline") >= 1  # published in the clear there

"""Data keys on a compacted Kafka topic of their own, for deployments whose processes share no disk.

Each key is one record keyed by its id: its owner, its wrapped bytes (AES-GCM under the master key, which never
leaves the processes: ``ALTM_MASTER_KEY``), when it was made and retired. Destroying a key writes a record
with the same id and no key material; compaction then drops the older records that held it, so the log keeps
"destroyed" (forever: a restore meets the key's records and must know they are shredded, not foreign) and loses
the key. Every process reads the whole topic into memory on start and follows it; a write returns once this
process has read it back, so what one process destroys, it never uses again, and a key another process made is
read up to the log's end before it is called unknown.

The topic is not one of the log's topics (one partition, compacted, never replayed): ``<prefix>keys``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as KafkaTP
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from altm.bus.sealing._keys import (
    GUARD,
    MASTER_KEY_ENV,
    KeyStore,
    KeyStoreError,
    Owner,
    guard_kid,
    master_id,
    unwrap_key,
    wrap_key,
)

log = logging.getLogger("altm.sealing")

T = TypeVar("T")

KEYS_TOPIC = "keys"
"""The key topic's name after the deployment's topic prefix."""

TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "3600000",  # a destroyed key's old record is compacted away within about an hour
    "segment.ms": "3600000",  # ...of its segment closing: the active segment rolls at least hourly
    "min.cleanable.dirty.ratio": "0.01",
}
"""How the key topic is made (an operator may change it with kafka-configs; the bounds are what erasure's
guarantee rests on: a destroyed key leaves the broker's disks within about two hours)."""


@dataclass(frozen=True)
class _Entry:
    owner: Owner
    wrapped: bytes | None  # None: destroyed
    master_id: str
    created_ms: int
    retired_ms: int | None = None
    destroyed_ms: int | None = None

    def value(self) -> bytes:
        return orjson.dumps({
            "home": self.owner.home, "agent": self.owner.agent, "session": self.owner.session,
            "wrapped": base64.b64encode(self.wrapped).decode() if self.wrapped is not None else None,
            "master_id": self.master_id, "created_ms": self.created_ms, "retired_ms": self.retired_ms,
            "destroyed_ms": self.destroyed_ms,
        })

    @classmethod
    def parse(cls, raw: bytes) -> _Entry:
        d = orjson.loads(raw)
        if not isinstance(d, dict):
            raise ValueError("not a key record")
        for name in ("retired_ms", "destroyed_ms"):
            if d.get(name) is not None and type(d[name]) is not int:
                raise ValueError(f"{name} is not an integer")
        if not isinstance(d.get("wrapped"), (str, type(None))):
            raise ValueError("wrapped is not base64 text")
        wrapped = d.get("wrapped")
        return cls(Owner(str(d["home"]), str(d.get("agent") or ""), str(d.get("session") or "")),
                   base64.b64decode(wrapped) if wrapped else None, str(d.get("master_id") or ""),
                   int(d["created_ms"]), d.get("retired_ms"), d.get("destroyed_ms"))


class KeyTopicMissing(KeyStoreError):
    """The key topic does not exist and this store may not make it (read-only, or sealing is off)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class KafkaKeyStore(KeyStore):
    """The log's data keys on ``topic`` of the broker at ``bootstrap``, wrapped by ``master_key``.

    The key store runs its own Kafka clients on an event loop in a thread of its own (the key store's interface
    is synchronous: sealing happens inside the stages' synchronous code); :meth:`close` stops them."""

    def __init__(self, bootstrap: str, topic: str, *, master_key: bytes, read_only: bool = False,
                 create: bool = True, wait_s: float = 10.0, topic_config: dict[str, str] | None = None) -> None:
        self.bootstrap, self.topic, self.read_only, self.wait_s = bootstrap, topic, read_only, wait_s
        self._create_topic = create and not read_only
        self._master_id = master_id(master_key)
        self._aead = AESGCM(master_key)
        self._unwrapping = {self._master_id: self._aead}  # during a rotation: the old and the new master key
        self._topic_config = {**TOPIC_CONFIG, **(topic_config or {})}
        self._segment_ms = int(self._topic_config.get("segment.ms", "3600000"))  # the topic's, once read
        self._lock = threading.Lock()  # the entries, read by callers, written by the reader
        self._writing = threading.Lock()  # one write at a time: a key is made once per owner in this process
        self._entries: dict[str, _Entry] = {}  # the keys not destroyed
        self._plain: dict[str, bytes] = {}  # unwrapped keys
        self._by_owner: dict[Owner, set[str]] = {}
        self._gone = _Destroyed()  # destroyed keys, by id only: an erasure's keep nothing else in memory
        self._last_destroyed_ms = 0  # when the latest of them was destroyed (its segment's roll is due after it)
        self._left = 0  # keys destroyed since the tables were last made again
        self._calls: set[asyncio.Task[Any]] = set()
        self._background: set[asyncio.Future[Any]] = set()
        self._roll_timer: asyncio.TimerHandle | None = None
        self._position = 0  # the next offset the reader applies
        self._advanced: asyncio.Event | None = None
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="altm-keys", daemon=True)
        self._thread.start()
        try:
            self._call(self._start())
        except BaseException:
            self.close()
            raise

    @property
    def location(self) -> str:
        return self.topic

    # -- the reader's loop ----------------------------------------------------------------------------------

    async def _tracked(self, coro: Coroutine[Any, Any, T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await coro
        finally:
            self._calls.discard(task)

    def _call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        try:
            future = asyncio.run_coroutine_threadsafe(self._tracked(coro), self._loop)
        except RuntimeError:
            coro.close()
            raise KeyStoreError(f"the key store on {self.bootstrap} ({self.topic}) is closed") from None
        try:
            return future.result(timeout_s if timeout_s is not None else self.wait_s + 30.0)
        except concurrent.futures.CancelledError:
            raise KeyStoreError(f"the key store on {self.bootstrap} ({self.topic}) was closed") from None
        except TimeoutError:
            future.cancel()
            raise KeyStoreError(f"the key store on {self.bootstrap} ({self.topic}) did not answer in time") from None

    async def _start(self) -> None:
        self._advanced = asyncio.Event()
        try:
            if not await self._ensure_topic():
                raise KeyTopicMissing(f"no key topic {self.topic} on {self.bootstrap} (it is made when the first "
                                      "record is sealed)")
            if not self.read_only:
                self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, client_id="altm-keys",
                                                  enable_idempotence=True, acks="all")
                await self._producer.start()
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, client_id="altm-keys",
                                              enable_auto_commit=False, fetch_max_wait_ms=100)
            await self._consumer.start()
            tp = KafkaTP(self.topic, 0)
            self._consumer.assign([tp])
            await self._consumer.seek_to_beginning(tp)
        except KeyStoreError:
            raise
        except Exception as exc:
            raise KeyStoreError(f"cannot open the key store on Kafka at {self.bootstrap}: {exc}") from exc
        self._reader = asyncio.create_task(self._follow(tp), name="altm-keys-reader")
        await self._caught_up()
        with self._lock:
            destroyed = self._last_destroyed_ms
        if destroyed and self._producer is not None:  # the process that destroyed them may have stopped before
            self._schedule_roll(destroyed)             # its roll: the segment holding them still has to roll

    async def _ensure_topic(self) -> bool:
        """The key topic is there (made now when it may be); False when it is not."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="altm-keys-admin")
        await admin.start()
        try:
            for _ in range(50):
                if self.topic in await admin.list_topics():  # a metadata request for all topics creates none
                    (desc,) = await admin.describe_topics([self.topic])
                    if desc.get("error_code", 0) == 0 and desc.get("partitions"):
                        await self._check_config(admin)
                        return True
                if not self._create_topic:
                    return False
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics([NewTopic(self.topic, 1, 1, topic_configs=self._topic_config)])
                await asyncio.sleep(0.1)  # metadata propagation after creation
            raise KeyStoreError(f"the key topic {self.topic} did not appear on {self.bootstrap}")
        finally:
            await admin.close()

    async def _check_config(self, admin: AIOKafkaAdminClient) -> None:
        (resp,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)])
        configs = {str(c[0]): c[1] for c in resp.resources[0][4]}
        if configs.get("cleanup.policy") != "compact":
            raise KeyStoreError(f"the key topic {self.topic} has cleanup.policy={configs.get('cleanup.policy')}, not "
                                "compact: it would delete the keys")
        with contextlib.suppress(TypeError, ValueError):  # the topic's own, whoever made it and how
            self._segment_ms = int(configs.get("segment.ms") or self._segment_ms)

    async def _follow(self, tp: KafkaTP) -> None:
        assert self._consumer is not None and self._advanced is not None
        while True:
            try:
                batches = await self._consumer.getmany(tp, timeout_ms=1000)
            except asyncio.CancelledError:
                raise
            except Exception:  # the broker away: the keys read so far still serve
                log.exception("the key store could not read %s; retrying", self.topic)
                await asyncio.sleep(1.0)
                continue
            for msg in batches.get(tp, ()):
                try:
                    self._apply(msg.key, msg.value, msg.offset)
                except Exception:
                    log.exception("the key store skips the record at %s@%d", self.topic, msg.offset)
            with contextlib.suppress(Exception):
                self._position = max(self._position, await self._consumer.position(tp))
            self._advanced.set()
            self._advanced.clear()

    def _apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None or value is None:
            return  # not ours (a key record always has a value, even once destroyed)
        kid = key.decode("ascii", "replace")
        try:
            entry = _Entry.parse(value)
        except (ValueError, KeyError, TypeError):
            log.error("the key store skips a malformed record at %s@%d", self.topic, offset)
            return
        with self._lock:
            resurrected = kid in self._gone and entry.wrapped is not None  # destroyed stays destroyed
            if kid in self._gone:
                self._last_destroyed_ms = max(self._last_destroyed_ms, entry.destroyed_ms or 0)
            elif self._admits(kid, entry, key, offset):
                if entry.wrapped is None:
                    self._forget(kid, entry)
                else:
                    self._entries[kid] = entry
                    self._by_owner.setdefault(entry.owner, set()).add(kid)
                self._plain.pop(kid, None)
        if resurrected:
            log.error("the key store meets key material for destroyed key %s at %s@%d", kid, self.topic, offset)
            if self._producer is not None:
                self._spawn(self._producer.send(self.topic, _destroyed(entry).value(), key=kid.encode(), partition=0))

    def _admits(self, kid: str, entry: _Entry, key: bytes, offset: int) -> bool:
        """Whether ``entry`` may stand for key ``kid`` (under the lock): a record moving a key to another owner
        is skipped, and a second guard key of a user loses to the first (sent again: compaction keeps it)."""
        old = self._entries.get(kid)
        if old is None or not (old.owner != entry.owner or old.created_ms != entry.created_ms
                               or (old.owner.session == GUARD and self._rival(kid, old, entry))):
            return True
        if old.owner.session == GUARD:  # two processes made a user's guard key at once (maybe in the same
            # millisecond): the first read wins, and is sent again so that compaction keeps it
            log.warning("the key store meets a second guard key for %s at %s@%d: the first one stays",
                        old.owner.home, self.topic, offset)
            if self._producer is not None:
                self._spawn(self._producer.send(self.topic, old.value(), key=key, partition=0))
            return False
        log.error("the key store skips a record at %s@%d that moves key %s to another owner", self.topic, offset, kid)
        return False

    def _forget(self, kid: str, entry: _Entry) -> None:
        """Key ``kid`` was destroyed (``entry``'s record says so): only its id stays (under the lock). A dict
        keeps its size when entries leave: the tables are made again once as many keys left as stay."""
        self._entries.pop(kid, None)
        owned = self._by_owner.get(entry.owner)
        if owned is not None:
            owned.discard(kid)
            if not owned:
                del self._by_owner[entry.owner]
        self._gone.add(kid)
        self._last_destroyed_ms = max(self._last_destroyed_ms, entry.destroyed_ms or 0)
        self._left += 1
        if self._left > max(1024, len(self._entries)):
            self._entries, self._by_owner, self._plain = dict(self._entries), dict(self._by_owner), dict(self._plain)
            self._left = 0

    def _known(self, kid: str) -> bool:
        with self._lock:
            return kid in self._entries or kid in self._gone

    async def _caught_up(self, at_least: int | None = None) -> None:
        """Until the reader has applied everything up to the log's end (or ``at_least``)."""
        assert self._consumer is not None and self._advanced is not None
        tp = KafkaTP(self.topic, 0)
        end = at_least if at_least is not None else (await self._consumer.end_offsets([tp]))[tp]
        deadline = time.monotonic() + self.wait_s
        while self._position < end:
            if self._reader is not None and self._reader.done():
                raise KeyStoreError("the key store's reader stopped")
            left = deadline - time.monotonic()
            if left <= 0:
                raise KeyStoreError(f"the key store did not read {self.topic} up to offset {end} in {self.wait_s} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._advanced.wait(), min(left, 0.5))

    async def _write(self, records: Iterable[tuple[str, _Entry]]) -> None:
        """Publish ``records`` and wait until the reader has applied them."""
        if self._producer is None:
            raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only")
        records = list(records)
        sent = [await self._producer.send(self.topic, entry.value(), key=kid.encode(), partition=0)
                for kid, entry in records]
        if any(entry.wrapped is None for _, entry in records):
            self._schedule_roll(_now_ms())
        offsets: list[int] = [(await s).offset for s in sent]
        if offsets:
            await self._caught_up(max(offsets) + 1)

    def _schedule_roll(self, destroyed_ms: int) -> None:
        """A roll record once the segment a destroy at ``destroyed_ms`` went into is older than segment.ms
        (the last destroy's roll covers the earlier ones)."""
        delay_s = max(0.0, (destroyed_ms + self._segment_ms - _now_ms()) / 1000) + 1.0
        if self._roll_timer is not None:
            self._roll_timer.cancel()
        self._roll_timer = asyncio.get_running_loop().call_later(delay_s, self._roll)

    def _roll(self) -> None:
        """One more record, so that the segment holding destroyed keys rolls and can be compacted (Kafka rolls
        on segment.ms only when it appends)."""
        self._roll_timer = None
        if self._producer is not None:
            self._spawn(self._producer.send(self.topic, None, key=b"\x00roll", partition=0))

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """A send nobody waits for (kept until it is done; cancelled by :meth:`close`)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the KeyStore interface ------------------------------------------------------------------------------

    def current(self, owner: Owner) -> tuple[str, bytes]:
        found = self._current(owner)
        if found is not None:
            return found
        with self._writing:
            found = self._current(owner)  # made by another thread while this one waited
            if found is not None:
                return found
            if self.read_only:
                raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only: it cannot make a key")
            kid, key = uuid.uuid4().hex, AESGCM.generate_key(bit_length=256)
            entry = _Entry(owner, wrap_key(self._aead, kid, key), self._master_id, _now_ms())
            self._call(self._write([(kid, entry)]))
            return kid, key

    def _current(self, owner: Owner) -> tuple[str, bytes] | None:
        with self._lock:
            live = [(e.created_ms, kid) for kid in self._by_owner.get(owner, ())
                    if (e := self._entries[kid]).wrapped is not None and e.retired_ms is None]
        if not live:
            return None
        kid = max(live)[1]
        key = self.get(kid)
        return (kid, key) if key is not None else None

    def get(self, kid: str) -> bytes | None:
        """The key; None when it was destroyed; :class:`KeyStoreError` when the topic never had it (read up to
        its end first: another process may have made it a moment ago)."""
        for attempt in range(2):
            with self._lock:
                plain = self._plain.get(kid)
                if plain is not None:
                    return plain
                if kid in self._gone:
                    return None
                entry = self._entries.get(kid)
            if entry is not None:
                if entry.wrapped is None:
                    return None
                key = self._unwrap(kid, entry)
                with self._lock:
                    if self._entries.get(kid) is entry:
                        self._plain[kid] = key
                return key
            if attempt == 0:
                self._call(self._caught_up())
        raise KeyStoreError(f"data key {kid} is not in the key store {self.topic} on {self.bootstrap}: the record "
                            "was sealed with another key store (set ALTM_KEYSTORE to the deployment's own)")

    def retired(self, kid: str) -> bool:
        with self._lock:
            entry = self._entries.get(kid)
        return entry is not None and entry.retired_ms is not None

    def destroyed(self, kid: str) -> bool:
        with self._lock:
            return kid in self._gone

    def shred(self, home: str, agent: str | None = None, session: str | None = None, *,
              made_before_ms: int | None = None) -> int:
        return self._change(lambda o, e: o.home == home and o.session != GUARD and (agent is None or o.agent == agent)
                            and (session is None or o.session == session)
                            and (made_before_ms is None or e.created_ms < made_before_ms), _destroyed)

    def guard_key(self, home: str, adopt: bytes | None = None) -> bytes:
        kid = guard_kid(home)
        if not self._known(kid):
            with self._writing:
                self._call(self._caught_up())  # made by another process before now
                if not self._known(kid):
                    if self.read_only:
                        raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only: it has no guard "
                                            f"key for {home} and cannot make one")
                    made = adopt if adopt is not None else AESGCM.generate_key(bit_length=256)
                    entry = _Entry(Owner(home, "", GUARD), wrap_key(self._aead, kid, made), self._master_id, _now_ms())
                    self._call(self._write([(kid, entry)]))  # read back: the first record of the id is the key
        key = self.get(kid)
        if key is None:
            raise KeyStoreError(f"the guard key of {home} ({kid}) was destroyed: tombstones hashed with it no "
                                "longer match anything")
        return key

    def adopt_guard_keys(self, keys: Sequence[tuple[str, bytes]]) -> dict[str, bytes]:
        if self._unknown_guard_keys(keys):  # a later start finds them all read: no round trip to the broker
            with self._writing:
                self._call(self._caught_up())  # what another process stored before now wins
                missing = self._unknown_guard_keys(keys)
                if missing and self.read_only:
                    raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only: it cannot store "
                                        f"{len(missing)} guard key(s)")
                if missing:
                    self._call(self._write([(kid, _Entry(Owner(home, "", GUARD), wrap_key(self._aead, kid, key),
                                                          self._master_id, _now_ms())) for kid, home, key in missing]))
        return {home: self.guard_key(home) for home, _ in keys}  # each one read back: no write

    def _unknown_guard_keys(self, keys: Sequence[tuple[str, bytes]]) -> list[tuple[str, str, bytes]]:
        """(kid, home, key) of those of ``keys`` this store has read no guard key for."""
        with self._lock:
            return [(kid, home, key) for home, key in keys
                    if (kid := guard_kid(home)) not in self._entries and kid not in self._gone]

    def find_guard_key(self, home: str) -> bytes | None:
        kid = guard_kid(home)
        for attempt in range(2):  # read up to the topic's end first when unknown: made a moment ago elsewhere
            if self._known(kid):
                return self.get(kid)
            if attempt == 0:
                self._call(self._caught_up())
        return None

    def retire(self, home: str, session: str, *, made_before_ms: int | None = None) -> int:
        now = _now_ms()
        return self._change(lambda o, e: o.home == home and o.session == session and e.retired_ms is None
                            and (made_before_ms is None or e.created_ms < made_before_ms),
                            lambda e: replace(e, retired_ms=now))

    def destroy_retired(self, older_than_s: float) -> int:
        if self.read_only:
            return 0
        cutoff = _now_ms() - int(older_than_s * 1000)
        return self._change(lambda o, e: e.retired_ms is not None and e.retired_ms <= cutoff, _destroyed)

    def _change(self, which: Callable[[Owner, _Entry], bool], how: Callable[[_Entry], _Entry]) -> int:
        if self.read_only:
            raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only: it cannot change keys")
        with self._writing:
            self._call(self._caught_up())  # what other processes made or destroyed before now
            with self._lock:
                doomed = [(kid, how(e)) for kid, e in self._entries.items() if e.wrapped is not None
                          and which(e.owner, e)]
            self._call(self._write(doomed))
        return len(doomed)

    def rewrap(self, new_master: bytes) -> int:
        if self.read_only:
            raise KeyStoreError(f"the key store on {self.bootstrap} is open read-only")
        new_aead, new_id = AESGCM(new_master), master_id(new_master)
        with self._writing:
            self._call(self._caught_up())
            with self._lock:
                live = [(kid, e) for kid, e in self._entries.items() if e.wrapped is not None]
            self._unwrapping[new_id] = new_aead  # what the reader applies from now on is wrapped by it
            records = [(kid, replace(e, wrapped=wrap_key(new_aead, kid, self._unwrap(kid, e)), master_id=new_id))
                       for kid, e in live]
            self._call(self._write(records))
            self._master_id, self._aead = new_id, new_aead
        return len(records)

    def master_ids(self) -> set[str]:
        with self._lock:
            return {e.master_id for e in self._entries.values() if e.wrapped is not None}

    def counts(self) -> tuple[int, int]:
        with self._lock:  # data keys: guard keys seal nothing
            live = [e for e in self._entries.values() if e.wrapped is not None and e.owner.session != GUARD]
        retired = sum(1 for e in live if e.retired_ms is not None)
        return len(live) - retired, retired

    def guard_count(self) -> int:
        with self._lock:
            return sum(1 for e in self._entries.values() if e.wrapped is not None and e.owner.session == GUARD)

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._stop(), timeout_s=30.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10.0)
        if not self._thread.is_alive():
            self._loop.close()

    async def _stop(self) -> None:
        if self._roll_timer is not None:
            self._roll_timer.cancel()
        pending = [t for t in (*self._calls, *self._background) if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._producer is not None:
            await self._producer.stop()
        if self._consumer is not None:
            await self._consumer.stop()

    def _rival(self, kid: str, old: _Entry, new: _Entry) -> bool:
        """``new`` holds other key material than ``old`` (not the same key sent again or wrapped anew)."""
        if old.wrapped is None or new.wrapped is None:
            return False
        try:
            return self._unwrap(kid, old) != self._unwrap(kid, new)
        except KeyStoreError:  # wrapped by a master key this process does not have (yet): cannot tell
            return False

    def _unwrap(self, kid: str, entry: _Entry) -> bytes:
        assert entry.wrapped is not None
        aead = self._unwrapping.get(entry.master_id)
        if aead is None:
            raise KeyStoreError(f"data key {kid} in {self.topic} is wrapped by master key {entry.master_id}, not by "
                                f"the one given ({self._master_id}): set {MASTER_KEY_ENV} to the deployment's")
        try:
            return unwrap_key(aead, kid, entry.wrapped)
        except InvalidTag:
            raise KeyStoreError(f"data key {kid} in {self.topic} does not unwrap with the master key") from None


class _Destroyed:
    """The ids of destroyed keys. A data key's id (32 hex digits, ``uuid4().hex``) is kept as its number (a
    smaller object than its text); any other id as it is."""

    def __init__(self) -> None:
        self._numbers: set[int] = set()
        self._other: set[str] = set()

    @staticmethod
    def _number(kid: str) -> int | None:
        if len(kid) != 32:
            return None
        try:
            n = int(kid, 16)
        except ValueError:
            return None
        return n if f"{n:032x}" == kid else None  # the one spelling that number has

    def add(self, kid: str) -> None:
        if (n := self._number(kid)) is not None:
            self._numbers.add(n)
        else:
            self._other.add(kid)

    def __contains__(self, kid: object) -> bool:
        if not isinstance(kid, str):
            return False
        n = self._number(kid)
        return n in self._numbers if n is not None else kid in self._other

    def __len__(self) -> int:
        return len(self._numbers) + len(self._other)


def _destroyed(entry: _Entry) -> _Entry:
    return replace(entry, wrapped=None, destroyed_ms=_now_ms())

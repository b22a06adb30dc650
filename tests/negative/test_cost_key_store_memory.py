"""The Kafka key store keeps every key record it ever read in memory, in every process (red team rt24):
``_entries``, ``_by_owner`` and ``_plain`` (altm/bus/kafka/_keys.py) grow by a key per session, and a destroyed key
keeps its whole entry and its owner's set. Measured: about 1,030 bytes a session key live, 1,190 after every key
is destroyed, at 5,000 / 20,000 / 80,000 sessions (a million sessions ever: some 1.1 GiB in each worker, the
retrieval service and each admin command).

A destroyed key keeps its id only now (as a number: about 100-150 bytes a key with the tables' share), and the
tables are made again once as many keys left them as stay (a dict keeps its size when entries leave)."""

from __future__ import annotations

import os
import threading
import tracemalloc
import uuid

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from altm.bus.kafka._keys import KafkaKeyStore, _Destroyed, _destroyed, _Entry
from altm.bus.sealing._keys import Owner, master_id, wrap_key

SESSIONS = 5_000


def _bare_store() -> KafkaKeyStore:
    """The store's state as its constructor leaves it, without its Kafka clients (only ``_apply`` is exercised)."""
    store = object.__new__(KafkaKeyStore)
    master = os.urandom(32)
    store._master_id, store._aead = master_id(master), AESGCM(master)
    store._unwrapping = {store._master_id: store._aead}
    store._lock, store._producer = threading.Lock(), None
    store._entries, store._plain, store._by_owner = {}, {}, {}
    store._gone, store._last_destroyed_ms, store._left = _Destroyed(), 0, 0
    return store


def test_destroyed_session_keys_leave_the_key_stores_memory() -> None:
    store = _bare_store()
    records = []
    for i in range(SESSIONS):
        kid = uuid.uuid4().hex
        entry = _Entry(Owner(f"acme/platform/user{i // 50}", "coder", f"session-{i}"),
                       wrap_key(store._aead, kid, os.urandom(32)), store._master_id, 1_700_000_000_000 + i)
        records.append((kid, entry))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for offset, (kid, entry) in enumerate(records):
        store._apply(kid.encode(), entry.value(), offset)
    for offset, (kid, entry) in enumerate(records):  # every user erased: each session key destroyed
        store._apply(kid.encode(), _destroyed(entry).value(), SESSIONS + offset)
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert kept / SESSIONS <= 200, (
        f"{kept / SESSIONS:.0f} bytes a session kept after every key was destroyed ({len(store._entries)} entries, "
        f"{len(store._by_owner)} owners): the key store grows with every session ever held")

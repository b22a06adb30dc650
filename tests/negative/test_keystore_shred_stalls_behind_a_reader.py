"""An erasure stalls for minutes behind any open read transaction on the key store.

Finding: ``SqliteKeyStore._destroy`` ends with ``_checkpoint``: up to 50 ``PRAGMA wal_checkpoint(TRUNCATE)``
attempts 0.1 s apart, meant as "a reader in another process can hold it off" for about 5 s. But the
connection's ``busy_timeout`` is 10 000 ms, and a TRUNCATE checkpoint waits on the busy handler for every
reader: each attempt blocks 10 s, so one reader holding a read transaction (a backup — ``sqlite3 .backup``,
Litestream, which holds one permanently —, an operator's ``sqlite3 keys.db``) makes a shred take about
50 x 10 s = 500 s. It holds the store's lock all that time (every ``current``/``get`` of the process waits), and
the writer applies erasures on the event loop, so an embedded ``altm serve`` stops answering.

Expected: a destroy that cannot truncate the write-ahead log returns within a few seconds (the checkpoint
with a short busy timeout of its own, retried later), as the code's own 50 x 0.1 s intends."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from altm.bus.sealing import Owner, SqliteKeyStore

LIMIT_S = 8.0


def test_a_shred_returns_within_seconds_while_a_reader_holds_a_read_transaction(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    store = SqliteKeyStore(path, master_key=b"\x06" * 32)
    store.current(Owner("acme/platform/dana", "coder", "s-secret"))
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM data_keys").fetchone()  # a backup in progress, say
    done: list[float] = []

    def shred() -> None:
        start = time.monotonic()
        store.shred("acme/platform/dana", "coder", "s-secret")
        done.append(time.monotonic() - start)

    worker = threading.Thread(target=shred, daemon=True)
    worker.start()
    try:
        worker.join(LIMIT_S)
        assert done, f"the shred was still blocked after {LIMIT_S:.0f} s behind one reader (holding the store's lock)"
    finally:
        reader.execute("COMMIT")  # lets the blocked checkpoint through
        reader.close()
        worker.join(30)
        store.close()

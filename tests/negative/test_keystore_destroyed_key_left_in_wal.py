"""A destroyed data key stays on disk, in the write-ahead log, for as long as no other key is destroyed.

Finding: ``SqliteKeyStore._destroy`` deletes the key (``secure_delete``) and then truncates the write-ahead
log so that no older page holding the wrapped key stays on disk. When a reader holds the checkpoint off, it
gives up with a warning ("stays on disk until the next checkpoint") and nothing ever tries again: later writes
(new keys, retirements) only append to the log, the writer's periodic ``destroy_retired`` truncates nothing
when it finds nothing to destroy, and SQLite's own automatic checkpoints never truncate. The frames that hold
the wrapped key stay in ``keys.db-wal`` after the reader is long gone — until the next erasure happens to
destroy a key, or the last process closes the store.

Why it matters: crypto-shredding is the erasure of the log. Whoever holds the master key (``ALTM_MASTER_KEY``
or ``keys.db.master``) and a copy of the data dir taken in that window unwraps the destroyed key and reads
every erased record on the log (and in Kafka's segments).

Expected: once the reader is gone, the store's next write or its periodic ``destroy_retired`` finishes the
truncation it owes, so the wrapped key is on no file."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from altm.bus.sealing import DERIVED, Owner, SqliteKeyStore

HOME = "acme/platform/dana"


def _on_disk(directory: Path, needle: bytes) -> list[str]:
    return [p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()]


def test_a_destroyed_key_leaves_the_write_ahead_log_once_the_reader_that_held_it_off_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "keys.db"
    store = SqliteKeyStore(path, master_key=b"\x07" * 32)
    store._db.execute("PRAGMA busy_timeout=20")  # only to keep the give-up short: 50 x 10 s otherwise
    monkeypatch.setattr(time, "sleep", lambda _s: None)  # the 50 retries 0.1 s apart
    kid, _ = store.current(Owner(HOME, "coder", "s-secret"))
    (wrapped,) = store._db.execute("SELECT wrapped FROM data_keys WHERE kid=?", (kid,)).fetchone()
    wrapped = bytes(wrapped)
    assert _on_disk(tmp_path, wrapped)

    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM data_keys").fetchone()
    assert store.shred(HOME, "coder", "s-secret") == 1  # the checkpoint gives up: the reader holds it off
    reader.execute("COMMIT")
    reader.close()
    try:
        store.current(Owner(HOME, "coder", "s-next"))  # life goes on: a new session, a retirement,
        store.retire(HOME, DERIVED)
        store.destroy_retired(600.0)  # the writer's periodic sweep (nothing old enough to destroy)
        assert store.get(kid) is None
        assert _on_disk(tmp_path, wrapped) == [], "the destroyed key is still on disk after the reader left"
    finally:
        store.close()

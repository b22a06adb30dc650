"""Two workers that start side by side open one fresh key store (``ALTM_KEYSTORE=sqlite:///…``): the second must
wait for the first, not stop.

Seen in CI (``tests/integration/test_kafka_restore.py::test_a_standby_worker_takes_over_a_dead_workers_partitions_
without_a_restore``, 2026-12-07): worker B died at start with ``OperationalError: database is locked`` at
``PRAGMA journal_mode=WAL`` in ``SqliteKeyStore._connect``. While another connection holds a write lock on a file
still in rollback mode (the first worker setting it up), SQLite refuses the switch to WAL at once, whatever the
busy timeout: it does not wait on a lock it could deadlock on."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from altm.bus.sealing import SqliteKeyStore
from altm.bus.sealing._keys import MASTER_KEY_ENV, Owner, load_master_key


def test_a_key_store_another_process_is_setting_up_is_opened_once_it_is_done(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    first = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    first.execute("CREATE TABLE IF NOT EXISTS setting_up (x)")  # a fresh file, still in rollback mode
    first.execute("BEGIN IMMEDIATE")  # the first worker, half-way through its set-up
    first.execute("INSERT INTO setting_up VALUES (1)")

    def finish() -> None:
        time.sleep(0.3)
        first.execute("COMMIT")

    done = threading.Thread(target=finish)
    done.start()
    try:
        store = SqliteKeyStore(path)  # the second worker
    finally:
        done.join()
        first.close()
    try:
        kid, key = store.current(Owner("t/w/u", "a", "s1"))
        assert store.get(kid) == key
    finally:
        store.close()


def test_a_master_key_another_process_made_first_is_the_one_used(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Both workers found no master key file; the other one made it first (between this one's look and its
    own making): this one uses that key, it does not stop on ``FileExistsError`` (nor read a file half written)."""
    path = tmp_path / "keys.db.master"
    monkeypatch.delenv(MASTER_KEY_ENV, raising=False)
    made_first = load_master_key(path, create=True)
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self, **kw: False if self == path else real_exists(self, **kw))
    assert load_master_key(path, create=True) == made_first

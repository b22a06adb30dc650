"""The key store of the log's data keys is created readable by every local account.

Finding: ``SqliteKeyStore._connect`` lets ``sqlite3.connect`` create ``keys.db`` (and SQLite its ``-wal`` and
``-shm``) with the process umask, 0644 under the usual 022, in a directory made 0755; only the master key file
beside it is made 0600 (``load_master_key``). ``api_keys.json``, which holds only SHA-256 digests, is chmod'ed
0600; the data keys and every user's guard key are not protected the same way.

Why it matters: crypto-shredding only holds while nobody keeps a copy of a key the store later destroys. Any
local account can copy ``keys.db`` today (and its write-ahead log, which holds the newest keys); with the
master key later (a leaked ``ALTM_MASTER_KEY``, the master a rotation replaced because it leaked) that copy
opens every record an erasure since has shredded, and the guard keys test guesses of erased values against the
tombstones' hashes (README: "keep the master key as you keep the shards").

Expected: the key store file and its ``-wal``/``-shm`` are 0600 (owner only), like the master key file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from altm.bus.sealing import Owner, SqliteKeyStore


def test_the_key_store_and_its_write_ahead_log_are_readable_by_their_owner_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    old = os.umask(0o022)  # the common default
    try:
        store = SqliteKeyStore(tmp_path / "data" / "keys.db")
        store.current(Owner("acme/platform/dana", "coder", "s1"))
        store.guard_key("acme/platform/dana")
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "data").iterdir()}
        store.close()
    finally:
        os.umask(old)
    assert modes["keys.db.master"] == 0o600  # this one holds
    loose = {name: oct(mode) for name, mode in modes.items() if mode & 0o077}
    assert loose == {}, f"key store files readable by other accounts: {loose}"

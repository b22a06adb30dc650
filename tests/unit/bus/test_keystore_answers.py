"""The SQLite key store answers a lookup again from memory while its file has not changed, and reads it again
as soon as any connection (another process's, or its own) committed: a key destroyed elsewhere a moment ago
neither seals nor opens anything here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from altm.bus.sealing._keys import Owner, SqliteKeyStore

OWNER = Owner("acme/platform/alice", "coder", "session-1")


def _pair(tmp_path: Path) -> tuple[SqliteKeyStore, SqliteKeyStore]:
    master = os.urandom(32)
    path = tmp_path / "keys.db"
    return SqliteKeyStore(path, master_key=master), SqliteKeyStore(path, master_key=master)


def test_a_key_destroyed_by_another_process_stops_at_once(tmp_path: Path) -> None:
    here, there = _pair(tmp_path)
    try:
        kid, key = here.current(OWNER)
        assert here.get(kid) == key and not here.destroyed(kid)  # answered, and kept
        assert there.shred(OWNER.home) == 1
        assert here.get(kid) is None and here.destroyed(kid)
        new_kid, _ = here.current(OWNER)
        assert new_kid != kid
    finally:
        here.close()
        there.close()


def test_a_key_retired_here_is_seen_retired_at_once(tmp_path: Path) -> None:
    here, there = _pair(tmp_path)
    try:
        kid, _ = here.current(OWNER)
        assert not here.retired(kid)
        assert here.retire(OWNER.home, OWNER.session) == 1
        assert here.retired(kid)
        assert here.current(OWNER)[0] != kid  # a retired key seals nothing new
        assert there.retired(kid)
    finally:
        here.close()
        there.close()


def test_a_key_is_unwrapped_once_while_the_file_stands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, there = _pair(tmp_path)
    unwrapped: list[str] = []
    original = SqliteKeyStore._unwrap

    def counting(self: SqliteKeyStore, kid: str, wrapped: bytes, master: str) -> bytes:
        unwrapped.append(kid)
        return original(self, kid, wrapped, master)

    monkeypatch.setattr(SqliteKeyStore, "_unwrap", counting)
    try:
        kid, key = here.current(OWNER)
        for _ in range(100):
            assert here.get(kid) == key and here.current(OWNER) == (kid, key)
        assert len(unwrapped) <= 2, unwrapped
        there.current(Owner(OWNER.home, OWNER.agent, "session-2"))  # another process writes: read again
        assert here.get(kid) == key
        assert len(unwrapped) <= 3, unwrapped
    finally:
        here.close()
        there.close()

"""A reader that treats retired keys as destroyed (``Sealer.open(..., retired=False)``: a shard restored from
the log, a read replica) opens a record whose retired key is destroyed while it reads it.

Finding: ``Sealer.open_value`` asks the key store twice: ``get(kid)`` for the key, then ``retired(kid)``. The
SQLite store's ``retired`` answers False for a key it no longer has (``retired_ms`` of a missing row), so when
the writer (another process) destroys the retired key between the two questions — its grace has just ended —
the reader holds the key, is told it is not retired, and decrypts. Had either question come a moment earlier or
later the record would have come back shredded.

Why it matters: ``retired=False`` exists so that a restore or a replica never takes in a scene, facet or graph
node sealed before an erasure that quotes the erased content; it is exactly around the end of the grace period,
when the writer's periodic ``destroy_retired`` runs, that this window opens.

Expected: a key that is retired *or destroyed* by the time the reader checks does not open the record (check
``destroyed`` too, or make ``retired`` true for a destroyed key, or ask in one query)."""

from __future__ import annotations

from pathlib import Path

from altm.bus.sealing import DERIVED, MAGIC, KeyStore, Owner, Sealer, SqliteKeyStore
from tests.support.turns import SCOPE

MASTER = b"\x05" * 32
SCENE = b'{"event_type":"scene","text":"the vault code is ZEBRA-4471"}'


class _DestroyedMidway(SqliteKeyStore):
    """The reader's key store; the writer (another process, same file) destroys retired keys right after this
    reader fetched one."""

    writer: KeyStore

    def get(self, kid: str) -> bytes | None:
        key = super().get(kid)
        self.writer.destroy_retired(0.0)  # the grace period ends now, in the writer
        return key


def test_a_retired_key_destroyed_while_a_restore_opens_its_record_does_not_open_it(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    writer = SqliteKeyStore(path, master_key=MASTER)
    sealed = Sealer(writer).seal_value(SCENE, SCOPE.home)  # no scope in it: the derived key of the record key
    kid, _ = writer.current(Owner(SCOPE.home, "", DERIVED))
    assert sealed[len(MAGIC):len(MAGIC) + 32] == kid.encode()
    assert writer.retire(SCOPE.home, DERIVED) == 1  # an erasure of the user's session retired it

    reader = _DestroyedMidway(path, master_key=MASTER)
    reader.writer = writer
    restore = Sealer(reader)
    try:
        opened = restore.open_value(sealed, SCOPE.home, retired=False)
        assert writer.destroyed(kid)
        assert opened is None, "a restore opened a record sealed with a key an erasure had retired"
    finally:
        reader.close()
        writer.close()

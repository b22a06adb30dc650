"""Review rt27 of 8b46f47 (pooled reader connections): a read that raises while one of its cursors is still
open (a loop over a cursor, an exception inside it) ends its snapshot with ``COMMIT``, which SQLite accepts with a
read statement pending: the connection is no longer ``in_transaction``, but its read transaction (and the
snapshot) stays open for as long as the cursor lives. The cursor lives in the exception's traceback, which the read
pool's future keeps (and a caller that logs it, longer). The connection was given back as sound, so the next read
that borrows it reads the old snapshot: a memory erased (or written) since is seen as it was, and the write-ahead
log cannot be truncated behind it (the erased rows' page images stay in it).

Expected: a read borrowed after a commit sees that commit (a connection whose statements are not all reset is not
kept for the next read: reset/close them, or close the connection).

Now the pooled connections know their cursors (``ReaderConnection``): a read's end closes those still open, and
one that raised is rolled back and closed, not kept."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from altm.store import Shard, read_snapshot
from tests.support.atoms import insert_atom


def test_a_read_that_raised_mid_cursor_does_not_leave_its_snapshot_to_the_next_read(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    insert_atom(shard, "the export runs nightly")
    insert_atom(shard, "the import runs weekly")

    def failing_read() -> None:
        with read_snapshot():
            rows = shard._db.execute("SELECT memory_id FROM memories ORDER BY rowid")
            for _row in rows:
                raise ValueError("a bug in what a recall does with a row")

    def read_ids() -> list[str]:
        with read_snapshot():
            return [str(r[0]) for r in shard._db.execute("SELECT memory_id FROM memories")]

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            failed = pool.submit(failing_read)
            error = failed.exception()  # kept, as the read pool's future (and a logged error) keep it
            assert isinstance(error, ValueError)
            third = insert_atom(shard, "the backup runs hourly")  # the owner commits after that read ended
            seen = pool.submit(read_ids).result()
            owner = shard._conn
            assert owner is not None
            owner.execute("PRAGMA busy_timeout=0")
            checkpoint = owner.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert third in seen, f"a later read saw {len(seen)} memories: the snapshot of the read that failed"
        assert checkpoint[0] == 0, "an idle pooled reader still holds a read transaction: the log stays"
    finally:
        shard.close()

"""Erased text stays in the shard's write-ahead log for good when the shard is closed (a worker's restart, a
dropped shard) while the truncation its purge owes is still owed: the debt lives only in the closed object.

Finding: when a reader holds the log during an erasure's purge, ``Shard._truncate_log`` gives up after 50 ms and
records the debt in ``self._truncation_owed`` (altm/store/_shard.py:38, 228-238); ``Shard.transaction`` pays it
after a later commit (altm/store/_shard.py:128-129). The flag is an attribute of the Python object only: nothing
writes it down, ``Shard.close`` (altm/store/_shard.py:93-96) just closes the connection, and ``Shard.open``
(altm/store/_shard.py:40-91) starts with ``_truncation_owed = False``. A close while another process still has the
shard open (the retrieval service's read-only connection, which it keeps) does not checkpoint or delete the log
either (SQLite does that only for the last connection). So after the writer stops and starts again (SIGTERM, a
crash, a rebalance that closes and reopens the shard), no write ever truncates the log: later transactions append
to it or restart it from its beginning, and the frames that hold the erased message (its row, audit image, outbox
row, index segments) stay in ``shard-NNNN.db-wal`` behind them. The README (Erasure) promises that the log is
truncated after an erasure, and the fix of test_erasure_shard_wal_behind_reader.py only covers a writer that
keeps running.

Reproduction: store a message with a secret; a read-only connection (another process's, as the retrieval
service's) holds a read transaction on its shard while the session is erased; the reader's transaction ends but
its connection stays open; the deployment closes and opens again on the same data dir (a worker restart); a new
turn is written and derived; look for the secret's bytes in every file of the data dir.

Expected: the owed truncation survives the close (kept in the shard, or a writable open truncates a log it
finds left over: ``wal_checkpoint(TRUNCATE)`` without waiting, owed if a reader holds it), so no file of the data
dir holds the erased text once the reader is done and the writer has written again.
"""

from __future__ import annotations

import sqlite3

from altm.core import partition_for
from altm.core.settings import Settings
from altm.wiring import open_embedded
from tests.negative.test_erasure_bytes import occurrences
from tests.support.memories import runtime_of, store_with
from tests.support.turns import SCOPE, make_turn


async def test_a_truncation_owed_when_the_shard_closed_is_paid_after_it_opens_again(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
             make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]
    partition = partition_for(SCOPE.home, s.partitions)
    reader: sqlite3.Connection | None = None
    try:
        async with store_with(s, turns) as (rt, app):
            shard = rt.shards.get(partition)
            assert occurrences(s.data_dir)  # stored
            shard._db.execute("PRAGMA busy_timeout=20")
            reader = sqlite3.connect(f"file:{shard.path}?mode=ro", uri=True, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT COUNT(*) FROM memories").fetchone()
            await app.erase(SCOPE, "session", session_id="s-secret")
            await rt.run_until_idle()
            reader.execute("COMMIT")  # the reader is done; its connection stays open (the retrieval service's)
        # the worker stopped (its shards closed) while the truncation was owed, and starts again
        async with open_embedded(s) as deployment:
            rt2 = runtime_of(deployment)
            await rt2.publish([make_turn(3, "Another thing: lunch with the vendor on Friday.", session="s1")])
            await rt2.run_until_idle()  # the shard's writer commits again
            await rt2.publish([make_turn(4, "And the printer needs toner by Monday.", session="s1")])
            await rt2.run_until_idle()
            # actual: {'shards/shard-0001.db-wal': N}, for as long as the reader's process keeps its connection
            assert occurrences(s.data_dir) == {}, "the erased text is still in the shard's write-ahead log"
    finally:
        if reader is not None:
            reader.close()

"""Erased text stays in the shard's write-ahead log when a reader held off the truncating checkpoint of the
erasure: no later write truncates it, only the last process closing the shard.

Finding: after a batch with an erasure the writer calls ``Shard.purge`` (altm/pipeline/writer/_apply.py:201-203),
which merges both word indexes and runs ``PRAGMA wal_checkpoint(TRUNCATE)`` once (altm/store/_shard.py:196-201),
ignoring its result. A truncating checkpoint waits (busy handler, 5 s) for every reader of the log to finish; a
reader still there by then — another process reading the shard read-only (``altm serve`` beside the workers, the
browser, a backup, an operator's ``sqlite3``) — makes it return busy, and nothing tries again: later writer
transactions only append to the log, SQLite's automatic checkpoints never truncate it, and ``purge`` runs only
after the next erasure. The frames that hold the erased message (its row, its audit image, its outbox row and the
index segments that held its words) stay in ``shard-NNNN.db-wal`` for as long as the workers run. README
(Erasure): "after an erasure the word indexes are merged and the write-ahead log truncated"; the key store had
the same gap and now owes its checkpoint and completes it later (test_keystore_destroyed_key_left_in_wal.py).

Reproduction: store a message with a secret; open a read-only connection on its shard and hold a read
transaction while the session is erased (the writer's busy timeout is shortened to keep the test fast; with the
default 5 s it gives up the same way, 5 s later); let the reader go; write another turn; look for the secret's
bytes in every file of the data dir while the runtime is still up.

Expected: a purge held off by a reader is owed and completed once the reader is gone (at the next writer
transaction of the shard, or its periodic maintenance), so no file of the data dir holds the erased text.
"""

from __future__ import annotations

import sqlite3

from altm.core import partition_for
from altm.core.settings import Settings
from tests.negative.test_erasure_bytes import occurrences
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


async def test_erased_text_leaves_the_shard_log_once_the_reader_that_held_it_off_is_gone(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
             make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]
    async with store_with(s, turns) as (rt, app):
        shard = rt.shards.get(partition_for(SCOPE.home, s.partitions))
        assert occurrences(s.data_dir)  # stored
        shard._db.execute("PRAGMA busy_timeout=20")  # only to keep the give-up short (5 s by default)

        reader = sqlite3.connect(f"file:{shard.path}?mode=ro", uri=True, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        reader.execute("COMMIT")
        reader.close()

        await rt.publish([make_turn(3, "Another thing: lunch with the vendor on Friday.", session="s1")])
        await rt.run_until_idle()  # life goes on: the shard's writer commits again
        # actual: {'shards/shard-0001.db-wal': 13} until the runtime closes the shard
        assert occurrences(s.data_dir) == {}, "the erased text is still in the shard's write-ahead log"

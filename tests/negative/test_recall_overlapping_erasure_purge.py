"""A recall on a reader thread that overlaps an erasure's purge leaves the erased text in the shard's
write-ahead log until some later write to that shard.

``Shard.purge`` (altm/store/_shard.py:262-271) folds the log into the file and truncates it
(``wal_checkpoint(TRUNCATE)``) so no old page image keeps the erased rows; a reader holding a snapshot makes it
give up after ``LOG_TRUNCATE_WAIT_MS`` (50 ms) and leaves it owed, tried again only after the shard's next
transaction (``Shard.transaction``). That was meant for a reader in another process. Since recall runs on the
app's read threads (824add5), any other user's recall of the same shard (a shard holds many users: the
partition function is public) is such a reader: a recall of 50 ms or more that overlaps the purge leaves the
erased message verbatim in ``shard-NNNN.db-wal`` for as long as nobody writes to that shard again.

Expected: once the overlapping read is over, the erased text is gone from the shard's files without waiting for
an unrelated write (e.g. the owner retries the truncation when the reader's snapshot ends, or the read pool
lets a purge go first).


Now the read pool hands the end of each read to the event loop, where the shard's owner tries again what the
read held off (``ShardSet.settle``: the owed truncation, without waiting)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from altm.core import Settings, partition_for
from altm.recall import Retriever
from tests.support.memories import store_with
from tests.support.turns import SCOPE, colocated_scope, make_turn

SECRET = "ZEBRAFISH-7731 is the vault passphrase"
NEIGHBOUR = colocated_scope(4)


async def test_erased_text_leaves_the_log_after_an_overlapping_recall(settings: Settings,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    read_started, erased = threading.Event(), threading.Event()
    original = Retriever.search

    def slow_search(self: Retriever, *args: Any, **kwargs: Any) -> Any:
        found = original(self, *args, **kwargs)  # reads the shard: the snapshot is open
        if args and args[0] == NEIGHBOUR:
            read_started.set()
            erased.wait(10)  # a long recall of another user of the same shard
        return found

    monkeypatch.setattr(Retriever, "search", slow_search)
    turns = [make_turn(1, SECRET, session="s-secret"), make_turn(2, "the garden needs water", session="s1"),
             make_turn(3, "the neighbour's garden plan", scope=NEIGHBOUR, session="n1")]
    async with store_with(s, turns) as (rt, app):
        wal = Path(s.data_dir) / "shards" / f"shard-{partition_for(SCOPE.home, 4):04d}.db-wal"
        slow = asyncio.create_task(app.read(app.search, NEIGHBOUR, None, "garden plan"))
        assert await asyncio.to_thread(read_started.wait, 10)
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()  # the writer applies the erasure and purges, beside the recall
        erased.set()
        await slow
        assert not any("ZEBRAFISH" in r["content"] for r in app.list_memories(SCOPE, limit=500))
        held = wal.exists() and b"ZEBRAFISH" in wal.read_bytes()
    assert not held, "the erased message is still in the shard's write-ahead log after the recall ended"

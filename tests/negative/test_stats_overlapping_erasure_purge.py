"""A stats read overlapping an erasure's purge left the erased text in the shard's write-ahead log until the
shard's next write (observation of red team rt28).

``/v1/stats`` (``altm.interfaces.serve._stats_for``) reads every shard on a thread with connections of its own,
outside the app's read pool; a purge that ran while it read could not truncate the log (a reader held it), and
nothing tried again when the stats read ended, where a read of the pool has the loop try again (``ShardSet.settle``).

Now the stats route has the shards settle when its read ends, as the read pool does."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from altm.core import Settings, partition_for
from altm.interfaces import serve
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, make_turn

SECRET = "ZEBRAFISH-7731 is the vault passphrase"


async def test_erased_text_leaves_the_log_after_an_overlapping_stats_read(settings: Settings,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    shard_file = Path(s.data_dir) / "shards" / f"shard-{partition_for(SCOPE.home, s.partitions):04d}.db"
    reading, erased = threading.Event(), threading.Event()

    def slow_stats(data_dir: Path, prefix: str) -> dict[str, Any]:
        conn = sqlite3.connect(f"file:{shard_file}?mode=ro", uri=True, isolation_level=None)
        try:  # a read transaction held across the erasure, as a stats pass over a large shard holds one
            conn.execute("BEGIN")
            conn.execute("SELECT COUNT(*) FROM memories").fetchone()
            reading.set()
            erased.wait(10)
            conn.execute("COMMIT")
        finally:
            conn.close()
        return {"memories": 0}

    monkeypatch.setattr(serve, "collect_stats", slow_stats)
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SECRET, session="s-secret"), make_turn(2, "the garden needs water")])
        await rt.run_until_idle()
        stats = serve._stats_for(deployment.settings, deployment.shards.settle)
        assert stats is not None
        pending = asyncio.ensure_future(stats())
        assert await asyncio.to_thread(reading.wait, 10)
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()  # the writer applies the erasure; its purge cannot truncate the log
        erased.set()
        assert await pending == {"memories": 0}
        wal = shard_file.with_name(shard_file.name + "-wal")
        held = wal.exists() and b"ZEBRAFISH" in wal.read_bytes()
    assert not held, "the erased message is still in the shard's write-ahead log after the stats read ended"

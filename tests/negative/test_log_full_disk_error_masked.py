"""When the embedded log's disk is full, a publish fails with ``cannot rollback - no transaction is active``
instead of ``database or disk is full``: the real cause is hidden behind an error that reads like a bug in ALTM.

Finding: ``EmbeddedLog.publish_many`` (altm/bus/embedded/_log.py:154-188) ends a failed transaction with an
unconditional ``conn.execute("ROLLBACK")`` (line 185; the same in ``ensure_topics``, line 136, and
``apply_retention``, line 283). On ``SQLITE_FULL`` SQLite may already have rolled the transaction back itself, so
that ROLLBACK raises ``OperationalError: cannot rollback - no transaction is active``, which replaces the original
error: a host's ``prepare_turn``/``publish``, ``altm ingest`` and the embedded runtime's stages report that
message, never that the disk is full. The shard's transaction already guards against exactly this
(altm/store/_shard.py:90-92: ``if conn.in_transaction: # SQLite may have rolled it back itself (an interrupt, a
full disk)``); the log's does not.

Reproduction: a started embedded log whose file may not grow (``PRAGMA max_page_count`` set to its current size:
SQLite's own ``SQLITE_FULL``, as a full disk gives it) is asked to publish a batch that needs new pages.

Expected: the error raised says the disk is full ("database or disk is full", as SQLite reported it), nothing of
the batch is stored, and once there is room again the same batch is published.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.bus import OutgoingRecord
from altm.bus.embedded import EmbeddedLog
from altm.core import all_topic_specs


async def test_a_full_disk_is_reported_as_a_full_disk(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log.db")
    await log.start()
    try:
        await log.ensure_topics(all_topic_specs(4))
        pages = int(log.conn.execute("PRAGMA page_count").fetchone()[0])
        log.conn.execute(f"PRAGMA max_page_count={pages}")  # the disk is full: the file cannot grow
        batch = [OutgoingRecord("turns", b"x" * 4000, key=f"acme/platform/user{i}") for i in range(50)]

        with pytest.raises(Exception) as failed:
            await log.publish_many(batch)
        assert "full" in str(failed.value), (
            f"a full disk was reported as {type(failed.value).__name__}: {failed.value}")
        assert log.count("turns") == 0

        log.conn.execute("PRAGMA max_page_count=1073741823")  # room again
        await log.publish_many(batch)
        assert log.count("turns") == len(batch)
    finally:
        await log.stop()

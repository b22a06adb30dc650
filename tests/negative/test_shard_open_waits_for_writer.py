"""Opening a shard for writing now takes its write lock, even when its schema and text indexes are current: the
open waits behind another process's write transaction and fails after 5 s with "database is locked".

Finding: ``migrate`` ends with ``_text_indexes_current`` on every writable open (altm/store/_migrations.py:91),
which begins ``BEGIN IMMEDIATE`` before it even looks whether anything is to do (altm/store/_migrations.py:95-
106): ``index_again_if_built_otherwise`` reads one ``shard_meta`` row and ``apply_pending`` finds the queue empty
(altm/store/_text_index.py:63-82). Before schema 24 (080eb7e) a shard already migrated was opened without a write
transaction (the queue was applied only ``if migrated``). The connection's busy handler is sqlite3's default
(5 s; ``PRAGMA busy_timeout`` is set only after ``migrate``, altm/store/_shard.py:84), so while another connection
writes — a worker's batch, a restore's transactions of 500 proposals, or another process's schema-24 re-index of
a large shard ("about 3 s per 100,000" rows) — the open blocks its thread (in the workers, the event loop: shard
opens are synchronous) and then raises ``sqlite3.OperationalError: database is locked``, which ``Shard.open``
passes on (altm/store/_shard.py:47-49). Writable opens of shards another process writes are ordinary with a
shared data dir: a Kafka worker's first assignment now opens the shard of every partition other workers own to
publish their tombstones (``KafkaRuntime._burials_elsewhere``, altm/pipeline/runtime/kafka/_runtime.py:535-542),
and admin commands open the data dir beside the workers.

Reproduction: make a shard (schema current, indexes current); another connection holds a write transaction on
it; open the shard again for writing.

Expected: a writable open of a current shard does not wait for the write lock (it reads whether its indexes are
current and whether anything is queued, and begins a write transaction only when there is work), so it opens at
once; only a migration or a re-index waits for writers.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from altm.store import Shard


def test_a_current_shard_opens_for_writing_while_another_connection_writes(tmp_path: Path) -> None:
    path = tmp_path / "shards" / "shard-0000.db"
    Shard(path, 0).open().close()  # migrated, indexes current
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process's writer, in the middle of a transaction
        began = time.monotonic()
        shard = Shard(path, 0)
        try:
            shard.open()  # today: sqlite3.OperationalError: database is locked, after 5 s
            waited = time.monotonic() - began
        finally:
            shard.close()
        assert waited < 1.0, f"the open waited {waited:.1f} s for another connection's write transaction"
    finally:
        writer.execute("ROLLBACK")
        writer.close()

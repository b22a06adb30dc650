"""A corrupt word index in a shard is held against the proposals that touch it: each is rejected for good as an
``internal_error`` and the writer's offset moves past it, so once the index is repaired what they carried is lost.

Finding: ``ShardTx.savepoint`` (altm/store/_tx/_base.py:38-45) turns only ``sqlite3.OperationalError`` (full disk,
I/O error, locked) into ``StoreUnavailable``; a corrupt database raises plain ``sqlite3.DatabaseError`` ("database
disk image is malformed", SQLITE_CORRUPT / SQLITE_CORRUPT_VTAB: a damaged page, or an FTS5 index whose records
do not decode), which passes through unchanged and is caught by the catch-all of ``Writer._apply``
(altm/pipeline/writer/_apply.py:275-278): the proposal gets a rejections row ("the proposal could not be applied:
DatabaseError: database disk image is malformed") and a ``rejected`` change, and ``apply_batch`` stores the
offset past it (altm/pipeline/writer/_apply.py:199-200). That contradicts what ``StoreUnavailable`` promises
(altm/store/_errors.py:6-8: "The store itself failed ... the caller retries the same work later; it is never held
against the proposal"). The review queue then lists a storage fault as the proposal's fault, and approving it
would only meet the same corrupt index.

Reproduction: store a turn; damage the shard's FTS5 word index (its structure record in ``memories_fts_data``,
as a torn write or a bad sector leaves it); send a second turn of the same session. The session capsule's
upsert (an update, which must delete the old text from the index) is rejected with "DatabaseError: database disk
image is malformed", and the writer goes on. Repair the index the documented SQLite way
(``INSERT INTO memories_fts(memories_fts) VALUES('rebuild')``) and run again: the capsule never gets the second
turn; its update was consumed.

Expected: a corrupt store is a storage failure, not a refusal: no rejection is filed, the writer does not move
past the proposal (the batch fails loudly with ``StoreUnavailable`` and is retried), and once the index is
repaired the capsule is updated with the second turn.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import orjson

from altm.core import Settings, partition_for
from altm.store import shard_path
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

FIRST = "We use PostgreSQL 15 for the billing database."
LATER = "We also use Redis 7 for the session cache."


def _damage_word_index(shard: Path) -> None:
    """The FTS5 structure record (id 1 of ``memories_fts_data``) overwritten with bytes it cannot decode."""
    conn = sqlite3.connect(shard)
    try:
        conn.execute("UPDATE memories_fts_data SET block = x'ffffffffffff' WHERE id = 1")
        conn.commit()
    finally:
        conn.close()


def _repair_word_index(shard: Path) -> None:
    conn = sqlite3.connect(shard)
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        conn.commit()
    finally:
        conn.close()


async def test_a_corrupt_word_index_is_a_storage_failure_not_a_refusal(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    shard = shard_path(s.data_dir, partition_for(SCOPE.home, s.partitions))
    async with store_with(s, [make_turn(1, FIRST)]) as (rt, _):
        _damage_word_index(shard)
        await rt.publish([make_turn(2, LATER)])
        with contextlib.suppress(Exception):  # the writer may fail the batch (the store is broken): fine
            await rt.run_until_idle()
        refused = [str(r["reason"]) for r in rows(s.data_dir, "SELECT reason FROM rejections")]
        _repair_word_index(shard)
        await rt.run_until_idle()

    assert not [r for r in refused if "DatabaseError" in r or "malformed" in r], (
        f"a corrupt index was held against the proposal: {refused}")
    capsules = rows(s.data_dir, "SELECT attributes FROM memories WHERE layer = 'L1' AND session_id = 's1' "
                                "AND superseded_by IS NULL")
    assert len(capsules) == 1
    turns = orjson.loads(capsules[0]["attributes"]).get("turns")
    assert turns == 2, f"the capsule's update was consumed while the index was corrupt: it holds {turns} turn(s)"

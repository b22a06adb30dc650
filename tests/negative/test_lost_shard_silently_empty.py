"""A shard file that is lost (deleted, or emptied to 0 bytes) is silently made again, empty: every memory of that
partition is gone, with no error, and the pipeline goes on writing into the new empty shard.

Finding: ``Shard.open`` (altm/store/_shard.py:50-55) creates a missing shard, and SQLite takes a 0-byte file for
an empty database, so both come back as a fresh schema with no offsets. ``check_log_binding``
(altm/pipeline/_drivers.py:408-428) accepts a shard without stored offsets and binds it to the log, and
``EmbeddedRuntime.start`` (altm/pipeline/runtime/embedded.py:165-167) seeks the writer only when the shard has a
stored offset: with none, the writer resumes where the log's ``altm-writer`` group last committed, so the
proposals that made the lost memories (still on the embedded log: the proposals topic is kept for ever) are
never applied again. The log knows the writer applied proposals of that partition (its committed offset is
above 0) while the shard says it applied none; nothing compares the two. (``_refuse_orphaned_shards`` only
checks the opposite case: shards with offsets and no log.)

Reproduction: ingest a turn of one user; stop; delete that user's shard (or truncate it to 0 bytes, as a failed
copy or restore leaves it); start the embedded pipeline again and ingest a second turn of the same user. The
start succeeds and the first message is gone from the store for good (recall, listings, the write guard's
tombstones: the whole partition restarts from nothing).

Expected: the lost shard is either rebuilt from the log (the writer of that partition reads the proposals
topic again from its start, as a Kafka worker's restore does), so the first message is stored again, or the
start is refused with an error that names the shard file, before anything is written into a new empty one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings, partition_for
from altm.store import shard_path
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

FIRST = "We use PostgreSQL 15 for the billing database."
LATER = "We also use Redis 7 for the session cache."


def _lose(shard: Path, how: str) -> None:
    for leftover in (shard.with_name(shard.name + "-wal"), shard.with_name(shard.name + "-shm")):
        leftover.unlink(missing_ok=True)
    if how == "deleted":
        shard.unlink()
    else:
        shard.write_bytes(b"")


@pytest.mark.parametrize("how", ["deleted", "emptied"])
async def test_a_lost_shard_is_restored_from_the_log_or_refused(settings: Settings, how: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, FIRST)]):
        pass
    shard = shard_path(s.data_dir, partition_for(SCOPE.home, s.partitions))
    assert shard.exists()
    _lose(shard, how)

    try:
        async with store_with(s, [make_turn(2, LATER)]):
            pass
    except (RuntimeError, ValueError) as exc:  # refused: fine, if it says which shard
        assert shard.name in str(exc), f"refused without naming the lost shard: {exc}"
        return

    messages = [str(r["content"]) for r in rows(
        s.data_dir, "SELECT content FROM memories WHERE layer = 'L0' AND user_id = ?", (SCOPE.user_id,))]
    assert LATER in messages
    assert FIRST in messages, (
        f"the shard was {how} and made again empty: the first message is gone for good ({messages})")

"""Every read thread keeps a read-only connection to every shard it ever read, for as long as the shard is open.

``Shard._reader`` (altm/store/_shard.py:135-146) makes a connection per (thread, shard) on first use and only
``Shard.close`` closes it. Each costs two file descriptors (the file and its write-ahead log; the owner's costs
three), so with ``ALTM_READ_THREADS=4`` a shard holds 11 descriptors once each thread has read it, against 3
before 824add5. A read that visits every shard (the browser's /scopes page: ``scopes_under`` over
``ShardSet.existing()``), served on each read thread in turn, leaves them all open: with 128 partitions (the
setting allows 1,024) that is 1,408 descriptors, past the usual soft limit of 1,024, and reads start failing
with "unable to open database file" (they needed 384 before).

Expected: recall's connections stay within a bound that does not multiply the shard count by the thread count
(e.g. a small per-thread LRU of reader connections, or one pool of read connections per shard shared by the
threads), so a deployment that ran at 1,024 descriptors still does.

Now a read borrows a shard's connection for its snapshot and gives it back (a shard keeps one idle), and a read
over many shards holds at most eight at once (``altm.store._reading``).
"""

from __future__ import annotations

import asyncio
import resource
import threading
from pathlib import Path

from altm.app._reads import ReadPool
from altm.app._recall import RecallService
from altm.recall import Retriever
from altm.store import ShardSet

PARTITIONS = 128
THREADS = 4
SOFT_LIMIT = 1024  # the common default (ulimit -n)


def _open_descriptors() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


async def test_reads_over_every_shard_on_every_thread_fit_the_usual_descriptor_limit(tmp_path: Path) -> None:
    shards = ShardSet(tmp_path / "data", PARTITIONS)
    for p in range(PARTITIONS):
        shards.get(p)  # the owner opens every shard, as the embedded runtime does when it starts
    recall = RecallService(shards, Retriever(shards))
    pool = ReadPool(THREADS)
    together = threading.Barrier(THREADS)

    def listing() -> list[str]:
        together.wait(10)  # one read on each of the pool's threads
        return recall.scopes_under(["acme"])

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert _open_descriptors() + 3 * PARTITIONS < SOFT_LIMIT - 100, "the owner alone needs more"
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(SOFT_LIMIT, hard), hard))
    try:
        found = await asyncio.gather(*(pool.run(listing) for _ in range(THREADS)), return_exceptions=True)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        pool.close()
        shards.close()
    failed = [f for f in found if isinstance(f, BaseException)]
    assert not failed, f"{len(failed)} of {THREADS} reads failed: {failed[0]!r}"

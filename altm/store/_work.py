"""Deferred work: input records a stage could not finish (model failure, invalid output, a guard that could
not decide), kept in the shard of their partition with a backoff, and retried until they succeed.

Runtime bookkeeping, not memory state: it is written directly, not through the writer."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from altm.core import Settings, derive_id
from altm.store._errors import ShardError
from altm.store._shard import Shard
from altm.store._shardset import ShardSet

log = logging.getLogger("altm.work")


@dataclass(frozen=True)
class WorkItem:
    """One deferred input record, as it was read."""

    work_id: str
    stage: str
    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes
    timestamp_ms: int = 0
    headers: bytes | None = None  # packed (the bus's pack_headers), as the record carried them
    attempts: int = 0  # how many times it was deferred (``pending`` reads it; ``due`` does not)


class DeferredWork:
    """The deferred work of every shard of a data dir, per stage (a processor name or ``writer``)."""

    def __init__(self, shards: ShardSet, settings: Settings) -> None:
        self.shards = shards
        self.settings = settings

    def _backoff(self, attempts: int) -> float:
        """The pause before the next try: doubling from ``defer_backoff_s`` up to ``defer_max_backoff_s``. The
        exponent is bounded first (an item deferred for weeks reached 2 ** 1024, which no float holds, and its
        stage's retries stopped on it)."""
        doubling = 2.0 ** min(max(0, attempts - 1), 64)
        return float(min(self.settings.defer_backoff_s * doubling, self.settings.defer_max_backoff_s))

    def add(self, stage: str, topic: str, partition: int, offset: int, key: str | None, value: bytes,
            reason: str, *, headers: bytes | None = None, timestamp_ms: int = 0) -> None:
        work_id = derive_id("work", stage, topic, str(partition), str(offset))
        conn = self.shards.get(partition)._db
        row = conn.execute("SELECT attempts FROM deferred_work WHERE work_id=?", (work_id,)).fetchone()
        attempts = (int(row[0]) + 1) if row else 1
        log.warning("deferred %s work on %s[%d]@%d (attempt %d): %s", stage, topic, partition, offset, attempts,
                    reason)
        conn.execute(
            "INSERT INTO deferred_work (work_id, processor, topic, partition, offset, key, value, reason, "
            "attempts, next_attempt_at, recorded_at, headers, timestamp_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(work_id) DO UPDATE SET reason=excluded.reason, attempts=excluded.attempts, "
            "next_attempt_at=excluded.next_attempt_at",
            (work_id, stage, topic, partition, offset, key, value, reason, attempts,
             time.time() + self._backoff(attempts), datetime.now(UTC).isoformat(), headers, timestamp_ms),
        )

    def due(self, stage: str, partitions: set[int] | None = None, limit: int = 100) -> list[WorkItem]:
        """Items of ``stage`` whose retry time has come (of ``partitions`` only, when given)."""
        now = time.time()
        out: list[WorkItem] = []
        for shard in self._readable(partitions):
            for r in shard._db.execute(
                "SELECT work_id, topic, partition, offset, key, value, timestamp_ms, headers FROM deferred_work "
                "WHERE processor=? AND next_attempt_at<=? ORDER BY partition, offset LIMIT ?",
                (stage, now, limit),
            ):
                out.append(WorkItem(str(r[0]), stage, r[1], int(r[2]), int(r[3]), r[4], bytes(r[5]), int(r[6] or 0),
                                    bytes(r[7]) if r[7] is not None else None))
        return out

    def pending(self, partitions: set[int]) -> list[WorkItem]:
        """Every item of ``partitions``, of every stage, due or not (a partition handed to another worker)."""
        out: list[WorkItem] = []
        for shard in self._readable(partitions):
            for r in shard._db.execute(
                "SELECT work_id, processor, topic, partition, offset, key, value, timestamp_ms, headers, attempts "
                "FROM deferred_work ORDER BY partition, offset"):
                out.append(WorkItem(str(r[0]), str(r[1]), r[2], int(r[3]), int(r[4]), r[5], bytes(r[6]),
                                    int(r[7] or 0), bytes(r[8]) if r[8] is not None else None, int(r[9] or 0)))
        return out

    def _readable(self, partitions: set[int] | None) -> Iterator[Shard]:
        """The shards of ``partitions`` (every one on disk when None) that open: one that cannot (damaged, of a
        partition given away) is logged and left out, and holds back no other partition's work (opening every
        shard on disk had stopped every partition's retries on one damaged file)."""
        for p in sorted(partitions) if partitions is not None else range(self.shards.partitions):
            if not 0 <= p < self.shards.partitions or not self.shards.has(p):
                continue
            try:
                yield self.shards.get(p)
            except ShardError as exc:
                log.error("deferred work of partition %d left for now: %s", p, exc)

    def done(self, item: WorkItem) -> None:
        self.shards.get(item.partition)._db.execute("DELETE FROM deferred_work WHERE work_id=?", (item.work_id,))

    def count(self) -> int:
        return sum(int(s._db.execute("SELECT COUNT(*) FROM deferred_work").fetchone()[0])
                   for s in self.shards.existing())

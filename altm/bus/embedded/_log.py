"""The embedded durable log: topics, partitions, offsets and consumer groups in one SQLite file.

One process may open the log for writing (an exclusive ``flock`` on ``<file>.lock`` enforces it); any number
of processes may open it read-only (``altm log tail``) while it is written, thanks to WAL mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from altm.bus._base import (
    Bus,
    BusError,
    Consumer,
    OutgoingRecord,
    Record,
    RecordFilter,
    RecordMetadata,
    TopicPartition,
)
from altm.bus._records import pack_headers, unpack_headers
from altm.core.partitioner import partition_for
from altm.core.topics import TopicSpec

_DDL = """
CREATE TABLE IF NOT EXISTS topics (
    name TEXT PRIMARY KEY, partitions INTEGER NOT NULL, retention_ms INTEGER
);
CREATE TABLE IF NOT EXISTS partitions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL DEFAULT 0, log_start_offset INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (topic, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
    key TEXT, value BLOB NOT NULL, headers BLOB, timestamp_ms INTEGER NOT NULL,
    PRIMARY KEY (topic, partition, offset)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_offsets (
    group_id TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
) WITHOUT ROWID;
"""


class EmbeddedLog(Bus):
    """A :class:`Bus` over a local SQLite file. Safe for one writer process and concurrent readers."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock_file: IO[bytes] | None = None
        self._new_data = asyncio.Event()
        self._partitions: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._conn is not None:
            return
        if self.read_only:
            if not self.path.exists():
                raise BusError(f"no embedded log at {self.path}")
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = self.path.with_name(self.path.name + ".lock").open("wb")
            if not _exclusive(lock):
                lock.close()
                raise busy_log(self.path)
            self._lock_file = lock
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_DDL)
            self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('log_id', ?)", (uuid.uuid4().hex,))
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._load_topics()

    async def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._lock_file is not None:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BusError("the embedded log is not started")
        return self._conn

    def _load_topics(self) -> None:
        self._partitions = dict(self.conn.execute("SELECT name, partitions FROM topics").fetchall())

    # -- topics ----------------------------------------------------------------------------------------
    async def ensure_topics(self, specs: Sequence[TopicSpec]) -> None:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for spec in specs:
                row = conn.execute("SELECT partitions FROM topics WHERE name=?", (spec.name,)).fetchone()
                if row is not None and row[0] != spec.partitions:
                    raise BusError(
                        f"topic {spec.name!r} exists with {row[0]} partitions, not {spec.partitions}; "
                        "all topics share one partition count (use a fresh data dir to change it)"
                    )
                conn.execute(
                    "INSERT INTO topics (name, partitions, retention_ms) VALUES (?,?,?) "
                    "ON CONFLICT(name) DO UPDATE SET retention_ms=excluded.retention_ms",
                    # no retention, or one of 0 or less (Kafka's -1: keep for ever), keeps every record
                    (spec.name, spec.partitions, spec.retention_ms if (spec.retention_ms or 0) > 0 else None),
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO partitions (topic, partition) VALUES (?,?)",
                    [(spec.name, p) for p in range(spec.partitions)],
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolled a failed one back itself (a full disk): its error stands
                conn.execute("ROLLBACK")
            raise
        self._load_topics()

    async def partitions(self, topic: str) -> int:
        try:
            return self._partitions[topic]
        except KeyError:
            self._load_topics()
            if topic not in self._partitions:
                raise BusError(f"unknown topic {topic!r}") from None
            return self._partitions[topic]

    def topics(self) -> dict[str, int]:
        self._load_topics()
        return dict(self._partitions)

    # -- produce ---------------------------------------------------------------------------------------
    async def publish_many(self, records: Sequence[OutgoingRecord]) -> list[RecordMetadata]:
        if self.read_only:
            raise BusError("the embedded log is open read-only")
        if not records:
            return []
        conn = self.conn
        now_ms = int(time.time() * 1000)
        metas: list[RecordMetadata] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for rec in records:
                n = await self.partitions(rec.topic)
                if rec.partition is not None:
                    if not 0 <= rec.partition < n:
                        raise BusError(f"partition {rec.partition} out of range for {rec.topic!r} ({n})")
                    part = rec.partition
                else:
                    part = partition_for(rec.key, n) if rec.key is not None else 0
                (offset,) = conn.execute(
                    "UPDATE partitions SET next_offset = next_offset + 1 WHERE topic=? AND partition=? "
                    "RETURNING next_offset - 1",
                    (rec.topic, part),
                ).fetchone()
                conn.execute(
                    "INSERT INTO records (topic, partition, offset, key, value, headers, timestamp_ms) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (rec.topic, part, offset, rec.key, rec.value, pack_headers(rec.headers), now_ms),
                )
                metas.append(RecordMetadata(rec.topic, part, offset))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolled a failed one back itself (a full disk): its error stands
                conn.execute("ROLLBACK")
            raise
        self._new_data.set()
        return metas

    # -- read ------------------------------------------------------------------------------------------
    def read(self, tp: TopicPartition, from_offset: int, limit: int) -> list[Record]:
        rows = self.conn.execute(
            "SELECT offset, key, value, headers, timestamp_ms FROM records "
            "WHERE topic=? AND partition=? AND offset>=? ORDER BY offset LIMIT ?",
            (tp.topic, tp.partition, from_offset, limit),
        ).fetchall()
        return [
            Record(tp.topic, tp.partition, off, key, bytes(val), unpack_headers(hdr), ts)
            for off, key, val, hdr, ts in rows
        ]

    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp in tps:
            row = self.conn.execute(
                "SELECT next_offset FROM partitions WHERE topic=? AND partition=?", (tp.topic, tp.partition)
            ).fetchone()
            if row is None:
                raise BusError(f"unknown partition {tp.topic}[{tp.partition}]")
            out[tp] = int(row[0])
        return out

    async def identity(self) -> str:
        has_meta = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone() if has_meta else None
        if row is None:
            raise BusError(f"the embedded log {self.path} has no id yet (open it for writing once)")
        return f"sqlite:{row[0]}"

    async def read_all(self, topics: Sequence[str], *, from_offset: int = 0,
                       from_time_ms: int | None = None) -> list[Record]:
        out: list[Record] = []
        for topic in topics:
            for p in range(await self.partitions(topic)):
                tp = TopicPartition(topic, p)
                offset = max(from_offset, self.log_start_offset(tp))
                while records := self.read(tp, offset, 1000):
                    out += [r for r in records if from_time_ms is None or r.timestamp_ms >= from_time_ms]
                    offset = records[-1].offset + 1
        return out

    def count(self, topic: str) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM records WHERE topic=?", (topic,)).fetchone()[0])

    async def wait_for_data(self, timeout_s: float) -> None:
        self._new_data.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._new_data.wait(), timeout_s)

    # -- groups ----------------------------------------------------------------------------------------
    def consumer(self, group_id: str, topics: Sequence[str], *, opens: RecordFilter | None = None) -> Consumer:
        return EmbeddedConsumer(self, group_id, topics)

    def committed_offset(self, group_id: str, tp: TopicPartition) -> int | None:
        row = self.conn.execute(
            "SELECT next_offset FROM group_offsets WHERE group_id=? AND topic=? AND partition=?",
            (group_id, tp.topic, tp.partition),
        ).fetchone()
        return None if row is None else int(row[0])

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        if self.read_only:
            raise BusError("the embedded log is open read-only")
        self.conn.executemany(
            "INSERT INTO group_offsets (group_id, topic, partition, next_offset) VALUES (?,?,?,?) "
            "ON CONFLICT(group_id, topic, partition) DO UPDATE SET next_offset=excluded.next_offset",
            [(group_id, tp.topic, tp.partition, off) for tp, off in offsets.items()],
        )

    # -- retention -------------------------------------------------------------------------------------
    async def expire(self) -> int:
        return self.apply_retention()

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete records older than each topic's ``retention_ms``; returns how many were deleted."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        deleted = 0
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for name, retention in conn.execute(
                "SELECT name, retention_ms FROM topics WHERE retention_ms > 0"
            ).fetchall():
                cur = conn.execute(
                    "DELETE FROM records WHERE topic=? AND timestamp_ms < ?", (name, now_ms - retention)
                )
                deleted += cur.rowcount
                conn.execute(
                    "UPDATE partitions SET log_start_offset = COALESCE("
                    "(SELECT MIN(offset) FROM records r WHERE r.topic=partitions.topic "
                    "AND r.partition=partitions.partition), next_offset) WHERE topic=?",
                    (name,),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolled a failed one back itself (a full disk): its error stands
                conn.execute("ROLLBACK")
            raise
        return deleted

    def log_start_offset(self, tp: TopicPartition) -> int:
        row = self.conn.execute(
            "SELECT log_start_offset FROM partitions WHERE topic=? AND partition=?", (tp.topic, tp.partition)
        ).fetchone()
        return 0 if row is None else int(row[0])


class EmbeddedConsumer(Consumer):
    """The only member of its group in this process, so it is assigned every partition of its topics."""

    def __init__(self, log: EmbeddedLog, group_id: str, topics: Sequence[str]) -> None:
        self._log = log
        self.group_id = group_id
        self._topics = tuple(topics)
        self._positions: dict[TopicPartition, int] = {}
        self._started = False

    async def start(self) -> None:
        for topic in self._topics:
            for p in range(await self._log.partitions(topic)):
                tp = TopicPartition(topic, p)
                committed = self._log.committed_offset(self.group_id, tp)
                start = committed if committed is not None else 0
                self._positions[tp] = max(start, self._log.log_start_offset(tp))
        self._started = True

    async def stop(self) -> None:
        self._started = False

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._positions)

    def position(self, tp: TopicPartition) -> int:
        return self._positions[tp]

    async def poll(self, max_records: int = 500, timeout_s: float = 0.0) -> list[Record]:
        if not self._started:
            raise BusError("consumer is not started")
        batch = self._read(max_records)
        if not batch and timeout_s > 0:
            await self._log.wait_for_data(timeout_s)
            batch = self._read(max_records)
        return batch

    def _read(self, max_records: int) -> list[Record]:
        out: list[Record] = []
        for tp in sorted(self._positions):
            if len(out) >= max_records:
                break
            recs = self._log.read(tp, self._positions[tp], max_records - len(out))
            if recs:
                self._positions[tp] = recs[-1].offset + 1
                out.extend(recs)
        return out

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._log.commit_offsets(self.group_id, offsets)

    async def committed(self, tp: TopicPartition) -> int | None:
        return self._log.committed_offset(self.group_id, tp)

    async def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp not in self._positions:
            raise BusError(f"{tp} is not assigned to this consumer")
        self._positions[tp] = offset

    async def lags(self) -> dict[TopicPartition, int]:
        ends = await self._log.end_offsets(list(self._positions))
        return {tp: max(0, ends[tp] - pos) for tp, pos in self._positions.items()}


def default_log_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / "log.db"


WRITER_LOCK_WAIT_S = 1.0
"""How long a writer waits for the log's lock: a reader's probe or a state hash holds it shared for a moment."""


def _exclusive(lock: IO[bytes]) -> bool:
    """The exclusive lock on ``lock``, waiting up to ``WRITER_LOCK_WAIT_S`` (a pipeline that started at the instant
    a probe held it shared failed as if another process wrote the log)."""
    deadline = time.monotonic() + WRITER_LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


@contextmanager
def writers_kept_out(path: Path) -> Iterator[None]:
    """While the block runs, no process opens the embedded log ``path`` for writing (a shared lock on its lock
    file is held): what reads the shards one after another sees one state. Raises :func:`busy_log` when a writer
    has it now. A data dir with no lock file that cannot hold one (read-only, never written) is read as it is."""
    lock = path.with_name(path.name + ".lock")
    held: IO[bytes]
    try:
        held = lock.open("ab")
    except OSError:
        try:  # a data dir this process may only read: the existing lock file still takes a shared lock
            held = lock.open("rb")
        except OSError:  # no lock file: no writer ever ran here
            yield
            return
    with held:
        try:
            fcntl.flock(held.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy_log(path) from None
        try:
            yield
        finally:
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)


def writer_running(path: Path) -> bool:
    """Whether a process has the embedded log ``path`` open for writing now (its lock is held): a pipeline runs
    on the data dir."""
    if not path.with_name(path.name + ".lock").exists():
        return False
    try:
        with writers_kept_out(path):  # the same shared lock, held for no more than the question
            return False
    except BusError:
        return True


def busy_log(path: Path) -> BusError:
    """The refusal of a second writer process of the embedded log ``path``."""
    return BusError(f"the embedded log {path} is open for writing by another process (one writer process at a "
                    "time; readers may open it with read_only=True): stop it first, or send the request to it "
                    "(altm serve's HTTP API)")


def recent_values(path: Path) -> list[bytes]:
    """The value of the last record of each partition of an embedded log file (read-only, synchronous): whether
    its records are sealed shows in them."""
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [bytes(v) for (v,) in conn.execute(
            "SELECT r.value FROM partitions p JOIN records r ON r.topic = p.topic AND r.partition = p.partition "
            "AND r.offset = p.next_offset - 1")]
    finally:
        conn.close()


def log_topics(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Partition count and record count of every topic of an embedded log file (read-only, synchronous)."""
    if not path.exists():
        raise BusError(f"no embedded log at {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        topics = {str(k): int(v) for k, v in conn.execute("SELECT name, partitions FROM topics")}
        counts = {str(k): int(v) for k, v in conn.execute("SELECT topic, COUNT(*) FROM records GROUP BY topic")}
    finally:
        conn.close()
    return topics, {name: counts.get(name, 0) for name in topics}

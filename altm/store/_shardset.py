"""The shards of a data dir, one per partition (``shards/shard-NNNN.db``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from altm.store._reading import IdleReaders
from altm.store._shard import Shard


def shard_path(data_dir: Path, partition: int) -> Path:
    return data_dir / "shards" / f"shard-{partition:04d}.db"


def shard_files(data_dir: Path) -> list[tuple[int, Path]]:
    """(partition, path) of every shard file of a data dir, by partition."""
    out = []
    for path in (data_dir / "shards").glob("shard-*.db"):
        try:
            out.append((int(path.stem.removeprefix("shard-")), path))
        except ValueError:
            continue
    return sorted(out)


class ShardSet:
    def __init__(self, data_dir: str | Path, partitions: int, *, read_only: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.partitions = partitions
        self.read_only = read_only
        self._open: dict[int, Shard] = {}
        self._owner = threading.get_ident()  # the thread that writes its shards (see Shard)
        self._opening = threading.Lock()  # a reader thread may open a shard the owner opens too
        self._idle = IdleReaders()  # the idle read-only connections of all its shards, bounded together

    def get(self, partition: int) -> Shard:
        if not 0 <= partition < self.partitions:
            raise ValueError(f"partition {partition} out of range 0..{self.partitions - 1}")
        shard = self._open.get(partition)
        if shard is None:
            with self._opening:
                shard = self._open.get(partition)
                if shard is None:
                    shard = Shard(shard_path(self.data_dir, partition), partition, read_only=self.read_only,
                                  owner=self._owner, idle=self._idle).open()
                    self._open[partition] = shard
        return shard

    def existing(self) -> Iterator[Shard]:
        """Shards that exist on disk (read-only sets skip partitions that never received data)."""
        for p in range(self.partitions):
            if self.has(p):
                yield self.get(p)

    def has(self, partition: int) -> bool:
        """Whether the shard of ``partition`` is open or on disk (asking opens nothing)."""
        return partition in self._open or shard_path(self.data_dir, partition).exists()

    def drop(self, partition: int) -> list[str]:
        """Delete the shard of ``partition`` from disk (its file, write-ahead log and shared memory); returns
        the ids of the memories it held, for their vector points to go too."""
        if self.read_only:
            raise ValueError("a read-only shard set cannot drop a shard")
        path = shard_path(self.data_dir, partition)
        if not path.exists():
            return []
        shard = self.get(partition)
        ids = shard.memory_ids()
        shard.close()
        del self._open[partition]
        for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            leftover.unlink(missing_ok=True)
        return ids

    def settle(self) -> None:
        """On the owner thread: what readers held off in each open shard (a purge, a truncation of its
        write-ahead log) tried again now, without waiting (see :meth:`Shard.settle`)."""
        for shard in list(self._open.values()):
            shard.settle()

    def close(self) -> None:
        with self._opening:
            for shard in self._open.values():
                shard.close()
            self._open.clear()

"""The shards of a data dir, one per partition (``shards/shard-NNNN.db``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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

    def get(self, partition: int) -> Shard:
        if not 0 <= partition < self.partitions:
            raise ValueError(f"partition {partition} out of range 0..{self.partitions - 1}")
        shard = self._open.get(partition)
        if shard is None:
            shard = Shard(shard_path(self.data_dir, partition), partition, read_only=self.read_only).open()
            self._open[partition] = shard
        return shard

    def existing(self) -> Iterator[Shard]:
        """Shards that exist on disk (read-only sets skip partitions that never received data)."""
        for p in range(self.partitions):
            if p in self._open or shard_path(self.data_dir, p).exists():
                yield self.get(p)

    def close(self) -> None:
        for shard in self._open.values():
            shard.close()
        self._open.clear()

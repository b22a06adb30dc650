"""Stores: the SQLite shard (one per partition) and its row mapping."""

from ._reader import MemoryReader
from ._rows import MEMORY_COLUMNS, WALL_CLOCK_COLUMNS, comparable, memory_to_row, row_to_memory
from ._shard import Shard, ShardError
from ._shardset import ShardSet, shard_path

__all__ = [
    "MEMORY_COLUMNS",
    "WALL_CLOCK_COLUMNS",
    "MemoryReader",
    "Shard",
    "ShardError",
    "ShardSet",
    "comparable",
    "memory_to_row",
    "row_to_memory",
    "shard_path",
]

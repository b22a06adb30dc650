"""Stores: the SQLite shard (one per partition) and its row mapping."""

from altm.store._llm_cache import ShardLLMCache
from altm.store._reader import MemoryReader
from altm.store._rows import MEMORY_COLUMNS, WALL_CLOCK_COLUMNS, comparable, memory_to_row, row_to_memory
from altm.store._shard import Shard, ShardError
from altm.store._shardset import ShardSet, shard_path

__all__ = [
    "MEMORY_COLUMNS",
    "WALL_CLOCK_COLUMNS",
    "MemoryReader",
    "Shard",
    "ShardError",
    "ShardLLMCache",
    "ShardSet",
    "comparable",
    "memory_to_row",
    "row_to_memory",
    "shard_path",
]

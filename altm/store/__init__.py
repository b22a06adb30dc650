"""The store: one SQLite shard per partition (its transaction is the only way to mutate), the row mapping,
migrations, and the read queries of the processors, recall and the application."""

from altm.store._errors import ShardError, StoreUnavailable
from altm.store._inspection import InspectionQueries
from altm.store._llm_cache import ShardLLMCache
from altm.store._policy import ScopePolicy
from altm.store._queries import (
    GUARD_HOLD,
    CycleQueries,
    GovernanceQueries,
    MaintenanceQueries,
    MemoryQueries,
    OutcomeQueries,
    ProposalOutcome,
    ReviewQueries,
)
from altm.store._reader import MemoryReader, SceneMembers, SessionLine
from altm.store._reading import read_snapshot
from altm.store._rows import (
    MEMORY_COLUMNS,
    REVIEWED_COLUMNS,
    VERDICT_COLUMNS,
    WALL_CLOCK_COLUMNS,
    MemoryRow,
    carry_over,
    columns,
    comparable,
    memory_row,
    memory_to_row,
    row_to_memory,
)
from altm.store._search import CandidateRow, Edge, SearchQueries, SessionNeighbours
from altm.store._shard import OutboxRow, Shard
from altm.store._shardset import ShardSet, shard_files, shard_path
from altm.store._stats import (
    HASHED_TABLES,
    DataDirError,
    count_layer,
    erasure_rows,
    freshness_seconds,
    llm_cache_rows,
    shard_counts,
    source_times,
    state_rows,
)
from altm.store._text_index import index_form
from altm.store._tx import (
    MEMORY_ID,
    RESTORABLE_SIGNAL,
    AuditEntry,
    ShardTx,
    SignalTally,
    Tombstone,
    merged_attributes,
)
from altm.store._work import DeferredWork, WorkItem

__all__ = [
    "GUARD_HOLD",
    "HASHED_TABLES",
    "MEMORY_COLUMNS",
    "MEMORY_ID",
    "RESTORABLE_SIGNAL",
    "REVIEWED_COLUMNS",
    "VERDICT_COLUMNS",
    "WALL_CLOCK_COLUMNS",
    "AuditEntry",
    "CandidateRow",
    "CycleQueries",
    "DataDirError",
    "DeferredWork",
    "Edge",
    "GovernanceQueries",
    "InspectionQueries",
    "MaintenanceQueries",
    "MemoryQueries",
    "MemoryReader",
    "MemoryRow",
    "OutboxRow",
    "OutcomeQueries",
    "ProposalOutcome",
    "ReviewQueries",
    "SceneMembers",
    "ScopePolicy",
    "SearchQueries",
    "SessionLine",
    "SessionNeighbours",
    "Shard",
    "ShardError",
    "ShardLLMCache",
    "ShardSet",
    "ShardTx",
    "SignalTally",
    "StoreUnavailable",
    "Tombstone",
    "WorkItem",
    "carry_over",
    "columns",
    "comparable",
    "count_layer",
    "erasure_rows",
    "freshness_seconds",
    "index_form",
    "llm_cache_rows",
    "memory_row",
    "memory_to_row",
    "merged_attributes",
    "read_snapshot",
    "row_to_memory",
    "shard_counts",
    "shard_files",
    "shard_path",
    "source_times",
    "state_rows",
]

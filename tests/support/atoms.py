"""An L2 fact row made straight for a shard (store-level tests that need a memory without the pipeline)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from altm.core import Kind, Layer, Method, Scope
from altm.pipeline.processors._base import derived_memory
from altm.store import MemoryRow, Shard, memory_to_row

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
AT = datetime(2026, 1, 1, tzinfo=UTC)


def atom_row(text: str, *, scope: Scope = SCOPE, session: str = "s1", id_parts: Sequence[str] | None = None
             ) -> MemoryRow:
    """An extracted fact saying ``text`` (its id from ``id_parts``, by default ``["t", text]``)."""
    mem = derived_memory(scope=scope, session_id=session, layer=Layer.L2, kind=Kind.FACT, content=text,
                         evidence=[], processor="extract", method=Method.HEURISTIC,
                         id_parts=list(id_parts) if id_parts is not None else ["t", text], valid_from=AT)
    return memory_to_row(mem, AT)


def insert_atom(shard: Shard, text: str) -> str:
    """``text`` stored as a fact in ``shard`` (one writer transaction); its memory id."""
    row = atom_row(text)
    with shard.transaction() as tx:
        tx.insert_memory(row, at=AT.isoformat(), proposal_id=f"p-{text}", actor="extract")
    return str(row["memory_id"])

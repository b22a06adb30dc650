"""Small helpers for the SQL the store builds: placeholders, and ids split to fit one statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

_T = TypeVar("_T")


def marks(values: Sequence[object]) -> str:
    """One ``?`` per value, comma-separated."""
    return ", ".join("?" for _ in values)


def chunks(ids: Sequence[_T], size: int = 400) -> list[list[_T]]:
    """``ids`` in lists of at most ``size`` (SQLite bounds the parameters of one statement; small statements
    also keep a long erasure's steps short)."""
    return [list(ids[start:start + size]) for start in range(0, len(ids), size)]


CACHE_GET = "SELECT response FROM llm_cache WHERE home=? AND model=? AND prompt_hash=?"
"""An entry of a shard's model cache (model, key)."""
CACHE_PUT = ("INSERT OR IGNORE INTO llm_cache (model, prompt_hash, home, response, recorded_at, sources) "
             "VALUES (?,?,?,?,?,?)")
"""Keep an entry (model, key, home, response, recorded at, sources: a JSON list of the memory ids the prompt
held, or NULL); the first kept stays."""


SCENE_MEMBERS = (
    "WITH mentioning AS (SELECT m.memory_id, m.session_id, m.valid_from, ROW_NUMBER() OVER ("
    "PARTITION BY m.kind, m.content_hash ORDER BY m.valid_from, m.memory_id) AS nth FROM memories m "
    "JOIN graph_edges e ON e.src_id = m.memory_id AND e.edge_type='MENTIONS' AND e.rejected=0 "
    "WHERE e.dst_id=? AND m.layer='L2' AND m.lc_state != 'rejected' AND m.tenant_id=? AND m.workspace_id=? "
    "AND m.user_id=? AND m.agent_id=?) "
    "SELECT memory_id, session_id FROM mentioning WHERE nth=1 ORDER BY valid_from, memory_id")
"""The atoms a scene of a node is made from (bound to the node id and the agent's tenant, workspace, user and
agent): the agent's L2 atoms with a MENTIONS edge to it that no reviewer rejected, each content once (the first
of a kind and content hash in valid-from order), with their sessions; govern's and the write guard's one rule."""

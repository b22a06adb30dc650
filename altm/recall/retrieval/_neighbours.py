"""Conversational neighbours: the messages around a recalled message in its session.

An answer often sits a turn or two after the message that matches the question ("What genre is it?" —
"A mix of drama and romance"), and the message a recalled one answers sits just before it. This channel
takes the best fused L0 hits as seeds and proposes the messages right after and before each seed; each
inherits part of its seed's score (see ``_fusion.propagate``). The scope policy is applied to every
neighbour like to any other candidate.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

_SESSION_ORDER = ("SELECT memory_id FROM memories WHERE tenant_id = ? AND workspace_id = ? AND user_id = ? "
                  "AND agent_id = ? AND session_id IS ? AND layer = 'L0' "
                  "AND (valid_from, source_id, memory_id) {op} (?, ?, ?) "
                  "ORDER BY valid_from {order}, source_id {order}, memory_id {order} LIMIT ?")
_SEED_COLUMNS = "memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, valid_from, source_id, layer"


def neighbours(conn: sqlite3.Connection, seeds: Sequence[str], after: int, before: int
               ) -> dict[str, tuple[str, int]]:
    """Messages within ``after`` turns after and ``before`` turns before each L0 seed → (the best-ranked
    seed it neighbours, distance). Seeds themselves are not included."""
    if not seeds or (after <= 0 and before <= 0):
        return {}
    marks = ", ".join("?" for _ in seeds)
    rows = {r[0]: r for r in conn.execute(
        f"SELECT {_SEED_COLUMNS} FROM memories WHERE memory_id IN ({marks}) AND layer = 'L0'", list(seeds))}
    found: dict[str, tuple[int, int, str]] = {}
    for seed_rank, seed in enumerate(seeds):
        row = rows.get(seed)
        if row is None:
            continue
        keys = [*row[1:6], row[6], row[7], row[0]]
        for op, order, n in ((">", "ASC", after), ("<", "DESC", before)):
            if n <= 0:
                continue
            query = _SESSION_ORDER.format(op=op, order=order)
            for distance, (mid,) in enumerate(conn.execute(query, [*keys, n]), start=1):
                if mid not in found or (distance, seed_rank) < found[mid][:2]:
                    found[mid] = (distance, seed_rank, seed)
    seed_set = set(seeds)
    return {m: (seed, distance) for m, (distance, _, seed) in sorted(found.items(), key=lambda x: (x[1][:2], x[0]))
            if m not in seed_set}

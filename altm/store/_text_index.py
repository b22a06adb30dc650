"""The word and trigram indexes' queue: the triggers on ``memories`` queue what to index in ``index_pending``
(schema 21); :func:`apply_pending` writes the queue into both FTS5 indexes, in order, and empties it.

It runs inside every writing transaction, just before its commit (:meth:`altm.store.Shard.transaction`), so
readers never see the queue: what they search is what the triggers used to write statement by statement. The
point is the writer's savepoints: FTS5 writes its pending terms out as a new index segment at each savepoint of a
transaction it takes part in, and the writer opens one per proposal."""

from __future__ import annotations

import sqlite3

_APPLY = (
    # FTS5's hidden column (named as the table) takes 'delete' with the values the row was indexed with, or
    # NULL for an ordinary insert; the rows go in the order the triggers queued them (insert, then re-index)
    "INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms) "
    "SELECT command, row_id, content, context, scope_terms FROM index_pending WHERE target = 'words' ORDER BY seq",
    "INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) "
    "SELECT command, row_id, content FROM index_pending WHERE target = 'trigrams' ORDER BY seq",
    "DELETE FROM index_pending",
)


def apply_pending(conn: sqlite3.Connection) -> None:
    """Write the queued index changes into the word and trigram indexes (in the caller's transaction)."""
    if conn.execute("SELECT 1 FROM index_pending LIMIT 1").fetchone() is None:
        return
    for statement in _APPLY:
        conn.execute(statement)

"""The word and trigram indexes' queue: the triggers on ``memories`` queue what to index in ``index_pending``
(schema 21); :func:`apply_pending` writes the queue into both FTS5 indexes, in order, and empties it.

It runs inside every writing transaction, just before its commit (:meth:`altm.store.Shard.transaction`), so
readers never see the queue: what they search is what the triggers used to write statement by statement. The
point is the writer's savepoints: FTS5 writes its pending terms out as a new index segment at each savepoint of a
transaction it takes part in, and the writer opens one per proposal.

Both indexes hold the content's NFKC form (:func:`index_form`, schema 24): an identifier a Japanese or Chinese IME
typed fullwidth ("ＡＢ-１２３４５") is the same word and the same trigrams as its ASCII spelling, as the query side
already asks both. The tables keep their external content (``memories``), so what a reader gets back is the
message as stored; only the index sees the compatibility form, and a 'delete' passes the same form the row was
indexed with (the queue holds the raw values, each applied through the same function)."""

from __future__ import annotations

import sqlite3
import unicodedata

_APPLY = (
    # FTS5's hidden column (named as the table) takes 'delete' with the values the row was indexed with, or
    # NULL for an ordinary insert; the rows go in the order the triggers queued them (insert, then re-index)
    "INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms) "
    "SELECT command, row_id, index_form(content), index_form(context), scope_terms FROM index_pending "
    "WHERE target = 'words' ORDER BY seq",
    "INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) "
    "SELECT command, row_id, index_form(content) FROM index_pending WHERE target = 'trigrams' ORDER BY seq",
    "DELETE FROM index_pending",
)


def index_form(text: str | None) -> str | None:
    """What the word and trigram indexes hold of a text: its NFKC form (case and diacritics are the tokenizers'
    to fold). NFKC is stable for every assigned code point (Unicode's normalization stability policy), so a row
    is un-indexed with the form it was indexed with across Python upgrades."""
    return None if text is None else unicodedata.normalize("NFKC", text)


def register_index_form(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the ``index_form`` SQL function that :func:`apply_pending` and migration 24 call."""
    conn.create_function("index_form", 1, index_form, deterministic=True)


def apply_pending(conn: sqlite3.Connection) -> None:
    """Write the queued index changes into the word and trigram indexes (in the caller's transaction)."""
    if conn.execute("SELECT 1 FROM index_pending LIMIT 1").fetchone() is None:
        return
    for statement in _APPLY:
        conn.execute(statement)

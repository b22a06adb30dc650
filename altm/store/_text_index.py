"""The word and trigram indexes' queue: the triggers on ``memories`` queue what to index in ``index_pending``
(schema 21); :func:`apply_pending` writes the queue into both FTS5 indexes, in order, and empties it.

It runs inside every writing transaction, just before its commit (:meth:`altm.store.Shard.transaction`), so
readers never see the queue: what they search is what the triggers used to write statement by statement. The
point is the writer's savepoints: FTS5 writes its pending terms out as a new index segment at each savepoint of a
transaction it takes part in, and the writer opens one per proposal.

Both indexes hold the content's :func:`index_form` (schema 24): NFKC, casefolded, format characters removed, as
``normalise_text`` identifies text. An identifier a Japanese or Chinese IME typed fullwidth ("ＡＢ-１２３４５") is
the same word and the same trigrams as its ASCII spelling, "Straße" is "strasse" as the query's casefolded word
asks it, and a soft hyphen inside a word does not split it. The word index keeps combining marks inside its
tokens (unicode61 ``categories 'L* N* Co M*'``): a word of Devanagari or Tamil, whose vowel signs and viramas
are marks, is one token. The tables keep their external content (``memories``), so what a reader gets back is
the message as stored; only the index sees the form, and a 'delete' passes the same form the row was indexed
with: the queue holds the raw values, each applied through the same function, and the shard records the Unicode
version its indexes were built with (:func:`index_again_if_unicode_changed`): a Python whose Unicode database
differs indexes every row again before it writes (a code point the older one did not assign may normalise
otherwise now, and an erased row's terms would have stayed)."""

from __future__ import annotations

import sqlite3
import unicodedata

from altm.core.ids import strip_format

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
_INDEX_AGAIN = (
    "DELETE FROM index_pending",  # what it queued is in the rows, indexed below
    "INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')",
    "INSERT INTO memories_fts (rowid, content, context, scope_terms) "
    "SELECT rowid, index_form(content), index_form(context), scope_terms FROM memories",
    "INSERT INTO memories_fts_tri (memories_fts_tri) VALUES ('delete-all')",
    "INSERT INTO memories_fts_tri (rowid, content) SELECT rowid, index_form(content) FROM memories",
)
UNICODE_KEY = "text_index_unicode"
"""The ``shard_meta`` key holding the Unicode version of the Python that built the text indexes."""


def index_form(text: str | None) -> str | None:
    """What the word and trigram indexes hold of a text, and what a query asks them in: NFKC, casefolded, format
    characters removed (the tokenizers fold diacritics and split words)."""
    if text is None:
        return None
    return strip_format(unicodedata.normalize("NFKC", text).casefold())


def register_index_form(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the ``index_form`` SQL function that :func:`apply_pending` and a re-index call."""
    conn.create_function("index_form", 1, index_form, deterministic=True)


def apply_pending(conn: sqlite3.Connection) -> None:
    """Write the queued index changes into the word and trigram indexes (in the caller's transaction)."""
    if conn.execute("SELECT 1 FROM index_pending LIMIT 1").fetchone() is None:
        return
    for statement in _APPLY:
        conn.execute(statement)


def index_again_if_unicode_changed(conn: sqlite3.Connection) -> bool:
    """When the indexes were built with another Unicode version than this Python's (or none is recorded: a shard
    migrated to schema 24 just now), index every row again and record this one (in the caller's transaction);
    whether it did."""
    found = conn.execute("SELECT value FROM shard_meta WHERE key = ?", (UNICODE_KEY,)).fetchone()
    version = unicodedata.unidata_version
    if found is not None and found[0] == version:
        return False
    for statement in _INDEX_AGAIN:
        conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO shard_meta (key, value) VALUES (?, ?)", (UNICODE_KEY, version))
    return True

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
version its indexes were built with (:func:`index_again_if_built_otherwise`): a Python whose Unicode database
differs indexes every row again before it writes (a code point the older one did not assign may normalise
otherwise now, and an erased row's terms would have stayed)."""

from __future__ import annotations

import hashlib
import sqlite3
import unicodedata

from altm.core.ids import strip_format

_APPLY = (
    # FTS5's hidden column (named as the table) takes 'delete' with the values the row was indexed with, or
    # NULL for an ordinary insert; the rows go in the order the triggers queued them (insert, then re-index)
    "INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms) "
    "SELECT command, row_id, index_form(content), index_form(context), scope_terms FROM index_pending "
    "WHERE target = 'words' ORDER BY seq",
    "INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content, scope_terms) "
    "SELECT command, row_id, index_form(content), home_code(scope_terms) FROM index_pending "
    "WHERE target = 'trigrams' ORDER BY seq",
    "DELETE FROM index_pending",
)
_INDEX_AGAIN = (
    "DELETE FROM index_pending",  # what it queued is in the rows, indexed below
    "INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')",
    "INSERT INTO memories_fts (rowid, content, context, scope_terms) "
    "SELECT rowid, index_form(content), index_form(context), scope_terms FROM memories",
    "INSERT INTO memories_fts_tri (memories_fts_tri) VALUES ('delete-all')",
    "INSERT INTO memories_fts_tri (rowid, content, scope_terms) "
    "SELECT rowid, index_form(content), home_code(scope_terms) FROM memories",
)
BUILT_WITH_KEY = "text_index_unicode"  # (named when it held the Unicode version alone)
"""The ``shard_meta`` key holding what the text indexes were built with (:func:`built_with`)."""


FORM = "3"
"""The version of :func:`index_form`'s rule, recorded with the Unicode and SQLite versions the indexes were built
with (:func:`built_with`): a change of any of them indexes every row again."""


def index_form(text: str | None) -> str | None:
    """What the word and trigram indexes hold of a text, and what a query asks them in: NFKC, casefolded, format
    characters removed (the tokenizers fold diacritics and split words). A symbol NFKC writes out in letters or
    digits ("™" as "TM", "№" as "No", "㎏" as "kg") stays a word of its own: "Acme™" is "acme tm", as the
    tokenizer split it at the sign before, not one token "acmetm"."""
    if text is None:
        return None
    if text.isascii():
        return text.casefold()
    return strip_format(unicodedata.normalize("NFKC", _symbols_apart(text)).casefold())


def _symbols_apart(text: str) -> str:
    """``text`` with a space on each side of every symbol (Unicode categories S*) that NFKC writes otherwise."""
    out: list[str] = []
    for ch in text:
        if not ch.isascii() and unicodedata.category(ch)[0] == "S" and unicodedata.normalize("NFKC", ch) != ch:
            out.append(f" {ch} ")
        else:
            out.append(ch)
    return "".join(out)


HOME_CODE_HEX = 12
"""Hex digits of a home's code in the trigram index (48 bits: two homes of one shard that share one only cost)."""


def home_code(scope_terms: str | None) -> str | None:
    """What the trigram index holds of a row's scope (schema 29): a code of its home (tenant/workspace/user),
    the same length for every row. bm25 sizes a row over all its columns: the home's hex (and the agent's and
    session's after it) made a row whose ids are long rank below one whose ids are short, where a code of one
    length adds as much to every row. ``scope_terms`` starts with the home's token (``h`` and its hex)."""
    if scope_terms is None:
        return None
    home = scope_terms.split(" ", 1)[0].lower()  # SQLite's hex() is uppercase, Python's lowercase
    return "h" + hashlib.blake2b(home.encode("ascii", "replace"), digest_size=HOME_CODE_HEX // 2).hexdigest()


def built_with() -> str:
    """What the text indexes of a shard opened here are built with: the rule, Unicode's and SQLite's versions
    (the tokenizers' tables are SQLite's)."""
    return f"form {FORM}; unicode {unicodedata.unidata_version}; sqlite {sqlite3.sqlite_version}"


def register_index_form(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the ``index_form`` and ``home_code`` SQL functions that :func:`apply_pending` and a re-index
    call."""
    conn.create_function("index_form", 1, index_form, deterministic=True)
    conn.create_function("home_code", 1, home_code, deterministic=True)


def apply_pending(conn: sqlite3.Connection) -> None:
    """Write the queued index changes into the word and trigram indexes (in the caller's transaction)."""
    if conn.execute("SELECT 1 FROM index_pending LIMIT 1").fetchone() is None:
        return
    for statement in _APPLY:
        conn.execute(statement)


def indexes_current(conn: sqlite3.Connection) -> bool:
    """Whether the text indexes need nothing: built as this process builds them (:func:`built_with`) and no
    queued change waiting (read outside a transaction: a shard opened behind another connection's write does not
    wait for its lock when there is nothing to do)."""
    return _recorded(conn) == built_with() and conn.execute("SELECT 1 FROM index_pending LIMIT 1").fetchone() is None


def index_again_if_built_otherwise(conn: sqlite3.Connection) -> bool:
    """When the indexes were built otherwise than this process builds them (another rule, Unicode or SQLite
    version; or none is recorded: a shard migrated to schema 24 just now), index every row again and record how
    (in the caller's transaction); whether it did."""
    built = built_with()
    if _recorded(conn) == built:
        return False
    for statement in _INDEX_AGAIN:
        conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO shard_meta (key, value) VALUES (?, ?)", (BUILT_WITH_KEY, built))
    return True


def _recorded(conn: sqlite3.Connection) -> str | None:
    """What the shard records its text indexes were built with, or None."""
    found = conn.execute("SELECT value FROM shard_meta WHERE key = ?", (BUILT_WITH_KEY,)).fetchone()
    return None if found is None else str(found[0])

"""A message indexed by one Python is un-indexed by the next in another form: after an upgrade, erasing it leaves
its words and trigrams in both indexes, under a row that no longer exists.

Finding: both indexes hold ``unicodedata.normalize("NFKC", text)`` as the running Python's Unicode database
computes it (``index_form``, altm/store/_text_index.py:33-37), and a row is un-indexed by passing FTS5 a 'delete'
with the form computed *now* from the stored content (_text_index.py:21-28: ``index_form(content)`` of the queued
old values). FTS5 removes exactly the terms it is given; terms it is not given stay. The docstring's premise —
"NFKC is stable for every assigned code point ... so a row is un-indexed with the form it was indexed with
across Python upgrades" — does not hold for user text, which may hold code points the older Python's database
did not assign: NFKC leaves those alone, and once a newer Unicode assigns them with a compatibility decomposition,
the same text normalises differently. Python 3.11 (the Dockerfile's image, Unicode 14.0) leaves the Cyrillic
modifier letters U+1E030..U+1E06D alone; Python 3.12 (Unicode 15.0) maps them to Cyrillic letters; 3.14
(Unicode 16.0) maps the outlined Latin letters and digits U+1CCD6..U+1CCF9 to A-Z and 0-9 (``requires-python =
">=3.11"``). Nothing records which Unicode version a shard was indexed with (migration 24 re-indexes once, keyed by
the schema version only). So a message written in "fancy text" (superscript letters, as generators for social
media produce) before an upgrade and erased after it keeps its words in the shard's index segments: ``Shard.purge``
(altm/store/_shard.py:196-201) merges the segments, but the stale entries are live entries to FTS5 (its
integrity check passes), and they name the erased row's rowid, which the next memory inserted may reuse.

Reproduction: the only other Unicode database a Python ships is ``unicodedata.ucd_3_2_0``; it stands for the
older Python here (``ᵃ``, ``ᵇ``, ``ᵉ``, ``ᶻ``, U+1D43..U+1DBB, were assigned after 3.2, as U+1E030.. were after
14.0). Index a message naming a locker code in superscript letters under it, then, under the running Python,
delete it as an erasure does and purge the shard; list what both indexes still hold for the erased row.

Expected: an upgrade never leaves an erased row's terms behind: the shard records the Unicode version its indexes
were built with and indexes again (as migration 24 does) when it differs, or the index form is pinned to one
Unicode version (e.g. leave alone every code point the pinned database does not assign), or the form indexed is
kept with the row; after the erasure neither index holds a term of the erased row.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from altm.core import Kind, Layer, Method, Scope
from altm.pipeline.processors._base import derived_memory
from altm.store import MemoryRow, Shard, _text_index, memory_to_row

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
AT = datetime(2026, 1, 1, tzinfo=UTC)
FANCY = "My locker code is \u1dbb\u1d49\u1d47\u02b3\u1d43-4471, the blue door."  # "ᶻᵉᵇʳᵃ-4471"


def _message(text: str) -> MemoryRow:
    mem = derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L0, kind=Kind.MESSAGE, content=text,
                         evidence=[], processor="ingest", method=Method.HEURISTIC, id_parts=["t", text],
                         valid_from=AT)
    return memory_to_row(mem, AT)


def _terms_of(path: Path, rowid: int) -> dict[str, list[str]]:
    """The terms each index holds for ``rowid``."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        out: dict[str, list[str]] = {}
        for table in ("memories_fts", "memories_fts_tri"):
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, instance)")
            out[table] = sorted({str(r[0]) for r in conn.execute(f"SELECT term FROM temp.v_{table} WHERE doc = ?",
                                                                   (rowid,))})
        return out
    finally:
        conn.close()


def test_an_erasure_after_a_unicode_upgrade_leaves_no_term_of_the_erased_row(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert unicodedata.ucd_3_2_0.normalize("NFKC", FANCY) != unicodedata.normalize("NFKC", FANCY)
    path = tmp_path / "s.db"
    row = _message(FANCY)
    with monkeypatch.context() as older_python:  # the shard as the Python before the upgrade indexed it
        older_python.setattr(_text_index, "unicodedata", SimpleNamespace(
            normalize=unicodedata.ucd_3_2_0.normalize, category=unicodedata.ucd_3_2_0.category,
            unidata_version=unicodedata.ucd_3_2_0.unidata_version))
        shard = Shard(path, 0).open()
        with shard.transaction() as tx:
            tx.insert_memory(row, at=AT.isoformat(), proposal_id="p-in", actor="ingest")
        rowid = int(shard._db.execute("SELECT rowid FROM memories WHERE memory_id = ?",
                                      (row["memory_id"],)).fetchone()[0])
        shard.close()
    assert _terms_of(path, rowid)["memories_fts"]  # indexed

    shard = Shard(path, 0).open()  # the upgraded Python: same schema version, no migration
    try:
        with shard.transaction() as tx:
            tx.delete_memory(row, at=AT.isoformat(), proposal_id="p-erase", actor="erase")
        shard.purge()
        assert shard._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 0
    finally:
        shard.close()
    # actual: {'memories_fts': ['ᶻᵉᵇrᵃ'], 'memories_fts_tri': [' ᶻᵉ', 'rᵃ-', 's ᶻ', 'ᵃ-4', 'ᵇrᵃ', 'ᵉᵇr', ...]}
    left = _terms_of(path, rowid)
    assert left == {"memories_fts": [], "memories_fts_tri": []}, left

"""Review rt27 of df8814b (schema 29): the trigram channel ranks with ``bm25(memories_fts_tri, 1.0, 0.0)``. The
weight 0 keeps the home phrase from scoring, but FTS5's bm25 normalises by the row's token count over *all*
columns (``xColumnSize(-1)``) and by the table's average over all columns: each row's ``scope_terms`` (the hex of
tenant/workspace/user, agent and session: some 60-200 trigrams, more than most contents hold) now counts as part
of its length. The channel's preference for the denser match is diluted, and rows rank by the length of their
session or agent id: here a 7-character memory that is exactly the identifier asked for, in a session named by
a UUID, falls below a longer one from session "s1", where a content-only index (version 28's) ranked it first.

Expected: the trigram channel's order depends on the contents, not on how long a row's ids are (e.g. keep the
scope in a separate FTS5 table/column that bm25 does not size: a ``columnsize=0`` table plus a custom rank, or
score by the content column's size via ``fts5vocab``/``xColumnSize(0)`` in a rank function).

Now the trigram index holds a code of the home of one length for every row (``home_code``), so what it adds
to a row's size is the same for all."""

from __future__ import annotations

from pathlib import Path

from altm.core import Scope
from altm.store import MemoryRow, ScopePolicy, SearchQueries, Shard
from tests.support.atoms import AT, atom_row

SCOPE = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="coder")


def _atom(text: str, session: str) -> MemoryRow:
    return atom_row(text, scope=SCOPE, session=session, id_parts=[session, text])


def test_the_trigram_order_does_not_depend_on_the_length_of_a_session_id(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    exact = _atom("abc-123", "4f1c2a9e-8d7b-4c3a-9e2f-1b6d5a7c8e90")  # a host that names sessions by UUID
    longer = _atom("the abc-123 key rotated", "s1")
    try:
        with shard.transaction() as tx:
            for row in (exact, longer):
                tx.insert_memory(row, at=AT.isoformat(), proposal_id=f"p-{row['memory_id']}", actor="extract")
        conn = shard._db
        conn.execute("CREATE VIRTUAL TABLE temp.content_only USING fts5 (content, tokenize='trigram')")
        conn.execute("INSERT INTO temp.content_only (rowid, content) SELECT rowid, index_form(content) FROM memories")
        before = [r[0] for r in conn.execute(
            "SELECT m.memory_id FROM temp.content_only t JOIN memories m ON m.rowid = t.rowid "
            "WHERE content_only MATCH '\"abc-123\"' ORDER BY bm25(content_only), m.memory_id")]
        now = [m for m, _ in SearchQueries(shard).trigrams(["abc-123"], ScopePolicy(SCOPE, None), 10)]
        assert before == [exact["memory_id"], longer["memory_id"]]  # version 28: the exact match first
        assert now == before, "the row whose session id is longer now ranks below the longer content"
    finally:
        shard.close()

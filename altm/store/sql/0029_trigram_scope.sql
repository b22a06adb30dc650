-- Version 29: the trigram index holds a code of each memory's home beside its content, and a substring search
-- matches the reader's home inside the index. The index had the content alone, so FTS5 found, bm25-scored and
-- sorted every row of the shard holding the substring, and the join to memories dropped the other tenants' rows
-- afterwards: a small user's recall paid for every other user of its shard (30 memories beside 32,000: a
-- trigram step of 20.8 ms). The table is made again with the column and filled again by the migrating process
-- (the text indexes' record in shard_meta is dropped, as version 24 did); its triggers queue scope_terms with
-- the content, and a change of scope indexes the row again, as the word index's trigger does.
DROP TABLE memories_fts_tri;
CREATE VIRTUAL TABLE memories_fts_tri USING fts5 (
    content, scope_terms, content='memories', content_rowid='rowid', tokenize='trigram'
);
DELETE FROM shard_meta WHERE key = 'text_index_unicode';

DROP TRIGGER memories_fts_ai;
DROP TRIGGER memories_fts_ad;
DROP TRIGGER memories_fts_tri_au;

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', NULL, new.rowid, new.content, new.context, new.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content, scope_terms)
        VALUES ('trigrams', NULL, new.rowid, new.content, new.scope_terms);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', 'delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content, scope_terms)
        VALUES ('trigrams', 'delete', old.rowid, old.content, old.scope_terms);
END;
CREATE TRIGGER memories_fts_tri_au AFTER UPDATE OF content, tenant_id, workspace_id, user_id, agent_id, session_id,
    layer ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, scope_terms)
        VALUES ('trigrams', 'delete', old.rowid, old.content, old.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content, scope_terms)
        VALUES ('trigrams', NULL, new.rowid, new.content, new.scope_terms);
END;

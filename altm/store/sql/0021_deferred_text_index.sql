-- Version 21: the word and trigram indexes are written once per writer transaction, not by each statement.
-- The triggers queue what to index (or un-index, with the values the row was indexed with) in index_pending,
-- in order; the transaction applies the queue to both indexes just before it commits and empties it, so a
-- reader never sees the queue and the indexes hold exactly what the triggers wrote into them before.
-- Why: the writer applies each proposal in a savepoint, and FTS5 writes its pending terms out as a new index
-- segment at every savepoint of a transaction it is part of: a segment (and later merges) per proposal, about
-- 130 us each, a seventh of the writer's time.
CREATE TABLE index_pending (
    seq INTEGER PRIMARY KEY,
    target TEXT NOT NULL CHECK (target IN ('words', 'trigrams')),
    command TEXT CHECK (command IS NULL OR command = 'delete'),  -- NULL: index the row
    row_id INTEGER NOT NULL,
    content TEXT,
    context TEXT,
    scope_terms TEXT
);

DROP TRIGGER memories_fts_ai;
DROP TRIGGER memories_fts_ad;
DROP TRIGGER memories_fts_au;
DROP TRIGGER memories_fts_tri_au;

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', NULL, new.rowid, new.content, new.context, new.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content) VALUES ('trigrams', NULL, new.rowid, new.content);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', 'delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content)
        VALUES ('trigrams', 'delete', old.rowid, old.content);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, context, tenant_id, workspace_id, user_id, agent_id,
    session_id, layer ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', 'delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO index_pending (target, command, row_id, content, context, scope_terms)
        VALUES ('words', NULL, new.rowid, new.content, new.context, new.scope_terms);
END;
CREATE TRIGGER memories_fts_tri_au AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO index_pending (target, command, row_id, content)
        VALUES ('trigrams', 'delete', old.rowid, old.content);
    INSERT INTO index_pending (target, command, row_id, content) VALUES ('trigrams', NULL, new.rowid, new.content);
END;

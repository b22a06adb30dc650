-- Version 11: the trigram index holds only a memory's content, so only a change of the content re-indexes it.
-- Before, any change of the word index's columns (a message's conversational context, relinked when the
-- message before it arrives late) deleted and re-inserted the row in both indexes: about half the cost of
-- that update was the trigram index rewriting text that had not changed.
DROP TRIGGER memories_fts_au;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, context, tenant_id, workspace_id, user_id, agent_id,
    session_id, layer ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms)
        VALUES ('delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO memories_fts (rowid, content, context, scope_terms)
        VALUES (new.rowid, new.content, new.context, new.scope_terms);
END;
CREATE TRIGGER memories_fts_tri_au AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO memories_fts_tri (rowid, content) VALUES (new.rowid, new.content);
END;

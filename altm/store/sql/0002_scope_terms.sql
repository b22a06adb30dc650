-- Version 2: the word index filters by the full scope policy, and graph fan-out reads edges in rank order.
--
-- scope_terms holds one token per scope part (hex, so each is one word to the tokenizer):
--   h<home> a<agent> s<session> l<layer>
-- A word query ANDs the policy's groups over these tokens (see altm.recall.retrieval._policy), so bm25
-- only scores memories the scope policy can admit; before, it scored every match in the user's home (the
-- other agents' memories and other sessions' messages too) and SQL dropped most of them afterwards.
ALTER TABLE memories ADD COLUMN scope_terms TEXT GENERATED ALWAYS AS (
    'h' || hex(tenant_id || '/' || workspace_id || '/' || user_id) || ' a' || hex(agent_id)
    || ' s' || hex(coalesce(session_id, '')) || ' l' || lower(layer)
) VIRTUAL;

DROP TRIGGER memories_fts_ai;
DROP TRIGGER memories_fts_ad;
DROP TRIGGER memories_fts_au;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, context, scope_terms, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, context, scope_terms)
        VALUES (new.rowid, new.content, new.context, new.scope_terms);
    INSERT INTO memories_fts_tri (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms)
        VALUES ('delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, context, tenant_id, workspace_id, user_id, agent_id,
    session_id, layer ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms)
        VALUES ('delete', old.rowid, old.content, old.context, old.scope_terms);
    INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO memories_fts (rowid, content, context, scope_terms)
        VALUES (new.rowid, new.content, new.context, new.scope_terms);
    INSERT INTO memories_fts_tri (rowid, content) VALUES (new.rowid, new.content);
END;

-- graph fan-out: the strongest edges of a node without sorting all of a hub's edges
CREATE INDEX graph_edges_src_rank ON graph_edges (src_id, (weight * confidence) DESC, edge_id);
CREATE INDEX graph_edges_dst_rank ON graph_edges (dst_id, (weight * confidence) DESC, edge_id);

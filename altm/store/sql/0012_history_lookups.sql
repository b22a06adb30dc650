-- Version 12: the per-memory lookups of the writer and the deriving stages get indexes of their own, so their
-- cost does not grow with the user's history. Before, SQLite answered each through the agent's or the user's
-- whole history (the scope index): the guard's anti-pattern lookup (every derived memory), verify's subject
-- lookup and govern's facet lookup (with json_extract on every row) were linear in the history, so a long
-- history was quadratic to derive. Govern's exact-duplicate lookup is told to use the content-hash index
-- (the query names it).
CREATE INDEX memories_anti_patterns ON memories (tenant_id, workspace_id, user_id, agent_id)
    WHERE kind = 'anti_pattern';
CREATE INDEX memories_facet_key ON memories (tenant_id, workspace_id, user_id, layer,
    json_extract(attributes, '$.facet_key')) WHERE json_extract(attributes, '$.facet_key') IS NOT NULL;
CREATE INDEX memories_subject ON memories (tenant_id, workspace_id, user_id, agent_id, layer,
    json_extract(attributes, '$.subject')) WHERE json_extract(attributes, '$.subject') IS NOT NULL;

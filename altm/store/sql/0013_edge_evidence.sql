-- Version 13: a graph edge's evidence in a table of its own, one row per (edge, memory). An edge's evidence is
-- the union of every memory that ever linked its ends: a CO_OCCURS edge between two people of a long history
-- gains one at nearly every turn, and the JSON list in the edge's row was read, extended and written whole at
-- each addition (4,000 turns of one user naming the same three people: the writer's time grew 8.7 times for
-- 4 times the turns). An addition is now one row; the edge keeps the count (its weight is unit weight x count),
-- and a forget or an erasure finds the edges a memory is evidence of through the index instead of reading
-- every edge of the user.
CREATE TABLE graph_edge_evidence (
    edge_id   TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (edge_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX graph_edge_evidence_memory ON graph_edge_evidence (memory_id);
INSERT OR IGNORE INTO graph_edge_evidence (edge_id, memory_id)
    SELECT g.edge_id, e.value FROM graph_edges g,
        json_each(CASE WHEN json_valid(g.evidence) AND json_type(g.evidence) = 'array' THEN g.evidence ELSE '[]' END) e
    WHERE e.type = 'text';
ALTER TABLE graph_edges ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 0;
UPDATE graph_edges SET evidence_count = (
    SELECT COUNT(*) FROM graph_edge_evidence v WHERE v.edge_id = graph_edges.edge_id);
ALTER TABLE graph_edges DROP COLUMN evidence;
CREATE TRIGGER graph_edges_evidence_gone AFTER DELETE ON graph_edges BEGIN
    DELETE FROM graph_edge_evidence WHERE edge_id = OLD.edge_id;
END;

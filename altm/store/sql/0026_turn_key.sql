-- Version 26: each memory keeps its place among the messages of its time (turn_key: its turn id in natural order,
-- then its role's rank; see altm.store._conversation), and a session's messages are read in conversation order
-- through an index on it. The order was computed in Python from every message of the anchor's time: a host that
-- dates a whole session with one time made each neighbour lookup (recall's conversational neighbours, and the
-- writer's, for every message it stored) read and sort the whole session. Filled here by the migrating process
-- (turn_key_of, the function the writer computes it with).
ALTER TABLE memories ADD COLUMN turn_key TEXT;
UPDATE memories SET turn_key = turn_key_of(attributes, source_id, role);
DROP INDEX memories_conversation;
CREATE INDEX memories_conversation ON memories (tenant_id, workspace_id, user_id, agent_id, session_id, layer,
                                                valid_from, turn_key, memory_id);
-- a user's memories in the order a listing pages them: its first page reads a page, not the whole history. Partial
-- on a condition only the listing states (every row has a turn_key), so no other query of a user's memories in
-- time order takes it instead of its own index.
CREATE INDEX memories_listing ON memories (tenant_id, workspace_id, user_id, valid_from, turn_key, memory_id)
    WHERE turn_key IS NOT NULL;

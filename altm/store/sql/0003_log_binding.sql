-- Version 3: a shard records which log its stored offsets belong to (bus identity), so no command can
-- apply a different log's records against them (offsets of another log mean nothing here).
-- Runtime cycles are writer-owned from now on (they arrive as control events, so a replay rebuilds them);
-- their bundles (quoted memory text) are not kept in the shard any more.
CREATE TABLE shard_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
UPDATE runtime_cycles SET bundle = NULL;

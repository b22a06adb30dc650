-- Version 8: freshness. A memory keeps the publish time of the turn it comes from (ms since the epoch, from the
-- record's altm-source-ms header); with recorded_at (when the writer stored it: word-searchable for L0, derived
-- for L1-L4) it gives how long the pipeline took. Operational, like recorded_at: not in the state hash, not
-- carried by updates (the first storage counts). NULL: unknown (rows from before this version, or a record
-- without the header).
ALTER TABLE memories ADD COLUMN source_ms INTEGER;
CREATE INDEX memories_freshness ON memories (layer, recorded_at) WHERE source_ms IS NOT NULL;
-- Deferred work keeps its record's headers and timestamp, so a retried record keeps its source turn's publish
-- time (freshness would otherwise leave out exactly the records that waited) and its trace context.
ALTER TABLE deferred_work ADD COLUMN headers BLOB;
ALTER TABLE deferred_work ADD COLUMN timestamp_ms INTEGER NOT NULL DEFAULT 0;

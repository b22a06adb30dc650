-- Version 14: a tombstone names the erasure that made it (the erase proposal's id; NULL for a forget's, a
-- carried one from the log, and those written before this version), and a replay from the log's start carries
-- it pending: it refuses nothing until the replay applies that erasure again, as the source's refused nothing
-- before the erasure was made (content said before it, in another session, was admitted there).
ALTER TABLE tombstones ADD COLUMN erasure_id TEXT;
ALTER TABLE tombstones ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tombstones_pending ON tombstones (erasure_id) WHERE pending = 1;

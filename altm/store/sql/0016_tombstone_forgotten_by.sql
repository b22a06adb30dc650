-- Version 16: a tombstone a retention pass made names that pass (``forgotten_by``: ``event_ref`` of its control
-- event's id, the ref its record carries in the clear; NULL for an
-- erasure's own and those written before this version) and keeps the forget's reason (``forgotten_reason``)
-- when an erasure takes the tombstone over (its ``reason`` becomes the erasure's). A replay
-- from the log's start that meets that control event shredded (an erasure of its agent destroyed its key, so
-- the replay never forgets what it forgot) makes the pending tombstones it names refuse from there on, as the
-- source's did from the forget to the erasure.
ALTER TABLE tombstones ADD COLUMN forgotten_by TEXT;
ALTER TABLE tombstones ADD COLUMN forgotten_reason TEXT;
CREATE INDEX tombstones_forgotten_by ON tombstones (forgotten_by) WHERE pending = 1;

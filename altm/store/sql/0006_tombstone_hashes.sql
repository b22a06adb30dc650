-- Version 6: a tombstone keeps no erased text. It keeps the erased memory's id and layer, a hash of its words in
-- order, and keyed hashes of its shingles (pairs of consecutive words; HMAC-SHA256 with a key per user, in
-- guard_keys): what the write guard's matching needs. Tombstones written before this version still hold
-- normalised_text and a plain hash; the writer replaces both by keyed hashes when it starts.
ALTER TABLE tombstones ADD COLUMN memory_id TEXT;
ALTER TABLE tombstones ADD COLUMN shingle_hashes TEXT;
ALTER TABLE tombstones ADD COLUMN layer TEXT;  -- of the erased memory (NULL: written before version 6)
-- 1 when the erased text is specific enough that an exact re-send is the erased content coming back, not a
-- new message that happens to say the same ("Thanks!"); NULL (before version 6) counts as 1
ALTER TABLE tombstones ADD COLUMN distinctive INTEGER;
CREATE INDEX tombstones_memory ON tombstones (memory_id);
CREATE TABLE guard_keys (
    home TEXT PRIMARY KEY,  -- tenant/workspace/user
    key  BLOB NOT NULL
);

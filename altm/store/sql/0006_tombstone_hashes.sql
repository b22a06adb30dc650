-- Version 6: a tombstone keeps no erased text. It keeps the erased memory's id and layer, the hash of its normalised
-- text (as before) and keyed hashes of its tokens (HMAC-SHA256 with a key per user, in guard_keys), which is
-- what the write guard's matching needs. Tombstones written before this version still hold normalised_text;
-- the writer converts each to token hashes (and blanks the text) the first time the guard reads it.
ALTER TABLE tombstones ADD COLUMN memory_id TEXT;
ALTER TABLE tombstones ADD COLUMN token_hashes TEXT;
ALTER TABLE tombstones ADD COLUMN layer TEXT;  -- of the erased memory (NULL: written before version 6)
-- 1 when the erased text is specific enough that an exact re-send is the erased content coming back, not a
-- new message that happens to say the same ("Thanks!"); NULL (before version 6) counts as 1
ALTER TABLE tombstones ADD COLUMN distinctive INTEGER;
CREATE INDEX tombstones_memory ON tombstones (memory_id);
CREATE TABLE guard_keys (
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    key          BLOB NOT NULL,
    PRIMARY KEY (tenant_id, workspace_id, user_id)
);

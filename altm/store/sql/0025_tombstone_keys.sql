-- Version 25: the keyed hashes of each tombstone's shingles and terms (a term's without its class mark), each in
-- a row of its own, so the write guard compares a derived memory only with the tombstones that share a hash
-- with it (every comparison needs one: a quote shares shingles, a paraphrase terms). It read and compared every
-- tombstone of the user for every derived memory: a user who erased a long history made each later memory pay
-- for all of it. Kept by triggers, whichever way a tombstone is written, carried by a replay or restored (a list
-- that is not JSON, which the guard never writes, gives no keys, as it gave no hashes to compare).
CREATE TABLE tombstone_keys (
    tombstone_id TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    key_hash     TEXT NOT NULL
);
CREATE INDEX tombstone_keys_by_hash ON tombstone_keys (tenant_id, workspace_id, user_id, key_hash);
CREATE INDEX tombstone_keys_by_tombstone ON tombstone_keys (tombstone_id);

CREATE TRIGGER tombstone_keys_insert AFTER INSERT ON tombstones BEGIN
    INSERT INTO tombstone_keys (tombstone_id, tenant_id, workspace_id, user_id, key_hash)
        SELECT NEW.tombstone_id, NEW.tenant_id, NEW.workspace_id, NEW.user_id, value
        FROM json_each(CASE WHEN json_valid(NEW.shingle_hashes) THEN NEW.shingle_hashes ELSE '[]' END)
        UNION SELECT NEW.tombstone_id, NEW.tenant_id, NEW.workspace_id, NEW.user_id, substr(value, 3)
        FROM json_each(CASE WHEN json_valid(NEW.term_hashes) THEN NEW.term_hashes ELSE '[]' END);
END;

CREATE TRIGGER tombstone_keys_update AFTER UPDATE OF tombstone_id, tenant_id, workspace_id, user_id,
        shingle_hashes, term_hashes ON tombstones BEGIN
    DELETE FROM tombstone_keys WHERE tombstone_id = OLD.tombstone_id;
    INSERT INTO tombstone_keys (tombstone_id, tenant_id, workspace_id, user_id, key_hash)
        SELECT NEW.tombstone_id, NEW.tenant_id, NEW.workspace_id, NEW.user_id, value
        FROM json_each(CASE WHEN json_valid(NEW.shingle_hashes) THEN NEW.shingle_hashes ELSE '[]' END)
        UNION SELECT NEW.tombstone_id, NEW.tenant_id, NEW.workspace_id, NEW.user_id, substr(value, 3)
        FROM json_each(CASE WHEN json_valid(NEW.term_hashes) THEN NEW.term_hashes ELSE '[]' END);
END;

CREATE TRIGGER tombstone_keys_delete AFTER DELETE ON tombstones BEGIN
    DELETE FROM tombstone_keys WHERE tombstone_id = OLD.tombstone_id;
END;

INSERT INTO tombstone_keys (tombstone_id, tenant_id, workspace_id, user_id, key_hash)
    SELECT t.tombstone_id, t.tenant_id, t.workspace_id, t.user_id, j.value
    FROM tombstones t, json_each(CASE WHEN json_valid(t.shingle_hashes) THEN t.shingle_hashes ELSE '[]' END) j
    UNION SELECT t.tombstone_id, t.tenant_id, t.workspace_id, t.user_id, substr(j.value, 3)
    FROM tombstones t, json_each(CASE WHEN json_valid(t.term_hashes) THEN t.term_hashes ELSE '[]' END) j;

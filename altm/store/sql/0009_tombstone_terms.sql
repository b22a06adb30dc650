-- Version 9: the guard recognises erased content said in other words. A tombstone keeps the keyed hashes of its
-- text's canonical terms (stems, one word per synonym group, numbers without separators), a specific term's
-- (one with a digit) marked 's:', the others 't:'. Like the shingle hashes, they are HMAC-SHA256 with the
-- user's guard key: the text is not kept. NULL: a tombstone from before this version (matched by its shingles
-- and its value hash only).
ALTER TABLE tombstones ADD COLUMN term_hashes TEXT;

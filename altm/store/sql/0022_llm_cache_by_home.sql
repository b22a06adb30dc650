-- Version 22: a model cache entry is found by the user whose content its prompt held, then model and prompt hash.
-- Keyed by model and prompt hash alone, one user's message was answered from another user's cached entry (an
-- extraction prompt is the instructions and the message): whether a message was a cache hit told its sender,
-- through the model-call metrics and the time to its atom, that someone else in the shard had sent exactly it.
CREATE TABLE llm_cache_by_home (
    model       TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    home        TEXT NOT NULL,
    response    TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    sources     TEXT,
    PRIMARY KEY (home, model, prompt_hash)
) WITHOUT ROWID;
INSERT INTO llm_cache_by_home (model, prompt_hash, home, response, recorded_at, sources)
    SELECT model, prompt_hash, home, response, recorded_at, sources FROM llm_cache;
-- an entry answered every user who sent the same prompt, and was kept under the first one's home only: it is kept
-- under each home with a memory made from that answer too (memories name the model and prompt hash they came
-- from), so a replay of those users asks no model again; their memories not known (any erasure of the user's
-- clears the copy)
INSERT OR IGNORE INTO llm_cache_by_home (model, prompt_hash, home, response, recorded_at, sources)
    SELECT DISTINCT c.model, c.prompt_hash, m.tenant_id || '/' || m.workspace_id || '/' || m.user_id, c.response,
        c.recorded_at, NULL
    FROM llm_cache c JOIN memories m ON m.prompt_hash = c.prompt_hash AND m.model = c.model;
DROP TABLE llm_cache;
ALTER TABLE llm_cache_by_home RENAME TO llm_cache;

-- Version 20: a model cache entry names the memories its prompt held (a JSON list of ids; NULL: not known, an
-- entry from before), so an erasure removes the entries that held what it erased and keeps the user's others.
-- Every entry of the user went with any erasure of the user's: a replay afterwards called the model again for
-- sessions nobody erased.
ALTER TABLE llm_cache ADD COLUMN sources TEXT;

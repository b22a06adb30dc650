-- Version 7: an outbox row keeps the headers of what it publishes (the source turn's publish time, so the
-- stages after the writer can measure freshness). NULL: no headers (rows written before this version).
ALTER TABLE outbox ADD COLUMN headers BLOB;

-- Version 18: rejections found by the memory they refused. The writer drops the pending rejections of a
-- capsule's or scene's earlier versions whenever a later version is judged (refused or stored), which is at
-- every fold of a session: without this index each fold scanned the table.
CREATE INDEX IF NOT EXISTS rejections_by_memory ON rejections (memory_id, review_status);

-- Version 27: the review queue of one user reads that user's rows. Rejections keep their scope in the refused
-- proposal's payload only, so a listing parsed every payload of the shard, every tenant's; held actions had no
-- index on their user either. The rejections are indexed by the scope their payload names (the queue's very
-- expressions), pending ones newest first; held actions by user, status and time.
CREATE INDEX rejections_by_home ON rejections (json_extract(payload, '$.scope.tenant_id'),
    json_extract(payload, '$.scope.workspace_id'), json_extract(payload, '$.scope.user_id'), review_status,
    rejection_id) WHERE json_valid(payload);
CREATE INDEX held_actions_by_home ON held_actions (tenant_id, workspace_id, user_id, status, recorded_at, action_id);

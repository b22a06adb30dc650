-- Version 10: the writer applies a proposal once. A proposal's id is derived from its op and payload, so a
-- proposal delivered again (a stage that re-derived after a crash, or after a worker restored a partition from
-- the log and re-published its changes) is the same decision: applying it again would undo what later
-- proposals did (an atom's evidence merged by governance, reset to the first occurrence's). The audit log
-- names the proposal of every mutation; this index lets the writer ask whether one was applied.
CREATE INDEX audit_log_proposal ON audit_log (proposal_id) WHERE proposal_id IS NOT NULL;

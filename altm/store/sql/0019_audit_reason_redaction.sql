-- Version 19: an erasure that clears a kept memory's verdict (it named an erased memory and quoted its values in
-- its reason) redacts only the trust reasons of that memory's audit rows (redacted = 2), not their whole values
-- (redacted = 1): a whole redaction made every earlier decision on the memory impossible to roll back ("touched
-- erased content"), though its audit held nothing erased. A row so marked may still be redacted whole.
DROP TRIGGER audit_log_no_update;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (((OLD.redacted = 0 AND NEW.redacted IN (1, 2)) OR (OLD.redacted = 2 AND NEW.redacted = 1))
          AND NEW.audit_id = OLD.audit_id AND NEW.at = OLD.at
          AND NEW.actor = OLD.actor AND NEW.action = OLD.action AND NEW.target_table = OLD.target_table
          AND NEW.target_id = OLD.target_id AND NEW.proposal_id IS OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is insert-only');
END;

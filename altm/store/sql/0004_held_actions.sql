-- Version 4: an action not taken and kept for review is a *held* action ("deferred" now means only work
-- kept to retry later). The table and the governance stage are renamed; the rows stay as they are.
ALTER TABLE deferred_actions RENAME TO held_actions;
UPDATE governance_events SET stage = 'held' WHERE stage = 'deferred';

-- Version 5: a governance event records one *step* of an autonomous decision (evaluated, decided, applied,
-- held, rolled_back); "stage" now means only a pipeline stage (capture, fold, ..., the writer).
ALTER TABLE governance_events RENAME COLUMN stage TO step;

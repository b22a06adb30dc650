-- Version 28: each memory's count of each kind of use signal (signal_counts, kept by triggers, whichever way a
-- signal is written or taken: a rollback, a forget, an erasure), and the signals indexed by memory, kind and
-- order. Tallying a memory's signals counted every signal it ever had: a memory shown in every bundle paid at its
-- n-th use for the n-1 before.
CREATE TABLE signal_counts (
    memory_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (memory_id, kind)
) WITHOUT ROWID;
INSERT INTO signal_counts (memory_id, kind, n)
    SELECT memory_id, kind, COUNT(*) FROM lifecycle_signals GROUP BY memory_id, kind;

CREATE TRIGGER signal_counts_insert AFTER INSERT ON lifecycle_signals BEGIN
    INSERT INTO signal_counts (memory_id, kind, n) VALUES (NEW.memory_id, NEW.kind, 1)
        ON CONFLICT (memory_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER signal_counts_delete AFTER DELETE ON lifecycle_signals BEGIN
    UPDATE signal_counts SET n = n - 1 WHERE memory_id = OLD.memory_id AND kind = OLD.kind;
    DELETE FROM signal_counts WHERE memory_id = OLD.memory_id AND kind = OLD.kind AND n <= 0;
END;

CREATE TRIGGER signal_counts_update AFTER UPDATE OF memory_id, kind ON lifecycle_signals BEGIN
    UPDATE signal_counts SET n = n - 1 WHERE memory_id = OLD.memory_id AND kind = OLD.kind;
    DELETE FROM signal_counts WHERE memory_id = OLD.memory_id AND kind = OLD.kind AND n <= 0;
    INSERT INTO signal_counts (memory_id, kind, n) VALUES (NEW.memory_id, NEW.kind, 1)
        ON CONFLICT (memory_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE INDEX lifecycle_signals_by_kind ON lifecycle_signals (memory_id, kind, seq);
CREATE INDEX lifecycle_signals_by_seq ON lifecycle_signals (memory_id, seq);

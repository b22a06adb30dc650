-- ALTM shard schema, version 1. One shard file per partition; SQLite in WAL mode.
-- Only the writer (altm.pipeline.writer) mutates these tables.

CREATE TABLE memories (
    memory_id              TEXT PRIMARY KEY,
    tenant_id              TEXT NOT NULL,
    workspace_id           TEXT NOT NULL,
    user_id                TEXT NOT NULL,
    agent_id               TEXT NOT NULL,
    session_id             TEXT,
    layer                  TEXT NOT NULL CHECK (layer IN ('L0','L1','L2','L3','L4')),
    kind                   TEXT NOT NULL,
    content                TEXT NOT NULL,
    context                TEXT,                    -- L0: the message this one follows (indexing aid)
    content_hash           TEXT NOT NULL,
    source_id              TEXT,
    role                   TEXT,
    attributes             TEXT NOT NULL DEFAULT '{}',
    evidence               TEXT NOT NULL DEFAULT '[]',
    method                 TEXT NOT NULL,
    processor              TEXT NOT NULL,
    model                  TEXT,
    prompt_hash            TEXT,
    source_event_id        TEXT,
    valid_from             TEXT,
    valid_to               TEXT,
    recorded_at            TEXT NOT NULL,           -- wall clock: when the store came to believe it
    superseded_at          TEXT,                    -- wall clock
    superseded_by          TEXT,
    trust_status           TEXT NOT NULL DEFAULT 'unverified',
    trust_method           TEXT,
    trust_confidence       REAL,
    trust_reason           TEXT,
    trust_contradicting_id TEXT,
    trust_verified_at      TEXT,
    lc_state               TEXT NOT NULL DEFAULT 'active',
    lc_weight              REAL NOT NULL DEFAULT 1.0,
    lc_injected            INTEGER NOT NULL DEFAULT 0,
    lc_cited               INTEGER NOT NULL DEFAULT 0,
    lc_helpful             INTEGER NOT NULL DEFAULT 0,
    lc_harmful             INTEGER NOT NULL DEFAULT 0,
    lc_pinned              INTEGER NOT NULL DEFAULT 0,
    lc_compression         INTEGER NOT NULL DEFAULT 0 CHECK (lc_compression BETWEEN 0 AND 4),
    -- the scope home as text, indexed by FTS so a full-text query only scores the user's own memories
    home                   TEXT GENERATED ALWAYS AS (tenant_id || ' ' || workspace_id || ' ' || user_id) VIRTUAL
);
CREATE INDEX memories_scope ON memories (tenant_id, workspace_id, user_id, agent_id, layer);
CREATE INDEX memories_session ON memories (tenant_id, workspace_id, user_id, agent_id, session_id, layer);
CREATE INDEX memories_kind ON memories (kind);
CREATE INDEX memories_content_hash ON memories (content_hash);
CREATE INDEX memories_conversation ON memories (tenant_id, workspace_id, user_id, agent_id, session_id, layer,
                                                valid_from, source_id, memory_id);

-- evidence edges: a derived memory -> the lower-layer memories it was derived from
CREATE TABLE evidence_edges (
    memory_id   TEXT NOT NULL,
    evidence_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, evidence_id)
) WITHOUT ROWID;
CREATE INDEX evidence_edges_reverse ON evidence_edges (evidence_id);

-- the memory graph
CREATE TABLE graph_nodes (
    node_id      TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    node_type    TEXT NOT NULL CHECK (node_type IN ('Entity','Event','Task','Intent','Time','Memory')),
    name         TEXT NOT NULL,
    attributes   TEXT NOT NULL DEFAULT '{}',
    method       TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
);
CREATE INDEX graph_nodes_scope ON graph_nodes (tenant_id, workspace_id, user_id, agent_id, node_type);
CREATE TABLE graph_edges (
    edge_id      TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    src_id       TEXT NOT NULL,             -- a graph node id or a memory id
    dst_id       TEXT NOT NULL,
    edge_type    TEXT NOT NULL,
    label        TEXT,
    unit_weight  REAL NOT NULL DEFAULT 1.0,
    weight       REAL NOT NULL DEFAULT 1.0,  -- unit_weight * number of distinct evidence ids
    confidence   REAL NOT NULL DEFAULT 1.0,
    rejected     INTEGER NOT NULL DEFAULT 0,
    evidence     TEXT NOT NULL DEFAULT '[]',
    method       TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
);
CREATE INDEX graph_edges_src ON graph_edges (src_id);
CREATE INDEX graph_edges_dst ON graph_edges (dst_id);

-- full-text indexes over memory content (external content, kept in sync by triggers)
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, context, home, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE memories_fts_tri USING fts5 (
    content, content='memories', content_rowid='rowid', tokenize='trigram'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, context, home) VALUES (new.rowid, new.content, new.context, new.home);
    INSERT INTO memories_fts_tri (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, context, home)
        VALUES ('delete', old.rowid, old.content, old.context, old.home);
    INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, context ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, context, home)
        VALUES ('delete', old.rowid, old.content, old.context, old.home);
    INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO memories_fts (rowid, content, context, home) VALUES (new.rowid, new.content, new.context, new.home);
    INSERT INTO memories_fts_tri (rowid, content) VALUES (new.rowid, new.content);
END;

-- insert-only audit log: one row per mutation, written before it in the same transaction
CREATE TABLE audit_log (
    audit_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at           TEXT NOT NULL,
    proposal_id  TEXT,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_table TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    old_value    TEXT,
    new_value    TEXT,
    redacted     INTEGER NOT NULL DEFAULT 0   -- 1 once an erasure replaced the values by their hashes
);
CREATE INDEX audit_log_target ON audit_log (target_table, target_id);
-- insert-only, with one exception: an erasure may redact a row's values once (the row itself stays)
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (OLD.redacted = 0 AND NEW.redacted = 1 AND NEW.audit_id = OLD.audit_id AND NEW.at = OLD.at
          AND NEW.actor = OLD.actor AND NEW.action = OLD.action AND NEW.target_table = OLD.target_table
          AND NEW.target_id = OLD.target_id AND NEW.proposal_id IS OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is insert-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is insert-only');
END;

-- tombstones of erased or rejected content, consulted by the write guard
CREATE TABLE tombstones (
    tombstone_id    TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    agent_id        TEXT,
    value_hash      TEXT NOT NULL,
    normalised_text TEXT NOT NULL,
    reason          TEXT NOT NULL,
    at              TEXT NOT NULL
);
CREATE INDEX tombstones_hash ON tombstones (value_hash);

-- destructive or low-confidence governance actions that were deferred (part of the review queue)
CREATE TABLE deferred_actions (
    action_id    TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_ids   TEXT NOT NULL,
    reason       TEXT NOT NULL,
    inputs       TEXT NOT NULL DEFAULT '{}',
    status       TEXT NOT NULL DEFAULT 'pending',
    recorded_at  TEXT NOT NULL
);

-- work items a processor could not finish (model failure, invalid output, budget): retried later.
-- Runtime bookkeeping, not memory state: the item's input record is kept verbatim.
CREATE TABLE deferred_work (
    work_id        TEXT PRIMARY KEY,
    processor      TEXT NOT NULL,
    topic          TEXT NOT NULL,
    partition      INTEGER NOT NULL,
    offset         INTEGER NOT NULL,
    key            TEXT,
    value          BLOB NOT NULL,
    reason         TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 1,
    next_attempt_at REAL NOT NULL,
    recorded_at    TEXT NOT NULL
);
CREATE INDEX deferred_work_due ON deferred_work (next_attempt_at);

-- lifecycle signals, one row per (memory, signal): counters and weights are recomputed from them, so a
-- signal delivered twice counts once and a replay gives the same weights
CREATE TABLE lifecycle_signals (
    memory_id TEXT NOT NULL,
    signal_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    at        TEXT NOT NULL,
    level     INTEGER,                  -- compress signals: the level C0-C4
    seq       INTEGER NOT NULL,         -- arrival order per memory (what came after what)
    PRIMARY KEY (memory_id, signal_id, kind)
) WITHOUT ROWID;

-- autonomous decisions and their stages: evaluated -> decided -> applied (or deferred / degraded / rolled_back)
CREATE TABLE governance_events (
    event_id     TEXT PRIMARY KEY,
    decision_id  TEXT NOT NULL,               -- groups the stages of one decision (its proposal id)
    tenant_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    decision     TEXT NOT NULL,               -- merge, supersede, promote, demote, forget, defer, rollback
    stage        TEXT NOT NULL,
    inputs       TEXT NOT NULL DEFAULT '{}',
    reason       TEXT NOT NULL,
    at           TEXT NOT NULL
);
CREATE INDEX governance_events_decision ON governance_events (decision_id);

-- proposals the writer refused, with the reason
CREATE TABLE rejections (
    rejection_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id      TEXT,
    memory_id        TEXT,
    reason           TEXT NOT NULL,
    source_topic     TEXT,
    source_partition INTEGER,
    source_offset    INTEGER,
    payload          TEXT,
    at               TEXT NOT NULL,
    review_status    TEXT NOT NULL DEFAULT 'pending'   -- pending, approved (re-reviewed), dismissed
);

-- consumer offsets, stored in the same transaction as the writes they cover
CREATE TABLE consumer_offsets (
    group_id    TEXT NOT NULL,
    topic       TEXT NOT NULL,
    partition   INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
) WITHOUT ROWID;

-- records (changes, dead letters) committed with the data and published afterwards (transactional outbox)
CREATE TABLE outbox (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    topic     TEXT NOT NULL,
    key       TEXT,
    value     BLOB NOT NULL,
    published INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX outbox_pending ON outbox (published, seq);

-- runtime cycles (prepare_turn -> commit_turn/abort_turn)
CREATE TABLE runtime_cycles (
    cycle_id          TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    agent_id          TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    turn_id           TEXT NOT NULL,
    state             TEXT NOT NULL,
    idempotency_key   TEXT,
    request_hash      TEXT NOT NULL,
    bundle_memory_ids TEXT NOT NULL DEFAULT '[]',
    bundle            TEXT,                     -- the ContextBundle returned, for safe retries
    token_budget      INTEGER NOT NULL,
    commit_hash       TEXT,                     -- hash of the commit request, for safe retries
    created_at        TEXT NOT NULL,
    closed_at         TEXT,
    abort_reason      TEXT
);
CREATE INDEX runtime_cycles_key ON runtime_cycles (idempotency_key);

-- context-governance (CCR) entries: compressed renderings addressable by marker
CREATE TABLE ccr_entries (
    marker       TEXT PRIMARY KEY,
    memory_id    TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    content_type TEXT NOT NULL,
    compressed   TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
);

-- LLM response cache keyed by (model, prompt hash): replays are deterministic and free
CREATE TABLE llm_cache (
    model       TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    home        TEXT NOT NULL,                 -- tenant/workspace/user whose content the prompt held
    response    TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (model, prompt_hash)
) WITHOUT ROWID;

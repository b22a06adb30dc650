-- Version 15: a lifecycle signal names the agent and the session of the control that sent it (a recall
-- cycle's bundle, citations and feedback; NULL session: sent outside a session; NULL agent: written before this
-- version). An erasure of that session or agent takes the signal back: a replay cannot open what sent it.
ALTER TABLE lifecycle_signals ADD COLUMN agent_id TEXT;
ALTER TABLE lifecycle_signals ADD COLUMN session_id TEXT;
CREATE INDEX lifecycle_signals_owner ON lifecycle_signals (agent_id, session_id);

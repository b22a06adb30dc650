"""Finding: ``ALTM_DLQ_RETENTION_MS`` has no effect on the embedded log: dead letters — which keep the refused
input's original text — are kept for ever whatever retention the operator set.

The setting (altm/core/settings.py:24, README "Settings": "ALTM_DLQ_RETENTION_MS (default: keep forever)") is
written into the embedded log's ``topics.retention_ms`` by ``ensure_topics`` (altm/bus/embedded/_log.py:125-128),
and ``EmbeddedLog.apply_retention`` (altm/bus/embedded/_log.py:261) would delete the records older than it — but
nothing in ``altm/`` ever calls ``apply_retention`` (only tests/unit/bus/test_embedded_log.py does): not the
embedded runtime, not ``altm serve``, not ``altm ingest``, not an admin command. On Kafka the same setting becomes
the topic's ``retention.ms`` (altm/bus/kafka/_bus.py:128) and the broker enforces it, so an operator who sets a
retention for dead letters (a privacy policy: malformed input often carries what the user typed) gets it on Kafka
and silently not on the embedded deployment.

Reproduction: ``altm ingest`` a file whose first line is not JSON ("... my SSN is 123-45-6789") with
``ALTM_DLQ_RETENTION_MS=50``; wait 0.3 s; run the embedded pipeline again on the same data dir (another
``altm ingest`` of a valid line); read the ``altm.dlq`` records in ``log.db``.

Expected: dead letters older than ``ALTM_DLQ_RETENTION_MS`` are deleted from the embedded log by the embedded
runtime (when it starts and periodically, as Kafka's log cleaner does): after the second run no ``altm.dlq``
record older than the retention remains, and ``altm log tail dlq`` no longer shows the refused line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.cli import app
from tests.support.rows import rows_of

runner = CliRunner()
RETENTION_MS = 50
ENV = {"ALTM_EMBEDDER": "none", "ALTM_DLQ_RETENTION_MS": str(RETENTION_MS)}
SECRET = "this is not json, my SSN is 123-45-6789"


def _line(turn_id: str) -> str:
    return json.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
                       "session_id": "s1", "turn_id": turn_id, "role": "user", "content": "We use PostgreSQL 15.",
                       "timestamp": "2026-11-02T09:00:00Z"})


def _ingest(data_dir: Path, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(path), "--data-dir", str(data_dir)], env=ENV)
    assert result.exit_code == 0, result.output


def test_dead_letters_past_their_retention_leave_the_embedded_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _ingest(data_dir, tmp_path / "first.jsonl", f"{SECRET}\n{_line('s1-t1')}\n")
    dlq = "SELECT timestamp_ms FROM records WHERE topic='altm.dlq'"
    assert rows_of(data_dir / "log.db", dlq), "the malformed line was not dead-lettered"
    assert rows_of(data_dir / "log.db", "SELECT retention_ms FROM topics WHERE name='altm.dlq'") == [
        {"retention_ms": RETENTION_MS}]

    time.sleep(0.3)
    _ingest(data_dir, tmp_path / "second.jsonl", f"{_line('s1-t2')}\n")
    cutoff = int(time.time() * 1000) - RETENTION_MS
    expired = [r for r in rows_of(data_dir / "log.db", dlq) if int(r["timestamp_ms"]) < cutoff]
    tail = runner.invoke(app, ["log", "tail", "dlq", "--data-dir", str(data_dir)], env=ENV)
    assert not expired, (f"{len(expired)} dead letter(s) older than ALTM_DLQ_RETENTION_MS={RETENTION_MS} are still on "
                         f"the embedded log after the pipeline ran again; `altm log tail dlq` shows "
                         f"{'the refused line' if 'SSN' in tail.output else 'them'}")

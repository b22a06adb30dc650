"""Finding: ``ALTM_DLQ_RETENTION_MS=-1`` (Kafka's "no time limit") or ``0`` keeps dead letters for ever on Kafka
and deletes every one of them from the embedded log the next time the embedded runtime starts (or within a
minute of a running loop): the refused input's only copy, what ``altm log tail dlq`` shows, is gone.

The setting is an unconstrained ``int | None`` (altm/core/settings.py:34). On Kafka, ``KafkaBus.ensure_topics``
(altm/bus/kafka/_bus.py:128) writes ``retention.ms = retention_ms if retention_ms else -1``: 0 and -1 both mean
"keep for ever" there (-1 is Kafka's own value for it). Since 4f3266d the embedded runtime applies the retention
itself: ``EmbeddedRuntime.start`` and ``_loop`` call ``_expire`` (altm/pipeline/runtime/embedded.py:154, 290),
which runs ``EmbeddedLog.apply_retention`` (altm/bus/embedded/_log.py:266-291): ``DELETE FROM records WHERE
topic=? AND timestamp_ms < now_ms - retention_ms`` — with -1 that is every record before ``now + 1 ms``, with 0
every record before now: each dead letter leaves the log at the next pass.

Reproduction: ``altm ingest`` a file with a malformed line with ``ALTM_DLQ_RETENTION_MS=-1`` (or 0); the line is
dead-lettered; ``altm ingest`` another (valid) file with the same setting; ``altm log tail dlq``.

Expected: the same setting means the same on both buses: 0 and -1 keep dead letters for ever (as on Kafka), or
are refused when the settings are read (nothing deleted); after the second ingest the dead letter is still on the
embedded log and ``altm log tail dlq`` still shows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app
from tests.support.rows import rows_of

runner = CliRunner()
MARKER = "this line is not json at all"
DLQ = "SELECT offset FROM records WHERE topic='altm.dlq'"


def _line(turn_id: str) -> str:
    return json.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
                       "session_id": "s1", "turn_id": turn_id, "role": "user", "content": "We use PostgreSQL 15.",
                       "timestamp": "2026-11-02T09:00:00Z"})


@pytest.mark.parametrize("retention", ["-1", "0"])
def test_a_keep_for_ever_dlq_retention_keeps_the_dead_letters(tmp_path: Path, retention: str) -> None:
    env = {"ALTM_EMBEDDER": "none", "ALTM_DLQ_RETENTION_MS": retention}
    data_dir = tmp_path / "data"
    first = tmp_path / "first.jsonl"
    first.write_text(f"{MARKER}\n{_line('s1-t1')}\n", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(first), "--data-dir", str(data_dir)], env=env)
    if result.exit_code != 0:  # refused when the settings are read: acceptable, provided nothing was made
        assert "DLQ_RETENTION" in result.output.upper() or "dlq_retention" in str(result.exception), result.output
        return
    assert rows_of(data_dir / "log.db", DLQ), "the malformed line was not dead-lettered"

    second = tmp_path / "second.jsonl"
    second.write_text(f"{_line('s1-t2')}\n", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(second), "--data-dir", str(data_dir)], env=env)
    assert result.exit_code == 0, result.output

    tail = runner.invoke(app, ["log", "tail", "dlq", "--data-dir", str(data_dir)], env=env)
    assert rows_of(data_dir / "log.db", DLQ), (
        f"ALTM_DLQ_RETENTION_MS={retention} (on Kafka: retention.ms=-1, kept for ever) deleted every dead letter of "
        f"the embedded log when the runtime started again; `altm log tail dlq` shows "
        f"{'it' if MARKER in tail.output else 'nothing of it'}")

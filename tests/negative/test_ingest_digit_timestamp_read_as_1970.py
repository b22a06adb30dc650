"""A transcript line whose ``timestamp`` is an ISO 8601 date in basic form (``"20261102"``) or a year
(``"2026"``) is accepted and stored as a moment of 1970: ``altm validate`` passes it, ``altm ingest`` stores the
turn 56 years in the past, silently.

Finding: the envelope's ``timestamp`` is a pydantic ``datetime`` (altm/core/envelope.py:32-37), read in lax mode
(``TurnEvent.model_validate``, altm/app/ingest.py:60; ``decode_event``, altm/core/codec.py:66). Pydantic reads a
*string of digits* as a Unix time in seconds: ``"20261102"`` is 20,261,102 s after the epoch, 1970-08-23T12:05:02Z;
``"2026"`` is 1970-01-01T00:33:46Z. The only bound after that is ``sane_time`` (years 1900-2499,
altm/core/bounds.py:26-29), which 1970 passes. The documented input is an ISO 8601 timestamp (README "Using it",
the module docstring of altm/app/ingest.py) and the exported schema says ``"type": "string", "format":
"date-time"`` (schemas/turn_event.schema.json), under which these strings are dates of 2026 or invalid — never
1970. A misdated turn is wrong everywhere the time is used: retention (``ALTM_RETENTION_DAYS_L0``) forgets it on
the next pass, recency ranking and the dates recall reads are 56 years off, and a re-send with the right time is
refused as a conflicting re-send.

Reproduction: ``altm validate`` and ``altm ingest`` of a flat transcript line of ``acme/platform/dana/coder``
with ``"timestamp": "20261102"``: exit 0, "1 published, 0 dead-lettered"; the stored L0 message has
``valid_from = 1970-08-23T12:05:02+00:00``. ``parse_line`` of the same line with ``"2026"``: 1970-01-01T00:33:46Z.

Expected: a timestamp given as a string is read as an ISO 8601 / RFC 3339 date-time: ``"20261102"`` is either
read as 2026-11-02 or refused with the line's reason (``altm validate`` prints ``line 1: … timestamp …`` and exits
1; ``altm ingest`` dead-letters it at input) — it is never stored as a time of 1970.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from altm.app.ingest import parse_line
from altm.core import DecodeError
from altm.interfaces.cli import app
from tests.support.rows import rows

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
FLAT = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
        "session_id": "s1", "turn_id": "t1", "role": "user", "content": "We moved the deadline to December 15."}


@pytest.mark.parametrize("timestamp", ["20261102", "2026", "202611"])
def test_a_digit_string_timestamp_is_not_read_as_seconds_since_1970(timestamp: str) -> None:
    try:
        event = parse_line(orjson.dumps({**FLAT, "timestamp": timestamp}).decode())
    except DecodeError:
        return  # refused with a reason: fine
    assert event.timestamp.year == 2026, f"timestamp {timestamp!r} was read as {event.timestamp.isoformat()}"


def test_ingest_does_not_store_a_basic_format_date_as_1970(tmp_path: Path) -> None:
    src, data = tmp_path / "t.jsonl", tmp_path / "data"
    src.write_bytes(orjson.dumps({**FLAT, "timestamp": "20261102"}) + b"\n")
    validated = runner.invoke(app, ["validate", str(src)])
    ingested = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert ingested.exit_code == 0, ingested.output
    stored = [r["valid_from"] for r in rows(data, "SELECT valid_from FROM memories WHERE layer='L0'")]
    if stored:
        assert all(str(v).startswith("2026-11-02") for v in stored), f"stored with valid_from {stored}"
    else:  # refused: validate says so too
        assert validated.exit_code == 1 and "line 1" in validated.output, validated.output

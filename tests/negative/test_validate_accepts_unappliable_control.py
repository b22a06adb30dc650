"""``altm validate`` passes (exit 0) control events that the pipeline dead-letters, and ``altm ingest`` /
``altm publish`` publish them as good lines: an erasure request in an input file that can never be applied is
reported as valid.

Finding: every file command reads a line with ``read_line`` → ``checked`` (altm/app/ingest.py:67-72, 94-103),
which holds a turn to the content limit but never asks whether a control event's request can be applied. The
control stage then refuses it (``control_proposal``, altm/pipeline/processors/control.py:50-53: "erasing a
session needs its session_id", an unknown erasure target) and so does the lifecycle stage (``signals_of``,
altm/pipeline/processors/lifecycle.py:43: an unknown feedback signal; ``_pass``, line 80: an unknown lifecycle
op): the record is dead-lettered in the pipeline. The host SDK was fixed for exactly this
(``_acceptable``, altm/interfaces/sdk/_producer.py:231-240, ``test_sdk_accepts_what_workers_dead_letter.py``),
the file path was not. So ``altm validate`` — "check input without ingesting it" — says the file is fine;
``altm publish`` to Kafka prints "published 3 events, 0 lines dead-lettered" while the workers dead-letter the
user's erasure request (a GDPR request that is never applied, the reason only in the DLQ topic).

Reproduction: a file of one turn and three control events of ``acme/platform/dana/coder``: an ``erase`` whose
payload is ``{"target": "session"}`` (the event's own ``session_id`` is ``s1``, the payload names none), a
``feedback`` with ``{"signal": "great"}``, a ``lifecycle`` with ``{"op": "purge"}``. ``altm validate FILE`` →
exit 0, nothing printed. ``altm ingest`` → "4 published, 0 dead-lettered at input, 3 dead-lettered in the pipeline".

Expected: ``validate``, ``ingest`` and ``publish`` agree with what the pipeline applies: ``altm validate`` prints
``line 2: … session_id``, ``line 3: … 'great'``, ``line 4: … 'purge'`` and exits 1; ``altm ingest`` dead-letters the
three lines at input ("1 published, 3 dead-lettered at input") like any other bad line, so ``publish`` never
sends them (``read_line`` applies the checks ``_acceptable`` applies, and the lifecycle stage's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
SCOPE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder"}


def _control(event_id: str, action: str, payload: dict[str, Any], **extra: Any) -> bytes:
    return orjson.dumps({"event_type": "control", "event_id": event_id, "scope": SCOPE, "action": action,
                         "timestamp": "2026-11-02T10:00:00Z", "payload": payload, **extra}) + b"\n"


def _file(tmp_path: Path) -> Path:
    src = tmp_path / "requests.jsonl"
    src.write_bytes(
        orjson.dumps({**SCOPE, "session_id": "s1", "turn_id": "t1", "role": "user",
                      "content": "my card is 4111 1111 1111 1111", "timestamp": "2026-11-02T09:00:00Z"}) + b"\n"
        + _control("ctl_erase_s1", "erase", {"target": "session", "reason": "the user asked"}, session_id="s1")
        + _control("ctl_feedback", "feedback", {"signal": "great"}, target_ids=["mem_x"])
        + _control("ctl_lifecycle", "lifecycle", {"op": "purge"})
    )
    return src


def test_validate_reports_control_requests_the_pipeline_cannot_apply(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(_file(tmp_path))])
    reported = {line.split(":", 1)[0] for line in result.output.splitlines() if line.startswith("line ")}
    assert reported == {"line 2", "line 3", "line 4"}, f"validate reported {sorted(reported)}: {result.output!r}"
    assert result.exit_code == 1


def test_ingest_dead_letters_them_at_input_and_publishes_only_the_turn(tmp_path: Path) -> None:
    src, data = _file(tmp_path), tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert result.exit_code == 0, result.output
    summary = " ".join(result.output.split())
    assert "4 lines: 1 published, 3 dead-lettered at input, 0 dead-lettered in the pipeline" in summary, summary

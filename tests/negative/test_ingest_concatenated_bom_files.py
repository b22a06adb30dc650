"""Two JSONL transcripts saved with a UTF-8 byte order mark and joined with ``cat`` (the usual way to merge JSONL
files) lose the first turn of the second file: ``altm ingest`` dead-letters it ("invalid JSON: UTF-8 byte order
mark (BOM) is not supported") and ``altm validate`` rejects it.

Finding: the fix for a BOM (``test_ingest_utf8_bom.py``) strips it only at byte 0 of the file
(``InputReader.lines``, altm/app/_input_file.py:64 ``at_start = self._offset == 0`` and 72-73). Files written by
Notepad, PowerShell 5 ``Out-File -Encoding utf8`` or Excel each start with one; ``cat day1.jsonl day2.jsonl >
week.jsonl`` (or ``Get-Content *.jsonl | Set-Content``) puts day 2's BOM at the start of a line in the middle of
the file, where the reader passes it to ``parse_line`` (altm/app/ingest.py:41) and orjson refuses it. A BOM at
the start of a line is never part of a JSON text (U+FEFF is not JSON whitespace, so no valid line starts with
it): it is the signature of a file that was appended.

Reproduction: ``b"\\xef\\xbb\\xbf" + line(t1) + b"\\xef\\xbb\\xbf" + line(t2)`` (CRLF lines, as Windows writes
them); ``altm validate`` → exit 1, ``line 2: invalid JSON: UTF-8 byte order mark (BOM) is not supported``;
``altm ingest`` → "2 lines: 1 published, 1 dead-lettered at input"; turn t2 is not stored.

Expected: a UTF-8 BOM at the start of any line is dropped like the one at the start of the file: ``validate``
exits 0 and ``ingest`` stores both turns ("2 published, 0 dead-lettered at input").
"""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app
from tests.support.rows import rows

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
BOM = b"\xef\xbb\xbf"


def _windows_file(i: int) -> bytes:
    return BOM + orjson.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana",
                               "agent_id": "coder", "session_id": f"day{i}", "turn_id": f"t{i}", "role": "user",
                               "content": f"day {i}: the ZEBRA{i} rollout is on track",
                               "timestamp": f"2026-11-0{i}T09:00:00Z"}) + b"\r\n"


def test_files_with_a_bom_joined_with_cat_lose_no_turn(tmp_path: Path) -> None:
    src, data = tmp_path / "week.jsonl", tmp_path / "data"
    src.write_bytes(_windows_file(1) + _windows_file(2))
    validated = runner.invoke(app, ["validate", str(src)])
    assert validated.exit_code == 0, validated.output
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "2 published, 0 dead-lettered at input" in " ".join(result.output.split()), result.output
    stored = sorted(r["source_id"] for r in rows(data, "SELECT source_id FROM memories WHERE layer='L0'"))
    assert stored == ["t1", "t2"]

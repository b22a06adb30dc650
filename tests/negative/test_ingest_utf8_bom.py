"""A JSONL transcript saved with a UTF-8 byte order mark (Windows PowerShell 5 ``Out-File -Encoding utf8``,
Notepad, Excel "CSV UTF-8" exports) loses its first turn: ``altm ingest`` dead-letters line 1 ("invalid JSON:
UTF-8 byte order mark (BOM) is not supported") and ``altm validate`` rejects the file.

What a user expects: the reader already accepts Windows files (a ``\\r`` before ``\\n`` is dropped,
altm/app/_input_file.py docstring); a BOM at the start of the file is an encoding signature, not content
(RFC 8259 §8.1 lets a parser ignore it), so line 1 should be ingested like the others.

Actual: ``InputReader.lines`` (altm/app/_input_file.py:63-71) passes the BOM through; ``parse_line``
(altm/app/ingest.py:41) hands it to orjson, which refuses it. Fix direction: strip a leading ``\\xef\\xbb\\xbf``
from the first line (offset 0 only) in the reader.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def _line(i: int) -> bytes:
    return orjson.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
                         "session_id": "s1", "turn_id": f"t{i}", "role": "user", "content": f"message {i}",
                         "timestamp": "2026-11-02T09:00:00Z"}) + b"\r\n"


def test_a_bom_does_not_cost_the_first_turn(tmp_path: Path) -> None:
    src = tmp_path / "windows.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + _line(0) + _line(1))
    assert runner.invoke(app, ["validate", str(src)]).exit_code == 0
    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "2 published, 0 dead-lettered at input" in " ".join(result.output.split()), result.output

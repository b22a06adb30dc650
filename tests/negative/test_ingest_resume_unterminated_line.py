"""Resuming an interrupted ``altm ingest`` of a transcript that is still being written loses the turn whose
line was half-written when the first run read it.

What a user expects (README "Reliability": an interrupted ingest resumes after the last line it published,
nothing lost, nothing twice): a JSONL file that a host agent appends to ends, while it is being written, in a
line without its ``\\n``. The first run reads that fragment (dead-letters it: truncated JSON) and is then
interrupted (Ctrl-C while the pipeline runs). The agent finishes the line and appends more. The rerun should
ingest the now complete line — it was never published as a turn.

Actual: the reader counts the unterminated fragment as a line and the marker is saved at the end of the file
(altm/app/_input_file.py:63-71, ``position()`` after a line with no ``\\n``); the rerun's prefix hash still
matches, so it resumes in the middle of that line: the line's tail is dead-lettered as a new "line" and the
turn is never stored. Fix direction: never advance a resume point past a line that did not end in ``\\n``
(re-read it on resume), or refuse to resume when the marker's last line was unterminated and the file grew.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app
from altm.pipeline import EmbeddedRuntime

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def _line(i: int) -> bytes:
    return orjson.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
                         "session_id": "s1", "turn_id": f"t{i}", "role": "user",
                         "content": f"message number {i} about the ZEBRA{i} rollout",
                         "timestamp": f"2026-11-02T09:0{i}:00Z"}) + b"\n"


def test_a_line_half_written_at_the_interruption_is_ingested_by_the_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "live.jsonl"
    data = tmp_path / "data"
    whole = _line(0) + _line(1) + _line(2)
    src.write_bytes(whole[: len(_line(0) + _line(1)) + 40])  # t2 is being written: 40 bytes of it so far

    async def interrupted(self: EmbeddedRuntime, progress: Any = None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(EmbeddedRuntime, "run_until_idle", interrupted)
    runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    monkeypatch.undo()

    src.write_bytes(whole + _line(3))  # the agent finished t2 and wrote t3
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert result.exit_code == 0, result.output

    listing = runner.invoke(app, ["memories", "--data-dir", str(data), "--layer", "L0", "--json"], env=ENV)
    stored = sorted(m["content"] for m in orjson.loads(listing.output))
    assert any("ZEBRA2" in c for c in stored), f"turn t2 was lost; stored: {stored}; {result.output}"
    assert len(stored) == 4

"""The README's first command runs `altm demo` on the embedded defaults; this runs it as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson


def test_demo_ingests_the_sample_and_shows_memories(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "altm", "demo", "--data-dir", str(data)],
        capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "29 lines: 29 published" in out
    assert "prepare_turn in a new session (s4)" in out
    # recalled across sessions: the corrected deadline (s3) and the chunked-refund advice (s2)
    assert "January 10" in out and "chunks of 500 rows" in out
    assert "memory://mem_" in out and "rrf" in out  # markers and score breakdowns are shown
    assert "state hash:" in out
    stats = subprocess.run(
        [sys.executable, "-m", "altm", "stats", "--data-dir", str(data), "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    parsed = orjson.loads(stats.stdout)
    assert parsed["layers"]["L0"] == 32 and parsed["dlq"] == 0  # 29 sample turns + 3 demo questions
    assert all(parsed["layers"][layer] > 0 for layer in ("L1", "L2", "L3", "L4"))

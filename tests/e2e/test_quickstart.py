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
    assert "Flask to FastAPI" in out  # an L0 memory from session s1 is shown
    assert "state hash:" in out
    stats = subprocess.run(
        [sys.executable, "-m", "altm", "stats", "--data-dir", str(data), "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    parsed = orjson.loads(stats.stdout)
    assert parsed["layers"]["L0"] == 29 and parsed["dlq"] == 0

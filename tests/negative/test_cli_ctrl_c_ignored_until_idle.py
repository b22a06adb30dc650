"""Finding (red team 19, operability): Ctrl-C (SIGINT) does not stop ``altm ingest`` (nor ``altm replay``) once the
pipeline runs, when no stage waits on a thread or I/O (``ALTM_EMBEDDER=none``, the README's setting for memory-bound
ingest, or a replay that takes its vectors from the source): the command keeps going until the whole pipeline is
idle (25 s on 1,740 turns here; the README's 50,000-turn ingest takes 37 minutes), then exits 130 without its summary
— a replay that in fact completed prints no state hash and looks interrupted.

Root cause: ``EmbeddedRuntime.run_until_idle`` (altm/pipeline/runtime/embedded.py:264-278) loops over ``step()``,
whose awaits all complete synchronously (SQLite work), so the loop never yields to the event loop and the
cancellation ``asyncio.run`` schedules on SIGINT is delivered only when the loop returns. (An ``await
asyncio.sleep(0)`` per step, tried from a wrapper, made the same ingest stop 0.9 s after SIGINT, and the resumed
ingest reached the same state hash as an uninterrupted one.)

Expected: the command stops within a few seconds of SIGINT (exit != 0); a re-run resumes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TURNS = 1800
DEADLINE_S = 6.0


def _input(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i in range(TURNS):
            user, session = f"u{i % 7}", f"s{i // 30}"
            f.write(json.dumps({
                "tenant_id": "acme", "workspace_id": "platform", "user_id": user, "agent_id": "coder",
                "session_id": session, "turn_id": f"{session}-t{i}", "role": "user" if i % 2 == 0 else "assistant",
                "content": f"We moved the billing service db-{i % 13} to PostgreSQL 15 on Friday; don't use "
                           f"Flask for it because it blocks, use FastAPI. Ticket PAY-{i}.",
                "timestamp": f"2026-11-{1 + i % 28:02d}T09:{i % 60:02d}:00Z"}) + "\n")
    return path


def test_sigint_stops_a_running_ingest(tmp_path: Path) -> None:
    source = _input(tmp_path / "in.jsonl")
    data_dir = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "altm", "ingest", str(source), "--data-dir", str(data_dir)],
        env={**os.environ, "ALTM_EMBEDDER": "none"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's Ctrl-C reaches it
    try:
        marker_dir = data_dir / "ingest"
        deadline = time.monotonic() + 20
        while not (marker_dir.exists() and any(marker_dir.glob("*.json"))) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # the lines are published; the pipeline is deriving them
        assert proc.poll() is None, "the ingest finished before it could be interrupted: make the input larger"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"altm ingest still running {DEADLINE_S} s after SIGINT") from None
        assert proc.returncode != 0, f"exited {proc.returncode} after {time.monotonic() - sent:.1f} s"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

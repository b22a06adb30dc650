"""Finding (red team 19, operability): a data dir whose log is sealed (the default) takes plain records from any
process run with ``ALTM_SEAL_LOG=false`` (an operator's shell, a second service's config) without a word, and an
erasure of them afterwards — run with the default settings — answers "erased" and exits 0 while the erased text
stays readable, in clear, in ``log.db`` (the turn, its proposals and its changes). Nothing in the data dir records
that its log is sealed, so the mix is never noticed, and crypto-shredding, the only erasure the log has, cannot
reach those records.

Root cause: the sealing choice is per process, from the setting alone: ``open_sealer`` / ``Sealer(keys,
seal=settings.seal_log)`` (altm/wiring/_adapters.py:238-241) publishes plain whenever the setting is false, even
when the data dir's key store exists and its log holds sealed records.

Expected: either a process with ``ALTM_SEAL_LOG=false`` refuses (or keeps sealing) a data dir whose log is sealed,
or the later erasure leaves no record on the log that shows the erased text.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
SECRET = "ZQXCANARY-4417"
BASE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
        "role": "user", "timestamp": "2026-11-02T09:00:00Z"}


def _file(path: Path, session: str, content: str) -> Path:
    path.write_text(json.dumps({**BASE, "session_id": session, "turn_id": f"{session}-t1", "content": content})
                    + "\n", encoding="utf-8")
    return path


def _plain_records(log: Path) -> int:
    with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM records WHERE instr(value, ?) > 0",
                              (SECRET.encode(),)).fetchone()[0])


def test_erasure_leaves_no_plain_record_of_a_sealed_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {"ALTM_EMBEDDER": "none"}
    first = runner.invoke(app, ["ingest", str(_file(tmp_path / "a.jsonl", "s1", "We use PostgreSQL 15.")),
                                "--data-dir", str(data_dir)], env=env)
    assert first.exit_code == 0, first.output  # a sealed log (ALTM_SEAL_LOG defaults to true)

    plain = runner.invoke(app, ["ingest", str(_file(tmp_path / "b.jsonl", "sx", f"My locker code is {SECRET}.")),
                                "--data-dir", str(data_dir)], env={**env, "ALTM_SEAL_LOG": "false"})
    if plain.exit_code != 0:  # refused: acceptable, provided nothing plain reached the log
        assert _plain_records(data_dir / "log.db") == 0
        return

    erased = runner.invoke(app, ["erase", "--data-dir", str(data_dir), "--scope", "acme/platform/dana/coder",
                                 "--session", "sx"], env=env)
    assert erased.exit_code == 0, erased.output
    left = _plain_records(data_dir / "log.db")
    assert left == 0, f"erase said {erased.output.strip().splitlines()[-1]!r}; {left} records on the log still " \
                      f"hold {SECRET!r} in clear"

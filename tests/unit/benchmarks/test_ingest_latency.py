"""The ingest and latency benchmarks run end to end on tiny inputs (so they keep working), and report what
they claim: every turn searchable before the pipeline is idle; latency from a generated store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from benchmarks import latency
from benchmarks.ingest import load_turns, run, turns_source


def test_ingest_reports_searchable_then_fully_derived(tmp_path: Path) -> None:
    turns = load_turns(tmp_path / "no-such-file.json", 24)  # synthetic turns
    result = asyncio.run(run(turns, tmp_path / "data"))
    assert result["searchable_l0"] == len(turns)
    assert 0 < result["searchable_s"] <= result["seconds"]
    assert result["searchable_turns_per_s"] >= result["turns_per_s"]
    assert result["memories"] > len(turns)  # derived layers were written too
    assert result["stages"]["embed"]["records"] > 0 and result["stages"]["fold"]["records"] > 0


def test_a_record_says_which_turns_it_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A checkout outside the project's folder (a worktree) has no dev data: the benchmarks fell back to
    synthetic turns silently, and their figures were read as LoCoMo's (they derive less per turn)."""
    missing = tmp_path / "no-such-file.json"
    load_turns(missing, 3)
    assert "synthetic turns instead" in capsys.readouterr().err
    assert turns_source(missing).startswith("synthetic")
    present = tmp_path / "dev.json"
    present.write_bytes(b"[]")
    assert turns_source(present) == f"{present} sha256:4f53cda18c2baa0c"


def test_latency_generates_a_store_and_serves_prepare_turn(tmp_path: Path) -> None:
    data = tmp_path / "data"
    latency.generate(data, 400, users=2)
    result = latency.serve(data, queries=5, users=2)
    assert len(result["latencies_ms"]) == 5 and result["p50"] > 0 and result["peak_rss_mib"] > 0
    assert result["p50"] <= result["p95"] <= result["p99"]
    # the script runs as a program too (generation and serving in their own processes, stores reused)
    stores = tmp_path / "stores"
    argv = sys.argv
    try:
        sys.argv = ["latency.py", "--sizes", "300", "--users", "2", "--queries", "3", "--stores", str(stores),
                    "--out", str(tmp_path / "out.json")]
        latency.main()
    finally:
        sys.argv = argv
    assert (stores / "size-300-users-2" / "complete").exists() and (tmp_path / "out.json").exists()

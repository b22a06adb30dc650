"""Whether the writer's cost per turn stays flat as one user's graph grows: one user, N turns that all name the
same three people in the same city (so the same CO_OCCURS edges gain evidence at every turn), no embedder;
the writer's busy time per 1,000 turns for each N, and the largest edge's evidence.

python benchmarks/graph_growth.py [--turns 1000 2000 4000] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["ALTM_EMBEDDER"] = "none"

from altm.core import Role, Scope, TurnEvent
from altm.store import shard_files
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import run

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def turns(n: int) -> list[TurnEvent]:
    return [TurnEvent(scope=SCOPE, session_id=f"s{i // 50}", turn_id=f"s{i // 50}-t{i}", role=Role.USER,
                      content=f"Message {i}: Alice met Bob and Carol in Berlin about item {i % 37}.",
                      timestamp=T0 + timedelta(minutes=i)) for i in range(n)]


def largest_edge(data_dir: Path) -> int:
    """The most evidence any edge of the data dir has."""
    import sqlite3

    most = 0
    for _, path in shard_files(data_dir):
        with sqlite3.connect(path) as db:
            columns = {r[1] for r in db.execute("PRAGMA table_info(graph_edges)")}
            count = "evidence_count" if "evidence_count" in columns else "json_array_length(evidence)"  # before 13
            found = db.execute(f"SELECT MAX({count}) FROM graph_edges").fetchone()[0]
        most = max(most, int(found or 0))
    return most


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for n in args.turns:
        with tempfile.TemporaryDirectory(prefix="altm-graph-growth-") as tmp:
            result = asyncio.run(run(turns(n), Path(tmp)))
            writer = float(result["stages"]["writer"]["busy_s"])
            rows.append({"turns": n, "seconds": round(float(result["seconds"]), 2), "writer_busy_s": writer,
                         "writer_ms_per_turn": round(writer / n * 1000, 3), "largest_edge": largest_edge(Path(tmp))})
        print(f"{n} turns: {rows[-1]['seconds']} s, writer {writer:.1f} s ({rows[-1]['writer_ms_per_turn']} ms a "
              f"turn), largest edge {rows[-1]['largest_edge']} memories")
    first, last = rows[0], rows[-1]
    ratio = last["writer_ms_per_turn"] / first["writer_ms_per_turn"] if first["writer_ms_per_turn"] else None
    print(f"writer ms a turn, {last['turns']} against {first['turns']} turns: {ratio:.2f}x" if ratio else "")
    path = write_record("graph_growth", {
        "config": config_stamp(benchmark="graph_growth", turns=args.turns, embedder=None, partitions=4),
        "aggregate": {"writer_ms_per_turn_ratio": ratio},
        "rows": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()

"""The per-memory lookups of the writer and the deriving stages against the length of a user's history: the
guard's anti-pattern lookup (every derived memory), govern's exact-duplicate lookup (every atom) and facet
lookup (every preference or fact), verify's subject lookup (every atom). Each is timed on one shard holding
N atoms of one agent, with the indexes of shard schema 12 and, on a copy of the same shard without them (and
govern's exact-duplicate lookup in its earlier SQL), as SQLite answered before: through the agent's or the
user's whole history.

    python benchmarks/history_lookups.py [--sizes 1000,10000,40000] [--repeat 200] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import Kind, Layer, Method, Scope
from altm.pipeline.processors._base import derived_memory
from altm.store import MemoryReader, ShardSet, memory_to_row
from benchmarks._record import config_stamp, median, write_record

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = (Kind.FACT, Kind.DECISION, Kind.PREFERENCE, Kind.TASK)
SCHEMA_12_INDEXES = ("memories_anti_patterns", "memories_facet_key", "memories_subject")


def fill_history(shards: ShardSet, start: int, n: int) -> None:
    """``n`` more L2 atoms of the agent (no anti-pattern among them), each with a facet key and a subject."""
    shard = shards.get(0)
    with shard.transaction() as tx:
        for i in range(start, start + n):
            mem = derived_memory(
                scope=SCOPE, session_id=f"s{i // 20}", layer=Layer.L2, kind=KINDS[i % len(KINDS)],
                content=f"statement {i} about topic {i % 50}", evidence=[], processor="bench",
                method=Method.HEURISTIC, id_parts=["atom", str(i)], valid_from=T0 + timedelta(minutes=i),
                attributes={"facet_key": f"pref:topic{i % 50}", "subject": f"topic {i % 50}"})
            tx.insert_memory(memory_to_row(mem, T0), at=T0.isoformat(), proposal_id=f"p{i}", actor="bench")


def _anti_patterns(shards: ShardSet) -> object:
    with shards.get(0).transaction() as tx:
        return tx.anti_patterns(SCOPE)


BEFORE_SAME_CONTENT = (
    "SELECT memory_id FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=? AND layer=? "
    "AND kind=? AND content_hash=? ORDER BY valid_from, memory_id")
"""Govern's exact-duplicate lookup as it was (it names its index now: dropping one would not bring it back)."""


def _same_content_before(shards: ShardSet) -> object:
    return shards.get(0)._db.execute(BEFORE_SAME_CONTENT, ("t", "w", "u", "a", "L2", "fact", "0" * 64)).fetchall()


def history_lookups(shards: ShardSet, *, before: bool = False) -> dict[str, Callable[[], object]]:
    """Each lookup as its stage makes it, for a value the history does not hold (the common case);
    ``before``: govern's exact-duplicate lookup as it was."""
    reader = MemoryReader(shards)
    return {
        "guard: anti-patterns": lambda: _anti_patterns(shards),
        "govern: same content": (lambda: _same_content_before(shards)) if before else (
            lambda: reader.same_content(SCOPE, Layer.L2, "fact", "0" * 64)),
        "govern: facet atoms": lambda: reader.atoms_with(SCOPE, "facet_key", "pref:none", user_wide=True),
        "verify: subject atoms": lambda: reader.atoms_with(SCOPE, "subject", "no such topic"),
    }


def _timed(lookup: Callable[[], object], repeat: int) -> float:
    """Median µs of one lookup."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        lookup()
        times.append((time.perf_counter() - start) * 1e6)
    return median(times)


def _measure(data_dir: Path, repeat: int, *, before: bool = False) -> dict[str, float]:
    shards = ShardSet(data_dir, 1)
    try:
        return {name: _timed(lookup, repeat) for name, lookup in history_lookups(shards, before=before).items()}
    finally:
        shards.close()


def _without_indexes(data_dir: Path, copy: Path) -> Path:
    """A copy of the shard without schema 12's indexes: the lookups as SQLite answered them before."""
    shutil.copytree(data_dir, copy)
    shards = ShardSet(copy, 1)
    try:
        db = shards.get(0)._db
        for index in SCHEMA_12_INDEXES:
            db.execute(f"DROP INDEX {index}")
    finally:
        shards.close()
    return copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,40000")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "d"
        shards = ShardSet(data_dir, 1)
        held = 0
        try:
            for size in sizes:
                fill_history(shards, held, size - held)
                held = size
                shards.close()
                before = _measure(_without_indexes(data_dir, Path(tmp) / f"before-{size}"), args.repeat,
                                  before=True)
                after = _measure(data_dir, args.repeat)
                shards = ShardSet(data_dir, 1)
                for name in after:
                    rows.append({"atoms": size, "lookup": name, "before_us": before[name], "after_us": after[name]})
                    print(f"{size:>7} atoms  {name:<24} before {before[name]:9.1f} µs   after {after[name]:7.1f} µs"
                          f"   {before[name] / after[name]:6.1f}×")
        finally:
            shards.close()
    path = write_record("history_lookups", {
        "config": config_stamp(benchmark="history_lookups", sizes=sizes, repeat=args.repeat),
        "rows": rows,
        "aggregate": {f"{r['lookup']} @ {r['atoms']}": {"before_us": r["before_us"], "after_us": r["after_us"]}
                      for r in rows},
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()

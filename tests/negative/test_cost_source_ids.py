"""The turns a recalled memory stands for are collected in time quadratic in its evidence.

``SearchQueries._evidence_layer`` (altm/store/_search.py:194-204, the check at :202) appends each L0 source id to
the list
``found`` after ``source_id not in found``, a scan of that list: n evidence messages cost n²/2 comparisons. An
exact duplicate said in many sessions is merged into its canonical atom (and its persona facet), which gains each
saying's evidence (model-free: "I prefer dark mode in every editor." said in 250 / 1,000 sessions made the
assemble step 1.3 / 12.1 ms; ``source_ids`` alone over 1,000 / 4,000 / 8,000 / 16,000
evidence rows: 5.0 / 58.9 / 213 / 787 ms; a capsule a model writes cites every message of its session). Every
recall that shows such a memory pays it, on the event loop, and every hit carries all n ids (``Hit.source_ids``: the
prepare_turn JSON grew 7.2 → 22.2 KB).

Expected: linear (a set beside the list), and a bounded list of ids per hit."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from altm.core import content_hash, derive_id, partition_for
from altm.store import MEMORY_COLUMNS, SearchQueries, ShardSet
from tests.support.turns import SCOPE

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _row(mid: str, layer: str, kind: str, content: str, i: int, evidence: list[str]) -> list[Any]:
    row: dict[str, Any] = dict.fromkeys(MEMORY_COLUMNS)
    row.update(memory_id=mid, tenant_id=SCOPE.tenant_id, workspace_id=SCOPE.workspace_id, user_id=SCOPE.user_id,
               agent_id=SCOPE.agent_id, session_id=f"s{i}", layer=layer, kind=kind, content=content,
               content_hash=content_hash(content), source_id=f"s{i}-t1" if layer == "L0" else None, role="user",
               attributes="{}", evidence=orjson.dumps(evidence).decode(), method="verbatim", processor="test",
               valid_from=(T0 + timedelta(minutes=i)).isoformat(), recorded_at=T0.isoformat(),
               trust_status="unverified", lc_state="active", lc_weight=1.0, lc_injected=0, lc_cited=0, lc_helpful=0,
               lc_harmful=0, lc_pinned=0, lc_compression=0)
    return [row[c] for c in MEMORY_COLUMNS]


def _seconds(tmp: Path, n: int) -> float:
    shards = ShardSet(tmp / f"n{n}", 4)
    queries = SearchQueries(shards.get(partition_for(SCOPE.home, 4)))
    said = [derive_id("mem", "saying", str(i)) for i in range(n)]
    rows = [_row(m, "L0", "message", "I prefer dark mode in every editor.", i, []) for i, m in enumerate(said)]
    rows.append(_row("mem_atom", "L2", "preference", "I prefer dark mode in every editor.", n, said))
    conn = queries._conn
    conn.execute("BEGIN")
    columns, places = ", ".join(MEMORY_COLUMNS), ", ".join("?" * len(MEMORY_COLUMNS))
    conn.executemany(f"INSERT INTO memories ({columns}) VALUES ({places})", rows)
    conn.execute("COMMIT")
    atom = queries.rows(["mem_atom"])["mem_atom"]
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        sources = queries.source_ids([atom], agent_id=SCOPE.agent_id)["mem_atom"]
        best = min(best, time.perf_counter() - t)
    assert len(sources) == n
    shards.close()
    return best


def test_source_ids_of_a_memory_are_linear_in_its_evidence(tmp_path: Path) -> None:
    small, large = _seconds(tmp_path, 1_000), _seconds(tmp_path, 8_000)
    assert large / small < 20, (
        f"source ids of 1,000 → 8,000 evidence messages took {small * 1000:.1f} → {large * 1000:.1f} ms "
        f"(×{large / small:.0f} for ×8): quadratic")

"""Both vector index adapters against the same contract (embedded Qdrant edge; Qdrant client)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from qdrant_client import QdrantClient

from altm.vectors import VectorFilter, VectorIndex, VectorIndexError, VectorPoint
from altm.vectors.edge import EdgeVectorIndex
from altm.vectors.server import QdrantServerIndex


def _payload(tenant: str, agent: str, layer: str = "L2") -> dict[str, str]:
    return {"tenant_id": tenant, "workspace_id": "w", "user_id": "u", "agent_id": agent, "session_id": "s",
            "layer": layer, "kind": "fact", "trust_status": "unverified"}


@pytest.fixture(params=["edge", "client-memory", "server"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    name = f"test_{uuid.uuid4().hex[:8]}"
    idx: VectorIndex
    if request.param == "edge":
        idx = EdgeVectorIndex(tmp_path / "vectors", name, 3)
    elif request.param == "client-memory":
        idx = QdrantServerIndex(QdrantClient(":memory:"), name, 3)
    else:
        url = os.environ.get("QDRANT_URL")
        if not url:
            pytest.skip("QDRANT_URL is not set: no Qdrant server to test against")
        idx = QdrantServerIndex.from_url(url, name, 3)
    idx.open()
    yield idx
    idx.close()


def test_filtered_search_never_crosses_scopes(index: VectorIndex) -> None:
    index.upsert([
        VectorPoint("mem_a", [1.0, 0.0, 0.0], _payload("acme", "coder")),
        VectorPoint("mem_b", [0.9, 0.1, 0.0], _payload("acme", "reviewer")),
        VectorPoint("mem_c", [1.0, 0.0, 0.0], _payload("globex", "coder")),
    ])
    hits = index.search([1.0, 0.0, 0.0], VectorFilter(equals={"tenant_id": "acme", "agent_id": "coder"}), 10)
    assert [h.memory_id for h in hits] == ["mem_a"]
    hits = index.search([1.0, 0.0, 0.0], VectorFilter(equals={"tenant_id": "acme"}), 10)
    assert [h.memory_id for h in hits] == ["mem_a", "mem_b"]
    hits = index.search([1.0, 0.0, 0.0], VectorFilter(any_of={"agent_id": ("reviewer",)}), 10)
    assert [h.memory_id for h in hits] == ["mem_b"]


def test_upsert_is_idempotent_by_memory_id_and_delete_works(index: VectorIndex) -> None:
    p = VectorPoint("mem_a", [1.0, 0.0, 0.0], _payload("acme", "coder"))
    index.upsert([p])
    index.upsert([p])
    assert index.count() == 1
    index.upsert([VectorPoint("mem_a", [0.0, 1.0, 0.0], _payload("acme", "coder"))])
    (hit,) = index.search([0.0, 1.0, 0.0], VectorFilter(), 5)
    assert hit.memory_id == "mem_a" and hit.score > 0.99
    index.delete(["mem_a"])
    assert index.count() == 0
    assert index.count(VectorFilter(equals={"tenant_id": "acme"})) == 0


def test_wrong_dimension_is_refused(index: VectorIndex) -> None:
    with pytest.raises(VectorIndexError, match="dims"):
        index.upsert([VectorPoint("x", [1.0, 0.0], _payload("a", "b"))])


def test_edge_index_persists_across_reopen(tmp_path: Path) -> None:
    idx = EdgeVectorIndex(tmp_path / "v", "c", 3)
    idx.open()
    idx.upsert([VectorPoint("mem_a", [1.0, 0.0, 0.0], _payload("acme", "coder"))])
    idx.close()
    again = EdgeVectorIndex(tmp_path / "v", "c", 3)
    again.open()
    assert again.count() == 1
    again.close()


def test_edge_index_flushed_writes_survive_a_hard_kill(tmp_path: Path) -> None:
    """No write-ahead log: what the embed stage flushed before committing offsets must survive a crash."""
    script = (
        "import os, sys\n"
        "from altm.vectors import VectorPoint\n"
        "from altm.vectors.edge import EdgeVectorIndex\n"
        "idx = EdgeVectorIndex(sys.argv[1], 'c', 3)\n"
        "idx.open()\n"
        "payload = {'tenant_id': 'acme', 'workspace_id': 'w', 'user_id': 'u', 'agent_id': 'coder'}\n"
        "idx.upsert([VectorPoint('mem_flushed', [1.0, 0.0, 0.0], payload)])\n"
        "idx.flush()\n"
        "os._exit(0)\n"  # no close(), no flush at exit: a crash
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "v")], check=True, timeout=60)
    config = orjson.loads((tmp_path / "v" / "c" / "edge_config.json").read_bytes())
    assert config.get("wal_enabled") is False
    again = EdgeVectorIndex(tmp_path / "v", "c", 3)
    again.open()
    try:
        assert again.count() == 1
        assert [h.memory_id for h in again.search([1.0, 0.0, 0.0], VectorFilter(), 1)] == ["mem_flushed"]
    finally:
        again.close()


def test_a_new_edge_index_stores_float16_and_an_older_float32_one_still_opens(tmp_path: Path) -> None:
    """Issue 14, F13: float16 storage halves the vector pages the embedded index keeps mapped; an index created
    before (float32) keeps its type: Qdrant refuses to open it with another one."""
    import qdrant_edge as q

    new = EdgeVectorIndex(tmp_path, "fresh", 4)
    new.open()
    new.upsert([VectorPoint("m1", [1.0, 0.0, 0.0, 0.0], {"user_id": "u"})])
    new.close()
    assert orjson.loads((tmp_path / "fresh" / "edge_config.json").read_bytes())["vectors"][""]["datatype"] == "float16"
    old_path = tmp_path / "older"
    engine = q.EdgeShard.create(str(old_path), q.EdgeConfig(
        vectors=q.EdgeVectorParams(size=4, distance=q.Distance.Cosine), wal_enabled=False))
    engine.close()
    older = EdgeVectorIndex(tmp_path, "older", 4)
    older.open()
    older.upsert([VectorPoint("m2", [0.0, 1.0, 0.0, 0.0], {"user_id": "u"})])
    hits = older.search([0.0, 1.0, 0.0, 0.0], VectorFilter(), 1)
    older.close()
    assert [h.memory_id for h in hits] == ["m2"]


def test_points_gives_back_the_stored_vector_and_payload_of_those_that_exist(index: VectorIndex) -> None:
    index.upsert([VectorPoint("mem_a", [0.6, 0.8, 0.0], _payload("acme", "coder")),
                  VectorPoint("mem_b", [0.0, 0.0, 1.0], _payload("acme", "reviewer"))])
    found = index.points(["mem_a", "mem_missing"])
    assert set(found) == {"mem_a"}
    assert found["mem_a"].payload["agent_id"] == "coder" and found["mem_a"].memory_id == "mem_a"
    assert [round(x, 2) for x in found["mem_a"].vector] == [0.6, 0.8, 0.0]  # stored normalised (and float16)
    index.upsert([found["mem_a"]])  # stored again as it came back: the same point
    assert [round(x, 2) for x in index.points(["mem_a"])["mem_a"].vector] == [0.6, 0.8, 0.0]
    assert index.points([]) == {}

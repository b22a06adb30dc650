"""Read-only listing of stored memories, filtered by scope and layer inside the SQL query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from altm.app.stats import DataDirError
from altm.core import Layer, Scope
from altm.store import Shard


def list_memories(
    data_dir: Path, *, scope: Scope | None = None, layer: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    if layer is not None and layer not in {x.value for x in Layer}:
        raise DataDirError(f"unknown layer {layer!r}; expected one of L0..L4")
    paths = sorted((data_dir / "shards").glob("shard-*.db"))
    if not paths:
        raise DataDirError(f"{data_dir} has no shards; run `altm ingest` first")
    where, args = [], []
    if scope is not None:
        where += ["tenant_id=?", "workspace_id=?", "user_id=?", "agent_id=?"]
        args += [scope.tenant_id, scope.workspace_id, scope.user_id, scope.agent_id]
    if layer is not None:
        where.append("layer=?")
        args.append(layer)
    sql = (
        "SELECT memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, layer, kind, source_id, "
        "role, content, valid_from FROM memories"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY valid_from, memory_id LIMIT ?"
    )
    out: list[dict[str, Any]] = []
    for path in paths:
        shard = Shard(path, int(path.stem.split("-")[1]), read_only=True).open()
        try:
            for r in shard.conn.execute(sql, [*args, limit]):
                d = dict(r)
                d["scope"] = "/".join(d.pop(k) for k in ("tenant_id", "workspace_id", "user_id", "agent_id"))
                out.append(d)
        finally:
            shard.close()
    out.sort(key=lambda d: (d["valid_from"] or "", d["memory_id"]))
    return out[:limit]

"""Mapping between :class:`MemoryUnit` and rows of the ``memories`` table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypedDict, cast

import orjson

from altm.core import Lifecycle, MemoryUnit, Provenance, Scope, Trust

MEMORY_COLUMNS: tuple[str, ...] = (
    "memory_id", "tenant_id", "workspace_id", "user_id", "agent_id", "session_id", "layer", "kind",
    "content", "context", "content_hash", "source_id", "role", "attributes", "evidence", "method", "processor",
    "model", "prompt_hash", "source_event_id", "valid_from", "valid_to", "recorded_at", "superseded_at",
    "superseded_by", "trust_status", "trust_method", "trust_confidence", "trust_reason",
    "trust_contradicting_id", "trust_verified_at", "lc_state", "lc_weight", "lc_injected", "lc_cited",
    "lc_helpful", "lc_harmful", "lc_pinned", "lc_compression",
)

WALL_CLOCK_COLUMNS = frozenset({"recorded_at", "superseded_at", "trust_verified_at"})

VERDICT_COLUMNS: tuple[str, ...] = (
    "trust_status", "trust_method", "trust_confidence", "trust_reason", "trust_contradicting_id")
"""A trust verdict: the columns that only make sense together (the guard's hold, verify's, a reviewer's)."""
REVIEWED_COLUMNS: tuple[str, ...] = (*VERDICT_COLUMNS, "trust_verified_at")
"""A verdict and when it was given: what a reviewer's decision on a memory sets."""
SUPERSESSION_COLUMNS: tuple[str, ...] = ("superseded_by", "superseded_at", "valid_to")
"""What a supersession sets (and a release clears) together."""
LIFECYCLE_COLUMNS: tuple[str, ...] = tuple(c for c in MEMORY_COLUMNS if c.startswith("lc_"))
"""The counters, weight, state, pin and compression its use signals give a memory."""
COLUMN_GROUPS: tuple[tuple[str, ...], ...] = (REVIEWED_COLUMNS, SUPERSESSION_COLUMNS, LIFECYCLE_COLUMNS)


class MemoryRow(TypedDict):
    """One row of ``memories``, typed: JSON columns (attributes, evidence) as text, times as ISO 8601 text,
    booleans as 0/1 (what SQLite stores)."""

    memory_id: str
    tenant_id: str
    workspace_id: str
    user_id: str
    agent_id: str
    session_id: str | None
    layer: str
    kind: str
    content: str
    context: str | None
    content_hash: str
    source_id: str | None
    role: str | None
    attributes: str
    evidence: str
    method: str
    processor: str
    model: str | None
    prompt_hash: str | None
    source_event_id: str | None
    valid_from: str | None
    valid_to: str | None
    recorded_at: str | None
    superseded_at: str | None
    superseded_by: str | None
    trust_status: str
    trust_method: str | None
    trust_confidence: float | None
    trust_reason: str | None
    trust_contradicting_id: str | None
    trust_verified_at: str | None
    lc_state: str
    lc_weight: float
    lc_injected: int
    lc_cited: int
    lc_helpful: int
    lc_harmful: int
    lc_pinned: int
    lc_compression: int
"""Columns that hold wall-clock time, excluded from state hashes by design."""


def _dt(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def memory_to_row(mem: MemoryUnit, recorded_at: datetime) -> MemoryRow:
    p, t, lc = mem.provenance, mem.trust, mem.lifecycle
    return {
        "memory_id": mem.memory_id,
        "tenant_id": mem.scope.tenant_id,
        "workspace_id": mem.scope.workspace_id,
        "user_id": mem.scope.user_id,
        "agent_id": mem.scope.agent_id,
        "session_id": mem.session_id,
        "layer": mem.layer.value,
        "kind": mem.kind.value,
        "content": mem.content,
        "context": mem.context,
        "content_hash": mem.content_hash,
        "source_id": mem.source_id,
        "role": mem.role,
        "attributes": orjson.dumps(mem.attributes, option=orjson.OPT_SORT_KEYS).decode(),
        "evidence": orjson.dumps(list(mem.evidence)).decode(),
        "method": p.method.value,
        "processor": p.processor,
        "model": p.model,
        "prompt_hash": p.prompt_hash,
        "source_event_id": p.source_event_id,
        "valid_from": _dt(mem.valid_from),
        "valid_to": _dt(mem.valid_to),
        "recorded_at": _dt(mem.recorded_at or recorded_at),
        "superseded_at": _dt(mem.superseded_at),
        "superseded_by": mem.superseded_by,
        "trust_status": t.status.value,
        "trust_method": None if t.method is None else t.method.value,
        "trust_confidence": t.confidence,
        "trust_reason": t.reason,
        "trust_contradicting_id": t.contradicting_id,
        "trust_verified_at": _dt(t.verified_at),
        "lc_state": lc.state.value,
        "lc_weight": lc.weight,
        "lc_injected": lc.injected_count,
        "lc_cited": lc.cited_count,
        "lc_helpful": lc.helpful_count,
        "lc_harmful": lc.harmful_count,
        "lc_pinned": int(lc.pinned),
        "lc_compression": lc.compression_level,
    }


def row_to_memory(row: sqlite3.Row | MemoryRow | Mapping[str, Any]) -> MemoryUnit:
    r = dict(row)
    return MemoryUnit(
        memory_id=r["memory_id"],
        scope=Scope(
            tenant_id=r["tenant_id"], workspace_id=r["workspace_id"], user_id=r["user_id"],
            agent_id=r["agent_id"],
        ),
        session_id=r["session_id"],
        layer=r["layer"],
        kind=r["kind"],
        content=r["content"],
        context=r["context"],
        content_hash=r["content_hash"],
        source_id=r["source_id"],
        role=r["role"],
        attributes=orjson.loads(r["attributes"]),
        evidence=tuple(orjson.loads(r["evidence"])),
        provenance=Provenance(
            method=r["method"], processor=r["processor"], model=r["model"], prompt_hash=r["prompt_hash"],
            source_event_id=r["source_event_id"],
        ),
        valid_from=r["valid_from"],
        valid_to=r["valid_to"],
        recorded_at=r["recorded_at"],
        superseded_at=r["superseded_at"],
        superseded_by=r["superseded_by"],
        trust=Trust(
            status=r["trust_status"], method=r["trust_method"], confidence=r["trust_confidence"],
            reason=r["trust_reason"], contradicting_id=r["trust_contradicting_id"],
            verified_at=r["trust_verified_at"],
        ),
        lifecycle=Lifecycle(
            state=r["lc_state"], weight=r["lc_weight"], injected_count=r["lc_injected"],
            cited_count=r["lc_cited"], helpful_count=r["lc_helpful"], harmful_count=r["lc_harmful"],
            pinned=bool(r["lc_pinned"]), compression_level=r["lc_compression"],
        ),
    )


def memory_row(row: sqlite3.Row | Mapping[str, Any]) -> MemoryRow:
    """A ``memories`` row read from SQLite, as a typed row."""
    return cast("MemoryRow", {k: row[k] for k in MEMORY_COLUMNS})


def columns(row: MemoryRow) -> Mapping[str, Any]:
    """The row by column name, for code that walks :data:`MEMORY_COLUMNS`."""
    return cast("Mapping[str, Any]", row)


def carry_over(new: MemoryRow, old: MemoryRow, names: Iterable[str]) -> MemoryRow:
    """``new`` with the ``names`` columns taken from ``old``."""
    kept = columns(old)
    return cast("MemoryRow", {**columns(new), **{name: kept[name] for name in names}})


def changed_since(now: MemoryRow, then: Mapping[str, Any]) -> list[str]:
    """The columns of ``now`` that differ from ``then`` (a row image the audit log keeps); a group of
    :data:`COLUMN_GROUPS` whole when one of its columns differs."""
    current = columns(now)
    grouped = {c for group in COLUMN_GROUPS for c in group}
    differ = {c for c in MEMORY_COLUMNS if c != "memory_id" and current[c] != then.get(c)}
    return [c for c in MEMORY_COLUMNS if c in differ and c not in grouped] + [
        c for group in COLUMN_GROUPS if differ & set(group) for c in group]


def comparable(row: MemoryRow | Mapping[str, Any]) -> dict[str, Any]:
    """A row without its wall-clock columns (what idempotency and state hashes compare)."""
    return {k: v for k, v in row.items() if k not in WALL_CLOCK_COLUMNS}


TOMBSTONE_COLUMNS = ("tombstone_id", "tenant_id", "workspace_id", "user_id", "agent_id", "value_hash",
                     "normalised_text", "reason", "at", "memory_id", "layer", "shingle_hashes", "distinctive",
                     "term_hashes", "erasure_id", "forgotten_by",
                     "forgotten_reason")
"""Every column of a tombstone (what a replay carries over)."""

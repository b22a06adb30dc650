"""Records and helpers shared by the parts of a shard's write transaction."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from altm.core import (
    Scope,
)

Row = dict[str, Any]
MEMORY_ID = re.compile(r"\bmem_[0-9a-f]{32}\b")  # a memory's id in a record's inputs (see derive_id)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True)
class Tombstone:
    tombstone_id: str
    reason: str
    shingle_hashes: frozenset[str]
    distinctive: bool
    term_hashes: frozenset[str] = frozenset()
    value_hash: str = ""


def _home(scope: Scope) -> list[str]:
    return [scope.tenant_id, scope.workspace_id, scope.user_id]


@dataclass(frozen=True)
class AuditEntry:
    """One audit row, decoded: a change a rollback can undo."""

    table: str
    target_id: str
    old: Row | None
    new: Row | None
    redacted: bool


@dataclass(frozen=True)
class SignalTally:
    """All use signals of one memory, summed up: what its lifecycle counters and state are computed from."""

    counts: dict[str, int]  # signals per kind
    pinned: bool  # the latest pin or unpin signal was a pin
    compression: tuple[int | None, int] | None  # (level, seq) of the latest compress signal
    last_use_seq: int | None  # seq of the latest cited_by_agent or helpful signal


def upsert_applied(db: sqlite3.Connection, memory_id: str, proposal_id: str, home: Sequence[str] = ()) -> bool:
    """The memory is stored (by the user ``home`` names: tenant, workspace, user, when given) and the upsert
    ``proposal_id`` was applied (the audit log names it): the writer applies a memory upsert once, so delivered
    again it changes nothing. The writer and the stages (which then do not send it) ask the same question."""
    where = " AND tenant_id=? AND workspace_id=? AND user_id=?" if home else ""
    # applied to the memory as stored now: an audit row of this proposal on it since it was last removed (an
    # erasure or a forget, after which the same proposal may rightly store it again)
    return db.execute(f"SELECT 1 FROM memories m WHERE m.memory_id=?{where} AND EXISTS ("
                      "SELECT 1 FROM audit_log a WHERE a.proposal_id=? AND a.target_table='memories' "
                      "AND a.target_id=m.memory_id AND a.audit_id > COALESCE((SELECT MAX(d.audit_id) FROM audit_log d "
                      "WHERE d.target_table='memories' AND d.target_id=m.memory_id AND d.new_value IS NULL), 0))",
                      [memory_id, *home, proposal_id]).fetchone() is not None


def _evidence_of(image: Row | None) -> list[str]:
    """The evidence an audited edge image lists (a JSON string before version 13, a list since)."""
    listed = (image or {}).get("evidence")
    try:
        found = orjson.loads(listed) if isinstance(listed, str) else listed
    except orjson.JSONDecodeError:
        return []
    return [str(e) for e in found] if isinstance(found, list) else []


def _edge_delta(old: Row | None, new: Row | None) -> tuple[list[str], list[str]] | None:
    """(added, removed) by an audited change of an edge's evidence, or None for a whole insert or deletion:
    a delta since version 13 (``{"count", "added"}``, ``{"count", "removed"}``), the difference of the two
    lists of an update audited before it."""
    if new is None:
        return None
    evidence = new.get("evidence")
    if isinstance(evidence, dict):
        return [str(e) for e in evidence.get("added", ())], [str(e) for e in evidence.get("removed", ())]
    if old is None or "evidence" not in old or evidence is None:
        return None
    before, after = set(_evidence_of(old)), set(_evidence_of(new))
    return sorted(after - before), sorted(before - after)


def _made_on(decision: sqlite3.Row, signals: set[tuple[str, str]], agent: str, session: str | None) -> bool:
    """A lifecycle decision was made on one of ``signals`` (memory id, signal id), or on a signal ``agent`` sent
    (in ``session``, when given), as its inputs name them."""
    inputs = orjson.loads(decision["inputs"] or "{}")
    if (str(inputs.get("memory_id")), str(inputs.get("signal_id"))) in signals:
        return True
    sender = inputs.get("sender")
    return isinstance(sender, dict) and sender.get("agent_id") == agent and (
        session is None or sender.get("session_id") == session)


def _owner_is(field: str) -> str:
    """A rejection's payload names ``field`` of its owner (the memory's, else the proposal's) as a bound value."""
    return f"COALESCE(json_extract(payload, '$.memory.{field}'), json_extract(payload, '$.{field}'))=?"




RESTORABLE_SIGNAL = frozenset({"memory_id", "signal_id", "kind", "at", "seq"})
"""What a rollback's audit row keeps of a use signal it removed, so that undoing the rollback counts it again."""


def _signal_key(memory_id: str, signal_id: str, kind: str) -> str:
    """A use signal's own key in the audit log (an erasure's and a rollback's removals are audited under it)."""
    return f"{memory_id}/{signal_id}/{kind}"


def merged_attributes(old: Mapping[str, object], new: Mapping[str, object]) -> dict[str, object]:
    """Both attribute sets of a graph node; where they disagree, the least value (by its JSON), whichever came
    first (a node's row is a function of what was proposed, not of the order)."""
    out = dict(old)
    for key, value in new.items():
        if key not in out or _json(value) < _json(out[key]):
            out[key] = value
    return out


def node_union(old: Row, current: Row) -> Row:
    """A node a rollback puts back that was made again since: both as one, as the writer joins spellings (the
    least name and method, the attributes merged)."""
    attributes = merged_attributes(orjson.loads(str(current["attributes"] or "{}")),
                                   orjson.loads(str(old["attributes"] or "{}")))
    return {**current, "name": min(str(old["name"]), str(current["name"])),
            "method": min(str(old["method"]), str(current["method"])), "attributes": _json(attributes)}

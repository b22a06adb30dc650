"""The open write transaction of one shard: the only way to change memory state (DESIGN §1.2, §3).

:meth:`Shard.transaction` yields a :class:`ShardTx`; once the transaction has ended, the object refuses every
call. Each mutation writes its audit row (with the old value) first, in the same transaction. The reads here
are the ones the writer needs inside the transaction (they see its uncommitted writes).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import orjson

from altm.core import (
    FORGOTTEN_PREFIX,
    Erasure,
    LifecycleSignal,
    Scope,
    derive_id,
    rejected_proposal,
    rejection_item,
    sha256_hex,
    tombstone_id,
)
from altm.store._errors import ShardError, StoreUnavailable
from altm.store._redaction import redacted
from altm.store._rows import (
    MEMORY_COLUMNS,
    REVIEWED_COLUMNS,
    SUPERSESSION_COLUMNS,
    TOMBSTONE_COLUMNS,
    MemoryRow,
    carry_over,
    changed_since,
    columns,
    memory_row,
)
from altm.store._sql import CACHE_GET, CACHE_PUT
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks

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


class ShardTx:
    """One shard's write transaction: every mutation of memory state, audited, and the reads made inside it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection | None = conn

    def end(self) -> None:
        """Called by :meth:`Shard.transaction` on commit or rollback: later calls are refused."""
        self._conn = None

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """All or nothing inside the transaction: what the block wrote is undone when it raises (the writer
        applies each op this way, so an op refused or failing half-way leaves no partial change)."""
        db = self._db
        db.execute("SAVEPOINT op")
        try:
            yield
        except BaseException as exc:
            if not db.in_transaction:  # SQLite rolled the whole transaction back (full disk, I/O error...)
                raise StoreUnavailable(f"the shard's transaction was rolled back: {exc}") from exc
            db.execute("ROLLBACK TO op")
            db.execute("RELEASE op")
            if isinstance(exc, sqlite3.OperationalError):  # the storage, not the request: retried as a whole
                raise StoreUnavailable(f"the shard could not be written: {exc}") from exc
            raise
        db.execute("RELEASE op")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ShardError("mutations need a writer transaction (Shard.transaction); this one has ended")
        return self._conn

    # -- reads ---------------------------------------------------------------------------------------------
    def memory_row(self, memory_id: str) -> MemoryRow | None:
        row = self._db.execute("SELECT * FROM memories WHERE memory_id=?", (memory_id,)).fetchone()
        return None if row is None else memory_row(row)

    def has_memory(self, memory_id: str) -> bool:
        """The memory is stored (without reading its row: evidence and edge ends are checked by the thousand)."""
        return self._db.execute("SELECT 1 FROM memories WHERE memory_id=?", (memory_id,)).fetchone() is not None

    def _row(self, table: str, key_column: str, key: str) -> Row | None:
        r = self._db.execute(f"SELECT * FROM {table} WHERE {key_column}=?", (key,)).fetchone()
        return None if r is None else dict(r)

    def node(self, node_id: str) -> Row | None:
        return self._row("graph_nodes", "node_id", node_id)

    def edge(self, edge_id: str) -> Row | None:
        """The edge's row: its evidence is counted there (``evidence_count``) and listed in
        ``graph_edge_evidence`` (:meth:`edge_evidence`)."""
        return self._row("graph_edges", "edge_id", edge_id)

    def edge_evidence(self, edge_id: str) -> list[str]:
        """Every memory the edge cites, sorted."""
        return [str(r[0]) for r in self._db.execute(
            "SELECT memory_id FROM graph_edge_evidence WHERE edge_id=? ORDER BY memory_id", (edge_id,))]

    def new_edge_evidence(self, edge_id: str, memory_ids: Sequence[str]) -> list[str]:
        """Those of ``memory_ids`` the edge does not cite yet, sorted (one indexed lookup each, whatever the
        edge's evidence)."""
        have = {str(r[0]) for chunk in _chunks(sorted(set(memory_ids))) for r in self._db.execute(
            f"SELECT memory_id FROM graph_edge_evidence WHERE edge_id=? AND memory_id IN ({_marks(chunk)})",
            [edge_id, *chunk])}
        return sorted(set(memory_ids) - have)

    def cached(self, model: str, key: str) -> str | None:
        """An entry of the shard's model cache (the LLM's answers; the write guard's vectors)."""
        found = self._db.execute(CACHE_GET, (model, key)).fetchone()
        return None if found is None else str(found[0])

    def keep_cached(self, model: str, key: str, value: str, home: str, *, at: str) -> None:
        """Keep an entry in the model cache, under the ``home`` whose content it comes from: an erasure of that
        user's content clears it (:meth:`scrub`), a replay copies it."""
        self._db.execute(CACHE_PUT, (model, key, home, value, at))

    def held_action(self, action_id: str) -> Row | None:
        return self._row("held_actions", "action_id", action_id)

    def cycle(self, cycle_id: str) -> Row | None:
        return self._row("runtime_cycles", "cycle_id", cycle_id)

    def rejection(self, item_id: str) -> Row | None:
        """The rejection a review-queue item names (:func:`altm.core.rejection_item`): the latest of its
        proposal's, or the row of that number."""
        named = rejected_proposal(item_id)
        if isinstance(named, str):
            r = self._db.execute("SELECT * FROM rejections WHERE proposal_id=? ORDER BY rejection_id DESC LIMIT 1",
                                 (named,)).fetchone()
        else:
            r = self._db.execute("SELECT * FROM rejections WHERE rejection_id=?", (named,)).fetchone()
        return None if r is None else dict(r)

    # Conversation order of a session's L0 messages: (valid_from, source_id, memory_id).
    _ORDER = "(valid_from, source_id, memory_id)"
    _SAME_SESSION = ("tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=? AND session_id IS ? "
                     "AND layer='L0'")

    def session_neighbour(self, row: MemoryRow, direction: Literal["previous", "next"]) -> MemoryRow | None:
        """The L0 message just before or after ``row`` in its session's conversation order."""
        op, order = ("<", "DESC") if direction == "previous" else (">", "ASC")
        keys = [row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"], row["session_id"]]
        found = self._db.execute(
            f"SELECT * FROM memories WHERE {self._SAME_SESSION} AND {self._ORDER} {op} (?, ?, ?) "
            f"ORDER BY valid_from {order}, source_id {order}, memory_id {order} LIMIT 1",
            [*keys, row["valid_from"], row["source_id"], row["memory_id"]],
        ).fetchone()
        return None if found is None else memory_row(found)

    def verdicts_naming(self, scope: Scope, memory_ids: Sequence[str]) -> list[MemoryRow]:
        """The user's memories whose trust verdict names one of ``memory_ids`` (contradicted by it, replacing
        it, conflicting with it)."""
        return [memory_row(r) for chunk in _chunks(memory_ids) for r in self._db.execute(
            "SELECT * FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? "
            f"AND trust_contradicting_id IN ({_marks(chunk)}) ORDER BY memory_id", [*_home(scope), *chunk])]

    def atom_about(self, row: MemoryRow, subject: str) -> MemoryRow | None:
        """One stored L2 atom of ``row``'s agent about ``subject`` (the trust sweep compares an agent's atoms
        of one subject)."""
        found = self._db.execute(
            "SELECT memory_id FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=? "
            "AND layer='L2' AND json_extract(attributes, '$.subject') = ? ORDER BY memory_id LIMIT 1",
            [row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"], subject]).fetchone()
        return None if found is None else self.memory_row(found[0])

    def mentioned_by(self, memory_id: str) -> list[str]:
        """The graph nodes a memory's MENTIONS edges point to (the anchors of the scenes it can be a member of)."""
        return sorted({str(r[0]) for r in self._db.execute(
            "SELECT dst_id FROM graph_edges WHERE src_id=? AND edge_type='MENTIONS'", (memory_id,))})

    def atoms_of_facet(self, facet: MemoryRow) -> list[MemoryRow]:
        """The user's L2 atoms (of every agent) of a facet's facet key, in valid-time order."""
        key = orjson.loads(facet["attributes"] or "{}").get("facet_key")
        return [memory_row(r) for r in self._db.execute(
            "SELECT * FROM memories WHERE layer='L2' AND json_extract(attributes, '$.facet_key') IS ? "
            "AND tenant_id=? AND workspace_id=? AND user_id=? ORDER BY COALESCE(valid_from, ''), memory_id",
            (key, facet["tenant_id"], facet["workspace_id"], facet["user_id"]))]

    def facets_of_key(self, facet: MemoryRow, key: str) -> list[MemoryRow]:
        """The user's current persona facets (not superseded, not rejected) of ``key``, besides ``facet``, in
        valid-time order."""
        return [memory_row(r) for r in self._db.execute(
            "SELECT * FROM memories WHERE layer='L4' AND json_extract(attributes, '$.facet_key')=? "
            "AND superseded_by IS NULL AND lc_state != 'rejected' AND memory_id != ? AND tenant_id=? "
            "AND workspace_id=? AND user_id=? ORDER BY COALESCE(valid_from, ''), memory_id",
            (key, facet["memory_id"], facet["tenant_id"], facet["workspace_id"], facet["user_id"]))]

    def dependants(self, memory_ids: Sequence[str]) -> list[str]:
        """Memories that cite any of ``memory_ids`` as evidence."""
        return sorted({str(r[0]) for chunk in _chunks(memory_ids) for r in self._db.execute(
            f"SELECT DISTINCT memory_id FROM evidence_edges WHERE evidence_id IN ({_marks(chunk)})", chunk)})

    def session_capsules(self, memory_ids: Sequence[str]) -> list[str]:
        """The L1 capsules of the sessions of the L0 messages among ``memory_ids``."""
        return sorted({str(r[0]) for chunk in _chunks(memory_ids) for r in self._db.execute(
            "SELECT DISTINCT c.memory_id FROM memories m JOIN memories c ON c.tenant_id = m.tenant_id "
            "AND c.workspace_id = m.workspace_id AND c.user_id = m.user_id AND c.agent_id = m.agent_id "
            "AND c.session_id = m.session_id AND c.layer = 'L1' AND c.kind = 'capsule' "
            f"WHERE m.layer = 'L0' AND m.memory_id IN ({_marks(chunk)})", chunk)})

    def erasure_seeds(self, scope: Scope, erasure: Erasure) -> list[str]:
        """The memories an erasure names directly (what was derived from them is found with :meth:`dependants`)."""
        targets: dict[str, tuple[str, list[str | None]]] = {
            "memory": ("memory_id = ?", [erasure.memory_id]),
            "session": ("agent_id = ? AND session_id = ?", [scope.agent_id, erasure.session_id]),
            "agent": ("agent_id = ?", [scope.agent_id]),
            "user": ("1 = 1", []),
        }
        where, args = targets[erasure.target]
        return [r[0] for r in self._db.execute(
            f"SELECT memory_id FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? AND {where}",
            [*_home(scope), *args])]

    def upsert_applied(self, memory_id: str, proposal_id: str) -> bool:
        """See :func:`upsert_applied` (the writer's apply-once rule)."""
        return upsert_applied(self._db, memory_id, proposal_id)

    def sessions_mentioning(self, scope: Scope, node_id: str, *, besides: Sequence[str] = ()) -> set[str]:
        """The sessions ("" for none) of the agent's L2 atoms with a MENTIONS edge to ``node_id`` (not one a
        reviewer rejected), the atoms of
        ``besides`` aside: a scene's sessions (see ``MemoryReader.scene_members``) without some of its atoms."""
        rows = self._db.execute(
            "SELECT DISTINCT m.session_id, m.memory_id FROM memories m JOIN graph_edges e ON e.src_id = m.memory_id "
            "AND e.edge_type='MENTIONS' AND e.rejected=0 WHERE e.dst_id=? AND m.layer='L2' "
            "AND m.lc_state != 'rejected' AND m.tenant_id=? "
            "AND m.workspace_id=? AND m.user_id=? AND m.agent_id=?", [node_id, *_home(scope), scope.agent_id])
        aside = set(besides)
        return {str(session or "") for session, memory_id in rows if memory_id not in aside}

    def raw_evidence(self, scope: Scope, memory_ids: Sequence[str], *, limit: int = 512) -> list[MemoryRow]:
        """The stored raw messages (L0) of the scope's user a derived memory rests on: its evidence, down
        through the derived memories it cites (another user's rows are skipped; at most ``limit`` visited)."""
        home = _home(scope)
        seen: set[str] = set()
        found: list[MemoryRow] = []
        todo = list(memory_ids)
        while todo and len(seen) < limit:
            memory_id = todo.pop()
            if memory_id in seen:
                continue
            seen.add(memory_id)
            row = self.memory_row(memory_id)
            if row is None or [row["tenant_id"], row["workspace_id"], row["user_id"]] != home:
                continue
            if row["layer"] == "L0":
                found.append(row)
            else:
                todo.extend(str(e) for e in orjson.loads(row["evidence"] or "[]"))
        return found

    def tombstone_of_value(self, scope: Scope, value_hash: str) -> tuple[str, str, bool] | None:
        """(tombstone id, reason, distinctive) of erased content of the user with exactly this value hash (a
        distinctive one first)."""
        found = self._db.execute(
            "SELECT tombstone_id, reason, COALESCE(distinctive, 1) AS d FROM tombstones WHERE value_hash=? "
            "AND pending=0 AND tenant_id=? AND workspace_id=? AND user_id=? ORDER BY d DESC LIMIT 1",
            (value_hash, *_home(scope))).fetchone()
        return None if found is None else (str(found[0]), str(found[1]), bool(found[2]))

    def tombstone_of_memory(self, scope: Scope, memory_id: str, value_hash: str | None = None, *,
                            pending: bool = False) -> tuple[str, str] | None:
        """(tombstone id, reason) of the erased memory ``memory_id`` of the user (erased with exactly this
        value hash, when given). ``pending``: also one a replay carried for an erasure it has not applied yet
        (asked about a memory that is not stored: its records no longer open, or it goes with that erasure)."""
        same = " AND value_hash=?" if value_hash is not None else ""
        active = "" if pending else " AND pending=0"
        found = self._db.execute(
            "SELECT tombstone_id, reason FROM tombstones WHERE memory_id=? AND tenant_id=? AND workspace_id=? "
            f"AND user_id=?{active}{same} LIMIT 1", (memory_id, *_home(scope), *([value_hash] if value_hash else []))
        ).fetchone()
        return None if found is None else (str(found[0]), str(found[1]))

    def inserted_at(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """When each of ``memory_ids`` was last stored, as the audit id of its insert (the shard's order)."""
        return {str(r[0]): int(r[1]) for chunk in _chunks(sorted(set(memory_ids))) for r in self._db.execute(
            "SELECT target_id, MAX(audit_id) FROM audit_log WHERE target_table='memories' AND action='insert' "
            f"AND target_id IN ({_marks(chunk)}) GROUP BY target_id", chunk)}

    def tombstone_active_since(self, tombstone_id: str) -> int | None:
        """When a tombstone began to refuse, as an audit id: its insert, or (carried pending by a replay) the
        erasure that activated it; None without such an audit row."""
        found = self._db.execute(
            "SELECT MIN(audit_id) FROM audit_log WHERE target_table='tombstones' AND target_id=? "
            "AND action IN ('insert', 'update') AND COALESCE(json_extract(new_value, '$.pending'), 0) = 0",
            (tombstone_id,)).fetchone()
        return None if found is None or found[0] is None else int(found[0])

    def buried_beneath(self, tombstone_id: str) -> bool:
        """Whether the erasure that made this tombstone also buried a memory of a lower layer (what the buried
        one was derived from: a capsule's message, a scene's atom): it went as a derivative, not erased by its
        own id. A tombstone written before version 6 has no layer and counts as raw."""
        found = self._db.execute(
            "SELECT 1 FROM tombstones t JOIN tombstones o ON o.erasure_id = t.erasure_id "
            "WHERE t.tombstone_id=? AND o.tombstone_id != t.tombstone_id "
            "AND COALESCE(o.layer, 'L0') < COALESCE(t.layer, 'L0') LIMIT 1", (tombstone_id,)).fetchone()
        return found is not None

    def tombstones(self, scope: Scope, *, raw_only: bool = False) -> list[Tombstone]:
        """The user's tombstones with their keyed shingle hashes (of erased raw messages only, with ``raw_only``;
        a tombstone written before version 6 has no layer and counts as raw)."""
        only = " AND (layer = 'L0' OR layer IS NULL)" if raw_only else ""
        return [Tombstone(str(r[0]), str(r[1]), frozenset(orjson.loads(r[2] or "[]")), bool(r[3]),
                          frozenset(orjson.loads(r[4] or "[]")), str(r[5] or ""))
                for r in self._db.execute(
                    "SELECT tombstone_id, reason, shingle_hashes, COALESCE(distinctive, 1), term_hashes, value_hash "
                    "FROM tombstones "
                    f"WHERE pending=0 AND tenant_id=? AND workspace_id=? AND user_id=?{only}", _home(scope))]

    def legacy_tombstones(self) -> list[tuple[str, str, str]]:
        """(tombstone id, home, normalised text) of the tombstones written before version 6."""
        return [(str(r[0]), f"{r[1]}/{r[2]}/{r[3]}", str(r[4])) for r in self._db.execute(
            "SELECT tombstone_id, tenant_id, workspace_id, user_id, normalised_text FROM tombstones "
            "WHERE shingle_hashes IS NULL")]

    def hash_tombstone(self, tombstone_id: str, *, value_hash: str, shingle_hashes: frozenset[str],
                       term_hashes: frozenset[str], distinctive: bool, at: str) -> None:
        """Replace a tombstone's text and plain hash (written before version 6) by its keyed hashes."""
        self._audit(at=at, proposal_id=None, actor="writer", action="update", table="tombstones",
                    target_id=tombstone_id, old={"kept": "normalised text"}, new={"kept": "keyed hashes"})
        self._db.execute(
            "UPDATE tombstones SET value_hash=?, shingle_hashes=?, term_hashes=?, distinctive=?, normalised_text='' "
            "WHERE tombstone_id=?",
            (value_hash, orjson.dumps(sorted(shingle_hashes)).decode(), orjson.dumps(sorted(term_hashes)).decode(),
             int(distinctive), tombstone_id))

    def guard_key(self, home: str, make: Callable[[], bytes] | None = None) -> bytes:
        """The key of the user ``home`` (tenant/workspace/user) for the guard's keyed hashes, kept here on
        first use: ``make``'s (the deployment's key store, the same in every process), else a random one."""
        key = self.existing_guard_key(home)
        if key is not None:
            return key
        self._db.execute("INSERT OR IGNORE INTO guard_keys (home, key) VALUES (?,?)",
                         (home, make() if make is not None else secrets.token_bytes(32)))
        key = self.existing_guard_key(home)
        assert key is not None
        return key

    def deferred_of(self, home: str) -> list[tuple[str, bytes]]:
        """(work id, record value) of the deferred work of the user ``home`` (an erasure drops what it erases)."""
        return [(str(r[0]), bytes(r[1])) for r in self._db.execute(
            "SELECT work_id, value FROM deferred_work WHERE key=?", (home,))]

    def drop_deferred(self, work_ids: Sequence[str]) -> None:
        """Runtime bookkeeping, not memory state (see :mod:`altm.store._work`): no audit row."""
        self._db.executemany("DELETE FROM deferred_work WHERE work_id=?", [(w,) for w in work_ids])

    def carry_guard_key(self, home: str, key: bytes) -> None:
        """Take over a user's guard key from the data dir a replay rebuilds (before anything is buried here)."""
        self._db.execute("INSERT OR IGNORE INTO guard_keys (home, key) VALUES (?,?)", (home, key))

    def tombstone_hashes(self, tombstone_id: str) -> tuple[frozenset[str], frozenset[str]] | None:
        """(shingle hashes, term hashes) of a tombstone; None when there is none of that id."""
        row = self._db.execute("SELECT shingle_hashes, term_hashes FROM tombstones WHERE tombstone_id=?",
                               (tombstone_id,)).fetchone()
        if row is None:
            return None
        return (frozenset(orjson.loads(row[0] or "[]")), frozenset(orjson.loads(row[1] or "[]")))

    def add_tombstone_hashes(self, tombstone_id: str, shingle_hashes: frozenset[str], term_hashes: frozenset[str],
                             *, at: str, proposal_id: str, actor: str) -> None:
        """A later part of a tombstone carried in parts: its hashes join the ones the tombstone holds."""
        held = self.tombstone_hashes(tombstone_id)
        assert held is not None
        shingled, termed = sorted(held[0] | shingle_hashes), sorted(held[1] | term_hashes)
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="update", table="tombstones",
                    target_id=tombstone_id, old={"hashes": len(held[0]) + len(held[1])},
                    new={"hashes": len(shingled) + len(termed), "carried": True})
        self._db.execute("UPDATE tombstones SET shingle_hashes=?, term_hashes=? WHERE tombstone_id=?",
                         (orjson.dumps(shingled).decode(), orjson.dumps(termed).decode(), tombstone_id))

    def carry_tombstone(self, row: Mapping[str, Any], *, at: str, actor: str = "replay",
                        proposal_id: str | None = None, pending: bool = False) -> None:
        """Take over a tombstone (hashes, no text) made in another shard (the data dir a replay rebuilds, or
        the writer that buried it, from the log), audited as carried. ``pending``: it refuses nothing until
        the erasure that made it is applied here (:meth:`activate_tombstones`; a replay from the log's start
        meets that erasure again); one that names no erasure is never pending."""
        waits = pending and row.get("erasure_id") is not None
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert", table="tombstones",
                    target_id=str(row["tombstone_id"]), old=None,
                    new={"value_hash": row["value_hash"], "memory_id": row["memory_id"], "reason": row["reason"],
                         "carried": True, "pending": waits})
        self._db.execute(
            f"INSERT OR IGNORE INTO tombstones ({', '.join(TOMBSTONE_COLUMNS)}, pending) "
            f"VALUES ({', '.join('?' for _ in TOMBSTONE_COLUMNS)}, ?)",
            [*(row.get(c) for c in TOMBSTONE_COLUMNS), int(waits)])

    def unbury_forgotten(self, scope: Scope, memory_ids: Sequence[str], *, at: str, proposal_id: str) -> None:
        """The tombstones retention left of ``memory_ids`` (restored by a rollback) go, audited; an erasure's
        stay."""
        for chunk in _chunks(memory_ids):
            where = (f"memory_id IN ({_marks(chunk)}) AND reason LIKE ? AND tenant_id=? AND workspace_id=? "
                     "AND user_id=?")
            args = [*chunk, f"{FORGOTTEN_PREFIX}%", *_home(scope)]
            for row in self._db.execute(f"SELECT * FROM tombstones WHERE {where}", args).fetchall():
                # the whole row (hashes, no text): a rollback of this rollback puts it back
                self._audit(at=at, proposal_id=proposal_id, actor="writer", action="delete", table="tombstones",
                            target_id=str(row["tombstone_id"]), old=dict(row), new=None)
            self._db.execute(f"DELETE FROM tombstones WHERE {where}", args)

    def activate_tombstones(self, erasure_id: str, *, reason: str, at: str) -> list[str]:
        """The tombstones carried pending for the erasure ``erasure_id`` refuse their content from now on (the
        erasure is being applied), and those a forget held since (:meth:`forgotten_first`) are the erasure's
        again (``reason``). Returns the ids of the memories they bury (in a replay that could not open their
        records, the erasure meets none of them otherwise)."""
        found = self._db.execute(
            "SELECT tombstone_id, memory_id, pending, reason FROM tombstones WHERE erasure_id=? "
            "AND (pending=1 OR reason LIKE ?)", (erasure_id, f"{FORGOTTEN_PREFIX}%")).fetchall()
        for tid, _, pending, was in found:
            self._audit(at=at, proposal_id=erasure_id, actor="writer", action="update", table="tombstones",
                        target_id=tid, old={"pending": bool(pending), "reason": was},
                        new={"pending": False, "reason": reason})
        self._db.executemany("UPDATE tombstones SET pending=0, reason=? WHERE tombstone_id=?",
                             [(reason, tid) for tid, *_ in found])
        return sorted({str(m) for _, m, *_ in found if m is not None})

    def activate_forgotten(self, forgotten_by: str, *, at: str) -> list[str]:
        """A replay meets the retention pass ``forgotten_by`` (``event_ref`` of its id) shredded: the tombstones it made
        in the source, carried pending for the erasure that took them over later, refuse from now on, as the
        source's did between the two (:meth:`activate_tombstones` meets them already active). Returns their ids."""
        found = [(str(r[0]), str(r[1]), r[2]) for r in self._db.execute(
            "SELECT tombstone_id, reason, forgotten_reason FROM tombstones WHERE forgotten_by=? AND pending=1 "
            "ORDER BY tombstone_id", (forgotten_by,))]
        for tid, was, forgotten in found:  # the forget's reason again (the erasure's when it takes it back)
            self._audit(at=at, proposal_id=forgotten_by, actor="replay", action="update", table="tombstones",
                        target_id=tid, old={"pending": True, "reason": was},
                        new={"pending": False, "reason": forgotten or was})
        self._db.executemany("UPDATE tombstones SET pending=0, reason=COALESCE(forgotten_reason, reason) "
                             "WHERE tombstone_id=?", [(t,) for t, *_ in found])
        return [t for t, *_ in found]

    def existing_guard_key(self, home: str) -> bytes | None:
        """The user's guard key, None when nothing of the user was ever buried (no tombstone to match)."""
        row = self._db.execute("SELECT key FROM guard_keys WHERE home=?", (home,)).fetchone()
        return None if row is None else bytes(row[0])

    def approvals(self, memory_id: str) -> list[tuple[Row, Row]]:
        """(the row as a reviewer's approval found it, the row it left), oldest first, from the audit."""
        return [(orjson.loads(r[0]), orjson.loads(r[1])) for r in self._db.execute(
            "SELECT old_value, new_value FROM audit_log WHERE target_table='memories' AND target_id=? "
            "AND actor='review' AND redacted != 1 AND old_value IS NOT NULL AND new_value IS NOT NULL "
            "AND json_extract(new_value, '$.trust_status')='verified' ORDER BY audit_id", (memory_id,))]

    def anti_patterns(self, scope: Scope, *, whole_user: bool = False) -> list[tuple[str, str]]:
        """(memory id, attributes JSON) of the agent's anti-patterns (of every agent of the user: ``whole_user``)
        that are not superseded nor rejected by a review; one stated by a tool only once a reviewer approved it
        (ground truth: a model's entailment is no approval)."""
        agent = "" if whole_user else "AND agent_id=? "
        return [(str(r[0]), str(r[1])) for r in self._db.execute(
            "SELECT memory_id, attributes FROM memories WHERE kind='anti_pattern' AND superseded_by IS NULL "
            f"AND tenant_id=? AND workspace_id=? AND user_id=? {agent}AND lc_state IS NOT 'rejected' "
            "AND (role IS NULL OR role != 'tool' OR (trust_status = 'verified' AND trust_method = 'ground_truth')) "
            "ORDER BY memory_id",
            [*_home(scope), *([] if whole_user else [scope.agent_id])])]

    def persona_facets(self, scope: Scope) -> list[MemoryRow]:
        """The user's current persona facets (L4, of every agent's scope)."""
        return [memory_row(r) for r in self._db.execute(
            "SELECT * FROM memories WHERE layer='L4' AND superseded_by IS NULL AND tenant_id=? AND workspace_id=? "
            "AND user_id=? ORDER BY memory_id", _home(scope))]

    def summaries(self, scope: Scope) -> list[MemoryRow]:
        """The agent's session capsules (L1) and scenes (L3)."""
        return [memory_row(r) for r in self._db.execute(
            "SELECT * FROM memories WHERE ((layer='L1' AND kind='capsule') OR (layer='L3' AND kind='scene')) "
            "AND tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=? ORDER BY memory_id",
            [*_home(scope), scope.agent_id])]

    def signal_seen(self, signal: LifecycleSignal) -> bool:
        """The signal is counted, or was and a rollback or a forget took it (a redelivery of its event counts
        nothing)."""
        if self._db.execute("SELECT 1 FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                            (signal.memory_id, signal.signal_id, signal.kind)).fetchone() is not None:
            return True
        return self._db.execute(
            "SELECT 1 FROM audit_log WHERE target_table='lifecycle_signals' AND target_id=? AND action='delete' "
            "LIMIT 1",
            (_signal_key(signal.memory_id, signal.signal_id, signal.kind),)).fetchone() is not None

    def signal_stored(self, signal_id: str) -> bool:
        """A use signal ``signal_id`` (the control event that sent it) is counted on some memory."""
        return self._db.execute("SELECT 1 FROM lifecycle_signals WHERE signal_id=? LIMIT 1",
                                (signal_id,)).fetchone() is not None

    def signal_tally(self, memory_id: str) -> SignalTally:
        db = self._db
        counts = {str(k): int(n) for k, n in db.execute(
            "SELECT kind, COUNT(*) FROM lifecycle_signals WHERE memory_id=? GROUP BY kind", (memory_id,))}
        last_pin = db.execute(
            "SELECT kind FROM lifecycle_signals WHERE memory_id=? AND kind IN ('pin', 'unpin') "
            "ORDER BY at DESC, signal_id DESC LIMIT 1", (memory_id,)).fetchone()
        compress = db.execute(
            "SELECT level, seq FROM lifecycle_signals WHERE memory_id=? AND kind='compress' "
            "ORDER BY seq DESC LIMIT 1", (memory_id,)).fetchone()
        last_use = db.execute(
            "SELECT MAX(seq) FROM lifecycle_signals WHERE memory_id=? AND kind IN ('cited_by_agent', 'helpful')",
            (memory_id,)).fetchone()[0]
        return SignalTally(counts=counts, pinned=last_pin is not None and last_pin[0] == "pin",
                           compression=None if compress is None else (compress[0], int(compress[1])),
                           last_use_seq=None if last_use is None else int(last_use))

    def decision_steps(self, decision_id: str, scope: Scope) -> list[tuple[str, str]]:
        """(decision, step) of each recorded step of a decision of the user."""
        return [(str(r[0]), str(r[1])) for r in self._db.execute(
            "SELECT decision, step FROM governance_events WHERE decision_id=? AND tenant_id=? AND workspace_id=? "
            "AND user_id=?", (decision_id, *_home(scope))).fetchall()]

    def decision_audit(self, decision_id: str) -> list[AuditEntry]:
        """The audit rows a decision (a proposal) wrote, newest first."""
        return [AuditEntry(table=a["target_table"], target_id=a["target_id"],
                           old=orjson.loads(a["old_value"]) if a["old_value"] else None,
                           new=orjson.loads(a["new_value"]) if a["new_value"] else None,
                           redacted=a["redacted"] == 1)
                for a in self._db.execute("SELECT * FROM audit_log WHERE proposal_id=? ORDER BY audit_id DESC",
                                          (decision_id,)).fetchall()]

    # -- mutations: each writes its audit row first --------------------------------------------------------
    def _audit(
        self, *, at: str, proposal_id: str | None, actor: str, action: str, table: str, target_id: str,
        old: Any, new: Any,
    ) -> None:
        self._db.execute(
            "INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
            "new_value) VALUES (?,?,?,?,?,?,?,?)",
            (at, proposal_id, actor, action, table, target_id,
             None if old is None else _json(old), None if new is None else _json(new)),
        )

    def insert_memory(self, row: MemoryRow, *, at: str, proposal_id: str, actor: str,
                      source_ms: int | None = None) -> None:
        """Insert a memory; ``source_ms``: the publish time of the turn it comes from (freshness)."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert", table="memories",
                    target_id=row["memory_id"], old=None, new=row)
        cols = ", ".join(MEMORY_COLUMNS)
        self._db.execute(f"INSERT INTO memories ({cols}, source_ms) VALUES ({_marks(MEMORY_COLUMNS)}, ?)",
                         [*(columns(row)[c] for c in MEMORY_COLUMNS), source_ms if source_ms else None])
        self._db.executemany(
            "INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
            [(row["memory_id"], ev) for ev in orjson.loads(row["evidence"])],
        )

    def update_memory(self, old: MemoryRow, new: MemoryRow, *, at: str, proposal_id: str, actor: str) -> None:
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="update", table="memories",
                    target_id=old["memory_id"], old=old, new=new)
        before, after = columns(old), columns(new)
        changed = [c for c in MEMORY_COLUMNS if c != "memory_id" and before[c] != after[c]]
        if changed:
            sets = ", ".join(f"{c}=?" for c in changed)
            self._db.execute(f"UPDATE memories SET {sets} WHERE memory_id=?",
                             [after[c] for c in changed] + [old["memory_id"]])
        if "evidence" in changed:
            self._db.execute("DELETE FROM evidence_edges WHERE memory_id=?", (old["memory_id"],))
            self._db.executemany(
                "INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
                [(old["memory_id"], ev) for ev in orjson.loads(new["evidence"])],
            )

    def delete_memory(self, row: MemoryRow, *, at: str, proposal_id: str, actor: str, redact: bool = True) -> None:
        """Delete one memory (FTS rows go with it through the triggers): an erasure keeps only hashes of the
        removed value in the audit row, forgetting keeps the value itself."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="erase" if redact else "forget",
                    table="memories", target_id=row["memory_id"], old=redacted(row) if redact else row, new=None)
        self._db.execute("DELETE FROM memories WHERE memory_id=?", (row["memory_id"],))
        # its own evidence edges index its evidence column (in the audited value): they go with it, as its FTS rows
        self._db.execute("DELETE FROM evidence_edges WHERE memory_id=?", (row["memory_id"],))
        if not redact:  # an erasure takes the signals itself (``erase_records``), their values redacted
            self._drop_signals(row["memory_id"], at=at, proposal_id=proposal_id, actor=actor)

    def _drop_signals(self, memory_id: str, *, at: str, proposal_id: str, actor: str) -> None:
        """A forgotten memory's use signals go with it, each audited whole under its own key (a rollback of the
        forget counts them again; :meth:`signal_seen` still knows them): ids are made from scope and content, so
        a facet said again after retention forgot it is stored under the same id, and tallied the forgotten
        one's harm and compression at its first signal."""
        for r in self._db.execute("SELECT * FROM lifecycle_signals WHERE memory_id=? ORDER BY seq",
                                  (memory_id,)).fetchall():
            d = dict(r)
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action="delete", table="lifecycle_signals",
                        target_id=_signal_key(memory_id, d["signal_id"], d["kind"]), old=d, new=None)
        self._db.execute("DELETE FROM lifecycle_signals WHERE memory_id=?", (memory_id,))

    def forgotten_in(self, scope: Scope, memory_id: str) -> bool:
        """Retention forgot the memory ``memory_id`` of the scope's user (an audit row of the forget)."""
        return self._db.execute(
            "SELECT 1 FROM audit_log WHERE target_table='memories' AND target_id=? AND action='forget' "
            "AND json_extract(old_value, '$.tenant_id')=? AND json_extract(old_value, '$.workspace_id')=? "
            "AND json_extract(old_value, '$.user_id')=? LIMIT 1", (memory_id, *_home(scope))).fetchone() is not None

    def put_node(self, row: Row, old: Row | None, *, at: str, proposal_id: str, actor: str) -> None:
        self._put_row("graph_nodes", "node_id", row, old, at=at, proposal_id=proposal_id, actor=actor)

    def put_edge(self, row: Row, old: Row | None, *, added: Sequence[str], at: str, proposal_id: str,
                 actor: str) -> None:
        """Insert or update a graph edge whose evidence gains ``added`` (``row["evidence_count"]`` counts them
        in). A new edge is audited with its evidence; an update as what it added, with the counts before and
        after (``{"count": n}`` for the old value's evidence, ``{"count": m, "added": [...]}`` for the new
        one's), not as the whole list twice: an edge's evidence is the union of every memory that ever linked
        its ends, and the audit would grow with its square (:meth:`restore` takes out what such an addition
        added)."""
        ids = sorted(set(added))
        if old is None:
            before, after = None, {**row, "evidence": ids}
        else:
            before = {**old, "evidence": {"count": int(old["evidence_count"])}}
            after = {**row, "evidence": {"count": int(row["evidence_count"]), "added": ids}}
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert" if old is None else "update",
                    table="graph_edges", target_id=row["edge_id"], old=before, new=after)
        self._write_row("graph_edges", "edge_id", row, old)
        self._db.executemany("INSERT OR IGNORE INTO graph_edge_evidence (edge_id, memory_id) VALUES (?, ?)",
                             [(row["edge_id"], mid) for mid in ids])

    def put_held_action(self, row: Row, old: Row | None, *, at: str, proposal_id: str, actor: str) -> None:
        self._put_row("held_actions", "action_id", row, old, at=at, proposal_id=proposal_id, actor=actor)

    def put_cycle(self, row: Row, old: Row | None, *, at: str, proposal_id: str, actor: str) -> None:
        self._put_row("runtime_cycles", "cycle_id", row, old, at=at, proposal_id=proposal_id, actor=actor)

    def _put_row(self, table: str, key_column: str, row: Row, old: Row | None, *, at: str, proposal_id: str,
                 actor: str) -> None:
        """Insert or replace one row of a graph/governance table, audited with its old value."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert" if old is None else "update",
                    table=table, target_id=row[key_column], old=old, new=row)
        self._write_row(table, key_column, row, old)

    def _write_row(self, table: str, key_column: str, row: Row, old: Row | None) -> None:
        """The statement of :meth:`_put_row` (its caller has audited it)."""
        cols = list(row)
        if old is None:
            self._db.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({_marks(cols)})",
                             [row[c] for c in cols])
        else:
            sets = ", ".join(f"{c}=?" for c in cols if c != key_column)
            self._db.execute(f"UPDATE {table} SET {sets} WHERE {key_column}=?",
                             [row[c] for c in cols if c != key_column] + [row[key_column]])

    def delete_edges_touching(self, memory_ids: Sequence[str], *, at: str, proposal_id: str, actor: str) -> set[str]:
        """Delete the evidence edges that cite ``memory_ids`` and the graph edges from or to them, each audited
        with its value. Returns the ids at the other ends of the graph edges deleted."""
        ids = list(memory_ids)
        marks = _marks(ids)
        ends: set[str] = set()
        for table, where, args in (("evidence_edges", f"evidence_id IN ({marks})", ids),
                                   ("graph_edges", f"src_id IN ({marks}) OR dst_id IN ({marks})", [*ids, *ids])):
            for r in self._db.execute(f"SELECT * FROM {table} WHERE {where}", args).fetchall():
                d = dict(r)
                if table == "graph_edges":
                    ends.update({str(d["src_id"]), str(d["dst_id"])} - set(ids))
                    d = self._edge_image(d)
                self._audit(at=at, proposal_id=proposal_id, actor=actor, action="delete", table=table,
                            target_id=str(d.get("edge_id") or f"{d['memory_id']}->{d['evidence_id']}"), old=d,
                            new=None)
            self._db.execute(f"DELETE FROM {table} WHERE {where}", args)
        return ends

    def prune_graph(self, scope: Scope, gone: Sequence[str], ends: set[str], *, at: str, proposal_id: str,
                    actor: str) -> None:
        """After a forget: graph edges whose evidence was only the forgotten memories ``gone`` go, the others
        lose them from their evidence and weight, and the nodes among ``ends`` (and the ends of the edges that
        went) that no edge holds any more go too. Audited with their values (a forget is not an erasure)."""
        home, touched = _home(scope), set[str]()
        ends = ends | self._prune_edges(home, set(gone), at=at, proposal_id=proposal_id, actor=actor,
                                        action="delete", redact=False, touched=touched)
        self._drop_orphan_nodes(home, ends, at=at, proposal_id=proposal_id, actor=actor, action="delete",
                                redact=False)
        self._respell_nodes(touched | ends, at=at, proposal_id=proposal_id, actor=actor, redact=False)

    def _drop_orphan_nodes(self, home: list[str], among: set[str] | None, *, at: str, proposal_id: str, actor: str,
                           action: str, redact: bool) -> list[str]:
        """Delete the user's graph nodes no edge holds (those of ``among``, or all), each audited with its value
        (redacted for an erasure). Returns their ids."""
        orphan = ("SELECT * FROM graph_nodes n WHERE tenant_id=? AND workspace_id=? AND user_id=? AND NOT EXISTS "
                  "(SELECT 1 FROM graph_edges e WHERE e.src_id = n.node_id OR e.dst_id = n.node_id)")
        if among is None:
            orphans = self._db.execute(orphan, home).fetchall()
        else:  # a few candidates: looked up one by one, not the user's whole graph
            orphans = [r for node_id in sorted(among)
                       if (r := self._db.execute(orphan + " AND node_id=?", [*home, node_id]).fetchone()) is not None]
        for r in orphans:
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action=action, table="graph_nodes",
                        target_id=r["node_id"], old=redacted(dict(r)) if redact else dict(r), new=None)
            self._db.execute("DELETE FROM graph_nodes WHERE node_id=?", (r["node_id"],))
        return [str(r["node_id"]) for r in orphans]

    def insert_signal(self, signal: LifecycleSignal, *, agent_id: str, at: str, proposal_id: str,
                      actor: str) -> None:
        """Record a use signal sent by ``agent_id`` (in ``signal.session_id``), numbered in arrival order per
        memory."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert", table="lifecycle_signals",
                    target_id=signal.memory_id, old=None, new={"signal_id": signal.signal_id, "kind": signal.kind})
        self._db.execute(
            "INSERT INTO lifecycle_signals (memory_id, signal_id, kind, at, level, seq, agent_id, session_id) "
            "VALUES (?,?,?,?,?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM lifecycle_signals WHERE memory_id = ?), ?, ?)",
            (signal.memory_id, signal.signal_id, signal.kind, signal.at.isoformat(), signal.level, signal.memory_id,
             agent_id, signal.session_id))

    def tombstone(self, row: MemoryRow, *, reason: str, at: str, value_hash: str, shingle_hashes: frozenset[str],
                  term_hashes: frozenset[str], distinctive: bool, erasure_id: str | None = None,
                  forgotten_by: str | None = None) -> str:
        """Remember erased or forgotten content by its id, its hash and its keyed shingle and term hashes (not
        its text), so the guard refuses it; ``forgotten_by``: the control event of the retention pass that
        forgot it (see :meth:`activate_forgotten`). Returns the tombstone's id."""
        tid = tombstone_id(row["tenant_id"], row["workspace_id"], row["user_id"], row["memory_id"])
        if self._erased_after_forget(tid, reason, at, erasure_id) or self._forgotten_first(tid, reason, at):
            return tid
        if self._erased_again(tid, reason, at, erasure_id, value_hash, shingle_hashes, term_hashes, distinctive):
            return tid
        self._audit(at=at, proposal_id=None, actor="writer", action="insert", table="tombstones", target_id=tid,
                    old=None, new={"value_hash": value_hash, "memory_id": row["memory_id"], "reason": reason})
        self._db.execute(
            "INSERT OR IGNORE INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
            "normalised_text, reason, at, memory_id, layer, shingle_hashes, distinctive, term_hashes, erasure_id, "
            "forgotten_by, forgotten_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (tid, row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"], value_hash, "", reason, at,
             row["memory_id"], row["layer"], orjson.dumps(sorted(shingle_hashes)).decode(), int(distinctive),
             orjson.dumps(sorted(term_hashes)).decode(), erasure_id, forgotten_by,
             reason if forgotten_by is not None else None),
        )
        return tid

    def _erased_again(self, tombstone_id: str, reason: str, at: str, erasure_id: str | None, value_hash: str,
                      shingle_hashes: frozenset[str], term_hashes: frozenset[str], distinctive: bool) -> bool:
        """A memory an earlier erasure buried that is stored again (a capsule folded anew after its message's
        erasure), erased by a later one: the tombstone becomes the later erasure's (its reason: erased by its
        own id, say) and refuses both versions (their hashes together), where the later one was dropped.
        Whether there was such a tombstone."""
        if reason.startswith(FORGOTTEN_PREFIX) or erasure_id is None:
            return False
        found = self._db.execute(
            "SELECT reason, erasure_id, shingle_hashes, term_hashes, distinctive FROM tombstones "
            "WHERE tombstone_id=? AND pending=0", (tombstone_id,)).fetchone()
        if found is None or str(found[0]).startswith(FORGOTTEN_PREFIX) or found[1] == erasure_id:
            return False
        shingles = sorted({*orjson.loads(found[2] or "[]"), *shingle_hashes})
        terms = sorted({*orjson.loads(found[3] or "[]"), *term_hashes})
        self._audit(at=at, proposal_id=None, actor="writer", action="update", table="tombstones",
                    target_id=tombstone_id, old={"reason": found[0], "erasure_id": found[1]},
                    new={"reason": reason, "erasure_id": erasure_id, "value_hash": value_hash})
        self._db.execute(
            "UPDATE tombstones SET reason=?, at=?, erasure_id=?, value_hash=?, shingle_hashes=?, term_hashes=?, "
            "distinctive=? WHERE tombstone_id=?",
            (reason, at, erasure_id, value_hash, orjson.dumps(shingles).decode(), orjson.dumps(terms).decode(),
             int(distinctive or bool(found[4])), tombstone_id))
        return True

    def _erased_after_forget(self, tombstone_id: str, reason: str, at: str, erasure_id: str | None) -> bool:
        """An erasure that reaches a memory retention forgot (and buried) before takes its tombstone over: it
        holds the same content, and it is now an erasure's, which a replay carries (a forget's it repeats).
        Whether the tombstone was a forget's and is now the erasure's."""
        if reason.startswith(FORGOTTEN_PREFIX):
            return False
        found = self._db.execute("SELECT reason FROM tombstones WHERE tombstone_id=?", (tombstone_id,)).fetchone()
        if found is None or not str(found[0]).startswith(FORGOTTEN_PREFIX):
            return False
        self._audit(at=at, proposal_id=None, actor="writer", action="update", table="tombstones",
                    target_id=tombstone_id, old={"reason": found[0]}, new={"reason": reason, "erasure_id": erasure_id})
        self._db.execute("UPDATE tombstones SET reason=?, at=?, erasure_id=? WHERE tombstone_id=?",
                         (reason, at, erasure_id, tombstone_id))
        return True

    def forgotten_first(self, scope: Scope, memory_id: str, reason: str, *, at: str) -> bool:
        """A replay's forget reaches ``memory_id``, which an erasure the replay has not applied yet buries (its
        tombstone is carried pending): the source's forget buried it first, and that erasure took the tombstone
        over later (:meth:`_erased_after_forget`). It is the forget's again (``reason``) and refuses from now on,
        as it did in the source between the two; :meth:`activate_tombstones` gives it back to the erasure.
        Whether there was such a tombstone."""
        return self._forgotten_first(tombstone_id(scope.tenant_id, scope.workspace_id, scope.user_id, memory_id),
                                     reason, at)

    def _forgotten_first(self, tombstone_id: str, reason: str, at: str) -> bool:
        if not reason.startswith(FORGOTTEN_PREFIX):
            return False
        found = self._db.execute("SELECT reason FROM tombstones WHERE tombstone_id=? AND pending=1",
                                 (tombstone_id,)).fetchone()
        if found is None:
            return False
        self._audit(at=at, proposal_id=None, actor="writer", action="update", table="tombstones",
                    target_id=tombstone_id, old={"reason": found[0], "pending": True},
                    new={"reason": reason, "pending": False})
        self._db.execute("UPDATE tombstones SET reason=?, pending=0 WHERE tombstone_id=?", (reason, tombstone_id))
        return True

    def forgotten_rows(self, memory_ids: Sequence[str]) -> list[MemoryRow]:
        """The last values that retention forgot of ``memory_ids`` (from the audit of their forget, before an
        erasure redacts it), of those not stored again since (a rollback restores a forgotten memory)."""
        rows: dict[str, MemoryRow] = {}
        for chunk in _chunks(memory_ids):
            for target, old in self._db.execute(
                    "SELECT target_id, old_value FROM audit_log WHERE target_table='memories' AND action='forget' "
                    f"AND redacted!=1 AND old_value IS NOT NULL AND target_id IN ({_marks(chunk)}) ORDER BY audit_id",
                    list(chunk)):
                rows[str(target)] = orjson.loads(old)
        return [rows[m] for m in sorted(rows) if not self.has_memory(m)]

    def forgotten_memories(self, scope: Scope, *, agent_id: str | None,
                           session_id: str | None) -> tuple[list[str], list[str]]:
        """(memory ids, ids of the forget proposals) of what retention forgot before of a user (or of one agent,
        or one session), found in the audit, whose rows of a forget keep the values (a forget is undone from
        them)."""
        where = ["target_table='memories'", "action='forget'",
                 "json_extract(old_value, '$.tenant_id')=?", "json_extract(old_value, '$.workspace_id')=?",
                 "json_extract(old_value, '$.user_id')=?"]
        args: list[object] = list(_home(scope))
        if agent_id is not None:
            where.append("json_extract(old_value, '$.agent_id')=?")
            args.append(agent_id)
        if session_id is not None:
            where.append("json_extract(old_value, '$.session_id')=?")
            args.append(session_id)
        found = self._db.execute(
            f"SELECT DISTINCT target_id, proposal_id FROM audit_log WHERE {' AND '.join(where)}", args).fetchall()
        return sorted({str(r[0]) for r in found}), sorted({str(r[1]) for r in found if r[1] is not None})

    def forgotten_derived(self, scope: Scope, sources: Collection[str]) -> tuple[list[str], list[str]]:
        """(memory ids, ids of the forget proposals) of what retention forgot of the user whose evidence, as
        it was forgotten, names one of ``sources`` or of these (a scene made from an atom, forgotten before the
        atom's session is erased: what was derived from erased content goes with it, forgotten or not)."""
        parsed: list[tuple[str, str | None, set[str]]] = []
        for target, proposal, old in self._db.execute(
                "SELECT target_id, proposal_id, old_value FROM audit_log WHERE target_table='memories' "
                "AND action='forget' AND redacted!=1 AND json_extract(old_value, '$.tenant_id')=? "
                "AND json_extract(old_value, '$.workspace_id')=? AND json_extract(old_value, '$.user_id')=? "
                "AND json_extract(old_value, '$.layer') != 'L0'", _home(scope)):
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, KeyError):
                evidence = orjson.loads(old)["evidence"]
                parsed.append((str(target), proposal, set(orjson.loads(evidence) if isinstance(evidence, str)
                                                         else evidence)))
        reached, ids, forgets = set(sources), set[str](), set[str]()
        while grown := [(t, p) for t, p, ev in parsed if t not in ids and ev & reached]:
            for target, proposal in grown:
                ids.add(target)
                reached.add(target)
                forgets.update([proposal] if proposal is not None else [])
        return sorted(ids), sorted(forgets)

    def repaired_by(self, forgets: Sequence[str], forgotten: Sequence[str]) -> list[str]:
        """Stored memories whose evidence ``forgets`` repaired by taking ``forgotten`` ones out of it (they were
        derived from them)."""
        gone, out = set(forgotten), set[str]()
        for chunk in _chunks(forgets):
            for target, old in self._db.execute(
                    "SELECT target_id, old_value FROM audit_log WHERE target_table='memories' AND action='update' "
                    f"AND redacted!=1 AND proposal_id IN ({_marks(chunk)})", chunk):
                with contextlib.suppress(orjson.JSONDecodeError, TypeError, KeyError):
                    evidence = orjson.loads(old)["evidence"]
                    evidence = orjson.loads(evidence) if isinstance(evidence, str) else evidence
                    if gone & set(evidence) and self.memory_row(str(target)) is not None:
                        out.add(str(target))
        return sorted(out)

    def redact_forgotten(self, forgotten: Sequence[str], forgets: Sequence[str]) -> None:
        """An erasure reaches what retention forgot of it before: the audit values of those memories, and of
        the graph rows the same forgets removed, are replaced by their hashes (over-redacting the graph rows a
        forget of several sessions removed with them)."""
        self.redact_audit("memories", forgotten)
        for table in ("graph_nodes", "graph_edges"):
            graph = [str(r[0]) for chunk in _chunks(forgets) for r in self._db.execute(
                f"SELECT DISTINCT target_id FROM audit_log WHERE target_table=? AND proposal_id IN "
                f"({_marks(chunk)})", [table, *chunk])]
            self.redact_audit(table, graph)

    def redact_audit(self, table: str, ids: Sequence[str]) -> None:
        """Replace the text values of earlier audit rows about ``ids`` by their hashes (rows stay)."""
        for chunk in _chunks(ids):
            self._db.execute(
                "UPDATE audit_log SET old_value = redact_json(old_value), new_value = redact_json(new_value), "
                f"redacted = 1 WHERE redacted IN (0, 2) AND target_table = ? AND target_id IN ({_marks(chunk)})",
                [table, *chunk])

    def redact_audit_reasons(self, erased_ids: Sequence[str]) -> None:
        """Replace by their hashes the trust reasons of the audit rows of memories whose verdict, then, named
        one of ``erased_ids`` (it quoted its values, or an erased anti-pattern's words, in its reason), the rest
        of each row kept: redacting whole rows made every earlier decision on those memories impossible to roll
        back, and the rows of a verdict a reviewer's approval had since replaced were not redacted at all."""
        for chunk in _chunks(erased_ids):
            marks = _marks(chunk)
            self._db.execute(
                "UPDATE audit_log SET old_value = redact_reason_json(old_value), "
                "new_value = redact_reason_json(new_value), redacted = 2 WHERE redacted = 0 "
                f"AND target_table = 'memories' AND (json_extract(old_value, '$.trust_contradicting_id') IN ({marks}) "
                f"OR json_extract(new_value, '$.trust_contradicting_id') IN ({marks}))", [*chunk, *chunk])

    def scrub(self, scope: Scope, memory_ids: Sequence[str], *, all_cache: bool, at: str, proposal_id: str
              ) -> list[MemoryRow]:
        """After an erasure: edges, CCR entries, cycle bundles, the user's LLM cache and the audit values
        that still held the erased content. Every deletion is audited (values redacted). Returns the memories
        the erased ones had superseded or merged into themselves, released (see :meth:`release_superseded`)."""
        db, home, ends = self._db, _home(scope), set[str]()
        for chunk in _chunks(memory_ids):
            marks = _marks(chunk)
            for table, key, where in (
                ("evidence_edges", "memory_id", f"memory_id IN ({marks}) OR evidence_id IN ({marks})"),
                ("graph_edges", "edge_id", f"src_id IN ({marks}) OR dst_id IN ({marks})"),
                ("ccr_entries", "marker", f"memory_id IN ({marks}) OR memory_id IN ({marks})"),
            ):
                found = db.execute(f"SELECT * FROM {table} WHERE {where}", [*chunk, *chunk]).fetchall()
                if table == "graph_edges":  # their earlier rows: a mention's label is the erased memory's spelling
                    self.redact_audit("graph_edges", [str(r["edge_id"]) for r in found])
                for r in found:
                    d = dict(r)
                    if table == "graph_edges":
                        ends.update({str(d["src_id"]), str(d["dst_id"])})
                    self._erase_row(table, key, d, at=at, proposal_id=proposal_id, delete=False,
                                    target_id=str(d.get(key) or f"{d.get('memory_id')}->{d.get('evidence_id')}"))
                db.execute(f"DELETE FROM {table} WHERE {where}", [*chunk, *chunk])
        self.redact_audit("memories", memory_ids)
        released = self._scrub_references(scope, set(memory_ids), at=at, proposal_id=proposal_id)
        orphans = self._drop_orphan_nodes(home, None, at=at, proposal_id=proposal_id, actor="writer", action="erase",
                                          redact=True)
        self.redact_audit("graph_nodes", orphans)
        self._respell_nodes(ends, at=at, proposal_id=proposal_id, actor="writer", redact=True)
        db.execute("UPDATE runtime_cycles SET bundle = NULL WHERE tenant_id=? AND workspace_id=? AND user_id=?", home)
        if all_cache:
            n = db.execute("SELECT COUNT(*) FROM llm_cache WHERE home=?", (scope.home,)).fetchone()[0]
            if n:
                self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table="llm_cache",
                            target_id=scope.home, old={"entries": n}, new=None)
                db.execute("DELETE FROM llm_cache WHERE home=?", (scope.home,))
        return released

    def erase_records(self, scope: Scope, erasure: Erasure, memory_ids: Sequence[str], *, at: str,
                      proposal_id: str) -> list[str]:
        """After an erasure, the records about what it erased that the log can no longer rebuild (a replay
        meets none of them: their records no longer open): the erased memories' lifecycle signals, the runtime
        cycles of the erased session, agent or user and the use signals they (or it) sent to memories kept, the
        rejections of what that session, agent or user sent and, for a user, their governance events and held
        actions. Each deletion is audited, its value redacted. Returns the kept memories whose signals went
        (their counters are tallied again)."""
        home = _home(scope)
        user = "tenant_id=? AND workspace_id=? AND user_id=?"
        owners: dict[str, tuple[str, list[str | None]]] = {
            "session": (" AND agent_id=? AND session_id=?", [scope.agent_id, erasure.session_id]),
            "agent": (" AND agent_id=?", [scope.agent_id]), "user": ("", [])}
        found: list[tuple[str, str, str, list[Any]]] = [
            ("lifecycle_signals", "memory_id", f"memory_id IN ({_marks(chunk)})", list(chunk))
            for chunk in _chunks(sorted(memory_ids))]
        if erasure.target in owners:
            where, args = owners[erasure.target]
            # a pin or unpin it sent is the user's curation (an L4 facet pinned with a user key from the erased
            # agent's scope): it stays on the memories kept, as a review decision does
            found += [("lifecycle_signals", "memory_id",
                       f"memory_id IN (SELECT memory_id FROM memories WHERE {user}){where}"
                       + (" AND kind NOT IN ('pin', 'unpin')" if erasure.target != "user" else ""), [*home, *args]),
                      ("runtime_cycles", "cycle_id", user + where, [*home, *args])]
        if erasure.target == "user":
            found += [("governance_events", "event_id", user, list(home)),
                      ("held_actions", "action_id", user, list(home))]
        taken: set[str] = set()
        signals: set[tuple[str, str]] = set()
        for table, key, where, args in found:  # fixed names; values are bound
            for r in self._db.execute(f"SELECT * FROM {table} WHERE {where}", args).fetchall():
                d = dict(r)
                target = d[key]
                if table == "lifecycle_signals":
                    target = _signal_key(d["memory_id"], d["signal_id"], d["kind"])
                    taken.add(str(d["memory_id"]))
                    signals.add((str(d["memory_id"]), str(d["signal_id"])))
                self._erase_row(table, key, d, at=at, proposal_id=proposal_id, target_id=str(target), delete=False)
            self._db.execute(f"DELETE FROM {table} WHERE {where}", args)
        if erasure.target in owners:
            sent = {"session": (scope.agent_id, erasure.session_id), "agent": (scope.agent_id, None),
                    "user": (None, None)}[erasure.target]
            for row_id, payload in self._rejections_sent(home, *sent):
                self.erase_rejection(row_id, payload, "/".join(map(str, home)), at=at, proposal_id=proposal_id)
        if erasure.target in owners:
            where, args = owners[erasure.target]
            self._erase_dropped_signals(home, where, args, keep_curation=erasure.target != "user", at=at,
                                        proposal_id=proposal_id)
        kept = sorted(taken - set(memory_ids))
        for mid in kept:
            self._renumber_signals(mid, at=at, proposal_id=proposal_id)
        if erasure.target in ("session", "agent"):
            self._drop_decisions_sent(list(home), scope.agent_id, erasure.session_id, signals, at=at,
                                      proposal_id=proposal_id)
        return kept

    def _drop_decisions_sent(self, home: list[str], agent: str, session: str | None, signals: set[tuple[str, str]],
                             *, at: str, proposal_id: str) -> None:
        """The promotions and demotions made on use signals the erased agent (or session of it) sent, taken now
        or rolled back before (``signals``: the taken ones, by memory and signal id, also for records that name
        no sender), and their rollbacks: a replay, which never counted those signals, never made them."""
        rows = self._db.execute("SELECT * FROM governance_events WHERE tenant_id=? AND workspace_id=? AND user_id=? "
                                "AND decision IN ('promote', 'demote', 'rollback')", home).fetchall()
        # a pin's or unpin's are kept with it (the user's curation, which the erasure keeps)
        curation = {str(r["decision_id"]) for r in rows if str(r["reason"]).startswith(("pin signal", "unpin signal"))}
        made = {str(r["decision_id"]) for r in rows
                if r["decision"] != "rollback" and _made_on(r, signals, agent, session)} - curation
        self._erase_decisions(rows, made, at=at, proposal_id=proposal_id)

    def _erase_decisions(self, rows: Sequence[sqlite3.Row], doomed: set[str], *, at: str, proposal_id: str) -> None:
        """Every step of the ``doomed`` decisions among ``rows`` and of their rollbacks (and of the rollbacks of
        those, a rollback rolled back), audited (values redacted)."""
        undid = {(str(r["decision_id"]), str(orjson.loads(r["inputs"] or "{}").get("decision_id")))
                 for r in rows if r["decision"] == "rollback"}  # (rollback, the decision it undid)
        while grown := {rollback for rollback, undone in undid if undone in doomed} - doomed:
            doomed = doomed | grown
        for r in rows:
            if str(r["decision_id"]) in doomed:
                self._erase_row("governance_events", "event_id", dict(r), at=at, proposal_id=proposal_id)

    def _erase_dropped_signals(self, home: list[str], where: str, args: list[str | None], *, keep_curation: bool,
                               at: str, proposal_id: str) -> None:
        """The use signals the erased session, agent or user sent that a forget (or a rollback) took with its
        memory and holds in the audit: marked erased under their own key, so a rollback of that forget does not
        count them again (a replay, which cannot open them, never had them)."""
        sender = where.replace("agent_id=?", "json_extract(a.old_value, '$.agent_id')=?").replace(
            "session_id=?", "json_extract(a.old_value, '$.session_id')=?")
        curation = " AND json_extract(a.old_value, '$.kind') NOT IN ('pin', 'unpin')" if keep_curation else ""
        found = self._db.execute(
            "SELECT DISTINCT a.target_id FROM audit_log a WHERE a.target_table='lifecycle_signals' "
            f"AND a.action='delete' AND a.redacted!=1{sender}{curation} AND EXISTS (SELECT 1 FROM audit_log m "
            "WHERE m.target_table='memories' AND m.target_id=json_extract(a.old_value, '$.memory_id') "
            "AND m.action='forget' AND json_extract(m.old_value, '$.tenant_id')=? "
            "AND json_extract(m.old_value, '$.workspace_id')=? AND json_extract(m.old_value, '$.user_id')=?) "
            "ORDER BY a.target_id", [*args, *home]).fetchall()
        for (target,) in found:
            if not self.signal_erased(str(target)):
                self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase",
                            table="lifecycle_signals", target_id=str(target), old=None, new=None)

    def mark_skipped_shredded(self) -> None:
        """Applying the log again (a restore, a standby copy, a replica), this shard skipped a record whose key an
        erasure destroyed: what later records name may be missing here though its owner held it."""
        self._db.execute("INSERT OR IGNORE INTO shard_meta (key, value) VALUES ('skipped_shredded', '1')")

    def skipped_shredded(self) -> bool:
        return self._db.execute("SELECT 1 FROM shard_meta WHERE key = 'skipped_shredded'").fetchone() is not None

    def signal_erased(self, signal_key: str) -> bool:
        """An erasure took the use signal (its sender was erased): nothing counts it again."""
        return self._db.execute("SELECT 1 FROM audit_log WHERE target_table='lifecycle_signals' AND target_id=? "
                                "AND action='erase' LIMIT 1", (signal_key,)).fetchone() is not None

    def _renumber_signals(self, memory_id: str, *, at: str, proposal_id: str) -> None:
        """Number a memory's signals 1.. again in their order, as if the ones an erasure took had never come."""
        rows = self._db.execute("SELECT signal_id, kind, seq FROM lifecycle_signals WHERE memory_id=? ORDER BY seq",
                                (memory_id,)).fetchall()
        for n, (signal_id, kind, seq) in enumerate(rows, start=1):
            if seq == n:
                continue
            self._audit(at=at, proposal_id=proposal_id, actor="writer", action="update", table="lifecycle_signals",
                        target_id=_signal_key(memory_id, signal_id, kind), old={"seq": seq}, new={"seq": n})
            self._db.execute("UPDATE lifecycle_signals SET seq=? WHERE memory_id=? AND signal_id=? AND kind=?",
                             (n, memory_id, signal_id, kind))

    # The owner of a refused proposal, as the log's sealing reads it: the memory's scope and session, else the
    # proposal's. Erasures and burials carry ids only and stay readable; a rollback is the user's decision.
    _SENT = ("SELECT rejection_id, payload FROM rejections WHERE json_valid(payload) "
             "AND payload NOT LIKE '{\"redacted_sha256\"%' "
             "AND COALESCE(json_extract(payload, '$.op'), '') NOT IN ('erase', 'bury') AND "
             + " AND ".join(_owner_is(f"scope.{f}") for f in ("tenant_id", "workspace_id", "user_id")))

    def _rejections_sent(self, home: list[str], agent: str | None, session: str | None) -> list[tuple[int, str]]:
        """The rejections of what a user (an agent of theirs, a session of that agent) sent, in the clear: a
        refused proposal of theirs whose record an erasure makes unreadable (a replay never meets it), a message
        the guard refused among them (never stored, so no erased memory id names it)."""
        where, args = self._SENT, list(home)
        if agent is not None:
            where += f" AND {_owner_is('scope.agent_id')} AND COALESCE(json_extract(payload, '$.op'), '') != 'rollback'"
            args.append(agent)
        if session is not None:
            where += f" AND {_owner_is('session_id')}"
            args.append(session)
        return [(int(r[0]), str(r[1])) for r in self._db.execute(where, args)]

    def erase_rejection(self, row_id: int, payload: str, home: str, *, at: str, proposal_id: str) -> None:
        """One rejection of ``home``'s an erasure removes, audited by the hash of its payload; a review decision
        of that home that names it later is void (:meth:`item_erased`)."""
        found = self._db.execute("SELECT proposal_id FROM rejections WHERE rejection_id=?", (row_id,)).fetchone()
        if found is not None and found[0] is not None:
            self.carry_erased_item(rejection_item(row_id, str(found[0])), home, proposal_id)
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table="rejections",
                    target_id=str(row_id), old={"redacted_sha256": sha256_hex(payload)}, new=None)
        self._db.execute("DELETE FROM rejections WHERE rejection_id=?", (row_id,))

    def carry_erased_item(self, item_id: str, home: str, erasure_id: str) -> None:
        """Remember that an erasure removed ``home``'s review item ``item_id`` (here, or in a replay's source)."""
        self._db.execute("INSERT OR IGNORE INTO erased_items (item_id, home, erasure_id) VALUES (?, ?, ?)",
                         (item_id, home, erasure_id))

    def item_erased(self, item_id: str, home: str) -> bool:
        """Whether an erasure removed ``home``'s review item ``item_id`` (here, or in the source of a replay)."""
        return self._db.execute("SELECT 1 FROM erased_items WHERE item_id=? AND home=?",
                                (item_id, home)).fetchone() is not None

    def drop_earlier_refusals(self, memory_id: str, *, at: str, proposal_id: str) -> int:
        """The pending rejections of earlier versions of ``memory_id``, a memory recomputed whole (a session
        capsule, a scene), deleted and audited: its latest judged version is the one to review. How many were
        refused depends on how its inputs were batched (a fold per message live, fewer in a replay); the latest
        does not. Returns how many went."""
        found = self._db.execute("SELECT rejection_id FROM rejections WHERE memory_id=? AND review_status='pending'",
                                 (memory_id,)).fetchall()
        for (row_id,) in found:
            self._audit(at=at, proposal_id=proposal_id, actor="writer", action="delete", table="rejections",
                        target_id=f"rej_{row_id}", old={"memory_id": memory_id, "superseded_by": proposal_id},
                        new=None)
            self._db.execute("DELETE FROM rejections WHERE rejection_id=?", (row_id,))
        return len(found)

    def refusals(self, scope: Scope, prefix: str) -> list[tuple[int, str, str]]:
        """(id, reason, payload) of the pending rejections of what the user's scopes sent whose reason begins
        with ``prefix`` (the guard's refusals), oldest first."""
        home = " AND ".join(_owner_is(f"scope.{f}") for f in ("tenant_id", "workspace_id", "user_id"))
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return [(int(r[0]), str(r[1]), str(r[2])) for r in self._db.execute(
            "SELECT rejection_id, reason, payload FROM rejections WHERE review_status='pending' "
            f"AND json_valid(payload) AND reason LIKE ? ESCAPE '\\' AND {home} ORDER BY rejection_id",
            [like, *_home(scope)])]

    def reword_rejection(self, row_id: int, reason: str, *, at: str, proposal_id: str) -> None:
        """A rejection refused again for another reason: the old reason is audited by its hash (it may quote
        what an erasure removed)."""
        old = self._db.execute("SELECT reason FROM rejections WHERE rejection_id=?", (row_id,)).fetchone()
        if old is None or old[0] == reason:
            return
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="update", table="rejections",
                    target_id=str(row_id), old={"redacted_sha256": sha256_hex(str(old[0]))}, new={"reason": reason})
        self._db.execute("UPDATE rejections SET reason=? WHERE rejection_id=?", (reason, row_id))

    def _scrub_references(self, scope: Scope, erased: set[str], *, at: str, proposal_id: str
                          ) -> list[MemoryRow]:
        """Rows that are not the erased memories but hold their content or only stand on them: graph edges
        whose evidence was only erased memories go (a node they alone kept goes with them, as an orphan), and
        the others lose the erased memories from their evidence and weight;
        the rejected proposals about them (of one, or citing one), the held actions and the governance events
        of decisions that name them go (a replay refuses, holds and records none of them: it never meets the
        erased memories, or voids what derives from them). Audited, values redacted. Returns the memories
        released from a supersession by an erased one."""
        if not erased:
            return []
        db, home, touched = self._db, _home(scope), set[str]()
        self._prune_edges(home, erased, at=at, proposal_id=proposal_id, actor="writer", action="erase", redact=True,
                          touched=touched)
        self._respell_nodes(touched, at=at, proposal_id=proposal_id, actor="writer", redact=True)
        for chunk in _chunks(self._rejections_about(sorted(erased), str(home[2]))):
            for row_id, memory_id, text in db.execute(
                    f"SELECT rejection_id, memory_id, payload FROM rejections WHERE rejection_id IN ({_marks(chunk)})",
                    chunk).fetchall():
                value = str(text or "")
                if any(mid in value or mid in str(memory_id or "") for mid in erased):
                    self.erase_rejection(int(row_id), value, "/".join(map(str, home)), at=at, proposal_id=proposal_id)
        released = self.release_superseded(scope, sorted(erased), at=at, proposal_id=proposal_id, actor="writer")
        self._drop_held_actions_naming(home, erased, at=at, proposal_id=proposal_id)
        self._drop_decisions_naming(home, erased, at=at, proposal_id=proposal_id)
        return released

    _SUPERSESSION = (*SUPERSESSION_COLUMNS, "lc_state")

    def release_superseded(self, scope: Scope, gone: Sequence[str], *, at: str, proposal_id: str, actor: str
                           ) -> list[MemoryRow]:
        """Memories of the user that one of ``gone`` (erased, forgotten) superseded or merged into itself are as
        they were before (from the audit of the update that superseded them): a duplicate stayed merged into a
        canonical no longer there, out of recall, and a replay that never met it never superseded them. Returned
        (exact duplicates among them fold again into the earliest of them through governance), in the order
        governance picks a canonical among exact duplicates: valid time, then id."""
        out: list[MemoryRow] = []
        for chunk in _chunks(sorted(gone)):
            for r in self._db.execute(
                    f"SELECT * FROM memories WHERE superseded_by IN ({_marks(chunk)}) AND tenant_id=? "
                    "AND workspace_id=? AND user_id=? ORDER BY superseded_by, COALESCE(valid_from, ''), memory_id",
                    [*chunk, *_home(scope)]).fetchall():
                row = memory_row(r)
                released = self._unsuperseded(row)
                self.update_memory(row, released, at=at, proposal_id=proposal_id, actor=actor)
                out.append(released)
        return out

    def superseded_again(self, row: MemoryRow, *, released_by: str, at: str, proposal_id: str, actor: str
                         ) -> list[MemoryRow]:
        """The memories of ``row``'s user and facet key that ``released_by`` (an actor) released from ``row``
        (:meth:`release_superseded`) and nothing supersedes now: superseded by it again, as they were before
        that release (its audit row), unless a rollback touched them since (an operator who rolled the
        supersession back decided). Returned as updated."""
        key = orjson.loads(row["attributes"] or "{}").get("facet_key")
        out: list[MemoryRow] = []
        for r in self._db.execute(
                "SELECT * FROM memories WHERE layer=? AND superseded_by IS NULL AND memory_id != ? "
                "AND json_extract(attributes, '$.facet_key') IS ? AND tenant_id=? AND workspace_id=? AND user_id=? "
                "ORDER BY COALESCE(valid_from, ''), memory_id",
                (row["layer"], row["memory_id"], key, row["tenant_id"], row["workspace_id"], row["user_id"])):
            candidate = memory_row(r)
            released = self._db.execute(
                "SELECT old_value, audit_id FROM audit_log WHERE target_table='memories' AND target_id=? "
                "AND action='update' AND actor=? AND redacted!=1 AND json_extract(old_value, '$.superseded_by')=? "
                "AND json_extract(new_value, '$.superseded_by') IS NULL ORDER BY audit_id DESC LIMIT 1",
                (candidate["memory_id"], released_by, row["memory_id"])).fetchone()
            if released is None or self._db.execute(
                    "SELECT 1 FROM audit_log WHERE target_table='memories' AND target_id=? AND audit_id > ? "
                    "AND actor='rollback' LIMIT 1", (candidate["memory_id"], released[1])).fetchone():
                continue
            before = orjson.loads(released[0])
            again = cast("MemoryRow", {**candidate, **{c: before.get(c) for c in self._SUPERSESSION}})
            self.update_memory(candidate, again, at=at, proposal_id=proposal_id, actor=actor)
            out.append(again)
        return out

    def _unsuperseded(self, row: MemoryRow) -> MemoryRow:
        """``row`` as it was before what supersedes it (or merged it into itself) did so: its supersession fields
        and lifecycle state from the audit of that update (active where the audit has none)."""
        before = self._db.execute(
            "SELECT old_value FROM audit_log WHERE target_table='memories' AND target_id=? "
            "AND action='update' AND redacted!=1 AND json_extract(new_value, '$.superseded_by')=? "
            "AND COALESCE(json_extract(old_value, '$.superseded_by'), '') != ? ORDER BY audit_id DESC LIMIT 1",
            (row["memory_id"], row["superseded_by"], row["superseded_by"])).fetchone()
        old: dict[str, Any] = orjson.loads(before[0]) if before else {"lc_state": "active"}
        return cast("MemoryRow", {**row, **{c: old.get(c) for c in self._SUPERSESSION}})

    def drop_merges_into(self, memory_ids: Sequence[str], *, at: str, proposal_id: str, actor: str) -> None:
        """The records of the merges that folded a duplicate into any of ``memory_ids`` (gone), and of their
        rollbacks, audited with their values: they name a memory no longer there, and whether a duplicate met it
        before it went is a matter of arrival order. Rolling back what removed them puts them back."""
        doomed = {str(r[0]) for chunk in _chunks(sorted(memory_ids)) for r in self._db.execute(
            "SELECT decision_id FROM governance_events WHERE decision = 'merge' AND "
            f"json_extract(inputs, '$.canonical_id') IN ({_marks(chunk)})", chunk).fetchall()}
        if not doomed:
            return
        doomed |= {str(r["decision_id"]) for r in self._db.execute(
            "SELECT decision_id, inputs FROM governance_events WHERE decision = 'rollback'").fetchall()
            if str(orjson.loads(r["inputs"] or "{}").get("decision_id")) in doomed}
        rows = [r for chunk in _chunks(sorted(doomed)) for r in self._db.execute(  # every step, rolled_back too
            f"SELECT * FROM governance_events WHERE decision_id IN ({_marks(chunk)}) ORDER BY event_id",
            chunk).fetchall()]
        for r in rows:
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action="delete", table="governance_events",
                        target_id=str(r["event_id"]), old=dict(r), new=None)
            self._db.execute("DELETE FROM governance_events WHERE event_id=?", (r["event_id"],))

    def _erase_row(self, table: str, key: str, row: dict[str, Any], *, at: str, proposal_id: str,
                   target_id: str | None = None, delete: bool = True) -> None:
        """One row an erasure removes: audited (its value redacted), then deleted by ``key`` unless the caller
        deletes a whole set of them at once (``delete=False``). ``table`` and ``key`` are fixed names."""
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table=table,
                    target_id=target_id if target_id is not None else str(row[key]), old=redacted(row), new=None)
        if table == "held_actions":  # a review decision that names it later is void
            self.carry_erased_item(str(row[key]), f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}",
                                   proposal_id)
        if delete:
            self._db.execute(f"DELETE FROM {table} WHERE {key}=?", (row[key],))

    def _drop_held_actions_naming(self, home: list[str], erased: set[str], *, at: str, proposal_id: str) -> None:
        """The user's held actions that name an erased memory (a replay holds no such action: it never meets
        the erased memory), audited (values redacted); their decisions go with them (they name the targets)."""
        for r in self._db.execute("SELECT * FROM held_actions WHERE tenant_id=? AND workspace_id=? AND user_id=?",
                                  home).fetchall():
            if set(MEMORY_ID.findall(f"{r['target_ids'] or ''} {r['inputs'] or ''}")) & erased:
                self.redact_audit("held_actions", [str(r["action_id"])])  # its earlier rows quote them too
                self._erase_row("held_actions", "action_id", dict(r), at=at, proposal_id=proposal_id)

    def _drop_decisions_naming(self, home: list[str], erased: set[str], *, at: str, proposal_id: str) -> None:
        """Every step of the user's decisions whose inputs or reasons name an erased memory, and of the rollbacks
        of those decisions (a rollback's record counts what it restored), audited (values redacted)."""
        rows = self._db.execute("SELECT * FROM governance_events WHERE tenant_id=? AND workspace_id=? AND user_id=?",
                                home).fetchall()
        doomed = {str(r["decision_id"]) for r in rows
                  if set(MEMORY_ID.findall(f"{r['inputs'] or ''} {r['reason'] or ''}")) & erased}
        self._erase_decisions(rows, doomed, at=at, proposal_id=proposal_id)

    _CITED = ("SELECT r.rejection_id, e.value FROM rejections r, json_each(CASE WHEN json_valid(r.payload) THEN "
              "CASE WHEN json_type(r.payload, '$.memory.evidence') = 'array' THEN "
              "json_extract(r.payload, '$.memory.evidence') END END) e "
              "WHERE instr(r.payload, ?) > 0 AND r.payload NOT LIKE '{\"redacted_sha256\"%'")

    def _rejections_about(self, memory_ids: list[str], user_id: str) -> list[int]:
        """Rejections of proposals about ``memory_ids``: of one of them, or of a memory citing one of them (a
        capsule the guard refused quotes the session's messages). The citing ones in one scan of the shard's
        rejections not yet redacted whose payload names the user (a rejection row has no scope columns: its
        payload names it), so only those are read as JSON."""
        wanted = set(memory_ids)
        found = {int(r[0]) for chunk in _chunks(memory_ids) for r in self._db.execute(
            f"SELECT rejection_id FROM rejections WHERE memory_id IN ({_marks(chunk)})", chunk)}
        named = orjson.dumps(user_id).decode()  # as the stages' encoder writes it in a payload
        found.update(int(r[0]) for r in self._db.execute(self._CITED, (named,)) if r[1] in wanted)
        return sorted(found)

    def _prune_edges(self, home: list[str], gone: set[str], *, at: str, proposal_id: str, actor: str, action: str,
                     redact: bool, touched: set[str] | None = None) -> set[str]:
        """Graph edges of the user whose evidence was only ``gone`` memories go; the others lose them from their
        evidence and weight (weight = unit weight × evidence), as if those memories never were, audited as what
        they lost (``{"count": n}`` before, ``{"count": m, "removed": [...]}`` after). The edges are found
        through the evidence index. Returns the ends of the edges that went."""
        db, ends = self._db, set[str]()
        cited: dict[str, set[str]] = {}
        for chunk in _chunks(sorted(gone)):
            for edge_id, memory_id in db.execute(
                    "SELECT v.edge_id, v.memory_id FROM graph_edge_evidence v JOIN graph_edges g ON g.edge_id = "
                    f"v.edge_id WHERE v.memory_id IN ({_marks(chunk)}) AND g.tenant_id=? AND g.workspace_id=? "
                    "AND g.user_id=?", [*chunk, *home]):
                cited.setdefault(str(edge_id), set()).add(str(memory_id))
        for edge_id, removed in sorted(cited.items()):
            r = self.edge(edge_id)
            assert r is not None
            if touched is not None:  # the ends of every edge the gone memories were evidence of
                touched.update({str(r["src_id"]), str(r["dst_id"])})
            count = int(r["evidence_count"]) - len(removed)
            if count <= 0:
                old = redacted(self._edge_image(r)) if redact else self._edge_image(r)
                if redact:  # its earlier rows too (a relation's label is the erased memory's word)
                    self.redact_audit("graph_edges", [edge_id])
                self._audit(at=at, proposal_id=proposal_id, actor=actor, action=action, table="graph_edges",
                            target_id=edge_id, old=old, new=None)
                db.execute("DELETE FROM graph_edges WHERE edge_id=?", (edge_id,))
                ends.update({str(r["src_id"]), str(r["dst_id"])})
                continue
            weight = float(r["unit_weight"]) * count
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action=action, table="graph_edges",
                        target_id=edge_id, old={**(redacted(r) if redact else r),
                                                "evidence": {"count": int(r["evidence_count"])}},
                        new={"evidence": {"count": count, "removed": sorted(removed)}, "weight": weight})
            db.executemany("DELETE FROM graph_edge_evidence WHERE edge_id=? AND memory_id=?",
                           [(edge_id, mid) for mid in sorted(removed)])
            db.execute("UPDATE graph_edges SET evidence_count=?, weight=? WHERE edge_id=?", (count, weight, edge_id))
        return ends

    def _respell_nodes(self, touched: set[str], *, at: str, proposal_id: str, actor: str, redact: bool) -> None:
        """The graph nodes among ``touched`` that memories still mention, spelled and made as those memories gave
        them (the least spelling their mentions carry, the least method), as a store that never held the memories
        just removed has them: the least of all spellings seen stayed (an erased session's "Monday" over the
        "monday" left, which a replay never met). A node mentioned from before mentions carried their spelling
        keeps its row."""
        for node_id in sorted(n for n in touched if n.startswith("node_")):
            node = self.node(node_id)
            if node is None:
                continue
            mentions = self._db.execute(
                "SELECT label, method FROM graph_edges WHERE dst_id=? AND edge_type='MENTIONS'", (node_id,)).fetchall()
            if not mentions or any(label is None for label, _ in mentions):
                continue  # a mention from before its spelling was kept: the name stays as it is
            new = {**node, "name": min(str(label) for label, _ in mentions),
                   "method": min(str(m) for _, m in mentions)}
            if (new["name"], new["method"]) == (node["name"], node["method"]):
                continue
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action="update", table="graph_nodes",
                        target_id=node_id, old=redacted(node) if redact else node,
                        new=redacted(new) if redact else new)
            self._db.execute("UPDATE graph_nodes SET name=?, method=? WHERE node_id=?",
                             (new["name"], new["method"], node_id))

    def _edge_image(self, row: Row) -> Row:
        """An edge's row with its evidence listed (what a deletion or a rollback audits)."""
        return {**row, "evidence": self.edge_evidence(str(row["edge_id"]))}

    _KEYS: ClassVar[dict[str, str]] = {"memories": "memory_id", "graph_nodes": "node_id", "graph_edges": "edge_id",
                                       "held_actions": "action_id", "tombstones": "tombstone_id",
                                       "governance_events": "event_id"}

    def restore(self, entry: AuditEntry, *, at: str, proposal_id: str) -> str:
        """Undo one audited change (rollback): the row goes back to its old value (or away if it had none).
        Every restoration is audited in turn. Returns "removed", "restored" or "reinserted"."""
        table, target_id, old, new = entry.table, entry.target_id, entry.old, entry.new
        if table == "memories":
            return self._restore_memory(target_id, old, new, at=at, proposal_id=proposal_id)
        if table == "graph_edges":
            return self._restore_edge(target_id, old, new, at=at, proposal_id=proposal_id)
        if table in self._KEYS:
            key = self._KEYS[table]
            current = self._row(table, key, target_id)
            if old is None:
                if current is not None:
                    self._rollback_delete(table, key, current, at=at, proposal_id=proposal_id)
                return "removed"
            if table == "graph_nodes" and current is not None:  # made again, or respelled, since: both as one
                old = node_union(old, current)
            self._put_row(table, key, old, current, at=at, proposal_id=proposal_id, actor="rollback")
            return "restored" if current is not None else "reinserted"
        if table == "evidence_edges" and old is not None:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="insert", table=table,
                        target_id=target_id, old=None, new=old)
            self._db.execute("INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
                             (old["memory_id"], old["evidence_id"]))
            return "reinserted"
        if table == "lifecycle_signals":
            return self._restore_signal(target_id, old, new, at=at, proposal_id=proposal_id)
        if table == "rejections" and old is not None:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="update", table=table,
                        target_id=target_id, old=new, new=old)
            self._db.execute("UPDATE rejections SET review_status=? WHERE rejection_id=?",
                             (old["review_status"], int(target_id.removeprefix("rej_"))))
            return "restored"
        raise ShardError(f"cannot roll back a change to {table}")

    def _restore_signal(self, target_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str) -> str:
        """A use signal a decision counted goes (its whole row in the audit, under the signal's own key, so
        that :meth:`signal_seen` still knows it: its event delivered again counts nothing); one a rollback took
        is counted again when that rollback is rolled back."""
        if old is None and new is not None:
            memory_id = target_id.split("/")[0]
            row = self._db.execute("SELECT * FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                                   (memory_id, new["signal_id"], new["kind"])).fetchone()
            if row is not None:
                self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete",
                            table="lifecycle_signals", target_id=_signal_key(memory_id, new["signal_id"], new["kind"]),
                            old=dict(row), new=None)
                self._db.execute("DELETE FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                                 (memory_id, new["signal_id"], new["kind"]))
            return "removed"
        if old is not None and new is None and self.signal_erased(target_id):
            return "erased"  # its sender was erased since: a replay never counted it
        if old is not None and new is None and old.keys() >= RESTORABLE_SIGNAL:
            self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="insert", table="lifecycle_signals",
                        target_id=target_id, old=None, new=old)
            self._db.execute(
                "INSERT OR IGNORE INTO lifecycle_signals (memory_id, signal_id, kind, at, level, seq, agent_id, "
                "session_id) VALUES (?,?,?,?,?,?,?,?)", [old.get(c) for c in (
                    "memory_id", "signal_id", "kind", "at", "level", "seq", "agent_id", "session_id")])
            return "reinserted"
        raise ShardError("cannot roll back this change to lifecycle_signals (a rollback recorded by an older "
                         "release kept no copy of the signal it removed)")

    def _rollback_delete(self, table: str, key: str, current: Row, *, at: str, proposal_id: str) -> None:
        """A rollback deletes ``current`` (audited with its value)."""
        image = self._edge_image(current) if table == "graph_edges" else current
        self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete", table=table,
                    target_id=str(current[key]), old=image, new=None)
        self._db.execute(f"DELETE FROM {table} WHERE {key}=?", (current[key],))

    def _restore_edge(self, edge_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str) -> str:
        """Undo one audited change of a graph edge, whatever came after it: an addition to its evidence loses
        what it added (what was added since stays), a removal gives back what it removed, an insert takes the
        edge away, and a deletion brings it back with what it cited, into the edge made again since if there
        is one. Evidence or an end erased since does not come back."""
        current = self.edge(edge_id)
        delta = _edge_delta(old, new)
        if delta is None and old is None:  # an insert
            if current is not None:
                self._rollback_delete("graph_edges", "edge_id", current, at=at, proposal_id=proposal_id)
            return "removed"
        added, removed = delta if delta is not None else ((), _evidence_of(old))
        outcome = "restored"
        if removed:
            outcome = self._edge_back(edge_id, current, old or {}, removed, at=at, proposal_id=proposal_id)
        if added:
            outcome = self._edge_without(edge_id, old or {}, added, at=at, proposal_id=proposal_id)
        return outcome

    def _edge_back(self, edge_id: str, current: Row | None, image: Row, evidence: Sequence[str], *, at: str,
                   proposal_id: str) -> str:
        """The edge cites ``evidence`` again: added to ``current``, or, when it is gone, made again from
        ``image`` (its audited row) with that evidence alone. An erased memory is neither evidence nor an end."""
        base = current if current is not None else {k: v for k, v in image.items() if k != "evidence"}
        if "src_id" not in base or any(self._edge_erased(base, str(base[end])) for end in ("src_id", "dst_id")):
            return "removed"  # no row to make it from (a partial image), or an end was erased since
        wanted = [e for e in evidence if not self._edge_erased(base, e)]
        back = self.new_edge_evidence(edge_id, wanted) if current is not None else sorted(set(wanted))
        if not back:
            return "removed" if current is None else "restored"
        count = (int(current["evidence_count"]) if current is not None else 0) + len(back)
        row = {**base, "evidence_count": count, "weight": float(base["unit_weight"]) * count}
        self.put_edge(row, current, added=back, at=at, proposal_id=proposal_id, actor="rollback")
        return "restored" if current is not None else "reinserted"

    def _edge_without(self, edge_id: str, old: Row, added: Sequence[str], *, at: str, proposal_id: str) -> str:
        """The edge loses what an addition added and takes the addition's other old values back."""
        current = self.edge(edge_id)
        if current is None:
            return "removed"  # gone since (a forget took its last evidence): nothing is left to take out
        taken = set(added) - set(self.new_edge_evidence(edge_id, sorted(set(added))))  # those it still cites
        count = int(current["evidence_count"]) - len(taken)
        if count <= 0:
            self._rollback_delete("graph_edges", "edge_id", current, at=at, proposal_id=proposal_id)
            return "removed"
        unit = float(old.get("unit_weight") or current["unit_weight"])
        row = {**current, **{k: v for k, v in old.items() if k in current and k != "evidence"},
               "evidence_count": count, "weight": unit * count}
        self._audit(at=at, proposal_id=proposal_id, actor="rollback", action="update", table="graph_edges",
                    target_id=edge_id, old={**current, "evidence": {"count": int(current["evidence_count"])}},
                    new={**row, "evidence": {"count": count, "removed": sorted(taken)}})
        self._write_row("graph_edges", "edge_id", row, current)
        self._db.executemany("DELETE FROM graph_edge_evidence WHERE edge_id=? AND memory_id=?",
                             [(edge_id, mid) for mid in sorted(taken)])
        return "restored"

    def erased(self, scope: Scope, memory_id: str) -> bool:
        """``memory_id`` is a memory of the scope's user that an erasure (not retention) removed (or, in a
        replay, one not stored that an erasure the replay has not reached yet removes)."""
        return self._erased_of(_home(scope), memory_id)

    def buried_later(self, scope: Scope, memory_ids: Sequence[str]) -> bool:
        """One of ``memory_ids`` is not stored and an erasure this replay has not reached yet buries it (its
        tombstone is carried pending). Never true outside a replay from the log's start."""
        return any(self._db.execute(
            f"SELECT 1 FROM tombstones t WHERE t.memory_id IN ({_marks(chunk)}) AND t.pending=1 "
            "AND t.tenant_id=? AND t.workspace_id=? AND t.user_id=? AND t.reason NOT LIKE ? "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.memory_id = t.memory_id) LIMIT 1",
            [*chunk, *_home(scope), f"{FORGOTTEN_PREFIX}%"]).fetchone() for chunk in _chunks(list(memory_ids)))

    def _erased_of(self, home: Sequence[str], memory_id: str) -> bool:
        found = self._db.execute(
            "SELECT reason FROM tombstones WHERE memory_id=? AND tenant_id=? AND workspace_id=? AND user_id=? "
            "AND (pending=0 OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.memory_id=tombstones.memory_id))",
            (memory_id, *home)).fetchall()
        return any(not str(r[0]).startswith(FORGOTTEN_PREFIX) for r in found)

    def _edge_erased(self, edge: Row, memory_id: str) -> bool:
        return self._erased_of([edge["tenant_id"], edge["workspace_id"], edge["user_id"]], memory_id)

    def _restore_memory(self, memory_id: str, old: Row | None, new: Row | None, *, at: str, proposal_id: str
                        ) -> str:
        """The memory as the audit row's old value has it, except for what changed since the decision left it
        as ``new`` (:func:`changed_since`: a verdict, a supersession, use signals, any column): a later decision
        outlives the rollback of an earlier one. A reviewer's verdict outlives it as it outlives an erasure of
        what it was judged by, and so does verify's (a contradiction found after a demotion stays when the
        demotion is rolled back); a supersession after a demotion stays when the demotion is rolled back, and a
        pin given after it stays pinned (the rollback tallies the signals left again: ``ops.governance``)."""
        current = self.memory_row(memory_id)
        if old is None:
            if current is not None:
                self.delete_memory(current, at=at, proposal_id=proposal_id, actor="rollback", redact=False)
            return "removed"
        prior = memory_row(old)
        if current is None:
            self.insert_memory(prior, at=at, proposal_id=proposal_id, actor="rollback")
            return "reinserted"
        now = columns(current)
        kept = changed_since(current, new) if new is not None else [
            c for c in REVIEWED_COLUMNS if now[c] is not None]  # the decision removed it: a verdict since stands
        if "superseded_by" not in kept and now["lc_state"] == "merged" and (new or {}).get("lc_state") == "merged":
            kept = [c for c in kept if c != "lc_state"]  # a merge undone: its state goes with it
        if set(kept) & set(REVIEWED_COLUMNS) or not isinstance(prior["trust_reason"], str | None):
            # a verdict given since, or one an erasure cleared (its reason quoted the erased memory: redacted)
            rejected = now["trust_method"] == "ground_truth" and current["lc_state"] == "rejected"
            kept = [*kept, *REVIEWED_COLUMNS, *(("lc_state",) if rejected else ())]
        self.update_memory(current, carry_over(prior, current, dict.fromkeys(kept)), at=at,
                           proposal_id=proposal_id, actor="rollback")
        return "restored"

    def mark_rejection(self, row: Row, status: str, *, at: str, proposal_id: str, actor: str) -> None:
        """Set a rejection's review status (approved or dismissed)."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="update", table="rejections",
                    target_id=f"rej_{row['rejection_id']}", old={"review_status": row["review_status"]},
                    new={"review_status": status})
        self._db.execute("UPDATE rejections SET review_status=? WHERE rejection_id=?", (status, row["rejection_id"]))

    # -- insert-only records (they are their own audit) ---------------------------------------------------
    def add_rejection(
        self, *, at: str, proposal_id: str | None, memory_id: str | None, reason: str,
        source: tuple[str, int, int] | None, payload: str | None,
    ) -> None:
        topic, part, off = source if source is not None else (None, None, None)
        self._db.execute(
            "INSERT INTO rejections (proposal_id, memory_id, reason, source_topic, source_partition, "
            "source_offset, payload, at) VALUES (?,?,?,?,?,?,?,?)",
            (proposal_id, memory_id, reason, topic, part, off, payload, at),
        )

    def record_decision(self, decision_id: str, scope: Scope, decision: str, steps: Sequence[tuple[str, str]],
                        inputs: Mapping[str, Any], *, at: str) -> None:
        """Record the steps (evaluated → decided → applied/held/rolled_back) of an autonomous decision,
        each once, with its inputs and reason. Not one that names a memory an erasure removed (a replay meets
        such a decision again after the erasure, which deleted its record: see :meth:`_scrub_references`)."""
        named = sorted(set(MEMORY_ID.findall(" ".join([_json(dict(inputs)), *(reason for _, reason in steps)]))))
        if named and self._erased_among(named):
            return
        for step, reason in steps:
            self._db.execute(
                "INSERT OR IGNORE INTO governance_events (event_id, decision_id, tenant_id, workspace_id, user_id, "
                "agent_id, decision, step, inputs, reason, at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (derive_id("gov", decision_id, step), decision_id, scope.tenant_id, scope.workspace_id,
                 scope.user_id, scope.agent_id, decision, step, _json(dict(inputs)), reason, at))

    def _erased_among(self, memory_ids: Sequence[str]) -> bool:
        """One of ``memory_ids`` is not stored and an erasure (not a forget) buried it. Not one a replay has not
        reached yet: the decision was recorded in the source, and that erasure removes its record again."""
        return any(self._db.execute(
            f"SELECT 1 FROM tombstones t WHERE t.memory_id IN ({_marks(chunk)}) AND t.pending=0 "
            "AND t.reason NOT LIKE ? "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.memory_id = t.memory_id) LIMIT 1",
            [*chunk, f"{FORGOTTEN_PREFIX}%"]).fetchone() for chunk in _chunks(memory_ids))

    # -- the stream position and the outbox, committed with the state they cover -------------------------
    def store_offset(self, group_id: str, topic: str, partition: int, next_offset: int) -> None:
        """The next offset to apply; it never moves back (a stale writer of the same shard cannot rewind it)."""
        self._db.execute(
            "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) VALUES (?,?,?,?) "
            "ON CONFLICT(group_id, topic, partition) DO UPDATE SET next_offset=MAX(next_offset, excluded.next_offset)",
            (group_id, topic, partition, next_offset),
        )

    def unpublished_of(self, home: str) -> list[tuple[int, bytes]]:
        """(seq, value) of the outbox rows of the user ``home`` not published yet (an erasure drops its own)."""
        return [(int(r[0]), bytes(r[1])) for r in self._db.execute(
            "SELECT seq, value FROM outbox WHERE key=? AND published=0", (home,))]

    def drop_unpublished(self, seqs: Sequence[int]) -> None:
        """Outbox bookkeeping, not memory state: no audit row."""
        self._db.executemany("DELETE FROM outbox WHERE seq=?", [(q,) for q in seqs])

    def enqueue(self, topic: str, key: str | None, value: bytes, headers: bytes | None = None) -> None:
        self._db.execute("INSERT INTO outbox (topic, key, value, headers) VALUES (?,?,?,?)",
                         (topic, key, value, headers))


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

"""The reads of a shard's write transaction."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from typing import Literal

import orjson

from altm.core import (
    FORGOTTEN_PREFIX,
    Erasure,
    LifecycleSignal,
    Scope,
    rejected_proposal,
)
from altm.store._conversation import neighbours
from altm.store._rows import (
    MemoryRow,
    columns,
    memory_row,
)
from altm.store._sql import CACHE_GET, SCENE_MEMBERS
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks
from altm.store._tx._base import _TxBase
from altm.store._tx._common import (
    AuditEntry,
    Row,
    SignalTally,
    _home,
    _owner_is,
    _signal_key,
    upsert_applied,
)


class _TxReads(_TxBase):
    """The reads the writer makes inside its transaction (they see its uncommitted writes)."""

    def memory_row(self, memory_id: str) -> MemoryRow | None:
        row = self._db.execute("SELECT * FROM memories WHERE memory_id=?", (memory_id,)).fetchone()
        return None if row is None else memory_row(row)

    def has_memory(self, memory_id: str) -> bool:
        """The memory is stored (without reading its row: evidence and edge ends are checked by the thousand)."""
        return self._db.execute("SELECT 1 FROM memories WHERE memory_id=?", (memory_id,)).fetchone() is not None

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

    def cached(self, model: str, key: str, home: str) -> str | None:
        """An entry of the shard's model cache kept under ``home`` (the LLM's answers; the write guard's
        vectors)."""
        found = self._db.execute(CACHE_GET, (home, model, key)).fetchone()
        return None if found is None else str(found[0])

    def held_action(self, action_id: str) -> Row | None:
        return self._row("held_actions", "action_id", action_id)

    def prompts_of(self, memory_ids: Sequence[str]) -> set[str]:
        """The prompt hashes of the model answers ``memory_ids`` were made from (stored ones; the cache keys of
        those answers)."""
        out: set[str] = set()
        for chunk in _chunks(memory_ids):
            out.update(str(r[0]) for r in self._db.execute(
                f"SELECT prompt_hash FROM memories WHERE memory_id IN ({_marks(chunk)}) AND prompt_hash IS NOT NULL",
                chunk))
        return out

    def held_actions_pending(self, scope: Scope) -> list[Row]:
        """The scope's user's held actions waiting for review, in the order they were held."""
        return [dict(r) for r in self._db.execute(
            "SELECT * FROM held_actions WHERE tenant_id=? AND workspace_id=? AND user_id=? AND status='pending' "
            "ORDER BY recorded_at, action_id", _home(scope))]

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

    _SAME_SESSION = ("tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=? AND session_id IS ? "
                     "AND layer='L0'")

    def session_neighbour(self, row: MemoryRow, direction: Literal["previous", "next"]) -> MemoryRow | None:
        """The L0 message just before or after ``row`` in its session's conversation order (see
        :mod:`altm.store._conversation`)."""
        keys = [row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"], row["session_id"]]
        found = neighbours(self._db, self._SAME_SESSION, keys, columns(row), direction, 1)
        return memory_row(found[0]) if found else None

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

    def replaced_by(self, memory_id: str) -> list[MemoryRow]:
        """The rows ``memory_id`` supersedes (or merged into itself), in id order."""
        return [memory_row(r) for r in self._db.execute(
            "SELECT * FROM memories WHERE superseded_by=? ORDER BY memory_id", (memory_id,))]

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

    def scenes_of(self, scope: Scope, node_ids: Sequence[str]) -> list[MemoryRow]:
        """The user's scenes (L3) anchored at any of ``node_ids``."""
        return [memory_row(r) for chunk in _chunks(sorted(set(node_ids))) for r in self._db.execute(
            "SELECT * FROM memories WHERE layer='L3' AND kind='scene' AND tenant_id=? AND workspace_id=? "
            f"AND user_id=? AND json_extract(attributes, '$.anchor_node_id') IN ({_marks(chunk)}) "
            "ORDER BY memory_id", [*_home(scope), *chunk])]

    def scene_sessions(self, scope: Scope, node_id: str) -> list[str]:
        """The sessions ("" for none) govern counts in the scene of ``node_id`` (``SCENE_MEMBERS``), sorted."""
        return sorted({str(session or "") for _, session in self._db.execute(
            SCENE_MEMBERS, [node_id, *_home(scope), scope.agent_id])})

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

    def inserted_at(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """When each of ``memory_ids`` was last stored, as the audit id of its insert (the shard's order)."""
        return {str(r[0]): int(r[1]) for chunk in _chunks(sorted(set(memory_ids))) for r in self._db.execute(
            "SELECT target_id, MAX(audit_id) FROM audit_log WHERE target_table='memories' AND action='insert' "
            f"AND target_id IN ({_marks(chunk)}) GROUP BY target_id", chunk)}

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
        counts = {str(k): int(n) for k, n in db.execute(  # kept by triggers (schema 28): not every signal read
            "SELECT kind, n FROM signal_counts WHERE memory_id=?", (memory_id,))}
        last_pin = db.execute(
            "SELECT kind FROM lifecycle_signals INDEXED BY lifecycle_signals_by_kind WHERE memory_id=? "
            "AND kind IN ('pin', 'unpin') "
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

    def decision_rolled_back(self, decision_id: str, scope: Scope, _depth: int = 0) -> bool:
        """Whether a rollback of the user's decision is in force: one recorded on it (a ``rolled_back`` step) that
        was not itself rolled back (an operator who rolled the rollback back restored the decision)."""
        if _depth > 32:  # a chain of rollbacks of rollbacks this long is not made by hand
            return True
        rollbacks = [str(orjson.loads(r[0] or "{}").get("by")) for r in self._db.execute(
            "SELECT inputs FROM governance_events WHERE decision_id=? AND step='rolled_back' AND tenant_id=? "
            "AND workspace_id=? AND user_id=?", (decision_id, *_home(scope))).fetchall()]
        return any(not self.decision_rolled_back(by, scope, _depth + 1) for by in rollbacks)

    def decision_audit(self, decision_id: str) -> list[AuditEntry]:
        """The audit rows a decision (a proposal) wrote, newest first."""
        return [AuditEntry(table=a["target_table"], target_id=a["target_id"],
                           old=orjson.loads(a["old_value"]) if a["old_value"] else None,
                           new=orjson.loads(a["new_value"]) if a["new_value"] else None,
                           redacted=a["redacted"] == 1)
                for a in self._db.execute("SELECT * FROM audit_log WHERE proposal_id=? ORDER BY audit_id DESC",
                                          (decision_id,)).fetchall()]

    def forgotten_in(self, scope: Scope, memory_id: str) -> bool:
        """Retention forgot the memory ``memory_id`` of the scope's user (an audit row of the forget)."""
        return self._db.execute(
            "SELECT 1 FROM audit_log WHERE target_table='memories' AND target_id=? AND action='forget' "
            "AND json_extract(old_value, '$.tenant_id')=? AND json_extract(old_value, '$.workspace_id')=? "
            "AND json_extract(old_value, '$.user_id')=? LIMIT 1", (memory_id, *_home(scope))).fetchone() is not None

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

    def skipped_shredded(self) -> bool:
        return self._db.execute("SELECT 1 FROM shard_meta WHERE key = 'skipped_shredded'").fetchone() is not None

    def signal_erased(self, signal_key: str) -> bool:
        """An erasure took the use signal (its sender was erased): nothing counts it again."""
        return self._db.execute("SELECT 1 FROM audit_log WHERE target_table='lifecycle_signals' AND target_id=? "
                                "AND action='erase' LIMIT 1", (signal_key,)).fetchone() is not None

    def refusals(self, scope: Scope, prefix: str) -> list[tuple[int, str, str]]:
        """(id, reason, payload) of the pending rejections of what the user's scopes sent whose reason begins
        with ``prefix`` (the guard's refusals), oldest first."""
        home = " AND ".join(_owner_is(f"scope.{f}") for f in ("tenant_id", "workspace_id", "user_id"))
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return [(int(r[0]), str(r[1]), str(r[2])) for r in self._db.execute(
            "SELECT rejection_id, reason, payload FROM rejections WHERE review_status='pending' "
            f"AND json_valid(payload) AND reason LIKE ? ESCAPE '\\' AND {home} ORDER BY rejection_id",
            [like, *_home(scope)])]

    def _edge_image(self, row: Row) -> Row:
        """An edge's row with its evidence listed (what a deletion or a rollback audits)."""
        return {**row, "evidence": self.edge_evidence(str(row["edge_id"]))}

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

    def _erased_among(self, memory_ids: Sequence[str]) -> bool:
        """One of ``memory_ids`` is not stored and an erasure (not a forget) buried it. Not one a replay has not
        reached yet: the decision was recorded in the source, and that erasure removes its record again."""
        return any(self._db.execute(
            f"SELECT 1 FROM tombstones t WHERE t.memory_id IN ({_marks(chunk)}) AND t.pending=0 "
            "AND t.reason NOT LIKE ? "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.memory_id = t.memory_id) LIMIT 1",
            [*chunk, f"{FORGOTTEN_PREFIX}%"]).fetchone() for chunk in _chunks(memory_ids))

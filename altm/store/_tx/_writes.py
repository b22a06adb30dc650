"""The audited mutations of a shard's write transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import orjson

from altm.core import (
    LifecycleSignal,
    Scope,
    sha256_hex,
)
from altm.store._conversation import turn_key_of
from altm.store._redaction import redacted
from altm.store._rows import (
    MEMORY_COLUMNS,
    SUPERSESSION_COLUMNS,
    MemoryRow,
    columns,
    memory_row,
)
from altm.store._sql import CACHE_PUT
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks
from altm.store._tx._common import (
    Row,
    _home,
    _signal_key,
)
from altm.store._tx._tombstones import _TxTombstones


class _TxWrites(_TxTombstones):
    """Mutations of memories, the graph, use signals, supersession and rejections, each audited."""

    def keep_cached(self, model: str, key: str, value: str, home: str, *, at: str) -> None:
        """Keep an entry in the model cache, under the ``home`` whose content it comes from: an erasure of that
        user's content clears it (:meth:`scrub`), a replay copies it."""
        self._db.execute(CACHE_PUT, (model, key, home, value, at, None))  # its texts' memories not known: any
        # erasure of the user's clears it

    def insert_memory(self, row: MemoryRow, *, at: str, proposal_id: str, actor: str,
                      source_ms: int | None = None) -> None:
        """Insert a memory; ``source_ms``: the publish time of the turn it comes from (freshness)."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert", table="memories",
                    target_id=row["memory_id"], old=None, new=row)
        cols = ", ".join(MEMORY_COLUMNS)
        values = columns(row)
        self._db.execute(f"INSERT INTO memories ({cols}, source_ms, turn_key) VALUES ({_marks(MEMORY_COLUMNS)}, ?, ?)",
                         [*(values[c] for c in MEMORY_COLUMNS), source_ms if source_ms else None,
                          turn_key_of(values["attributes"], values["source_id"], values["role"])])
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
            values = {c: after[c] for c in changed}
            if {"attributes", "source_id", "role"} & values.keys():  # its place among the messages of its time
                values["turn_key"] = turn_key_of(after["attributes"], after["source_id"], after["role"])
            self._db.execute(f"UPDATE memories SET {', '.join(f'{c}=?' for c in values)} WHERE memory_id=?",
                             [*values.values(), old["memory_id"]])
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

    def reword_rejection(self, row_id: int, reason: str, *, at: str, proposal_id: str) -> None:
        """A rejection refused again for another reason: the old reason is audited by its hash (it may quote
        what an erasure removed)."""
        old = self._db.execute("SELECT reason FROM rejections WHERE rejection_id=?", (row_id,)).fetchone()
        if old is None or old[0] == reason:
            return
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="update", table="rejections",
                    target_id=str(row_id), old={"redacted_sha256": sha256_hex(str(old[0]))}, new={"reason": reason})
        self._db.execute("UPDATE rejections SET reason=? WHERE rejection_id=?", (reason, row_id))

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

    def release_reversed(self, row: MemoryRow, *, at: str, proposal_id: str, actor: str) -> MemoryRow:
        """``row`` no longer superseded by what supersedes it (a later decision supersedes that one by ``row``:
        a statement said earlier than was known): its supersession fields as before, and the SUPERSEDES edge
        between the two gone (audited with its value). Returns the row as updated."""
        released = self._unsuperseded(row)
        self.update_memory(row, released, at=at, proposal_id=proposal_id, actor=actor)
        for r in self._db.execute("SELECT * FROM graph_edges WHERE src_id=? AND dst_id=? AND edge_type='SUPERSEDES'",
                                  (row["superseded_by"], row["memory_id"])).fetchall():
            self._audit(at=at, proposal_id=proposal_id, actor=actor, action="delete", table="graph_edges",
                        target_id=str(r["edge_id"]), old=self._edge_image(dict(r)), new=None)
            self._db.execute("DELETE FROM graph_edges WHERE edge_id=?", (r["edge_id"],))
        return released

    def _unsuperseded(self, row: MemoryRow) -> MemoryRow:
        """``row`` as it was before what supersedes it (or merged it into itself) did so: its supersession fields
        and lifecycle state from the audit of that update (active where the audit has none)."""
        before = self._db.execute(
            "SELECT old_value FROM audit_log WHERE target_table='memories' AND target_id=? "
            "AND action='update' AND redacted!=1 AND json_extract(new_value, '$.superseded_by')=? "
            "AND COALESCE(json_extract(old_value, '$.superseded_by'), '') != ? ORDER BY audit_id DESC LIMIT 1",
            (row["memory_id"], row["superseded_by"], row["superseded_by"])).fetchone()
        old: dict[str, Any] = orjson.loads(before[0]) if before else {"lc_state": "active"}
        released = cast("MemoryRow", {**row, **{c: old.get(c) for c in self._SUPERSESSION}})
        if row["lc_state"] == "rejected":  # a reviewer rejected it since: that outlives the release
            released["lc_state"] = "rejected"
        return released

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

    def mark_rejection(self, row: Row, status: str, *, at: str, proposal_id: str, actor: str) -> None:
        """Set a rejection's review status (approved or dismissed)."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="update", table="rejections",
                    target_id=f"rej_{row['rejection_id']}", old={"review_status": row["review_status"]},
                    new={"review_status": status})
        self._db.execute("UPDATE rejections SET review_status=? WHERE rejection_id=?", (status, row["rejection_id"]))

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

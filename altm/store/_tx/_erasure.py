"""The erasure part of a shard's write transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

import orjson

from altm.core import (
    Erasure,
    Scope,
    rejection_item,
    sha256_hex,
)
from altm.store._rows import (
    MemoryRow,
)
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks
from altm.store._tx._common import (
    MEMORY_ID,
    _home,
    _made_on,
    _owner_is,
    _signal_key,
)
from altm.store._tx._writes import _TxWrites

PURGE_OWED_KEY = "purge_owed"
"""The ``shard_meta`` key of an erasure's purge not yet done (see :meth:`_TxErasure.owe_purge`)."""


class _TxErasure(_TxWrites):
    """Erasure: scrubbing erased memories' rows, references, records and refusals."""

    def owe_purge(self) -> None:
        """This transaction erases: the shard's purge (``Shard.purge``: the text indexes merged, the write-ahead
        log truncated) is owed once it commits, and recorded with it, so a process killed before it purged leaves
        it to the next writable open (the erased terms had stayed in index segments for good)."""
        self._db.execute(f"INSERT OR REPLACE INTO shard_meta (key, value) VALUES ('{PURGE_OWED_KEY}', '1')")

    def scrub(self, scope: Scope, memory_ids: Sequence[str], *, all_cache: bool, at: str, proposal_id: str,
              answers: Collection[str] = ()) -> list[MemoryRow]:
        """After an erasure: edges, CCR entries, cycle bundles, the user's LLM cache and the audit values
        that still held the erased content. Every deletion is audited (values redacted). ``answers``: the prompt
        hashes of the model answers erased memories were made from (their cache entries are the erased text).
        Returns the memories the erased ones had superseded or merged into themselves, released (see
        :meth:`release_superseded`)."""
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
            self._drop_cached(scope, memory_ids, answers, at=at, proposal_id=proposal_id)
        return released

    def _drop_cached(self, scope: Scope, memory_ids: Sequence[str], answers: Collection[str], *, at: str,
                     proposal_id: str) -> None:
        """The model cache entries of ``scope``'s user whose prompt held one of ``memory_ids`` (an answer may
        quote it), whose answer became one of them (``answers``: their prompt hashes; a capsule erased by its id
        is its summary's text), and those whose prompt's memories are not known (entries from before they were
        recorded): the user's other entries stay, so a replay answers them without a model (every entry of the
        user went with any erasure)."""
        db, gone = self._db, set(memory_ids)
        doomed = [(model, phash) for model, phash, listed in db.execute(
            "SELECT model, prompt_hash, sources FROM llm_cache WHERE home=?", (scope.home,))
                  if listed is None or phash in answers or gone.intersection(orjson.loads(listed))]
        if not doomed:
            return
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table="llm_cache",
                    target_id=scope.home, old={"entries": len(doomed)}, new=None)
        db.executemany("DELETE FROM llm_cache WHERE home=? AND model=? AND prompt_hash=?",
                       [(scope.home, model, phash) for model, phash in doomed])  # the user's own (schema 22's key)

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

    def _drop_held_actions_naming(self, home: list[str], erased: set[str], *, at: str, proposal_id: str) -> None:
        """The user's held actions that name an erased memory (a replay holds no such action: it never meets
        the erased memory), audited (values redacted); their decisions go with them (they name the targets)."""
        for r in self._db.execute("SELECT * FROM held_actions WHERE tenant_id=? AND workspace_id=? AND user_id=?",
                                  home).fetchall():
            if set(MEMORY_ID.findall(f"{r['target_ids'] or ''} {r['inputs'] or ''}")) & erased:
                self.redact_audit("held_actions", [str(r["action_id"])])  # its earlier rows quote them too
                self._erase_row("held_actions", "action_id", dict(r), at=at, proposal_id=proposal_id)

    def drop_supersede_decisions(self, scope: Scope, old_id: str, new_id: str, *, at: str, proposal_id: str) -> None:
        """The user's decisions that superseded ``old_id`` by ``new_id`` or released it from it (and their
        rollbacks), audited with values redacted: an erasure took what had placed the two in that order (a store
        that never heard it never made them)."""
        rows = self._db.execute("SELECT * FROM governance_events WHERE tenant_id=? AND workspace_id=? AND user_id=?",
                                _home(scope)).fetchall()
        doomed = {str(r["decision_id"]) for r in rows if r["decision"] in ("supersede", "release")
                  and (inputs := orjson.loads(r["inputs"] or "{}")).get("old_id") == old_id
                  and inputs.get("new_id") == new_id}
        if doomed:
            self._erase_decisions(rows, doomed, at=at, proposal_id=proposal_id)

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

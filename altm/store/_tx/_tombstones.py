"""The tombstones of a shard's write transaction."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import orjson

from altm.core import (
    FORGOTTEN_PREFIX,
    Scope,
    tombstone_id,
)
from altm.store._rows import (
    TOMBSTONE_COLUMNS,
    MemoryRow,
)
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks
from altm.store._tx._common import (
    Tombstone,
    _home,
)
from altm.store._tx._reads import _TxReads


class _TxTombstones(_TxReads):
    """Tombstones (erasures and forgets), the guard's keys and deferred work."""

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

    def tombstones(self, scope: Scope, *, raw_only: bool = False, sharing: Collection[str] | None = None
                   ) -> list[Tombstone]:
        """The user's tombstones with their keyed shingle hashes (of erased raw messages only, with ``raw_only``;
        a tombstone written before version 6 has no layer and counts as raw); with ``sharing`` (keyed shingle
        hashes, term hashes without their mark), only those holding one of them (``tombstone_keys``)."""
        only = " AND (layer = 'L0' OR layer IS NULL)" if raw_only else ""
        args: list[str] = list(_home(scope))
        if sharing is not None:
            only += (" AND tombstone_id IN (SELECT tombstone_id FROM tombstone_keys WHERE tenant_id=? "
                     "AND workspace_id=? AND user_id=? AND key_hash IN (SELECT value FROM json_each(?)))")
            args += [*_home(scope), orjson.dumps(sorted(sharing)).decode()]
        return [Tombstone(str(r[0]), str(r[1]), frozenset(orjson.loads(r[2] or "[]")), bool(r[3]),
                          frozenset(orjson.loads(r[4] or "[]")), str(r[5] or ""))
                for r in self._db.execute(
                    "SELECT tombstone_id, reason, shingle_hashes, COALESCE(distinctive, 1), term_hashes, value_hash "
                    "FROM tombstones "
                    f"WHERE pending=0 AND tenant_id=? AND workspace_id=? AND user_id=?{only} ORDER BY rowid", args)]

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

    def mark_skipped_shredded(self) -> None:
        """Applying the log again (a restore, a standby copy, a replica), this shard skipped a record whose key an
        erasure destroyed: what later records name may be missing here though its owner held it."""
        self._db.execute("INSERT OR IGNORE INTO shard_meta (key, value) VALUES ('skipped_shredded', '1')")

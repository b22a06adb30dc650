"""What every op shares: its context, its result, the refusal it may raise, and the target check."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from altm.core import BuriedContent, ChangeStatus, MemoryUnit, Proposal, Scope, UpsertMemoryProposal
from altm.core.settings import Settings
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.pipeline.writer.guard import GuardKeys, WriteGuard
from altm.store import MemoryRow, ShardTx

Row = dict[str, Any]


RejectionCode = Literal["unknown_target", "foreign_scope", "conflict", "invalid", "missing_evidence", "guard",
                        "wrong_route", "guard_key"]


class Rejection(Exception):
    """Raised inside an op: the proposal is refused with this reason (nothing it did is kept). ``code`` is a
    bounded class of the reason, for metrics: unknown_target, foreign_scope, conflict, invalid, missing_evidence,
    guard, wrong_route, guard_key."""

    def __init__(self, message: str, *, code: RejectionCode) -> None:
        super().__init__(message)
        self.code: str = code


class Erased(Exception):
    """The proposal acts on a memory that was erased: void, not refused (a replay after crypto-shredding
    meets decisions about memories it never re-created), so no rejection is recorded."""


@dataclass(frozen=True)
class OpContext:
    """What an op may use besides its proposal and the transaction."""

    now: str  # the writer's clock for this record: recorded_at, audit and decision times (ISO 8601, UTC)
    settings: Settings
    guard: WriteGuard
    rules: LifecycleRules
    source_ms: int | None = None  # publish time of the turn the record comes from (freshness), when known
    guard_keys: GuardKeys | None = None  # users' guard keys from the key store (the same in every process)


@dataclass
class Applied:
    """What an op did: the change status, the memory it wrote, and what changed or went with it."""

    status: ChangeStatus
    memory: MemoryUnit | None = None
    also_changed: list[MemoryUnit] = field(default_factory=list)  # rows updated as a consequence
    removed: tuple[str, ...] = ()  # memories the change deleted (their vectors go too)
    mentioned: tuple[str, ...] = ()  # nodes a link's new or strengthened MENTIONS edges point to
    buried: tuple[BuriedContent, ...] = ()  # tombstones it left (the writer carries them on the log)
    # refused proposals it applied after all (an erasure of the anti-pattern that alone refused them), each with
    # what it did: their changes are published as theirs
    readmitted: tuple[tuple[UpsertMemoryProposal, Applied], ...] = ()


def as_json(value: Any) -> str:
    """A JSON column's text (sorted keys, as every row of the shard stores it)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def void_if_forgotten(tx: ShardTx, p: Proposal, memory_id: str, what: str) -> None:
    """A memory retention forgot while something that names it was on its way (a use signal of a cycle that
    showed it, a reviewer's decision on it or on an action naming it): void, as on an erased memory (a rejection
    would be a review item nobody can act on), whether or not the forget left a tombstone."""
    if not tx.has_memory(memory_id) and tx.forgotten_in(p.scope, memory_id):
        raise Erased(f"{what} {memory_id} was forgotten by retention")


def target_row(tx: ShardTx, p: Proposal, memory_id: str, what: str) -> MemoryRow:
    """The stored row of a memory the proposal acts on, refused when missing or of another scope home (alike: a
    rejection is shown to the proposal's user, and may not tell whether another user has such a memory)."""
    row = tx.memory_row(memory_id)
    if row is None and tx.tombstone_of_memory(p.scope, memory_id, pending=True) is not None:
        raise Erased(f"{what} {memory_id} was erased")
    home = None if row is None else f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}"
    if row is None or home != p.scope.home:  # another user's reads as unknown: the reason names no other home
        raise Rejection(f"no {what} {memory_id} in scope home {p.scope.home!r}", code="unknown_target")
    return row


def void_held_naming(tx: ShardTx, scope: Scope, memory_ids: Collection[str], *, at: str, proposal_id: str,
                     actor: str) -> None:
    """The user's held actions pending review that name one of ``memory_ids`` (forgotten, or taken out of recall
    by a reviewer): ``void``, out of the review queue, audited (a held action proposed again for the same pair,
    once it is back, is pending again: see ``hold_action``)."""
    gone = set(memory_ids)
    for row in tx.held_actions_pending(scope):
        if set(orjson.loads(row["target_ids"])) & gone:
            tx.put_held_action({**row, "status": "void"}, row, at=at, proposal_id=proposal_id, actor=actor)

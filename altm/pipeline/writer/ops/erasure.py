"""Erasure: content leaves every table of the shard, tombstones keep it from coming back, all of it audited."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from altm.bus.sealing import owner_of
from altm.core import (
    BuriedContent,
    ChangeEvent,
    ChangeStatus,
    DecodeError,
    EraseProposal,
    Erasure,
    MemoryUnit,
    Scope,
    UpsertMemoryProposal,
    decode_event,
    scene,
)
from altm.pipeline.processors.facets import order
from altm.pipeline.writer.guard import bury
from altm.pipeline.writer.ops._base import Applied, Erased, OpContext, Rejection
from altm.pipeline.writer.ops.lifecycle import tallied, tally_again
from altm.pipeline.writer.ops.memory import (
    facet_recited,
    followed_by,
    held_again,
    held_by_guard,
    kept_rows,
    messages_left,
    upsert_memory,
    without_verdict,
)
from altm.store import GUARD_HOLD, MEMORY_ID, MemoryRow, ShardTx, row_to_memory


def erase(tx: ShardTx, p: EraseProposal, ctx: OpContext) -> Applied:
    """Remove content everywhere in the shard, leave tombstones so nothing re-creates it, audit it all."""
    erasure, scope = p.erasure, p.scope
    # a replay carried them: they hold from here, as in the source, and what they bury counts as erased here
    activated = tx.activate_tombstones(p.event_id, reason=erasure.tombstone_reason, at=ctx.now)
    # a memory the source erased with it (its tombstone names it), which a replay derived again from what it
    # could open (the same atom said in another session): it goes here too, as it went there
    seeds = sorted({*tx.erasure_seeds(scope, erasure), *(m for m in activated if tx.has_memory(m))})
    if erasure.target == "memory" and not seeds and tx.tombstone_of_memory(scope, erasure.memory_id or "",
                                                                           pending=True) is not None:
        if activated:  # a replay that never derived it: nothing to erase, but its tombstones hold from here
            return Applied(ChangeStatus.UNCHANGED)
        raise Erased(f"memory {erasure.memory_id} was erased already")
    if erasure.target == "memory" and not seeds:
        raise Rejection(f"no memory {erasure.memory_id} in scope {scope.home}", code="unknown_target")
    doomed, forgotten, forgets = _reached(tx, scope, erasure, seeds)
    recited = _facets_kept(tx, erasure, doomed)
    doomed -= set(recited)
    # the model answers they were made from (cached under these hashes): an answer is the erased text itself
    answers = tx.prompts_of(sorted(doomed)) | {str(r["prompt_hash"]) for r in tx.forgotten_rows(forgotten)
                                              if r["prompt_hash"]}
    successors = [sid for mid in sorted(doomed) if (row := tx.memory_row(mid)) is not None
                  for sid in followed_by(tx, row)]
    removed = _removed(tx, doomed, seeds, p, ctx)
    messages, atoms, anchors, buried = removed.messages, removed.atoms, removed.anchors, removed.buried
    anchors |= removed.mentioned
    doomed |= _scenes_unmade(tx, scope, removed.mentioned, doomed, p, ctx)
    for row in recited.values():  # after the atoms they cited went
        tx.update_memory(tx.memory_row(row["memory_id"]) or row, row, at=ctx.now, proposal_id=p.event_id,
                         actor="writer")
    recited = _placed_later(tx, recited, p, ctx)
    left, relinked = messages_left(tx, messages, p.event_id, ctx)
    tx.redact_audit("memories", relinked)  # their context held the erased content
    for row in tx.forgotten_rows(forgotten):  # an id tombstone: a forget that named it still holds in a replay
        buried.append(bury(tx, row, reason=erasure.tombstone_reason, at=ctx.now,
                           keys=ctx.guard_keys, erasure_id=p.event_id))
    tx.redact_forgotten(forgotten, forgets)  # what retention forgot of it before: its audit values go too
    gone = sorted(doomed | set(forgotten) | set(activated))
    left += _verdicts_kept(tx, scope, atoms, gone, p, ctx)
    released = tx.scrub(scope, gone, all_cache=True, at=ctx.now, proposal_id=p.event_id, answers=answers)
    # the released, as they are now (exact duplicates among them fold again through governance)
    left = list({m.memory_id: m for m in [*left, *(row_to_memory(r) for r in [*released, *recited.values()]),
                                          *kept_rows(tx, successors)]}.values())
    # kept memories used by what was erased (a recall cycle of the erased session): a promotion they caused goes
    tally_again(tx, tx.erase_records(scope, erasure, gone, at=ctx.now, proposal_id=p.event_id),
                proposal_id=p.event_id, actor="writer", ctx=ctx)
    _drop_deferred(tx, p)
    _drop_unpublished(tx, p, doomed)
    readmitted = _refusals_lifted(tx, scope, set(gone), p, ctx)
    return Applied(ChangeStatus.COMMITTED, removed=tuple(sorted(doomed)), buried=tuple(buried), also_changed=left,
                   readmitted=readmitted, mentioned=tuple(sorted(anchors)))


@dataclass
class _Removed:
    messages: list[MemoryRow] = field(default_factory=list)  # the erased L0 messages
    atoms: list[MemoryRow] = field(default_factory=list)  # the erased L2 atoms (their subjects are verified again)
    anchors: set[str] = field(default_factory=set)  # the nodes of the erased scenes (computed again from the rest)
    mentioned: set[str] = field(default_factory=set)  # the nodes the erased atoms mention (their scenes, likewise)
    buried: list[BuriedContent] = field(default_factory=list)


def _removed(tx: ShardTx, doomed: set[str], seeds: list[str], p: EraseProposal, ctx: OpContext) -> _Removed:
    """Delete ``doomed`` (audited, values redacted), burying the seeds and what is not swept with them."""
    out = _Removed()
    for mid in sorted(doomed):
        row = tx.memory_row(mid)
        if row is None:
            continue
        if row["layer"] == "L0":
            out.messages.append(row)
        elif row["layer"] == "L2":
            out.atoms.append(row)
            out.mentioned.update(tx.mentioned_by(mid))  # a scene may count it without quoting it
        elif row["layer"] == "L3" and isinstance(node := orjson.loads(row["attributes"]).get("anchor_node_id"), str):
            out.anchors.add(node)
        if mid in seeds or not _swept(row, doomed):
            out.buried.append(bury(tx, row, reason=p.erasure.tombstone_reason, at=ctx.now,
                                   keys=ctx.guard_keys, erasure_id=p.event_id))
        tx.delete_memory(row, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    return out


def _scenes_unmade(tx: ShardTx, scope: Scope, nodes: set[str], doomed: set[str], p: EraseProposal,
                   ctx: OpContext) -> set[str]:
    """The scenes of ``nodes`` (mentioned by erased atoms) that quote none of them (those went with them) and
    that the atoms left no longer make (their anchor is left in fewer sessions than a scene needs): they go
    too, unburied (what they say was not erased), as a store that never held the erased atoms never made them.
    A scene still made is computed again by govern (the erasure names its node)."""
    unmade: set[str] = set()
    for row in tx.scenes_of(scope, sorted(nodes)):
        node = orjson.loads(row["attributes"]).get("anchor_node_id")
        if row["memory_id"] in doomed or not isinstance(node, str):
            continue
        if len(tx.scene_sessions(row_to_memory(row).scope, node)) < scene.MIN_SESSIONS:
            tx.delete_memory(row, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
            unmade.add(str(row["memory_id"]))
    return unmade


def _facets_kept(tx: ShardTx, erasure: Erasure, doomed: set[str]) -> dict[str, MemoryRow]:
    """The persona facets among ``doomed`` (the user's: of the erased agent's scope, or citing an erased atom)
    whose statement an atom the erasure keeps states too (another agent or session said it): each as it stands
    on that atom, as a store that never heard the erased content has it. Not one erased by its own id."""
    kept: dict[str, MemoryRow] = {}
    for mid in sorted(doomed):
        row = tx.memory_row(mid)
        if row is None or row["layer"] != "L4" or (erasure.target == "memory" and mid == erasure.memory_id):
            continue
        if (recited := facet_recited(tx, row, besides=frozenset(doomed))) is not None:
            kept[mid] = recited
    return kept


def _placed_later(tx: ShardTx, recited: dict[str, MemoryRow], p: EraseProposal, ctx: OpContext
                  ) -> dict[str, MemoryRow]:
    """The kept facets as they are now, those superseded by a version said before the saying they stand on now
    released: their erased first saying had placed them before that version (a repeat of an old value after a
    correction is the old version), and a store that never heard it places them after it; and the versions they
    superseded, closed at the erased saying, released too. The decisions that superseded them go with what shaped
    them; govern places the kept facets again (their changes reach it), as a store that never heard it did."""
    out: dict[str, MemoryRow] = {}
    for mid, row in recited.items():
        now = tx.memory_row(mid) or row
        newer = tx.memory_row(str(now["superseded_by"])) if now["superseded_by"] else None
        if newer is not None and order(row_to_memory(newer)) < order(row_to_memory(now)):
            tx.drop_supersede_decisions(p.scope, mid, str(newer["memory_id"]), at=ctx.now, proposal_id=p.event_id)
            now = tx.release_reversed(now, at=ctx.now, proposal_id=p.event_id, actor="writer")
        # what it superseded was closed at the saying that went: released (its decision recorded that time), and
        # superseded again where the facet begins now when govern places it
        for older in tx.replaced_by(mid):
            if older["layer"] == "L4" and older["valid_to"] != now["valid_from"]:
                tx.drop_supersede_decisions(p.scope, str(older["memory_id"]), mid, at=ctx.now,
                                            proposal_id=p.event_id)
                tx.release_reversed(older, at=ctx.now, proposal_id=p.event_id, actor="writer")
        out[mid] = now
    return out


def _reached(tx: ShardTx, scope: Scope, erasure: Erasure, seeds: list[str]) -> tuple[set[str], list[str], list[str]]:
    """What an erasure removes (its seeds and what was derived from them), what retention forgot of it before
    and the forgets that did (their records and audit values go too)."""
    forgotten, forgets = ([], []) if erasure.target == "memory" else tx.forgotten_memories(
        scope, agent_id=None if erasure.target == "user" else scope.agent_id,
        session_id=erasure.session_id if erasure.target == "session" else None)
    # what was derived from memories retention forgot before (their evidence was repaired) is erased too
    doomed = _with_derivatives(tx, [*seeds, *tx.repaired_by(forgets, forgotten)])
    # and so is what retention forgot that was derived from what this erasure reaches (a forgotten scene)
    derived, derived_by = tx.forgotten_derived(scope, {*doomed, *forgotten})
    if derived:
        forgotten, forgets = sorted({*forgotten, *derived}), sorted({*forgets, *derived_by})
        doomed = _with_derivatives(tx, [*seeds, *tx.repaired_by(forgets, forgotten)])
    return doomed, forgotten, forgets


def _refusals_lifted(tx: ShardTx, scope: Scope, gone: set[str], p: EraseProposal,
                     ctx: OpContext) -> tuple[tuple[UpsertMemoryProposal, Applied], ...]:
    """A memory the guard refused for re-asserting an anti-pattern this erasure removed is applied again, in
    the order refused: a replay, which cannot open the erased anti-pattern, stores it. Refused again for
    something else, its rejection gives that reason (the old one quoted the erased anti-pattern)."""
    out: list[tuple[UpsertMemoryProposal, Applied]] = []
    for row_id, reason, payload in tx.refusals(scope, GUARD_HOLD):
        if not gone & set(MEMORY_ID.findall(reason)):
            continue
        try:
            refused = decode_event(payload)
        except DecodeError:  # cut at 64 KiB: the whole proposal is on the log only; its reason goes
            tx.reword_rejection(row_id, f"{GUARD_HOLD}the anti-pattern it re-asserted was erased; the proposal "
                                "was too large to keep and is not applied again", at=ctx.now, proposal_id=p.event_id)
            continue
        if not isinstance(refused, UpsertMemoryProposal):
            continue
        try:
            with tx.savepoint():
                applied = upsert_memory(tx, refused, ctx)
        except Erased:
            tx.erase_rejection(row_id, payload, scope.home, at=ctx.now, proposal_id=p.event_id)
            continue
        except Rejection as exc:
            tx.reword_rejection(row_id, str(exc), at=ctx.now, proposal_id=p.event_id)
            continue
        tx.erase_rejection(row_id, payload, scope.home, at=ctx.now, proposal_id=p.event_id)
        out.append((refused, applied))
    return tuple(out)


def _verdicts_kept(tx: ShardTx, scope: Scope, atoms: list[MemoryRow], gone: list[str], p: EraseProposal,
                   ctx: OpContext) -> list[MemoryUnit]:
    """A verdict of a memory kept that names an erased one (contradicted by it, replacing it) quotes the erased
    values: it is cleared, and so is a guard's hold for re-asserting an erased anti-pattern (a replay never held
    it for that one; it is held again for another it re-asserts). One atom kept of each subject an erased atom
    had is returned for the erasure's change: verify verifies the subject again from what is left, as a replay
    that cannot open the erased content does."""
    cleared: dict[str, MemoryRow] = {}
    for row in tx.verdicts_naming(scope, gone):
        fresh = without_verdict(row)
        if held_by_guard(row):
            fresh = held_again(tx, fresh, ctx)
        if tx.signal_tally(row["memory_id"]).counts:  # its weight counted the contradiction, as a replay did not
            fresh = tallied(tx, fresh, ctx)
        tx.update_memory(row, fresh, at=ctx.now, proposal_id=p.event_id, actor="writer")
        cleared[row["memory_id"]] = fresh
    tx.redact_audit_reasons(sorted(gone))
    kept: dict[str, MemoryRow] = {}
    for atom in atoms:
        subject = orjson.loads(atom["attributes"] or "{}").get("subject")
        other = tx.atom_about(atom, str(subject)) if subject else None
        if other is not None:
            kept.setdefault(other["memory_id"], cleared.get(other["memory_id"], other))
    return [row_to_memory(r) for _, r in sorted(kept.items())]


def _swept(row: MemoryRow, doomed: set[str]) -> bool:
    """A capsule that goes only because a message of its session does, citing none of what is erased: it
    holds nothing of the erased content (its count aside), so it leaves no tombstone, which would refuse the
    same capsule folded again from the same messages later (after a chit-chat message was erased, the next
    one gives the capsule it had)."""
    return row["kind"] == "capsule" and not set(orjson.loads(row["evidence"])) & doomed


def _sealed_with_erased_key(p: EraseProposal, value: bytes) -> bool:
    """Whether ``value`` would be sealed with a data key ``p`` destroys (its session's, agent's or user's)."""
    erasure, scope = p.erasure, p.scope
    if erasure.target == "memory":
        return False
    owner = owner_of(value, scope.home)
    if owner is None or owner.home != scope.home:
        return False
    if erasure.target == "user":
        return True
    if owner.agent != scope.agent_id:
        return False
    return erasure.target == "agent" or owner.session == erasure.session_id


def _drop_deferred(tx: ShardTx, p: EraseProposal) -> None:
    """Input records of the erased session, agent or user waiting for a retry go: a retry would derive the
    erased content again (and the log's copies no longer open)."""
    if p.erasure.target == "memory":
        return
    tx.drop_deferred([work_id for work_id, value in tx.deferred_of(p.scope.home)
                      if _sealed_with_erased_key(p, value)])


def _drop_unpublished(tx: ShardTx, p: EraseProposal, doomed: set[str]) -> None:
    """The erased content's after-images (and dead letters) that wait in the outbox (the bus was away) go:
    published after the erasure, they would be sealed with a fresh data key, readable, and their text would stay
    in the shard until then. A change that removed memories (a forget, a rollback) stays: the stages must still
    remove them, and the erasure's own change, after them, names only what it removed itself."""
    def erased(value: bytes) -> bool:
        try:
            event = decode_event(value)
        except DecodeError:
            return False
        if isinstance(event, ChangeEvent):
            return event.memory is not None and (event.memory.memory_id in doomed
                                                 or _sealed_with_erased_key(p, value))
        return _sealed_with_erased_key(p, value)

    tx.drop_unpublished([seq for seq, value in tx.unpublished_of(p.scope.home) if erased(value)])


def _with_derivatives(tx: ShardTx, seeds: list[str]) -> set[str]:
    """Memories derived from erased ones are erased too (their content came from it), and so is the capsule of
    an erased message's session, cited or not: it counts the session's messages (the next message folds it
    again from those left)."""
    doomed = set(seeds)
    frontier = list(seeds)
    while frontier:
        frontier = [m for m in (*tx.dependants(frontier), *tx.session_capsules(frontier)) if m not in doomed]
        doomed.update(frontier)
    return doomed

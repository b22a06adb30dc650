"""Governance: supersession, exact-duplicate merges, held actions, reviewers' decisions and rollbacks.

Autonomous decisions record their steps (evaluated → decided → applied / held / rolled_back) so they can
be listed and rolled back from the audit log.
"""

from __future__ import annotations

import orjson

from altm.core import (
    ChangeStatus,
    EdgeType,
    HoldActionProposal,
    Layer,
    LifecycleState,
    MemoryUnit,
    MergeProposal,
    Proposal,
    ReviewDecision,
    ReviewProposal,
    RollbackProposal,
    SupersedeProposal,
    Supersession,
    derive_id,
)
from altm.pipeline.processors.facets import facet_version, held_supersede_id
from altm.pipeline.writer.ops._base import (
    Applied,
    Erased,
    OpContext,
    Rejection,
    as_json,
    target_row,
    void_held_naming,
    void_if_forgotten,
)
from altm.pipeline.writer.ops.lifecycle import tally_again
from altm.pipeline.writer.ops.memory import (
    EVIDENCE_REJECTED,
    anchor_still_made,
    facet_recited,
    followed_by,
    holds_lifted,
    kept_rows,
    state_by_weight,
    summaries_judged_again,
    without_verdict,
)
from altm.store import RESTORABLE_SIGNAL, MemoryRow, ShardTx, row_to_memory


def supersede(tx: ShardTx, p: SupersedeProposal, ctx: OpContext) -> Applied:
    """``new_id`` replaces ``old_id``: the old row stays, its validity closes, ``superseded_by`` links it."""
    supersession = p.supersession
    old = target_row(tx, p, supersession.old_id, "superseded memory")
    if _rolled_back(tx, p):
        return Applied(ChangeStatus.UNCHANGED)  # this very decision, rolled back by an operator: not made again
    if supersession.release:
        return _release(tx, p, old, ctx)
    newer = target_row(tx, p, supersession.new_id, "superseding memory")
    if old["superseded_by"] == supersession.new_id:  # in place: closed where the newer one now begins
        return _closed_again(tx, p, old, newer, ctx)
    if old["superseded_by"] is not None:
        raise Rejection(f"{supersession.old_id} is already superseded by {old['superseded_by']}", code="conflict")
    released: list[MemoryUnit] = []
    if _leads_to(tx, newer, supersession.old_id):  # decided the other way before an older saying was known:
        newer = tx.release_reversed(newer, at=ctx.now, proposal_id=p.event_id, actor=p.processor)  # no ring
        released.append(row_to_memory(newer))
    closed: MemoryRow = {**old, "superseded_by": supersession.new_id, "superseded_at": ctx.now,
              "valid_to": newer["valid_from"] or old["valid_to"]}
    tx.update_memory(old, closed, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    _evidence_edge(tx, p, ctx, EdgeType.SUPERSEDES, supersession.new_id, supersession.old_id)
    tx.record_decision(p.event_id, p.scope, "supersede", [
        ("evaluated", f"{supersession.new_id} is a new version of {supersession.old_id}"),
        ("decided", supersession.reason),
        ("applied", f"{supersession.old_id} valid until {closed['valid_to']}, superseded_by {supersession.new_id}")],
        {"old_id": supersession.old_id, "new_id": supersession.new_id}, at=ctx.now)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(closed), also_changed=released)


def _closed_again(tx: ShardTx, p: SupersedeProposal, old: MemoryRow, newer: MemoryRow, ctx: OpContext) -> Applied:
    """A supersession already in place whose newer version begins at another time now (its first saying went: a
    rejection moved it onto a later one): the older one is valid until then, with no gap and no overlap."""
    closes = newer["valid_from"] or old["valid_to"]
    if old["valid_to"] == closes:
        return Applied(ChangeStatus.UNCHANGED)
    moved: MemoryRow = {**old, "valid_to": closes}
    tx.update_memory(old, moved, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(moved))


def _release(tx: ShardTx, p: SupersedeProposal, old: MemoryRow, ctx: OpContext) -> Applied:
    """``old`` is no longer superseded by the proposal's ``new_id`` (as it was before that supersession), and a
    replacement of ``old`` by ``new_id`` held for review is void (a version is placed between the two: a reviewer
    approving it filed a conflict, and time order never held it); a row superseded by another since, or by none,
    is left as it is."""
    supersession = p.supersession
    voided = _void_held_supersede(tx, p, ctx)
    if old["superseded_by"] != supersession.new_id:
        return Applied(ChangeStatus.COMMITTED if voided else ChangeStatus.UNCHANGED)
    released = tx.release_reversed(old, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    tx.record_decision(p.event_id, p.scope, "release", [
        ("evaluated", f"{supersession.old_id} is no longer older than {supersession.new_id}"),
        ("decided", supersession.reason), ("applied", f"{supersession.old_id} current again")],
        {"old_id": supersession.old_id, "new_id": supersession.new_id}, at=ctx.now)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(released))


def _void_held_supersede(tx: ShardTx, p: SupersedeProposal, ctx: OpContext) -> bool:
    """The pending held replacement of the released pair, void (audited); whether there was one."""
    pair = p.supersession
    row = tx.held_action(held_supersede_id(pair.old_id, pair.new_id))
    if row is None or row["status"] != "pending" or row["tenant_id"] != p.scope.tenant_id \
            or row["workspace_id"] != p.scope.workspace_id or row["user_id"] != p.scope.user_id:
        return False
    tx.put_held_action({**row, "status": "void"}, row, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    return True


def _leads_to(tx: ShardTx, row: MemoryRow, memory_id: str) -> bool:
    """Whether following ``row``'s ``superseded_by`` links reaches ``memory_id``: superseding ``memory_id`` by
    ``row`` would close a ring in which no version is current."""
    seen: set[str] = set()
    at: MemoryRow | None = row
    while at is not None and at["superseded_by"] is not None and at["memory_id"] not in seen:
        if at["superseded_by"] == memory_id:
            return True
        seen.add(at["memory_id"])
        at = tx.memory_row(at["superseded_by"])
    return False


def _rolled_back(tx: ShardTx, p: Proposal) -> bool:
    """An operator rolled this very decision back, and did not roll that back (govern proposes the same decision
    anew when it places a facet or folds duplicates again: its id is its payload's): it is not made again."""
    return tx.decision_rolled_back(p.event_id, p.scope)


def merge(tx: ShardTx, p: MergeProposal, ctx: OpContext) -> Applied:
    """An exact duplicate folds into its canonical memory: evidence is unioned, the duplicate is kept."""
    pair = p.merge
    if _rolled_back(tx, p):
        return Applied(ChangeStatus.UNCHANGED)
    canonical = target_row(tx, p, pair.canonical_id, "canonical memory")
    duplicate = target_row(tx, p, pair.duplicate_id, "duplicate memory")
    if duplicate["superseded_by"] == pair.canonical_id:
        return Applied(ChangeStatus.UNCHANGED)
    if canonical["content_hash"] != duplicate["content_hash"] or canonical["kind"] != duplicate["kind"]:
        raise Rejection("only exact duplicates (same kind and content hash) are merged without review", code="invalid")
    evidence = sorted(set(orjson.loads(canonical["evidence"])) | set(orjson.loads(duplicate["evidence"])))
    merged: MemoryRow = {**canonical, "evidence": as_json(evidence)}
    if merged != canonical:
        tx.update_memory(canonical, merged, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    folded: MemoryRow = {**duplicate, "superseded_by": pair.canonical_id, "superseded_at": ctx.now,
              "lc_state": LifecycleState.MERGED.value}
    tx.update_memory(duplicate, folded, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    _evidence_edge(tx, p, ctx, EdgeType.DUPLICATE_OF, pair.duplicate_id, pair.canonical_id)
    tx.record_decision(p.event_id, p.scope, "merge", [
        ("evaluated", f"same kind and content hash {canonical['content_hash'][:12]}"),
        ("decided", pair.reason), ("applied", f"{pair.duplicate_id} folded into {pair.canonical_id}")],
        {"canonical_id": pair.canonical_id, "duplicate_id": pair.duplicate_id}, at=ctx.now)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(merged))


def hold_action(tx: ShardTx, p: HoldActionProposal, ctx: OpContext) -> Applied:
    """Keep a destructive or low-confidence action that was not taken, for review."""
    action, scope = p.held, p.scope
    existing = tx.held_action(action.action_id)
    if existing is not None and existing["status"] == "void" and all(  # its pair is back (a version approved again)
            (target := tx.memory_row(t)) is not None and target["lc_state"] != "rejected" for t in action.target_ids):
        tx.put_held_action({**existing, "status": "pending"}, existing, at=ctx.now, proposal_id=p.event_id,
                           actor=p.processor)
        return Applied(ChangeStatus.COMMITTED)
    if existing is not None:
        return Applied(ChangeStatus.UNCHANGED)
    row = {
        "action_id": action.action_id, "tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id,
        "user_id": scope.user_id, "agent_id": scope.agent_id, "action": action.action,
        "target_ids": as_json(list(action.target_ids)), "reason": action.reason, "inputs": as_json(action.inputs),
        "status": "pending", "recorded_at": ctx.now,
    }
    tx.put_held_action(row, None, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    tx.record_decision(p.event_id, scope, action.action, [
        ("evaluated", f"{action.action} of {list(action.target_ids)}"), ("decided", "not without a model or review"),
        ("held", action.reason)], {"action_id": action.action_id, **action.inputs}, at=ctx.now)
    return Applied(ChangeStatus.COMMITTED)


def review(tx: ShardTx, p: ReviewProposal, ctx: OpContext) -> Applied:
    """Apply a reviewer's decision (it arrived as a control event, so a replay reproduces it)."""
    decision = p.review
    match decision.item_kind:
        case "memory":
            return _review_memory(tx, p, decision, ctx)
        case "action":
            return _review_action(tx, p, decision, ctx)
        case "rejection":
            return _review_rejection(tx, p, decision, ctx)


def _reviewer(decision: ReviewDecision) -> str:
    return f"reviewer: {decision.note}" if decision.note else "reviewer"


def _review_memory(tx: ShardTx, p: ReviewProposal, decision: ReviewDecision, ctx: OpContext) -> Applied:
    """Approved: verified as ground truth. Rejected: contradicted and out of recall (kept for the audit). The
    decision names no memory it was judged by (an erasure clears the verdicts that name what it erases, and a
    reviewer's is not one of them). An approved anti-pattern (a tool's counts only once approved) judges the
    agent's capsules and scenes again, as a stored one does; a rejected one no longer counts, and what it held
    for review is judged again without it."""
    void_if_forgotten(tx, p, decision.item_id, "reviewed memory")  # forgotten since the reviewer read the queue
    old = target_row(tx, p, decision.item_id, "reviewed memory")
    approve = decision.decision == "approve"
    new: MemoryRow = {**old, "trust_status": "verified" if approve else "contradicted", "trust_method": "ground_truth",
           "trust_confidence": 1.0, "trust_reason": f"{'approved' if approve else 'rejected'} by {_reviewer(decision)}",
           "trust_contradicting_id": None, "trust_verified_at": ctx.now,
           "lc_state": _reviewed_state(tx, old, approve, ctx)}
    tx.update_memory(old, new, at=ctx.now, proposal_id=p.event_id, actor="review")
    also: list[MemoryUnit] = []
    mentioned: tuple[str, ...] = ()
    if old["layer"] == "L2":
        atom_id = str(old["memory_id"])
        # rejected: the exact duplicates merged into it are as before (a facet of their statement stands on the
        # earliest of them; govern folds them into it again when it is approved back)
        also = [] if approve else [row_to_memory(r) for r in tx.release_superseded(
            p.scope, [atom_id], at=ctx.now, proposal_id=p.event_id, actor="review")]
        also += _facets_following(tx, atom_id, approve, p, ctx)
        also += [] if approve else _scenes_emptied(tx, atom_id, p, ctx)
        mentioned = tuple(tx.mentioned_by(atom_id))  # govern computes their scenes again, without it or with it
    if old["kind"] == "anti_pattern":
        also += (summaries_judged_again(tx, p.scope, p.event_id, ctx, str(old["memory_id"])) if approve
                else holds_lifted(tx, p.scope, str(old["memory_id"]), p.event_id, ctx))
    return Applied(ChangeStatus.COMMITTED, row_to_memory(new), also, mentioned=mentioned)


def _scenes_emptied(tx: ShardTx, atom_id: str, p: ReviewProposal, ctx: OpContext) -> list[MemoryUnit]:
    """A scene (L3) quoting the rejected atom that the atoms nobody rejected no longer make (they come from
    fewer sessions than a scene needs) leaves recall with it; govern computes the others again without it (the
    review change names the atom's nodes), and a scene it took out comes back when govern proposes it again
    from atoms nobody rejected (:func:`upsert_memory`)."""
    out: list[MemoryUnit] = []
    for mid in tx.dependants([atom_id]):
        found = tx.memory_row(mid)
        if found is None or found["layer"] != "L3" or found["lc_state"] == "rejected":
            continue
        if anchor_still_made(tx, row_to_memory(found)) is not None:
            continue
        new = _out_with_evidence(found, ctx)
        tx.update_memory(found, new, at=ctx.now, proposal_id=p.event_id, actor="review")
        out.append(row_to_memory(new))
    return out


def _out_with_evidence(row: MemoryRow, ctx: OpContext) -> MemoryRow:
    """A derived memory out of recall because a reviewer rejected what it stands on (:data:`EVIDENCE_REJECTED`)."""
    return {**row, "lc_state": "rejected", "trust_status": "contradicted", "trust_method": "ground_truth",
            "trust_confidence": 1.0, "trust_contradicting_id": None, "trust_verified_at": ctx.now,
            "trust_reason": EVIDENCE_REJECTED}


def _facets_following(tx: ShardTx, atom_id: str, approve: bool, p: ReviewProposal, ctx: OpContext
                      ) -> list[MemoryUnit]:
    """Persona facets (L4) that cite the reviewed atom follow it. Rejected: a facet none of whose atoms is left
    unrejected leaves recall with it (it stayed the user's current profile) unless another atom of the user
    states it (another agent heard it too: the facet cites that one), and the version it superseded is
    current again (a rejected correction no longer hides the value it corrected). Approved again: a facet it
    took out comes back, superseding that version again. (A re-statement by the user is cited instead of the
    rejected atom by govern, and brings the facet back through the writer: :func:`upsert_memory`.)"""
    out: list[MemoryUnit] = []
    for mid in _facets_of(tx, atom_id, approve):
        facet = tx.memory_row(mid)
        if facet is None or facet["layer"] != "L4":
            continue
        if approve:
            if facet["lc_state"] != "rejected" or facet["trust_reason"] != EVIDENCE_REJECTED:
                # kept on a later saying while this atom was rejected: back on the earliest (govern places it again)
                back = facet_recited(tx, facet) if facet["lc_state"] != "rejected" else None
                if back is not None and back["evidence"] != facet["evidence"]:
                    tx.update_memory(facet, back, at=ctx.now, proposal_id=p.event_id, actor="review")
                    out.append(row_to_memory(back))
                continue
            standing = facet_recited(tx, facet) or facet  # on the earliest atom nobody rejected: maybe this one
            new: MemoryRow = {**without_verdict(standing), "lc_state": state_by_weight(standing, ctx)}
        else:
            cited = [tx.memory_row(e) for e in orjson.loads(facet["evidence"])]
            if facet["lc_state"] == "rejected" or any(a is not None and a["lc_state"] != "rejected" for a in cited):
                continue
            if (recited := facet_recited(tx, facet)) is not None:  # another agent or session said it too
                tx.update_memory(facet, recited, at=ctx.now, proposal_id=p.event_id, actor="review")
                out.append(row_to_memory(recited))
                continue
            new = _out_with_evidence(facet, ctx)
            out += kept_rows(tx, followed_by(tx, facet))  # its successor, placed again without it
            # a replacement of it, or by it, held for review can no longer be decided (held again once it is back)
            void_held_naming(tx, p.scope, [mid], at=ctx.now, proposal_id=p.event_id, actor="review")
        tx.update_memory(facet, new, at=ctx.now, proposal_id=p.event_id, actor="review")
        out.append(row_to_memory(new))
        if approve and (corrected := _corrected_since(tx, new, p, ctx)) is not None:
            out.append(row_to_memory(corrected))  # back, as the version a later correction replaced
            continue
        # the versions it superseded are current again while it is out, and superseded again when it is back
        changed = (tx.superseded_again(new, released_by="review", at=ctx.now, proposal_id=p.event_id, actor="review")
                   if approve else tx.release_superseded(p.scope, [mid], at=ctx.now, proposal_id=p.event_id,
                                                         actor="review"))
        out += [row_to_memory(r) for r in changed]
    return out


def _corrected_since(tx: ShardTx, facet: MemoryRow, p: ReviewProposal, ctx: OpContext) -> MemoryRow | None:
    """A facet approved back after a later version of its key came as a correction (which superseded nothing
    then: the only earlier atom was rejected) is superseded by it, as govern would have had it; the row as
    superseded, or None."""
    key = orjson.loads(facet["attributes"] or "{}").get("facet_key")
    later = [f for f in tx.facets_of_key(facet, key) if (str(f["valid_from"] or ""), str(f["memory_id"]))
             > (str(facet["valid_from"] or ""), str(facet["memory_id"]))] if isinstance(key, str) else []
    if not later:
        return None
    newest = later[-1]
    cited = orjson.loads(newest["evidence"])
    atom = tx.memory_row(cited[0]) if cited else None
    if atom is None or not orjson.loads(atom["attributes"] or "{}").get("correction"):
        return None  # no correction: both versions stand, as govern holds such a supersede for review
    supersede(tx, SupersedeProposal(
        event_id=p.event_id, scope=p.scope, timestamp=p.timestamp, processor=p.processor,
        cause_event_id=p.cause_event_id, supersession=Supersession(
            old_id=str(facet["memory_id"]), new_id=str(newest["memory_id"]), reason=f"new version of facet {key!r}")),
        ctx)
    return tx.memory_row(str(facet["memory_id"]))


def _facets_of(tx: ShardTx, atom_id: str, approve: bool) -> list[str]:
    """The facets that cite the atom and, approved, the facet of its statement (which a rejection may have
    moved to another agent's atom of it before that one was rejected too)."""
    found = tx.dependants([atom_id])
    atom = tx.memory_row(atom_id)
    key = orjson.loads(atom["attributes"] or "{}").get("facet_key") if atom is not None else None
    if approve and atom is not None and isinstance(key, str):
        found = sorted({*found, facet_version(row_to_memory(atom), key).memory_id})
    return found


def _reviewed_state(tx: ShardTx, old: MemoryRow, approve: bool, ctx: OpContext) -> str:
    """Rejected: out of recall. Approved: as it was, or, approved after a rejection, the state its weight gives
    (it stayed ``rejected`` for good before: approved, and in neither recall nor the review queue); an exact
    duplicate still folded into its canonical memory is ``merged`` again (it came back ``active``)."""
    if not approve:
        return "rejected"
    if old["lc_state"] != "rejected":
        return str(old["lc_state"])
    canonical = tx.memory_row(str(old["superseded_by"])) if old["superseded_by"] else None
    if canonical is not None and canonical["content_hash"] == old["content_hash"] and canonical["kind"] == old["kind"]:
        return LifecycleState.MERGED.value
    return state_by_weight(old, ctx)


def _review_action(tx: ShardTx, p: ReviewProposal, decision: ReviewDecision, ctx: OpContext) -> Applied:
    """Approved: the held action is carried out (a supersession, by this proposal). Rejected: dismissed."""
    action = tx.held_action(decision.item_id)
    if action is None and tx.item_erased(decision.item_id, p.scope.home):
        raise Erased(f"held action {decision.item_id} was erased")
    if action is None or (action["tenant_id"], action["workspace_id"], action["user_id"]) != (
            p.scope.tenant_id, p.scope.workspace_id, p.scope.user_id):
        raise Rejection(f"no held action {decision.item_id} in scope {p.scope.home}", code="unknown_target")
    status = "approved" if decision.decision == "approve" else "rejected"
    if action["status"] == "void":
        raise Erased(f"held action {decision.item_id} is void: a memory it names was forgotten or rejected since")
    if action["status"] != "pending":
        if action["status"] == status:
            return Applied(ChangeStatus.UNCHANGED)
        raise Rejection(f"held action {decision.item_id} was already {action['status']}", code="conflict")
    if decision.decision == "approve" and action["action"] == "supersede":
        old_id, new_id = orjson.loads(action["target_ids"])
        for target in (old_id, new_id):  # a forget from before held actions were made void with it
            void_if_forgotten(tx, p, target, "memory of the held action")
        approved = SupersedeProposal(
            event_id=p.event_id, scope=p.scope, timestamp=p.timestamp, processor=p.processor,
            cause_event_id=p.cause_event_id,
            supersession=Supersession(old_id=old_id, new_id=new_id, reason=f"approved by {_reviewer(decision)}"))
        supersede(tx, approved, ctx)
    tx.put_held_action({**action, "status": status}, action, at=ctx.now, proposal_id=p.event_id, actor="review")
    return Applied(ChangeStatus.COMMITTED)


def _review_rejection(tx: ShardTx, p: ReviewProposal, decision: ReviewDecision, ctx: OpContext) -> Applied:
    """A rejected proposal, re-reviewed: approved or dismissed (the proposal itself is not replayed)."""
    row = tx.rejection(decision.item_id)
    if row is None and tx.item_erased(decision.item_id, p.scope.home):
        raise Erased(f"rejection {decision.item_id} was erased")
    if row is None or not _payload_in_home(row["payload"], p.scope.home):
        raise Rejection(f"no rejection {decision.item_id} in scope {p.scope.home}", code="unknown_target")
    status = "dismissed" if decision.decision == "reject" else "approved"
    tx.mark_rejection(row, status, at=ctx.now, proposal_id=p.event_id, actor="review")
    return Applied(ChangeStatus.COMMITTED)


def _payload_in_home(payload: str | None, home: str) -> bool:
    """The rejected proposal's bytes name a scope of this home (a reviewer sees only their user's)."""
    try:
        scope = orjson.loads(payload or "{}").get("scope") or {}
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return bool(scope) and "/".join(str(scope.get(k)) for k in ("tenant_id", "workspace_id", "user_id")) == home


def rollback(tx: ShardTx, p: RollbackProposal, ctx: OpContext) -> Applied:
    """Restore exactly the rows a decision changed, newest first, from the audit log's old values."""
    undo, scope = p.rollback, p.scope
    steps = tx.decision_steps(undo.decision_id, scope)
    if not steps and (tx.buried_later(scope, undo.names)
                      or (undo.signal_id is not None and not tx.signal_stored(undo.signal_id))):
        # a replay that never met the decision: it stood on memories an erasure later in the log removes,
        # and that erasure removes the decision's record and this rollback's (the source has no trace of it)
        return Applied(ChangeStatus.UNCHANGED)
    if not steps:
        raise Rejection(f"no governance decision {undo.decision_id} in scope {scope.home} (the record of a "
                        "decision that named memories erased since goes with the erasure: it cannot be undone)",
                        code="unknown_target")
    if tx.decision_rolled_back(undo.decision_id, scope):  # rolled back already (and not restored since)
        return Applied(ChangeStatus.UNCHANGED)
    # a held action it made void that an erasure dropped since (it named an erased memory): gone either way,
    # nothing of it to restore (its rows redacted); what else the decision changed is restored
    audits = [a for a in tx.decision_audit(undo.decision_id)
              if not (a.table == "held_actions" and a.redacted and tx.held_action(a.target_id) is None)]
    if any(a.redacted for a in audits):
        raise Rejection(f"decision {undo.decision_id} touched erased content; erasure cannot be undone",
                        code="conflict")
    if any(a.table == "lifecycle_signals" and a.new is None and not (a.old or {}).keys() >= RESTORABLE_SIGNAL
           for a in audits):
        raise Rejection(f"decision {undo.decision_id} removed use signals an older release recorded without their "
                        "time and order: it cannot be rolled back (send the feedback again)", code="conflict")
    back: list[str] = []  # a memory the decision changed twice (a forget's repair, then a lifted hold) once
    removed: list[str] = []
    rows = 0  # restored: not a use signal an erasure of its sender took since (a replay never had it)
    for a in audits:
        outcome = tx.restore(a, at=ctx.now, proposal_id=p.event_id)
        rows += outcome != "erased"
        if a.table == "memories" and outcome == "removed":
            removed.append(a.target_id)
        elif a.table == "memories" and a.old is not None and a.target_id not in back:
            back.append(a.target_id)
    # the signals it took or put back: a pin or more feedback sent after the rolled-back decision stands
    tally_again(tx, {a.target_id.split("/")[0] for a in audits if a.table == "lifecycle_signals"},
                proposal_id=p.event_id, actor="rollback", ctx=ctx)
    restored = [row_to_memory(row) for mid in back if (row := tx.memory_row(mid)) is not None]
    # the scenes of the atoms it put back are computed again (fold folds the sessions of its messages again)
    mentioned = sorted({n for m in restored if m.layer is Layer.L2 for n in tx.mentioned_by(m.memory_id)})
    decision = steps[0][0]
    # a forget's tombstones of what it restored go (the guard refused every later version of them)
    tx.unbury_forgotten(scope, [m.memory_id for m in restored], at=ctx.now, proposal_id=p.event_id)
    tx.record_decision(p.event_id, scope, "rollback", [("applied", undo.reason)],
                       {"decision_id": undo.decision_id, "decision": decision, "rows": rows}, at=ctx.now)
    tx.record_decision(undo.decision_id, scope, decision, [("rolled_back", undo.reason)], {"by": p.event_id},
                       at=ctx.now)
    return Applied(ChangeStatus.COMMITTED, removed=tuple(removed), also_changed=restored, mentioned=tuple(mentioned))


def _evidence_edge(tx: ShardTx, p: Proposal, ctx: OpContext, edge_type: EdgeType, src: str, dst: str) -> None:
    """The graph edge a governance decision leaves between two memories (once)."""
    scope = p.scope
    edge_id = derive_id("edge", scope.path, edge_type.value, src, dst)
    if tx.edge(edge_id) is not None:
        return
    row = {
        "edge_id": edge_id, "tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id, "user_id": scope.user_id,
        "agent_id": scope.agent_id, "src_id": src, "dst_id": dst, "edge_type": edge_type.value, "label": None,
        "unit_weight": 1.0, "weight": 2.0, "confidence": 1.0, "rejected": 0,
        "evidence_count": len({src, dst}), "method": "ground_truth", "recorded_at": ctx.now,
    }
    tx.put_edge(row, None, added=sorted({src, dst}), at=ctx.now, proposal_id=p.event_id, actor=p.processor)

"""The lifecycle: use signals (counters, weight, state, compression) and retention (forget, evidence repair)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import orjson

from altm.core import (
    FORGOTTEN_PREFIX,
    BuriedContent,
    ChangeStatus,
    ForgetProposal,
    MemoryUnit,
    Scope,
    SignalProposal,
    event_ref,
)
from altm.pipeline.writer.guard import bury
from altm.pipeline.writer.ops._base import (
    Applied,
    OpContext,
    as_json,
    target_row,
    void_held_naming,
    void_if_forgotten,
)
from altm.pipeline.writer.ops.memory import (
    anchor_still_made,
    facet_recited,
    followed_by,
    holds_lifted,
    kept_rows,
    messages_left,
)
from altm.store import MemoryRow, ShardTx, SignalTally, comparable, row_to_memory


def signal(tx: ShardTx, p: SignalProposal, ctx: OpContext) -> Applied:
    """Count a use signal once, then recompute counters, weight and state from all signals."""
    use_signal = p.signal
    void_if_forgotten(tx, p, use_signal.memory_id, "signalled memory")  # forgotten while its cycle was open
    old = target_row(tx, p, use_signal.memory_id, "signalled memory")
    if tx.signal_seen(use_signal):
        return Applied(ChangeStatus.UNCHANGED)  # the same signal again: counted once
    tx.insert_signal(use_signal, agent_id=p.scope.agent_id, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    new = tallied(tx, old, ctx)
    if comparable(new) == comparable(old):
        return Applied(ChangeStatus.UNCHANGED)
    tx.update_memory(old, new, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    if new["lc_state"] != old["lc_state"] and new["lc_state"] in ("promoted", "demoted"):
        decision = new["lc_state"][:-1]  # promote / demote
        tx.record_decision(p.event_id, p.scope, decision, [
            ("evaluated", f"{use_signal.kind} signal; weight {old['lc_weight']} -> {new['lc_weight']}"),
            ("decided", f"weight {new['lc_weight']} crosses the {decision} threshold"),
            ("applied", f"state {old['lc_state']} -> {new['lc_state']}")],
            {"memory_id": use_signal.memory_id, "signal_id": use_signal.signal_id,
             "sender": {"agent_id": p.scope.agent_id, "session_id": use_signal.session_id}, "cited": new["lc_cited"],
             "helpful": new["lc_helpful"],
             "harmful": new["lc_harmful"], "injected": new["lc_injected"], "pinned": bool(new["lc_pinned"]),
             "weight": new["lc_weight"]}, at=ctx.now)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(new))


def tallied(tx: ShardTx, old: MemoryRow, ctx: OpContext) -> MemoryRow:
    """``old`` with its counters, weight, state and compression recomputed from all its stored signals."""
    tally = tx.signal_tally(old["memory_id"])
    pinned = tally.pinned
    cited, helpful, harmful, injected = (tally.counts.get(k, 0) for k in
                                         ("cited_by_agent", "helpful", "harmful", "injected"))
    weight = ctx.rules.weight(cited=cited, helpful=helpful, harmful=harmful, injected=injected, pinned=pinned)
    return {**old, "lc_injected": injected, "lc_cited": cited, "lc_helpful": helpful, "lc_harmful": harmful,
            "lc_pinned": int(pinned), "lc_weight": weight, "lc_compression": _compression_level(tally),
            "lc_state": ctx.rules.state(weight, pinned=pinned, current=old["lc_state"])}


def tally_again(tx: ShardTx, memory_ids: Iterable[str], *, proposal_id: str, actor: str, ctx: OpContext) -> None:
    """Memories whose use signals changed under them (an erasure or a rollback took or put back some): their
    counters, weight and state as the signals now stored give them."""
    for mid in sorted(set(memory_ids)):
        row = tx.memory_row(mid)
        if row is None:
            continue
        fresh = tallied(tx, row, ctx)
        if comparable(fresh) != comparable(row):
            tx.update_memory(row, fresh, at=ctx.now, proposal_id=proposal_id, actor=actor)


def _compression_level(tally: SignalTally) -> int:
    """C0 when pinned, never compressed, or used after the last compression; else the last compression level."""
    if tally.pinned or tally.compression is None:
        return 0
    level, seq = tally.compression
    if tally.last_use_seq is not None and tally.last_use_seq >= seq:
        return 0
    if level is None:
        raise TypeError(f"the compress signal #{seq} has no level")
    return level


def forget(tx: ShardTx, p: ForgetProposal, ctx: OpContext) -> Applied:
    """Retention: remove memories (pinned ones are exempt), audited with the removed value; derived
    memories that cited them keep their remaining evidence, or are flagged when none remains."""
    retention = p.forget
    forgotten: list[str] = []
    gone: list[str] = []  # named, but not stored: nothing to forget
    messages: list[MemoryRow] = []  # the forgotten L0 messages (their sessions are folded again)
    anti_patterns: list[str] = []
    buried: list[BuriedContent] = []
    recited = _facets_restated(tx, p.scope, retention.memory_ids, dict(retention.cutoffs.items()))
    successors: list[str] = []  # versions that superseded a facet it forgets: placed again (see ``followed_by``)
    for mid in retention.memory_ids:
        if mid in recited:
            continue
        # erased, so gone either way (a replay after the erasure of its session never had it)
        if not tx.has_memory(mid) and tx.erased(p.scope, mid):
            if retention.tombstone:  # the source's forget buried it before the erasure did: it holds from here
                tx.forgotten_first(p.scope, mid, f"{FORGOTTEN_PREFIX}{retention.reason}", at=ctx.now)
            forgotten.append(mid)
            continue
        if not tx.has_memory(mid):  # forgotten already (another pass), or never derived (a replay from a point)
            gone.append(mid)
            continue
        row = target_row(tx, p, mid, "memory to forget")
        if row["lc_pinned"]:
            continue
        if retention.tombstone:
            buried.append(bury(tx, row, reason=f"{FORGOTTEN_PREFIX}{retention.reason}", at=ctx.now,
                               keys=ctx.guard_keys,
                               forgotten_by=event_ref(p.cause_event_id) if p.cause_event_id else None))
        successors += followed_by(tx, row)
        tx.delete_memory(row, at=ctx.now, proposal_id=p.event_id, actor="lifecycle", redact=False)
        forgotten.append(mid)
        if row["kind"] == "anti_pattern":
            anti_patterns.append(mid)
        elif row["layer"] == "L0":
            messages.append(row)
    if not forgotten and not recited:
        return Applied(ChangeStatus.UNCHANGED)
    released = _release(tx, forgotten, p, ctx)
    # the held actions naming what it forgot can no longer be carried out: void, audited under the forget (its
    # rollback makes them pending again), not in its record (an erasure of what they name may drop them since)
    void_held_naming(tx, p.scope, forgotten, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    repaired = _repair_evidence(tx, forgotten, p, ctx, restated=recited)
    anchors = _scenes_repaired(tx, repaired)
    left, _ = messages_left(tx, messages, p.event_id, ctx)  # their sessions fold again from what is left
    # a forgotten anti-pattern no longer counts: what it held for review is judged again without it
    lifted = [m for mid in anti_patterns for m in holds_lifted(tx, p.scope, mid, p.event_id, ctx)]
    pinned = [m for m in retention.memory_ids if m not in forgotten and m not in gone and m not in recited]
    inputs: dict[str, object] = {"candidates": list(retention.memory_ids), "forgotten": forgotten, "pinned": pinned,
                                 "repaired": [m.memory_id for m in repaired]}
    inputs.update({"gone": gone} if gone else {})
    inputs.update({"restated": sorted(recited)} if recited else {})
    tx.record_decision(p.event_id, p.scope, "forget", [
        ("evaluated", f"{len(retention.memory_ids)} memories past retention"),
        ("decided", retention.reason),
        ("applied", f"{len(forgotten)} forgotten, {len(pinned)} pinned and kept, {len(repaired)} repaired")],
        inputs, at=ctx.now)
    # the release is not in the record: whether a duplicate had met the forgotten memory is arrival order
    changed = {m.memory_id: m for m in [*released, *repaired, *lifted, *left,
                                        *kept_rows(tx, successors, besides=forgotten)]}
    return Applied(ChangeStatus.COMMITTED, removed=tuple(forgotten), also_changed=list(changed.values()),
                   buried=tuple(buried), mentioned=anchors)


def _scenes_repaired(tx: ShardTx, repaired: list[MemoryUnit]) -> tuple[str, ...]:
    """The anchors of the scenes whose atoms retention forgot that the atoms left still make (two sessions or
    more): govern computes them again without the forgotten lines, as a store that never held them has them,
    where the anchor's next mention did so before. A scene the atoms left no longer make is kept as it was, its
    evidence repaired (flagged when none is left), as any derived memory retention took evidence from: a summary
    outlives what it summarised until its own layer's retention."""
    return tuple(sorted({node for mem in repaired if (node := anchor_still_made(tx, mem)) is not None}))


def _release(tx: ShardTx, gone: list[str], p: ForgetProposal, ctx: OpContext) -> list[MemoryUnit]:
    """What a forgotten memory superseded or merged into itself and stays no longer points at it: it is as it
    was before (:meth:`ShardTx.release_superseded`, as for an erasure). Exact duplicates released so
    fold again into the earliest of them through governance (their changes reach it), as they would have
    folded had the forgotten memory never been there; without this a recent re-statement stayed out of recall
    for good. An older version kept (pinned) while its successor goes is current again: nothing newer is
    left. The records of the merges into the forgotten memory go (a duplicate that came after it went was
    never merged)."""
    tx.drop_merges_into(gone, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    return [row_to_memory(r) for r in tx.release_superseded(p.scope, gone, at=ctx.now, proposal_id=p.event_id,
                                                            actor="lifecycle")]


def _facets_restated(tx: ShardTx, scope: Scope, candidates: Iterable[str], cutoffs: Mapping[str, str]) -> set[str]:
    """The persona facets among ``candidates`` whose statement an atom the pass keeps states too (the user said it
    again, within retention): they are not forgotten but stand on that atom (``_repair_evidence``), as a store
    that never held the forgotten atom has them, from the re-statement's time. What the pass takes is what this
    event names and, by the pass's ``cutoffs``, what its other events name (another agent's, another part's):
    recited onto an atom the next event forgot, a facet stayed, flagged, where the pass in one event forgets it."""
    rows = [row for mid in sorted(set(candidates)) if (row := tx.memory_row(mid)) is not None
            and f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}" == scope.home]
    going = frozenset(row["memory_id"] for row in rows if not row["lc_pinned"])
    restated: set[str] = set()
    for row in rows:
        if row["layer"] != "L4" or row["memory_id"] not in going:
            continue
        atoms = tx.atoms_of_facet(row)
        taken = going | {str(a["memory_id"]) for a in atoms if _past(a, cutoffs)}
        if (fresh := facet_recited(tx, row, besides=taken, atoms=atoms)) is not None \
                and fresh["evidence"] != row["evidence"]:
            restated.add(row["memory_id"])
    return restated


def _past(row: MemoryRow, cutoffs: Mapping[str, str]) -> bool:
    """Past a pass's retention (as ``MaintenanceQueries.older_than`` finds it): valid since before its layer's
    cutoff, not pinned."""
    cutoff = cutoffs.get(str(row["layer"]))
    return cutoff is not None and row["valid_from"] is not None and str(row["valid_from"]) < cutoff \
        and not row["lc_pinned"]


def _repair_evidence(tx: ShardTx, gone: list[str], p: ForgetProposal, ctx: OpContext, *,
                     restated: Collection[str] = ()) -> list[MemoryUnit]:
    """Memories that cited forgotten ones keep the rest of their evidence (flagged when none is left), a persona
    facet stands on another atom of its statement when one is left (and so do the ``restated`` facets the pass
    named); the edges to the forgotten ones go."""
    repaired = []
    dependants = tx.dependants(gone)
    for mid in [*dependants, *sorted(set(restated) - set(dependants))]:
        row = tx.memory_row(mid)
        if row is None:
            continue
        if row["layer"] == "L4" and (fresh := facet_recited(tx, row, besides=frozenset(gone))) is not None:
            tx.update_memory(row, fresh, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
            repaired.append(row_to_memory(fresh))
            continue
        remaining = [e for e in orjson.loads(row["evidence"]) if e not in set(gone)]
        new: MemoryRow = {**row, "evidence": as_json(remaining)}
        if not remaining:  # nothing left to stand on: kept, flagged for review (a verdict given stands)
            attrs = orjson.loads(row["attributes"])
            attrs["evidence_forgotten"] = True
            new["attributes"] = as_json(attrs)
            if row["trust_status"] not in ("verified", "contradicted"):  # the hold it replaces named its reason
                new.update({"trust_status": "uncertain", "trust_method": "confidence", "trust_contradicting_id": None,
                            "trust_reason": "its evidence was forgotten by the retention policy"})
        tx.update_memory(row, new, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
        repaired.append(row_to_memory(new))
    ends = tx.delete_edges_touching(gone, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    tx.prune_graph(p.scope, gone, ends, at=ctx.now, proposal_id=p.event_id, actor="lifecycle")
    return repaired

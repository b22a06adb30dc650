"""Memories: upsert with validation, the write guard and L0's append-only rule; L0 context relinking."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import cast

import orjson

from altm.core import (
    ChangeStatus,
    Layer,
    MemoryUnit,
    Scope,
    TrustMethod,
    UpsertMemoryProposal,
    capsule,
    content_hash,
    scene,
)
from altm.core.bounds import content_over_limit
from altm.pipeline.processors.facets import facet_version, stands_on
from altm.pipeline.writer.guard import RECOMPUTED, GuardVerdict, erased_itself, is_scene, summarises
from altm.pipeline.writer.ops._base import Applied, Erased, OpContext, Rejection
from altm.store import (
    GUARD_HOLD,
    REVIEWED_COLUMNS,
    VERDICT_COLUMNS,
    MemoryRow,
    ShardTx,
    carry_over,
    comparable,
    memory_to_row,
    row_to_memory,
)

# What a re-derivation may not reset: other stages wrote it (trust, lifecycle, supersession, L0 context).
_KEPT_ON_UPDATE = (
    "context", "superseded_at", "superseded_by", "valid_to", "trust_status", "trust_method", "trust_confidence",
    "trust_reason", "trust_contradicting_id", "trust_verified_at", "lc_state", "lc_weight", "lc_injected",
    "lc_cited", "lc_helpful", "lc_harmful", "lc_pinned", "lc_compression", "recorded_at",
)


def upsert_memory(tx: ShardTx, p: UpsertMemoryProposal, ctx: OpContext) -> Applied:
    mem, flag = _validate(tx, _with_message_turn(tx, p.memory), ctx)
    fresh = memory_to_row(mem, datetime.fromisoformat(ctx.now))
    old_row = tx.memory_row(mem.memory_id)
    new_row = _judged(tx, mem, fresh, old_row, flag, ctx)
    back = old_row is not None and _stated_again(tx, old_row, mem)
    if back:  # a facet or scene its atoms' rejection took out, proposed from atoms nobody rejected: current again
        new_row = {**carry_over(new_row, fresh, (*REVIEWED_COLUMNS, "evidence")),
                   "lc_state": state_by_weight(new_row, ctx)}
    if mem.layer in RECOMPUTED:  # the latest judged version counts: an earlier one's refusal is not pending
        tx.drop_earlier_refusals(mem.memory_id, at=ctx.now, proposal_id=p.event_id)
    also: list[MemoryUnit] = []
    if old_row is None:
        if mem.layer is Layer.L0:
            new_row["context"] = previous_content(tx, new_row)
        tx.insert_memory(new_row, at=ctx.now, proposal_id=p.event_id, actor=p.processor, source_ms=ctx.source_ms)
        if mem.layer is Layer.L0:
            also = _relink_successor(tx, new_row, p, ctx)
    else:
        if comparable(old_row) == comparable(new_row) or (not back and _cites_later_atom(tx, old_row, new_row)):
            return Applied(ChangeStatus.UNCHANGED)
        if mem.layer is Layer.L0:
            raise Rejection(
                f"L0 is append-only: {mem.memory_id} (source {mem.source_id!r}) is already stored with "
                "different content", code="conflict"
            )
        tx.update_memory(old_row, new_row, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    if mem.kind.value == "anti_pattern":
        also += summaries_judged_again(tx, mem.scope, p.event_id, ctx, mem.memory_id)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(new_row), also)




def followed_by(tx: ShardTx, row: MemoryRow) -> list[str]:
    """The versions after a persona facet going now (erased, forgotten, rejected): the one that superseded it and
    those a replacement of it by them waits for review. Placed again by govern once it is gone (its change names
    them), so they follow the version before the one that went, as in a store that never held that one (the one
    before was maybe only held for review against it)."""
    if row["layer"] != Layer.L4.value:
        return []
    held = [str(targets[1]) for action in tx.held_actions_pending(row_to_memory(row).scope)
            if action["action"] == "supersede" and len(targets := orjson.loads(action["target_ids"])) == 2
            and targets[0] == row["memory_id"]]
    return sorted({*([str(row["superseded_by"])] if row["superseded_by"] else []), *held})


def kept_rows(tx: ShardTx, memory_ids: Iterable[str], *, besides: Iterable[str] = ()) -> list[MemoryUnit]:
    """The memories among ``memory_ids`` still stored, ``besides`` aside, as they are now (for a change to name)."""
    gone = set(besides)
    return [row_to_memory(r) for mid in sorted(set(memory_ids) - gone) if (r := tx.memory_row(mid)) is not None]


def _with_message_turn(tx: ShardTx, mem: MemoryUnit) -> MemoryUnit:
    """An atom proposed by a release before schema 23 carries no turn id: it takes its message's, as migration 23
    gave the atoms stored then (from the message, or the audit image of its forget), so a standby copy, a read
    replica or a restore applying such a proposal from the log stores the atom its owner's migrated shard holds
    (its facet order depends on it)."""
    if mem.layer is not Layer.L2 or "turn_id" in mem.attributes or not mem.evidence:
        return mem
    message = tx.memory_row(mem.evidence[0]) or next(iter(tx.forgotten_rows([mem.evidence[0]])), None)
    if message is None or message["layer"] != Layer.L0.value:
        return mem
    turn = orjson.loads(message["attributes"] or "{}").get("turn_id")
    return mem if not isinstance(turn, str) else mem.model_copy(update={"attributes": {**mem.attributes,
                                                                                      "turn_id": turn}})


def _judged(tx: ShardTx, mem: MemoryUnit, fresh: MemoryRow, old_row: MemoryRow | None, flag: GuardVerdict | None,
            ctx: OpContext) -> MemoryRow:
    """The row to store: ``fresh`` over what an update keeps of ``old_row``, held for review when the guard
    flagged it past what a reviewer approved of it, its hold lifted when this version re-asserts nothing."""
    new_row = fresh if old_row is None else carry_over(fresh, old_row, _KEPT_ON_UPDATE)
    if flag is not None and old_row is not None and approved_by_review(old_row):
        flag = past_approval(tx, old_row, mem, flag, ctx)
        if flag is not None:  # it re-asserts what no approval of it covered: held for review again
            new_row = carry_over(new_row, fresh, REVIEWED_COLUMNS)
    if flag is not None:
        _held_for_review(new_row, flag)
    elif summarises(mem) and held_by_guard(new_row):  # this version re-asserts nothing: the hold goes
        new_row = carry_over(new_row, fresh, VERDICT_COLUMNS)
    return new_row


EVIDENCE_REJECTED = "its evidence was rejected by a reviewer"
"""The trust reason of a persona facet taken out of recall because a reviewer rejected every atom it cites,
and of a scene the atoms nobody rejected no longer make."""


def _stated_again(tx: ShardTx, old: MemoryRow, mem: MemoryUnit) -> bool:
    """``mem`` is a version of a facet or scene its atoms' rejection took out, citing an atom no reviewer
    rejected."""
    if mem.layer not in (Layer.L3, Layer.L4) or old["lc_state"] != "rejected" \
            or old["trust_reason"] != EVIDENCE_REJECTED:
        return False
    return any((a := tx.memory_row(e)) is not None and a["lc_state"] != "rejected" for e in mem.evidence)


def _cites_later_atom(tx: ShardTx, old: MemoryRow, new: MemoryRow) -> bool:
    """A facet version stands on the earliest atom of its statement (govern cites the earliest it sees): a
    proposal of it from a later atom, made by a stage that did not see the earlier one yet (a lane over a shard
    still behind), does not replace it, whichever of the two the writer meets last."""
    if new["layer"] != Layer.L4.value or old["evidence"] == new["evidence"]:
        return False
    kept, proposed = _atom_order(tx, old), _atom_order(tx, new)
    return kept is not None and proposed is not None and kept < proposed


def _atom_order(tx: ShardTx, facet: MemoryRow) -> tuple[str, str] | None:
    """(valid time, id) of the one stored atom a facet version cites, or None."""
    cited = orjson.loads(facet["evidence"])
    atom = tx.memory_row(cited[0]) if len(cited) == 1 else None
    return None if atom is None else (str(atom["valid_from"] or ""), str(atom["memory_id"]))


def summaries_judged_again(tx: ShardTx, scope: Scope, proposal_id: str, ctx: OpContext, counting: str
                           ) -> list[MemoryUnit]:
    """A capsule or a scene that re-asserts an anti-pattern is held for review (see :func:`_validate`) whether
    it was stored before the anti-pattern or after: fold, extract and govern are separate stages, so which
    reaches the writer first depends on batching (a replay's differs from the source's), and the state may not.
    When an anti-pattern is stored (or a tool's is approved, and only then counts), the agent's capsules and
    scenes, and the user's persona facets (of every agent: a facet is judged against every agent's
    anti-patterns), are judged again against every stored anti-pattern: those ``counting`` (the anti-pattern that
    counts from now) does not speak against keep the verdict the others gave them, so only the others are (each
    new anti-pattern had judged every summary against every anti-pattern: a cubic cost in a long history)."""
    changed: list[MemoryUnit] = []
    for row in [*tx.summaries(scope), *tx.persona_facets(scope)]:
        mem = row_to_memory(row)
        if ctx.guard.reasserts(tx, mem, only=frozenset({counting})) is None:
            continue
        verdict = ctx.guard.reasserts(tx, mem)
        approved = approved_by_review(row)
        if verdict is not None and approved:
            verdict = past_approval(tx, row, mem, verdict, ctx)
        if verdict is None:
            continue
        held: MemoryRow = without_verdict(row) if approved else {**row}
        _held_for_review(held, verdict)
        if comparable(held) != comparable(row):
            tx.update_memory(row, held, at=ctx.now, proposal_id=proposal_id, actor="writer")
            changed.append(row_to_memory(held))
    return changed


def held_by_guard(row: MemoryRow) -> bool:
    """The guard flagged the memory and no reviewer has decided yet."""
    return row["trust_status"] == "uncertain" and str(row["trust_reason"] or "").startswith(GUARD_HOLD)


def held_again(tx: ShardTx, row: MemoryRow, ctx: OpContext) -> MemoryRow:
    """``row`` (its hold lifted: what it re-asserted was erased) held again when it re-asserts another stored
    anti-pattern, as it would have been held for that one had the erased one never been stored."""
    mem = row_to_memory(row)
    verdict = ctx.guard.reasserts(tx, mem)
    covered = approved_past(tx, str(row["memory_id"]))
    if covered and (verdict is None or verdict.record_id in covered):
        # held for nothing but what a reviewer approved it past: approved again, as had the other never been
        verdict = ctx.guard.reasserts(tx, mem, excluding=covered) if verdict is not None else None
        approved = _last_approval(tx, row) if verdict is None else None
        if approved is not None:
            return approved
    if verdict is None:
        return row
    held: MemoryRow = {**row}
    _held_for_review(held, verdict)
    return held


def state_by_weight(row: MemoryRow, ctx: OpContext) -> str:
    """The lifecycle state ``row``'s weight gives it, as an active memory (one back from a rejection)."""
    return ctx.rules.state(float(row["lc_weight"]), pinned=bool(row["lc_pinned"]), current="active")


def without_verdict(row: MemoryRow) -> MemoryRow:
    """``row`` with no trust verdict (unverified)."""
    return {**row, "trust_status": "unverified", "trust_method": None, "trust_confidence": None,
            "trust_reason": None, "trust_contradicting_id": None}


def holds_lifted(tx: ShardTx, scope: Scope, anti_pattern_id: str, proposal_id: str, ctx: OpContext
                 ) -> list[MemoryUnit]:
    """The memories the guard held for re-asserting ``anti_pattern_id``, which no longer counts (a review
    rejected it, or retention forgot it), judged again without it: held again only for another they re-assert."""
    lifted: list[MemoryUnit] = []
    for row in tx.verdicts_naming(scope, [anti_pattern_id]):
        if not held_by_guard(row):
            continue
        fresh = held_again(tx, without_verdict(row), ctx)
        tx.update_memory(row, fresh, at=ctx.now, proposal_id=proposal_id, actor="writer")
        lifted.append(row_to_memory(fresh))
    return lifted


def approved_by_review(row: MemoryRow) -> bool:
    return row["trust_method"] == "ground_truth" and row["trust_status"] == "verified"


def past_approval(tx: ShardTx, row: MemoryRow, mem: MemoryUnit, flag: GuardVerdict, ctx: OpContext
                  ) -> GuardVerdict | None:
    """What the guard flags in ``mem`` (a version of ``row``, which a reviewer approved) that no approval of it
    covered. An approval covers the anti-patterns the memory was held for when it was given: a capsule's id is
    its session's and a scene's its anchor's, so later versions carry it, and one that goes on to re-assert
    another anti-pattern (stored before or after it) is held for that one; one held again only for what was
    approved keeps the approval (it was held again on every fold of a growing session)."""
    covered = approved_past(tx, str(row["memory_id"]))
    if not flag.anti_pattern or flag.record_id not in covered:
        return flag
    return ctx.guard.reasserts(tx, mem, excluding=covered)


def approved_past(tx: ShardTx, memory_id: str) -> frozenset[str]:
    """The anti-patterns reviewers approved the memory past: those its guard holds named when approved (a
    hold is ``uncertain`` by ``confidence`` and names what it is for; read without its reason, which an erasure
    may have redacted)."""
    return frozenset(str(old["trust_contradicting_id"]) for old, _ in tx.approvals(memory_id)
                     if old.get("trust_status") == "uncertain" and old.get("trust_method") == "confidence"
                     and old.get("trust_contradicting_id"))


def _last_approval(tx: ShardTx, row: MemoryRow) -> MemoryRow | None:
    """``row`` with the verdict the last reviewer approval of it gave, or None when none did."""
    approvals = tx.approvals(str(row["memory_id"]))
    if not approvals:
        return None
    given = approvals[-1][1]
    verdict = {c: given.get(c) for c in REVIEWED_COLUMNS}
    if not isinstance(verdict["trust_reason"], str):  # redacted by an erasure since
        verdict["trust_reason"] = "approved by reviewer"
    return cast("MemoryRow", {**row, **verdict})


def _held_for_review(row: MemoryRow, flag: GuardVerdict) -> None:
    """A memory the guard flagged is stored as ``uncertain``, naming what it may re-assert: the review queue
    shows it, and recall weighs it down, until a reviewer decides. A verdict already given stands."""
    if row["trust_status"] in ("verified", "contradicted"):
        return
    row["trust_status"], row["trust_method"], row["trust_confidence"] = "uncertain", "confidence", 0.5
    row["trust_reason"], row["trust_contradicting_id"] = f"{GUARD_HOLD}{flag.reason}", flag.record_id


def _validate(tx: ShardTx, mem: MemoryUnit, ctx: OpContext) -> tuple[MemoryUnit, GuardVerdict | None]:
    """Size, content hash, evidence (none for L0, stored memories for the rest) and the write guard: the memory
    to store (a capsule or a scene without the statements or members that re-state erased content, see
    :func:`_left_out`) and what the guard flagged (not refused)."""
    if error := content_over_limit(mem.content, ctx.settings.max_content_bytes):
        raise Rejection(error, code="invalid")
    if mem.trust.method is TrustMethod.GROUND_TRUTH:  # it would be final: verify and the sweep leave it be
        raise Rejection("a ground-truth verdict is a reviewer's: a memory cannot be proposed with one",
                        code="invalid")
    if mem.content_hash != content_hash(mem.content):
        raise Rejection("content_hash does not match the content", code="invalid")
    if mem.layer is Layer.L0 and mem.evidence:
        raise Rejection("an L0 message is raw input and cannot cite evidence", code="invalid")
    if mem.layer is not Layer.L0 and not mem.evidence:
        raise Rejection(f"a derived {mem.layer.value} memory needs evidence reaching L0", code="invalid")
    for ev in mem.evidence:
        if not tx.has_memory(ev) and tx.erased(mem.scope, ev):
            # derived from an erased memory (a stage met its change again: a rewind, a replay): void, where a
            # rejection kept the derived text, the erased content, for review (a forgotten one's stays reviewable)
            raise Erased(f"evidence {ev} was erased")
        if not tx.has_memory(ev):
            raise Rejection(f"evidence {ev} is not in this shard (derived memories cite stored memories)",
                            code="missing_evidence")
    if (tombstone := erased_itself(tx, mem)) is not None:
        raise Erased(f"memory {mem.memory_id} was erased (tombstone {tombstone})")
    verdict = ctx.guard.check(tx, mem)
    if verdict is not None and verdict.statements:
        mem = _scene_left_out(tx, mem, verdict) if is_scene(mem) else _left_out(mem, verdict)
        verdict = ctx.guard.check(tx, mem)
    if verdict is not None and verdict.action == "refuse" and not (summarises(mem) and verdict.anti_pattern):
        raise Rejection(f"write guard: {verdict.reason}", code="guard")
    # a capsule or scene re-asserting an anti-pattern is held, not refused: it summarises memories that are
    # stored anyway, and a refusal could not be made whichever of the two was stored first
    # (summaries_judged_again)
    return mem, verdict


LEFT_OUT = "guard_left_out"
"""The attribute of a capsule (a scene) stored without some of its statements (members): how many the write guard
left out."""


def _left_out(mem: MemoryUnit, verdict: GuardVerdict) -> MemoryUnit:
    """The capsule without the statements that re-state erased content; refused when none is left. The rest
    is what the session said and was not erased: its decisions and questions are not lost with one line."""
    content = capsule.without(mem.content, frozenset(verdict.statements))  # the header stays: it names the session
    if content is None:
        raise Rejection(f"write guard: {verdict.reason}", code="guard")
    left_out = frozenset(verdict.statements)
    attributes = {**mem.attributes, LEFT_OUT: str(len(left_out))}
    if "sections" in attributes:
        attributes["sections"] = capsule.sections_without(attributes["sections"], left_out)
    return mem.model_copy(update={"content": content, "content_hash": content_hash(content),
                                  "attributes": attributes})


def _scene_left_out(tx: ShardTx, mem: MemoryUnit, verdict: GuardVerdict) -> MemoryUnit:
    """The scene without the members that re-state erased content: without their lines, their atoms among its
    evidence, and the sessions no other atom that mentions its anchor comes from (a scene's sessions are those
    of every such atom, its members only the first few); refused when it is left with fewer sessions than a
    scene needs, or is not in govern's form (the guard then judged it whole). The other members are what was
    said and not erased: a scene is not lost with one of them."""
    lines = scene.members(mem.content)
    anchor, node_id = mem.attributes.get("anchor"), mem.attributes.get("anchor_node_id")
    sessions = mem.attributes.get("sessions")
    if len(lines) != len(mem.evidence) or not isinstance(anchor, str) or not isinstance(node_id, str) \
            or not isinstance(sessions, list):
        raise Rejection(f"write guard: {verdict.reason}", code="guard")
    left_out = frozenset(verdict.statements)
    kept = [i for i, line in enumerate(lines) if line not in left_out]
    gone = [ev for i, ev in enumerate(mem.evidence) if i not in kept]
    still = tx.sessions_mentioning(mem.scope, node_id, besides=gone)
    for i in kept:
        row = tx.memory_row(mem.evidence[i])
        still.add(str(row["session_id"] or "") if row is not None else "")
    # one that names some of its sessions spans those govern counts that are left, named as govern names them
    counted = tx.scene_sessions(mem.scope, node_id) if scene.SESSION_COUNT in mem.attributes else sessions
    spans = [s for s in counted if s in still]
    if len(spans) < scene.MIN_SESSIONS:
        raise Rejection(f"write guard: {verdict.reason}", code="guard")
    content = scene.render(anchor, scene.named(spans), [lines[i] for i in kept], len(spans))
    attributes = {k: v for k, v in mem.attributes.items() if k != scene.SESSION_COUNT}
    attributes |= {"sessions": scene.named(spans), **scene.counted(spans), LEFT_OUT: str(len(gone))}
    return mem.model_copy(update={"content": content, "content_hash": content_hash(content),
                                  "evidence": [mem.evidence[i] for i in kept], "attributes": attributes})


def previous_content(tx: ShardTx, row: MemoryRow) -> str | None:
    """The content of the L0 message before ``row`` in its session: its context."""
    prev = tx.session_neighbour(row, "previous")
    return None if prev is None else str(prev["content"])


def facet_recited(tx: ShardTx, facet: MemoryRow, *, besides: frozenset[str] = frozenset(),
                  atoms: Sequence[MemoryRow] | None = None) -> MemoryRow | None:
    """``facet`` standing on another atom of its statement, when the one it cites goes (a reviewer rejected
    it, or an erasure takes it: ``besides``) and another agent or session of the user said the same: the
    version govern makes from the earliest such atom (its scope, its time), what the facet kept of its own
    (trust, lifecycle, supersession). None when no other atom states it. ``atoms``: the facet key's atoms
    (``ShardTx.atoms_of_facet``), when the caller has read them."""
    current = row_to_memory(facet)
    found = tx.atoms_of_facet(facet) if atoms is None else atoms
    atom = stands_on(current, [row_to_memory(r) for r in found], besides=besides)
    if atom is None:
        return None
    key = current.attributes.get("facet_key")
    fresh = memory_to_row(facet_version(atom, str(key)), datetime.fromisoformat(str(facet["recorded_at"])))
    return carry_over(fresh, facet, _KEPT_ON_UPDATE)


def anchor_still_made(tx: ShardTx, mem: MemoryUnit) -> str | None:
    """The anchor node of a scene (L3) whose atoms now stored, and not rejected by a reviewer, still span the
    sessions a scene needs; None for another memory, or a scene they no longer make."""
    node_id = mem.attributes.get("anchor_node_id")
    if mem.layer is not Layer.L3 or not isinstance(node_id, str):
        return None
    return node_id if len(tx.sessions_mentioning(mem.scope, node_id)) >= scene.MIN_SESSIONS else None


def messages_left(tx: ShardTx, gone: list[MemoryRow], proposal_id: str, ctx: OpContext
                  ) -> tuple[list[MemoryUnit], list[str]]:
    """The messages that follow removed ones (erased, forgotten) are relinked (their context held the removed
    content), and one message of each session that keeps messages is returned for the change: the session's
    capsule quoted what was removed, and fold folds it again from what is left, at once, as a replay of the log
    without it does (the state must not depend on whether the session's next message ever comes). Returns them
    and the ids of the relinked messages."""
    relinked: dict[str, MemoryRow] = {}
    last: dict[tuple[object, ...], MemoryRow] = {}  # per session: its message nearest a removed one
    for row in gone:
        following = tx.session_neighbour(row, "next")
        if following is not None:
            fresh: MemoryRow = {**following, "context": previous_content(tx, following)}
            if following["memory_id"] not in relinked:
                tx.update_memory(following, fresh, at=ctx.now, proposal_id=proposal_id, actor="writer")
            relinked[following["memory_id"]] = fresh
        near = following or tx.session_neighbour(row, "previous")
        if near is not None and near["session_id"] is not None:
            key = (near["tenant_id"], near["workspace_id"], near["user_id"], near["agent_id"], near["session_id"])
            last.setdefault(key, near)
    left = [row_to_memory(relinked.get(r["memory_id"], r)) for r in sorted(last.values(), key=lambda r: r["memory_id"])]
    return left, sorted(relinked)


def _relink_successor(tx: ShardTx, row: MemoryRow, p: UpsertMemoryProposal, ctx: OpContext
                      ) -> list[MemoryUnit]:
    """A message that arrived late becomes the context of the one after it (order-independent)."""
    following = tx.session_neighbour(row, "next")
    if following is None or following["context"] == row["content"]:
        return []
    updated: MemoryRow = {**following, "context": row["content"]}
    tx.update_memory(following, updated, at=ctx.now, proposal_id=p.event_id, actor="writer")
    return [row_to_memory(updated)]

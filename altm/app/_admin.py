"""Administration: feedback, erasure, review decisions, rollbacks, retention, compaction and the trust sweep.

Every operation is a control event published through the deployment's own bus (the embedded log or
Kafka), so it works in both runtimes and a replay repeats it; the writer applies what it asks for. The
candidates of the maintenance passes are read from the store; the decisions are made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from altm.app._cycles import CycleBook
from altm.app._protocol import Publisher
from altm.app._recall import RecallService
from altm.core import (
    ControlAction,
    ControlEvent,
    Erasure,
    ReviewDecision,
    Rollback,
    RuntimeCycle,
    Scope,
    Settings,
    derive_id,
)
from altm.core.bounds import EARLIEST_YEAR, MAX_NAMED_IDS
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.pipeline.processors import control_proposal
from altm.store import MaintenanceQueries, OutcomeQueries, ProposalOutcome, ShardSet

Row = dict[str, Any]
_SIGNALS = ("helpful", "harmful", "pin", "unpin")

EARLIEST_EVENT = datetime(EARLIEST_YEAR, 1, 1, tzinfo=UTC)
"""No memory is dated before it (event times are refused outside the years of ``altm.core.bounds``)."""


@dataclass(frozen=True)
class Request:
    """A control event published for the writer, and the proposal it asks for (to read its outcome)."""

    event_id: str
    scope: Scope
    proposal_id: str


def _now() -> datetime:
    return datetime.now(UTC)


def _by_agent(rows: list[Row]) -> dict[Scope, list[Row]]:
    out: dict[Scope, list[Row]] = {}
    for r in rows:
        scope = Scope(tenant_id=str(r["tenant_id"]), workspace_id=str(r["workspace_id"]), user_id=str(r["user_id"]),
                      agent_id=str(r["agent_id"]))
        out.setdefault(scope, []).append(r)
    return out


class AdminService:
    def __init__(self, settings: Settings, shards: ShardSet, recall: RecallService, publish: Publisher,
                 cycles: CycleBook) -> None:
        self.settings = settings
        self.recall = recall
        self.publish = publish
        self.cycles = cycles
        self._maintenance = MaintenanceQueries(shards)
        self._outcomes = OutcomeQueries(shards)
        self.rules = LifecycleRules()

    async def _request(self, event: ControlEvent) -> Request:
        found = control_proposal(event)
        assert found is not None, f"{event.action} is not a writer request"
        await self.publish([event])
        return Request(event.event_id, event.scope, found.event_id)

    def outcome(self, request: Request) -> ProposalOutcome:
        """What the writer did with a request: applied, rejected (with the reason) or still pending."""
        return self._outcomes.outcome(request.scope, request.proposal_id)

    def tombstones(self, scope: Scope | None = None) -> int:
        return self._outcomes.tombstones(scope)

    # -- user decisions --------------------------------------------------------------------------------
    async def feedback(self, scope: Scope, memory_ids: list[str], signal: str, note: str | None = None) -> str:
        """helpful / harmful / pin / unpin, as a control event on the log (applied by the lifecycle)."""
        if signal not in _SIGNALS:
            raise ValueError(f"unknown signal {signal!r}; expected helpful, harmful, pin or unpin")
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValueError("name at least one memory id")
        if len(ids) > MAX_NAMED_IDS:
            raise ValueError(f"{len(ids)} memory ids; one signal names at most {MAX_NAMED_IDS}")
        for mid in ids:
            self.recall.memory(scope, mid)
        action = {"pin": ControlAction.PIN, "unpin": ControlAction.UNPIN}.get(signal, ControlAction.FEEDBACK)
        ts = _now()
        event_id = derive_id("ctl", scope.path, signal, *ids, ts.isoformat())
        await self.publish([ControlEvent(event_id=event_id, scope=scope, timestamp=ts, action=action,
                                         target_ids=tuple(ids), payload={"signal": signal, "note": note})])
        return event_id

    async def erase(self, scope: Scope, target: str, *, memory_id: str | None = None,
                    session_id: str | None = None, reason: str = "erasure requested") -> Request:
        """Erase a memory, a session, an agent or the whole user scope: the writer removes the content from
        every store, leaves tombstones and audits it all."""
        erasure = Erasure.model_validate({"target": target, "memory_id": memory_id, "session_id": session_id,
                                          "reason": reason})
        if memory_id is not None:
            self.recall.memory(scope, memory_id)
        ts = _now()
        event_id = derive_id("ctl", scope.path, "erase", target, memory_id or "", session_id or "", ts.isoformat())
        request = await self._request(ControlEvent(
            event_id=event_id, scope=scope, timestamp=ts, action=ControlAction.ERASE,
            target_ids=(memory_id,) if memory_id else (), session_id=session_id, payload=erasure.model_dump()))
        # any bundle of this user may quote what goes (recall crosses sessions and agents, and derived
        # memories go with their evidence): a retry rebuilds it from the memories that are left
        self.cycles.forget_bundles(lambda cycle, _bundle: cycle.scope.home == scope.home)
        self.cycles.forget_cycles(lambda cycle: _cycle_erased(cycle, scope, erasure))
        return request

    async def review_decide(self, scope: Scope, item_id: str, decision: str, note: str | None = None) -> Request:
        """Approve or reject a review-queue item."""
        review = ReviewDecision.model_validate({"item_id": item_id, "decision": decision, "note": note})
        ts = _now()
        event_id = derive_id("ctl", scope.path, "review", item_id, decision, ts.isoformat())
        return await self._request(ControlEvent(
            event_id=event_id, scope=scope, timestamp=ts, action=ControlAction.REVIEW_DECISION,
            target_ids=(item_id,), payload=review.model_dump()))

    async def rollback(self, scope: Scope, decision_id: str, reason: str = "rolled back by an operator") -> Request:
        """Undo one autonomous decision: its rows are restored from the audit log."""
        rollback = Rollback(decision_id=decision_id, reason=reason,
                            names=self.recall.decision_names(scope, decision_id),
                            signal_id=self.recall.decision_signal(scope, decision_id))
        ts = _now()
        event_id = derive_id("ctl", scope.path, "rollback", decision_id, ts.isoformat())
        return await self._request(ControlEvent(
            event_id=event_id, scope=scope, timestamp=ts, action=ControlAction.ROLLBACK, target_ids=(decision_id,),
            payload=rollback.model_dump()))

    # -- maintenance passes ------------------------------------------------------------------------------
    def retention_cutoffs(self, now: datetime | None = None) -> dict[str, str]:
        """Per layer with a retention (``ALTM_RETENTION_DAYS_L0..L4``), the time its memories are past it before."""
        now = now or _now()
        out: dict[str, str] = {}
        for layer in ("L0", "L1", "L2", "L3", "L4"):
            days = getattr(self.settings, f"retention_days_{layer.lower()}")
            if days is not None and days < (now - EARLIEST_EVENT).days:  # longer: nothing stored is that old
                out[layer] = (now - timedelta(days=days)).isoformat()
        return out

    def retention_candidates(self, now: datetime | None = None) -> list[Row]:
        """Memories past their layer's retention (``ALTM_RETENTION_DAYS_L0..L4``), pinned ones excepted."""
        return self._past(self.retention_cutoffs(now))

    def _past(self, cutoffs: dict[str, str]) -> list[Row]:
        """Memories of each layer of ``cutoffs`` valid since before its cutoff, pinned ones excepted."""
        return [r for layer, cutoff in cutoffs.items() for r in self._maintenance.older_than(layer, cutoff)]

    async def retention(self, now: datetime | None = None) -> int:
        """Forget what is past retention (audited with the removed value, evidence repaired, tombstones when
        ``ALTM_RETENTION_TOMBSTONES``). Returns how many memories were named. Each event of the pass says what
        the pass takes whole (its cutoffs): the writer tells from them what another event of it forgets."""
        cutoffs = self.retention_cutoffs(now)
        candidates = self._past(cutoffs)
        await self._lifecycle_pass(now, {
            scope: [{"op": "forget", "memory_ids": ids, "reason": "past retention",
                     "tombstone": self.settings.retention_tombstones, "cutoffs": cutoffs}
                    for ids in _in_parts(sorted(str(r["memory_id"]) for r in rows))]
            for scope, rows in _by_agent(candidates).items()})
        return len(candidates)

    def compaction_candidates(self, now: datetime | None = None) -> list[Row]:
        """Memories whose compression level should change (idle time since their last use or validity)."""
        now = now or _now()
        out: list[Row] = []
        for r in self._maintenance.last_uses():
            since = max(str(r["valid_from"]), str(r["last_use"] or ""))
            idle = (now - datetime.fromisoformat(since)).total_seconds() / 86400
            level = self.rules.compression_level(idle, pinned=bool(r["lc_pinned"]))
            if level != r["lc_compression"]:
                out.append({**r, "level": level, "idle_days": round(idle, 1)})
        return out

    async def compaction(self, now: datetime | None = None) -> int:
        """Move idle memories down compression levels (C1..C4). Returns how many levels change."""
        candidates = self.compaction_candidates(now)
        await self._lifecycle_pass(now, {
            scope: [{"op": "compress", "levels": part} for part in _levels_in_parts(rows)]
            for scope, rows in _by_agent(candidates).items()})
        return len(candidates)

    async def _lifecycle_pass(self, now: datetime | None, payloads: dict[Scope, list[dict[str, object]]]) -> None:
        """One control event per agent and part (:func:`_in_parts`) of the memories it names."""
        stamp = now or _now()
        # named by what it does too: a second pass at the same time over other memories is another event (it
        # had the first one's id, and a replay took it for a redelivery); the same pass sent twice is one
        await self.publish([
            ControlEvent(event_id=derive_id("ctl", scope.path, "lifecycle", str(payload["op"]), stamp.isoformat(),
                                            orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode()),
                         scope=scope, timestamp=stamp, action=ControlAction.LIFECYCLE, payload=payload)
            for scope, parts in sorted(payloads.items(), key=lambda kv: kv[0].path) for payload in parts])

    async def sweep(self, limit: int = 500) -> int:
        """Verify L2 atoms never verified, or changed since their verdict. Returns how many were named."""
        rows = self._maintenance.unverified(limit)
        stamp = _now()
        await self.publish([
            ControlEvent(event_id=derive_id("ctl", scope.path, "sweep", stamp.isoformat(),
                                            *sorted(str(r["memory_id"]) for r in group)), scope=scope,
                         timestamp=stamp, action=ControlAction.SWEEP,
                         target_ids=tuple(str(r["memory_id"]) for r in group))
            for scope, group in sorted(_by_agent(rows).items(), key=lambda kv: kv[0].path)])
        return len(rows)


LIFECYCLE_PART = 1_000
"""The memories one retention or compaction event names at most (about 41 bytes each: some 41 KB of a control
event's 64 KiB payload). One event per agent named every id: past some 1,680 memories of one agent due, the pass
failed before it published anything, for every user of the data dir, and again at every later pass."""


def _in_parts(ids: Sequence[str]) -> list[list[str]]:
    """``ids`` in parts of at most :data:`LIFECYCLE_PART`, in order."""
    return [list(ids[i:i + LIFECYCLE_PART]) for i in range(0, len(ids), LIFECYCLE_PART)]


def _levels_in_parts(rows: Sequence[Row]) -> list[dict[str, int]]:
    """The compression level of each of ``rows`` (compaction candidates), by memory id, in :func:`_in_parts`."""
    levels = {str(r["memory_id"]): int(r["level"]) for r in rows}
    return [{mid: levels[mid] for mid in ids} for ids in _in_parts(sorted(levels))]


def _cycle_erased(cycle: RuntimeCycle, scope: Scope, erasure: Erasure) -> bool:
    """Whether the erasure takes the cycle (the writer deletes the runtime cycles of an erased session, agent or
    user; an erasure of one memory leaves them)."""
    if cycle.scope.home != scope.home or erasure.target == "memory":
        return False
    if erasure.target == "user":
        return True
    return cycle.scope.agent_id == scope.agent_id and (erasure.target == "agent"
                                                       or cycle.session_id == erasure.session_id)

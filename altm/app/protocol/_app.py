"""The application object: the runtime protocol (prepare/commit/abort), recall, emergence and drilldown.

It reads the shards and the vector index directly and writes only through the log (turn and control events)
plus its own cycle bookkeeping; memory state changes reach the store through the processors and the writer.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from altm.app.protocol._cycles import CycleStore
from altm.app.protocol._errors import (
    BadMarker,
    CitationError,
    CycleStateError,
    IdempotencyConflict,
    NotFound,
    ScopeDenied,
)
from altm.core import (
    ControlAction,
    ControlEvent,
    CycleState,
    Erasure,
    Event,
    Layer,
    ReviewDecision,
    Role,
    RuntimeCycle,
    Scope,
    TurnEvent,
    derive_id,
    sha256_hex,
)
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.models import ModelClients, Stage
from altm.pipeline.processors import Deferred
from altm.recall.context import ContentType, ContextBundle, build_bundle, count_tokens, detect
from altm.recall.context._bundle import share_estimate
from altm.recall.retrieval import DEFAULT_PRESET, Hit, Retriever, SearchConfig, SearchResult, preset
from altm.recall.retrieval._graph import expand, personalised_pagerank
from altm.recall.retrieval._policy import ScopePolicy
from altm.store import ShardSet

Publisher = Callable[[Sequence[Event]], Awaitable[None]]
_MARKER = re.compile(r"^memory://(?P<id>mem_[0-9a-f]{32})#(?P<hash>[0-9a-f]{8,64})$")
DRILLDOWN_MAX_LINES = 50


class Feedback(BaseModel):
    helpful: list[str] = Field(default_factory=list, description="Memory ids that helped")
    harmful: list[str] = Field(default_factory=list, description="Memory ids that misled")
    note: str | None = Field(default=None, max_length=2000)


class CompressedText(BaseModel):
    text: str = Field(min_length=1, max_length=8000)


class PreparedTurn(BaseModel):
    cycle_id: str
    bundle: ContextBundle
    replayed: bool = Field(default=False, description="True when this answers a safe retry")


class CommittedTurn(BaseModel):
    cycle_id: str
    state: Literal["committed"] = "committed"
    cited_memory_ids: list[str]
    replayed: bool = False


class Drilldown(BaseModel):
    memory_id: str
    marker: str
    content: str | None = None
    lines: list[str] | None = None
    total_lines: int


class Emergent(BaseModel):
    memory_id: str
    layer: str
    kind: str
    content: str
    matched_by: list[str]
    score: float
    breakdown: dict[str, float]
    path: list[str]


def _now() -> datetime:
    return datetime.now(UTC)


class MemoryApp:
    def __init__(self, settings: Settings, shards: ShardSet, retriever: Retriever, publish: Publisher,
                 models: ModelClients | None = None) -> None:
        self.settings = settings
        self.shards = shards
        self.retriever = retriever
        self.publish = publish
        self.models = models
        self.cycles = CycleStore(shards)

    async def _model_compressions(self, scope: Scope, hits: Sequence[Hit], query: str, token_budget: int
                                  ) -> dict[str, str]:
        """Prose too long for its share, compressed by the summarisation (L1) model when one is configured."""
        if self.models is None or not self.models.configured(Stage.L1):
            return {}
        share = share_estimate(len(hits), token_budget)
        out: dict[str, str] = {}
        for hit in hits:
            if detect(hit.content) is not ContentType.PROSE or count_tokens(hit.content) <= share:
                continue
            try:
                result = await self.models.structured(Stage.L1, scope, [
                    {"role": "system", "content": f"Compress the memory to at most {share} tokens for an "
                     "assistant's context. Keep names, numbers, dates and decisions; add nothing; answer JSON "
                     "{\"text\": ...}."},
                    {"role": "user", "content": f"Question: {query}\n\nMemory:\n{hit.content}"},
                ], CompressedText)
            except Deferred:
                continue  # the extractive compression stands in, labelled as such
            out[hit.memory_id] = result.value.text
        return out

    # -- recall ----------------------------------------------------------------------------------------
    def search(self, scope: Scope, session_id: str | None, text: str, *, preset_name: str = DEFAULT_PRESET,
               top_k: int | None = None, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        """Recall. ``as_of``: what was valid in the world at that time (superseded versions included);
        ``known_at``: what the store believed at that time. Default: valid and believed now."""
        config: SearchConfig = preset(preset_name)
        if top_k is not None:
            config = config.model_copy(update={"top_k": top_k})
        return self.retriever.search(scope, session_id, text, config, strict_session=strict_session,
                                     as_of=as_of, known_at=known_at)

    # -- runtime protocol ------------------------------------------------------------------------------
    async def prepare_turn(
        self, scope: Scope, session_id: str, turn_id: str, content: str, token_budget: int, *,
        strict_session: bool = False, preset_name: str = DEFAULT_PRESET, idempotency_key: str | None = None,
        timestamp: datetime | None = None,
    ) -> PreparedTurn:
        key = idempotency_key or f"{scope.path}/{session_id}/{turn_id}"
        cycle_id = derive_id("cyc", key)
        request_hash = sha256_hex(orjson.dumps(
            [scope.path, session_id, turn_id, content, token_budget, strict_session, preset_name]))
        existing = self.cycles.get(scope, cycle_id)
        if existing is not None:
            cycle, row = existing
            if cycle.request_hash != request_hash:
                raise IdempotencyConflict(
                    f"idempotency key {key!r} was used for a different prepare_turn request (cycle {cycle_id}); "
                    "use a new turn id or key")
            return PreparedTurn(cycle_id=cycle_id, bundle=ContextBundle.model_validate_json(row["bundle"]),
                                replayed=True)
        result = self.search(scope, session_id, content, preset_name=preset_name, strict_session=strict_session)
        rewrites = await self._model_compressions(scope, result.hits, content, token_budget)
        bundle = build_bundle(result.hits, query=content, scope=scope.path, session_id=session_id,
                              preset=preset_name, token_budget=token_budget, rewrites=rewrites)
        ts = timestamp or _now()
        await self.publish([TurnEvent(scope=scope, session_id=session_id, turn_id=turn_id, role=Role.USER,
                                      content=content, timestamp=ts, cycle_id=cycle_id)])
        if bundle.items:
            await self.publish([ControlEvent(
                event_id=derive_id("ctl", cycle_id, "injected"), scope=scope, timestamp=ts,
                action=ControlAction.FEEDBACK, target_ids=tuple(bundle.memory_ids), session_id=session_id,
                payload={"signal": "injected", "cycle_id": cycle_id})])
        cycle = RuntimeCycle(cycle_id=cycle_id, scope=scope, session_id=session_id, turn_id=turn_id,
                             idempotency_key=key, request_hash=request_hash,
                             bundle_memory_ids=tuple(bundle.memory_ids), token_budget=token_budget,
                             created_at=ts)
        self.cycles.create(cycle, bundle.model_dump_json())
        return PreparedTurn(cycle_id=cycle_id, bundle=bundle)

    async def commit_turn(self, cycle_id: str, assistant_content: str, cited_memory_ids: Sequence[str] = (),
                          feedback: Feedback | None = None) -> CommittedTurn:
        cycle, row = self.cycles.find(cycle_id)
        cited = list(dict.fromkeys(cited_memory_ids))
        commit_hash = sha256_hex(orjson.dumps(
            [assistant_content, cited, feedback.model_dump() if feedback else None]))
        if cycle.state is CycleState.ABORTED:
            raise CycleStateError(f"cycle {cycle_id} was aborted ({cycle.abort_reason}); it cannot be committed")
        if cycle.state is CycleState.COMMITTED:
            if row["commit_hash"] == commit_hash:
                return CommittedTurn(cycle_id=cycle_id, cited_memory_ids=cited, replayed=True)
            raise IdempotencyConflict(f"cycle {cycle_id} is already committed with different content")
        allowed = set(cycle.bundle_memory_ids)
        foreign = [m for m in cited if m not in allowed]
        if feedback is not None:
            foreign += [m for m in (*feedback.helpful, *feedback.harmful) if m not in allowed and m not in foreign]
        if foreign:
            raise CitationError(f"memory ids {foreign} were not in the bundle of cycle {cycle_id}; cite only "
                                f"memories the bundle showed ({len(allowed)} ids)")
        ts = _now()
        events: list[Event] = [TurnEvent(
            scope=cycle.scope, session_id=cycle.session_id, turn_id=cycle.turn_id, role=Role.ASSISTANT,
            content=assistant_content, timestamp=ts, cycle_id=cycle_id, cited_memory_ids=tuple(cited))]
        if cited:
            events.append(ControlEvent(
                event_id=derive_id("ctl", cycle_id, "cited"), scope=cycle.scope, timestamp=ts,
                action=ControlAction.FEEDBACK, target_ids=tuple(cited), session_id=cycle.session_id,
                payload={"signal": "cited_by_agent", "cycle_id": cycle_id}))
        if feedback is not None and (feedback.helpful or feedback.harmful):
            events.append(ControlEvent(
                event_id=derive_id("ctl", cycle_id, "feedback"), scope=cycle.scope, timestamp=ts,
                action=ControlAction.FEEDBACK, target_ids=tuple(feedback.helpful + feedback.harmful),
                session_id=cycle.session_id,
                payload={"signal": "feedback", "helpful": feedback.helpful, "harmful": feedback.harmful,
                         "note": feedback.note, "cycle_id": cycle_id}))
        await self.publish(events)
        self.cycles.close(cycle, CycleState.COMMITTED, commit_hash=commit_hash)
        return CommittedTurn(cycle_id=cycle_id, cited_memory_ids=cited)

    async def abort_turn(self, cycle_id: str, reason: str) -> RuntimeCycle:
        cycle, _ = self.cycles.find(cycle_id)
        if cycle.state is CycleState.ABORTED:
            return cycle
        if cycle.state is CycleState.COMMITTED:
            raise CycleStateError(f"cycle {cycle_id} is already committed; it cannot be aborted")
        self.cycles.close(cycle, CycleState.ABORTED, abort_reason=reason)
        return self.cycles.find(cycle_id)[0]

    # -- listing and feedback --------------------------------------------------------------------------
    def list_memories(self, scope: Scope, *, session_id: str | None = None, layer: str | None = None,
                      kind: str | None = None, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Memories visible to ``scope`` (the same policy as recall; every session when none is given)."""
        layers = tuple(Layer) if layer is None else (Layer(layer),)
        policy = ScopePolicy(scope, session_id, l0_across_sessions=session_id is None, layers=layers)
        where, args = policy.sql("m")
        if kind is not None:
            where += " AND m.kind = ?"
            args.append(kind)
        conn = self.retriever.conn_for(scope)
        rows = conn.execute(
            "SELECT m.memory_id, m.layer, m.kind, m.content, m.content_hash, m.session_id, m.agent_id, m.source_id, "
            "m.role, m.valid_from, m.method, m.trust_status, m.lc_state, m.lc_pinned FROM memories m "
            f"WHERE {where} ORDER BY m.valid_from, m.memory_id LIMIT ? OFFSET ?", [*args, limit, offset],
        ).fetchall()
        return [dict(r) for r in rows]

    async def feedback(self, scope: Scope, memory_ids: Sequence[str], signal: str,
                       note: str | None = None) -> str:
        """helpful / harmful / pin / unpin, as a control event on the log (applied by the lifecycle)."""
        if signal not in ("helpful", "harmful", "pin", "unpin"):
            raise ValueError(f"unknown signal {signal!r}; expected helpful, harmful, pin or unpin")
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValueError("name at least one memory id")
        for mid in ids:
            self._visible_row(mid, scope)
        action = {"pin": ControlAction.PIN, "unpin": ControlAction.UNPIN}.get(signal, ControlAction.FEEDBACK)
        ts = _now()
        event_id = derive_id("ctl", scope.path, signal, *ids, ts.isoformat())
        await self.publish([ControlEvent(event_id=event_id, scope=scope, timestamp=ts, action=action,
                                         target_ids=tuple(ids), payload={"signal": signal, "note": note})])
        return event_id

    async def erase(self, scope: Scope, target: str, *, memory_id: str | None = None,
                    session_id: str | None = None, reason: str = "erasure requested") -> str:
        """Request an erasure (memory, session, agent or the whole user scope) as a control event on the log;
        the writer applies it: content removed from every store, tombstones left, everything audited."""
        erasure = Erasure(target=target, memory_id=memory_id, session_id=session_id,
                          reason=reason)
        if memory_id is not None:
            self._visible_row(memory_id, scope)
        ts = _now()
        event_id = derive_id("ctl", scope.path, "erase", target, memory_id or "", session_id or "", ts.isoformat())
        await self.publish([ControlEvent(event_id=event_id, scope=scope, timestamp=ts, action=ControlAction.ERASE,
                                         target_ids=(memory_id,) if memory_id else (), session_id=session_id,
                                         payload=erasure.model_dump())])
        return event_id

    async def review_decide(self, scope: Scope, item_id: str, decision: str, note: str | None = None) -> str:
        """Approve or reject a review-queue item; the decision is a control event the writer applies."""
        review = ReviewDecision(item_id=item_id, decision=decision, note=note)
        ts = _now()
        event_id = derive_id("ctl", scope.path, "review", item_id, decision, ts.isoformat())
        await self.publish([ControlEvent(event_id=event_id, scope=scope, timestamp=ts,
                                         action=ControlAction.REVIEW_DECISION, target_ids=(item_id,),
                                         payload=review.model_dump())])
        return event_id

    async def rollback(self, scope: Scope, decision_id: str, reason: str = "rolled back by an operator") -> str:
        """Undo one autonomous decision (its rows restored from the audit log) via a control event."""
        ts = _now()
        event_id = derive_id("ctl", scope.path, "rollback", decision_id, ts.isoformat())
        await self.publish([ControlEvent(event_id=event_id, scope=scope, timestamp=ts, action=ControlAction.ROLLBACK,
                                         target_ids=(decision_id,),
                                         payload={"decision_id": decision_id, "reason": reason})])
        return event_id

    def governance_events(self, scope: Scope, *, limit: int = 200) -> list[dict[str, Any]]:
        conn = self.retriever.conn_for(scope)
        return [dict(r) for r in conn.execute(
            "SELECT decision_id, decision, stage, reason, inputs, at FROM governance_events WHERE tenant_id=? "
            "AND workspace_id=? AND user_id=? ORDER BY at, decision_id, event_id LIMIT ?",
            [scope.tenant_id, scope.workspace_id, scope.user_id, limit])]

    def review_queue(self, scope: Scope, *, limit: int = 50) -> dict[str, Any]:
        """Contradicted or uncertain memories, deferred actions and rejected proposals of the user."""
        conn = self.retriever.conn_for(scope)
        home = [scope.tenant_id, scope.workspace_id, scope.user_id]
        memories = [dict(r) for r in conn.execute(
            "SELECT memory_id AS item_id, memory_id, layer, kind, content, trust_status, trust_reason, "
            "trust_contradicting_id, agent_id FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? "
            "AND trust_status IN ('contradicted', 'uncertain') AND (trust_method IS NOT 'ground_truth') "
            "AND lc_state NOT IN ('rejected', 'merged') ORDER BY valid_from, memory_id LIMIT ?",
            [*home, limit])]
        deferred = [dict(r) for r in conn.execute(
            "SELECT action_id AS item_id, action_id, action, target_ids, reason, status FROM deferred_actions "
            "WHERE tenant_id=? "
            "AND workspace_id=? AND user_id=? AND status='pending' ORDER BY recorded_at, action_id LIMIT ?",
            [*home, limit])]
        rejected = [{**dict(r), "item_id": f"rej_{r['rejection_id']}"} for r in conn.execute(
            "SELECT rejection_id, proposal_id, memory_id, reason, at FROM rejections WHERE json_valid(payload) "
            "AND json_extract(payload, '$.scope.tenant_id') = ? AND json_extract(payload, '$.scope.workspace_id') = ? "
            "AND json_extract(payload, '$.scope.user_id') = ? AND review_status = 'pending' "
            "ORDER BY rejection_id DESC LIMIT ?", [*home, limit])]
        return {"memories": memories, "deferred_actions": deferred, "rejections": rejected}

    # -- drilldown -------------------------------------------------------------------------------------
    def drilldown(self, marker: str, scope: Scope, query: str | None = None) -> Drilldown:
        m = _MARKER.match(marker.strip())
        if m is None:
            raise BadMarker(f"{marker!r} is not a marker; expected memory://<memory_id>#<content_hash>")
        memory_id, hash_prefix = m.group("id"), m.group("hash")
        row = self._visible_row(memory_id, scope)
        if not row["content_hash"].startswith(hash_prefix):
            raise BadMarker(f"marker {marker} is stale: the memory's content changed since it was issued")
        content: str = row["content"]
        lines = content.splitlines()
        if query:
            terms = [t for t in re.findall(r"\w{3,}", query.casefold())]
            matching = [ln for ln in lines if any(t in ln.casefold() for t in terms)][:DRILLDOWN_MAX_LINES]
            return Drilldown(memory_id=memory_id, marker=marker, lines=matching, total_lines=len(lines))
        return Drilldown(memory_id=memory_id, marker=marker, content=content, total_lines=len(lines))

    def _visible_row(self, memory_id: str, scope: Scope) -> dict[str, Any]:
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        policy = ScopePolicy(scope, None, l0_across_sessions=True)
        where, args = policy.sql("m")
        row = shard.conn.execute(f"SELECT m.* FROM memories m WHERE m.memory_id = ? AND {where}",
                                 [memory_id, *args]).fetchone()
        if row is not None:
            return dict(row)
        for p in range(self.shards.partitions):
            if self.shards.get(p).conn.execute("SELECT 1 FROM memories WHERE memory_id=?", (memory_id,)).fetchone():
                raise ScopeDenied(f"memory {memory_id} is not visible to scope {scope.path}")
        raise NotFound(f"no memory {memory_id}")

    # -- emergence -------------------------------------------------------------------------------------
    def emerge(self, scope: Scope, query: str, *, session_id: str | None = None, seed_limit: int = 5,
               max_hops: int = 2, limit: int = 10) -> list[Emergent]:
        """Memories related to the query through the graph that the query itself does not match.
        Read-only: nothing is written."""
        base = preset("hybrid").model_copy(update={"top_k": max(seed_limit * 4, 20), "l0_across_sessions": True})
        matched = self.retriever.search(scope, session_id, query, base)
        direct = {h.memory_id for h in matched.hits}
        seeds = [h.memory_id for h in matched.hits[:seed_limit]]
        if not seeds:
            return []
        conn = self.retriever.conn_for(scope)
        sub = expand(conn, scope, seeds, max_hops * 2, 2000)
        ranks = personalised_pagerank(sub.adjacency, seeds)
        policy = ScopePolicy(scope, session_id, l0_across_sessions=True)
        candidates = [n for n in ranks if n.startswith("mem_") and n not in direct]
        allowed = self.retriever._allowed(conn, candidates, policy)
        ordered = sorted((n for n in candidates if n in allowed), key=lambda n: (-ranks[n], n))[:limit]
        rows = self.retriever._rows(conn, ordered)
        return [
            Emergent(memory_id=n, layer=rows[n]["layer"], kind=rows[n]["kind"], content=rows[n]["content"],
                     matched_by=["graph"], score=round(ranks[n], 6),
                     breakdown={"ppr": round(ranks[n], 6), "hops": float(sub.depth.get(n, 0))},
                     path=sub.path_to(n))
            for n in ordered
        ]

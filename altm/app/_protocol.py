"""The runtime protocol: prepare_turn → commit_turn / abort_turn, and drilldown on a bundle's markers.

Everything it changes travels on the log: the user and assistant turns, the use signals and the cycle's
state (control events). It reads recall and the store; it never writes a shard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from altm.app._cycles import CycleBook
from altm.app._errors import BadMarker, CitationError, CycleStateError, IdempotencyConflict, NotFound
from altm.app._reads import ReadPool
from altm.app._recall import MAX_QUERY_CHARS, MAX_REASON_CHARS, RecallService
from altm.core import (
    ControlAction,
    ControlEvent,
    CycleState,
    Deferred,
    Event,
    Role,
    RuntimeCycle,
    Scope,
    TurnEvent,
    derive_id,
    normalise_text,
    sha256_hex,
)
from altm.core.bounds import MAX_NAMED_IDS, content_over_limit
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors import l0_memory_id
from altm.recall import (
    BUNDLE_TOKENS,
    DEFAULT_PRESET,
    ContentType,
    ContextBundle,
    Hit,
    build_bundle,
    check_budget,
    count_tokens,
    detect,
    marker_for,
)
from altm.recall import share_estimate as _share_estimate

Publisher = Callable[[Sequence[Event]], Awaitable[None]]
_MARKER = re.compile(r"^memory://(?P<id>mem_[0-9a-f]{32})#(?P<hash>[0-9a-f]{8,64})$")
DRILLDOWN_MAX_LINES = 50
DRILLDOWN_MAX_TERMS = 64
"""The query terms a drilldown matches lines against (a query of 25,000 terms took seconds: lines × terms)."""

log = logging.getLogger("altm.protocol")


class Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt list ("harmfull") is refused, not ignored

    helpful: list[str] = Field(default_factory=list, max_length=MAX_NAMED_IDS, description="Memory ids that helped")
    harmful: list[str] = Field(default_factory=list, max_length=MAX_NAMED_IDS, description="Memory ids that misled")
    note: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _one_way_each(self) -> Feedback:
        both = sorted(set(self.helpful) & set(self.harmful))
        if both:
            raise ValueError(f"memory ids {both} are marked both helpful and harmful; say which one each was")
        return self


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


def _now() -> datetime:
    return datetime.now(UTC)


TURNS_KEPT = 10_000
"""Turns whose content this process remembers after preparing them (``ProtocolService._said``)."""


def _turn_name(turn: TurnEvent) -> str:
    """A turn's message by who said it: the user's question and the assistant's reply of one turn id."""
    return f"{turn.scope.path}/{turn.session_id}/{turn.turn_id}/{turn.role.value}"


def cycle_event(cycle: RuntimeCycle, timestamp: datetime) -> ControlEvent:
    """A cycle's state as a control event (one event id per state, so a retry publishes the same event)."""
    return ControlEvent(
        event_id=derive_id("ctl", cycle.cycle_id, "cycle", cycle.state.value), scope=cycle.scope, timestamp=timestamp,
        action=ControlAction.CYCLE, target_ids=(cycle.cycle_id,), session_id=cycle.session_id,
        payload=cycle.model_dump(mode="json"))


class ProtocolService:
    def __init__(self, recall: RecallService, publish: Publisher, chat: ChatModel, cycles: CycleBook, *,
                 max_content_bytes: int, reads: ReadPool) -> None:
        self.recall = recall
        self.reads = reads  # recall's reads run there, off the event loop
        self.publish = publish
        self.chat = chat
        self.cycles = cycles
        self.max_content_bytes = max_content_bytes  # a turn over it is refused before it is published
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}  # by cycle id or turn, with its users: ``_one_at_a_time``
        self._turns: OrderedDict[str, str] = OrderedDict()  # turn → content hash, as this process prepared it

    @contextlib.asynccontextmanager
    async def _one_at_a_time(self, *names: str) -> AsyncIterator[None]:
        """One caller at a time per cycle (and per turn of a prepare): each checks the cycle's state, publishes
        and remembers the new state before the next looks (a publish suspends on Kafka: two prepares of one key,
        a commit and an abort, or two commits all succeeded). Taken in the order given."""
        async with contextlib.AsyncExitStack() as held:
            for name in names:
                lock, users = self._held.get(name) or (asyncio.Lock(), 0)
                self._held[name] = (lock, users + 1)
                held.callback(self._release, name)  # after the lock is released (last in, first out)
                await held.enter_async_context(lock)
            yield

    def _release(self, name: str) -> None:
        lock, users = self._held[name]
        if users > 1:
            self._held[name] = (lock, users - 1)
        else:
            del self._held[name]

    def _said(self, turn: Event) -> None:
        """Remember what a prepared turn said (bounded): another key may not give it new content before the writer
        stores it."""
        if isinstance(turn, TurnEvent):
            self._turns[_turn_name(turn)] = sha256_hex(turn.content.encode())
            self._turns.move_to_end(_turn_name(turn))
            while len(self._turns) > TURNS_KEPT:
                self._turns.popitem(last=False)

    def _turn_unused(self, turn: TurnEvent, key: str) -> None:
        """A turn id names one message of each speaker: a prepare of a stored turn with other content, or a commit
        of another reply to a turn already answered, under another key, is a conflict (the writer would refuse the
        message as a change of an append-only L0 row, after the caller was told it was prepared or committed: a
        regenerated answer was lost that way)."""
        done = "prepared" if turn.role is Role.USER else "answered"
        said = self._turns.get(_turn_name(turn))
        if said is not None and said != sha256_hex(turn.content.encode()):  # said here, maybe not stored yet
            raise IdempotencyConflict(
                f"turn {turn.turn_id!r} of session {turn.session_id!r} was {done} with other content; idempotency "
                f"key {key!r} cannot give it new content: use a new turn id")
        try:
            stored = self.recall.memory(turn.scope, l0_memory_id(turn))
        except NotFound:
            if self.recall.buried(turn.scope, l0_memory_id(turn)):  # the writer refuses its id for any content
                raise IdempotencyConflict(
                    f"turn {turn.turn_id!r} of session {turn.session_id!r} was {done} and that message erased; "
                    f"idempotency key {key!r} cannot give it new content: use a new turn id") from None
            return
        if stored["content"] != turn.content:
            raise IdempotencyConflict(
                f"turn {turn.turn_id!r} of session {turn.session_id!r} is stored {done} with other content; "
                f"idempotency key {key!r} cannot give it new content: use a new turn id")

    def _check_content(self, content: str) -> None:
        if (why := content_over_limit(content, self.max_content_bytes)) is not None:
            raise ValueError(why)

    async def _model_compressions(self, scope: Scope, hits: Sequence[Hit], query: str, token_budget: int
                                  ) -> dict[str, str]:
        """Prose too long for its share, compressed by the summarisation (L1) model when one is configured: all
        at once, for at most the task's timeout in all (the extractive compression stands in, labelled as such,
        for any that failed or is not back by then: a hung model costs a turn one timeout, not one per memory
        and retry)."""
        if not self.chat.serves(ModelTask.L1):
            return {}
        share = _share_estimate(len(hits), token_budget)
        long = [hit for hit in hits if detect(hit.content) is ContentType.PROSE and count_tokens(hit.content) > share]
        calls = {hit.memory_id: asyncio.ensure_future(self._compressed(scope, hit, query, share)) for hit in long}
        if not calls:
            return {}
        try:
            done, late = await asyncio.wait(calls.values(), timeout=self.chat.timeout_s(ModelTask.L1))
        finally:
            for call in calls.values():
                call.cancel()  # those not back in time (or all: the prepare itself was cancelled)
            await asyncio.gather(*calls.values(), return_exceptions=True)
        if late:
            log.warning("%d of %d model compressions were not back within the L1 timeout; the extractive "
                        "compression stands in", len(late), len(calls))
        return {mid: text for mid, call in calls.items() if call in done and (text := call.result()) is not None}

    async def _compressed(self, scope: Scope, hit: Hit, query: str, share: int) -> str | None:
        """``hit``'s prose compressed to ``share`` tokens by the L1 model; None when the model failed."""
        try:
            result = await self.chat.structured(ModelTask.L1, scope, [
                {"role": "system", "content": f"Compress the memory to at most {share} tokens for an "
                 "assistant's context. Keep names, numbers, dates and decisions; add nothing; answer JSON "
                 "{\"text\": ...}."},
                {"role": "user", "content": f"Question: {query}\n\nMemory:\n{hit.content}"},
            ], CompressedText)
        except Deferred:
            return None
        return result.value.text

    async def prepare_turn(
        self, scope: Scope, session_id: str, turn_id: str, content: str, token_budget: int, *,
        strict_session: bool = False, preset_name: str = DEFAULT_PRESET, idempotency_key: str | None = None,
        timestamp: datetime | None = None,
    ) -> PreparedTurn:
        check_budget(token_budget)  # before anything is published
        if not content:
            raise ValueError("content is empty: the user's message says something")
        self._check_content(content)
        key = idempotency_key or f"{scope.path}/{session_id}/{turn_id}"
        # a caller's own key is namespaced by its scope: another tenant reusing it gets a cycle of its own
        cycle_id = derive_id("cyc", scope.path, "key", key) if idempotency_key else derive_id("cyc", key)
        request_hash = sha256_hex(orjson.dumps(
            [scope.path, session_id, turn_id, content, token_budget, strict_session, preset_name]))
        # one prepare of a cycle (and of a turn) at a time: the second of two with one key answers as a retry
        async with self._one_at_a_time(f"turn:{scope.path}/{session_id}/{turn_id}", cycle_id):
            return await self._prepare(scope, session_id, turn_id, content, token_budget, cycle_id=cycle_id, key=key,
                                       request_hash=request_hash, strict_session=strict_session,
                                       preset_name=preset_name, timestamp=timestamp)

    async def _prepare(self, scope: Scope, session_id: str, turn_id: str, content: str, token_budget: int, *,
                       cycle_id: str, key: str, request_hash: str, strict_session: bool, preset_name: str,
                       timestamp: datetime | None) -> PreparedTurn:
        """A prepare under its cycle's and turn's locks: a retry of the cycle, or a new one published."""
        existing = self.cycles.get(cycle_id)
        if existing is not None:
            if existing.state is CycleState.ABORTED:  # a retry would get a cycle its commit is refused for
                raise CycleStateError(f"cycle {cycle_id} of turn {turn_id!r} was aborted ({existing.abort_reason}); "
                                      "prepare the turn again under a new idempotency key")
            if existing.request_hash != request_hash:
                raise IdempotencyConflict(
                    f"idempotency key {key!r} was used for a different prepare_turn request (cycle {cycle_id}); "
                    "use a new turn id or key")
            return PreparedTurn(cycle_id=cycle_id, bundle=await self._replayed_bundle(existing, content, preset_name),
                                replayed=True)
        # a turn names one message, whichever key prepared it (the turn id is the key without one)
        self._turn_unused(TurnEvent(scope=scope, session_id=session_id, turn_id=turn_id, role=Role.USER,
                                    content=content, timestamp=timestamp or _now()), key)
        # a turn longer than recall's query limit (a deployment's content limit may be higher) recalls by its start
        result = await self.reads.run(self.recall.search, scope, session_id, content[:MAX_QUERY_CHARS],
                                      preset_name=preset_name, strict_session=strict_session)
        rewrites = await self._model_compressions(scope, result.hits, content, token_budget)
        bundle = build_bundle(result.hits, query=content, scope=scope.path, session_id=session_id,
                              preset=preset_name, token_budget=token_budget, rewrites=rewrites)
        BUNDLE_TOKENS.observe(bundle.tokens)
        ts = timestamp or _now()
        cycle = RuntimeCycle(cycle_id=cycle_id, scope=scope, session_id=session_id, turn_id=turn_id,
                             idempotency_key=key, request_hash=request_hash,
                             bundle_memory_ids=tuple(bundle.memory_ids), token_budget=token_budget, created_at=ts)
        events: list[Event] = [TurnEvent(scope=scope, session_id=session_id, turn_id=turn_id, role=Role.USER,
                                         content=content, timestamp=ts, cycle_id=cycle_id)]
        if bundle.items:
            events.append(ControlEvent(
                event_id=derive_id("ctl", cycle_id, "injected"), scope=scope, timestamp=ts,
                action=ControlAction.FEEDBACK, target_ids=tuple(bundle.memory_ids), session_id=session_id,
                payload={"signal": "injected", "cycle_id": cycle_id}))
        events.append(cycle_event(cycle, ts))
        await self.publish(events)
        self.cycles.remember(cycle, bundle)
        self._said(events[0])
        return PreparedTurn(cycle_id=cycle_id, bundle=bundle)

    async def _replayed_bundle(self, cycle: RuntimeCycle, query: str, preset_name: str) -> ContextBundle:
        """The bundle of a retried prepare: the one returned while every memory it shows is still admitted as it
        was shown (an erasure, a forget or a new version since: rebuilt), or rebuilt from its memory ids (those
        still stored) when this process no longer holds it (after a restart or a replay). A bundle made while
        an erasure was on its way to the writer quoted the erased message on every retry."""
        held = self.cycles.bundle(cycle.cycle_id)
        hits = await self.reads.run(self.recall.hits_for, cycle.scope, cycle.session_id, cycle.bundle_memory_ids)
        shown = {hit.memory_id: marker_for(hit.memory_id, hit.content_hash) for hit in hits}
        if held is not None and all(shown.get(item.memory_id) == item.marker for item in held.items):
            return held
        return build_bundle(hits, query=query, scope=cycle.scope.path, session_id=cycle.session_id,
                            preset=preset_name, token_budget=cycle.token_budget)

    async def commit_turn(self, cycle_id: str, assistant_content: str, cited_memory_ids: Sequence[str] = (),
                          feedback: Feedback | None = None) -> CommittedTurn:
        self._check_content(assistant_content)
        if len(cited_memory_ids) > MAX_NAMED_IDS:
            raise ValueError(f"{len(cited_memory_ids)} cited memory ids; a reply cites at most {MAX_NAMED_IDS} (no "
                             "bundle shows more)")
        cycle = self.cycles.find(cycle_id)
        # a commit and an abort of one cycle, and two commits of one turn's cycles (a turn has one reply): the
        # second sees the first (the turn's lock, then the cycle's, in prepare_turn's order)
        async with self._one_at_a_time(f"turn:{cycle.scope.path}/{cycle.session_id}/{cycle.turn_id}", cycle_id):
            return await self._commit(cycle_id, assistant_content, cited_memory_ids, feedback)

    async def _commit(self, cycle_id: str, assistant_content: str, cited_memory_ids: Sequence[str],
                      feedback: Feedback | None) -> CommittedTurn:
        cycle = self.cycles.find(cycle_id)
        cited = list(dict.fromkeys(cited_memory_ids))
        commit_hash = sha256_hex(orjson.dumps(
            [assistant_content, cited, feedback.model_dump() if feedback else None]))
        if cycle.state is CycleState.ABORTED:
            raise CycleStateError(f"cycle {cycle_id} was aborted ({cycle.abort_reason}); it cannot be committed")
        if cycle.state is CycleState.COMMITTED:
            if cycle.commit_hash == commit_hash:
                return CommittedTurn(cycle_id=cycle_id, cited_memory_ids=cited, replayed=True)
            raise IdempotencyConflict(f"cycle {cycle_id} is already committed with different content")
        allowed = set(cycle.bundle_memory_ids)
        named = [*cited, *((*feedback.helpful, *feedback.harmful) if feedback is not None else ())]
        foreign = [m for m in dict.fromkeys(named) if m not in allowed]
        if foreign:
            listed = ", ".join(foreign[:10]) + (f" and {len(foreign) - 10} more" if len(foreign) > 10 else "")
            raise CitationError(f"memory ids {listed} were not in the bundle of cycle {cycle_id}; cite only "
                                f"memories the bundle showed ({len(allowed)} ids)")
        ts = _now()
        # the reply is dated by its exchange, the time of the message it answers (a host-dated session's replies
        # were dated by the wall clock, years after their questions and after every later question); it follows
        # that message in conversation order (same turn id, the user's first: altm.store's conversation order)
        said = cycle.created_at
        reply = TurnEvent(scope=cycle.scope, session_id=cycle.session_id, turn_id=cycle.turn_id, role=Role.ASSISTANT,
                          content=assistant_content, timestamp=said, cycle_id=cycle_id, cited_memory_ids=tuple(cited))
        # another cycle of the turn was committed with another reply
        self._turn_unused(reply, cycle.idempotency_key or cycle.cycle_id)
        events: list[Event] = [reply]
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
        closed = cycle.model_copy(update={"state": CycleState.COMMITTED, "commit_hash": commit_hash, "closed_at": ts})
        events.append(cycle_event(closed, ts))
        await self.publish(events)
        self.cycles.remember(closed)
        self._said(reply)
        return CommittedTurn(cycle_id=cycle_id, cited_memory_ids=cited)

    async def abort_turn(self, cycle_id: str, reason: str) -> RuntimeCycle:
        if not reason or len(reason) > MAX_REASON_CHARS:
            raise ValueError(f"an abort reason is 1 to {MAX_REASON_CHARS} characters, not {len(reason)}")
        async with self._one_at_a_time(cycle_id):
            cycle = self.cycles.find(cycle_id)
            if cycle.state is CycleState.ABORTED:
                return cycle
            if cycle.state is CycleState.COMMITTED:
                raise CycleStateError(f"cycle {cycle_id} is already committed; it cannot be aborted")
            ts = _now()
            closed = cycle.model_copy(update={"state": CycleState.ABORTED, "abort_reason": reason, "closed_at": ts})
            await self.publish([cycle_event(closed, ts)])
            self.cycles.remember(closed)
            return closed

    def drilldown(self, marker: str, scope: Scope, query: str | None = None) -> Drilldown:
        m = _MARKER.match(marker.strip())
        if m is None:
            raise BadMarker(f"{marker!r} is not a marker; expected memory://<memory_id>#<content_hash>")
        memory_id, hash_prefix = m.group("id"), m.group("hash")
        row = self.recall.memory(scope, memory_id)
        if not str(row["content_hash"]).startswith(hash_prefix):
            raise BadMarker(f"marker {marker} is stale: the memory's content changed since it was issued")
        content = str(row["content"])
        lines = content.splitlines()
        if query:
            # the query's distinct terms, the first DRILLDOWN_MAX_TERMS of them, against each line normalised once
            # (NFKC and casefolded: a composed query finds a decomposed line, "AB-12345" a fullwidth one)
            terms = list(dict.fromkeys(re.findall(r"\w{3,}", normalise_text(query))))[:DRILLDOWN_MAX_TERMS]
            matching = [ln for ln, low in ((ln, normalise_text(ln)) for ln in lines) if any(t in low for t in terms)
                        ][:DRILLDOWN_MAX_LINES]
            return Drilldown(memory_id=memory_id, marker=marker, lines=matching, total_lines=len(lines))
        return Drilldown(memory_id=memory_id, marker=marker, content=content, total_lines=len(lines))


__all__ = ["CommittedTurn", "Drilldown", "Feedback", "NotFound", "PreparedTurn", "ProtocolService", "Publisher"]

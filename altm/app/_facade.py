"""The application as one object: the runtime protocol, recall and administration behind a thin facade.

``MemoryApp`` keeps the Python API small (``prepare_turn``, ``commit_turn``, ``search``, ``erase``…) while
each concern lives in its own service: :class:`ProtocolService`, :class:`RecallService` and
:class:`AdminService`. Build it with :func:`altm.open_embedded` or :func:`altm.open_deployment`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from altm.app._admin import AdminService
from altm.app._cycles import CycleBook
from altm.app._protocol import CommittedTurn, Drilldown, Feedback, PreparedTurn, ProtocolService, Publisher
from altm.app._reads import ReadPool
from altm.app._recall import RecallService
from altm.core import RuntimeCycle, Scope, Settings
from altm.models import ChatModel, NoChat
from altm.recall import DEFAULT_PRESET, PREPARE_SECONDS, Emergent, Retriever, SearchResult, span
from altm.store import ShardSet

P = ParamSpec("P")
T = TypeVar("T")


class MemoryApp:
    """Long-term memory for one deployment: what a host agent, an operator and the interfaces call."""

    def __init__(self, settings: Settings, shards: ShardSet, retriever: Retriever, publish: Publisher,
                 chat: ChatModel | None = None) -> None:
        self.settings = settings
        self.cycles = CycleBook(shards)
        self.recall = RecallService(shards, retriever)
        self.reads = ReadPool(settings.read_threads, after=shards.settle)
        self.protocol = ProtocolService(self.recall, publish, chat or NoChat(), self.cycles,
                                        max_content_bytes=settings.max_content_bytes, reads=self.reads)
        self.admin = AdminService(settings, shards, self.recall, publish, self.cycles)

    async def read(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """One of this app's reads (``search``, ``drilldown``, ``list_memories``, …) off the event loop, in one
        snapshot of the shards it reads: what the servers call, so one long read holds no other request (the
        synchronous methods stay for scripts and the CLI). ``prepare_turn`` recalls this way itself."""
        return await self.reads.run(fn, *args, **kwargs)

    def close(self) -> None:
        """Wait for the reads running and end their threads (the deployment closes the shards after it)."""
        self.reads.close()

    # -- runtime protocol ------------------------------------------------------------------------------
    async def prepare_turn(self, scope: Scope, session_id: str, turn_id: str, content: str, token_budget: int, *,
                           strict_session: bool = False, preset_name: str = DEFAULT_PRESET,
                           idempotency_key: str | None = None, timestamp: datetime | None = None) -> PreparedTurn:
        with PREPARE_SECONDS.time(), span("altm.prepare_turn", {
                "altm.preset": preset_name, "altm.token_budget": token_budget}) as current:
            prepared = await self.protocol.prepare_turn(scope, session_id, turn_id, content, token_budget,
                                                        strict_session=strict_session, preset_name=preset_name,
                                                        idempotency_key=idempotency_key, timestamp=timestamp)
            current.set_attributes({"altm.bundle.items": len(prepared.bundle.items),
                                 "altm.bundle.tokens": prepared.bundle.tokens, "altm.replayed": prepared.replayed})
            return prepared

    async def commit_turn(self, cycle_id: str, assistant_content: str, cited_memory_ids: Sequence[str] = (),
                          feedback: Feedback | None = None) -> CommittedTurn:
        with span("altm.commit_turn", {"altm.cited": len(cited_memory_ids)}):
            return await self.protocol.commit_turn(cycle_id, assistant_content, cited_memory_ids, feedback)

    async def abort_turn(self, cycle_id: str, reason: str) -> RuntimeCycle:
        return await self.protocol.abort_turn(cycle_id, reason)

    def find_cycle(self, cycle_id: str) -> RuntimeCycle:
        return self.cycles.find(cycle_id)

    def drilldown(self, marker: str, scope: Scope, query: str | None = None) -> Drilldown:
        return self.protocol.drilldown(marker, scope, query)

    # -- recall ----------------------------------------------------------------------------------------
    def search(self, scope: Scope, session_id: str | None, text: str, *, preset_name: str = DEFAULT_PRESET,
               top_k: int | None = None, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        return self.recall.search(scope, session_id, text, preset_name=preset_name, top_k=top_k,
                                  strict_session=strict_session, as_of=as_of, known_at=known_at)

    def emerge(self, scope: Scope, query: str, *, session_id: str | None = None, seed_limit: int = 5,
               max_hops: int = 2, limit: int = 10) -> list[Emergent]:
        return self.recall.emerge(scope, query, session_id=session_id, seed_limit=seed_limit, max_hops=max_hops,
                                  limit=limit)

    def list_memories(self, scope: Scope, *, session_id: str | None = None, layer: str | None = None,
                      kind: str | None = None, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        return self.recall.list_memories(scope, session_id=session_id, layer=layer, kind=kind, limit=limit,
                                         offset=offset)

    def review_queue(self, scope: Scope, *, limit: int = 50) -> dict[str, Any]:
        return self.recall.review_queue(scope, limit=limit)

    def governance_events(self, scope: Scope, *, limit: int = 200) -> list[dict[str, Any]]:
        return self.recall.governance_events(scope, limit=limit)

    # -- administration (control events on the log) -----------------------------------------------------
    async def feedback(self, scope: Scope, memory_ids: Sequence[str], signal: str, note: str | None = None) -> str:
        return await self.admin.feedback(scope, list(memory_ids), signal, note)

    async def erase(self, scope: Scope, target: str, *, memory_id: str | None = None,
                    session_id: str | None = None, reason: str = "erasure requested") -> str:
        request = await self.admin.erase(scope, target, memory_id=memory_id, session_id=session_id, reason=reason)
        return request.event_id

    async def review_decide(self, scope: Scope, item_id: str, decision: str, note: str | None = None) -> str:
        return (await self.admin.review_decide(scope, item_id, decision, note)).event_id

    async def rollback(self, scope: Scope, decision_id: str, reason: str = "rolled back by an operator") -> str:
        return (await self.admin.rollback(scope, decision_id, reason)).event_id

"""Runtime cycles: their state goes on the log (control events the writer stores, so a replay rebuilds
them); this process also remembers the cycles it prepared, with their bundles, for safe retries and for a
commit that follows its prepare before the writer has stored it."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

import orjson

from altm.app._errors import UnknownCycle
from altm.core import CycleState, Role, RuntimeCycle, Scope, TurnEvent
from altm.pipeline.processors import l0_memory_id
from altm.recall import ContextBundle
from altm.store import CycleQueries, MemoryQueries, ShardSet

_ORDER = {CycleState.PREPARED: 0, CycleState.COMMITTED: 1, CycleState.ABORTED: 1}
EVICT_SCAN = 256
"""How many of the oldest cycles over the capacity one eviction looks at (see ``CycleBook._evict``)."""
BUNDLE_BYTES_KEPT = 64 * 1024 * 1024
"""The text of the bundles a book keeps at most (the oldest let go first, their cycles kept): a caller sizes a
bundle with its token budget (up to 200,000: some 800 KB), and 10,000 such cycles held some 7 GiB."""


def _size(bundle: ContextBundle | None) -> int:
    """What a bundle's text weighs (its rendered text and its items' texts)."""
    return 0 if bundle is None else len(bundle.rendered) + sum(len(item.text) for item in bundle.items)


def _stored(row: dict[str, object]) -> RuntimeCycle:
    return RuntimeCycle(
        cycle_id=str(row["cycle_id"]),
        scope=Scope(tenant_id=str(row["tenant_id"]), workspace_id=str(row["workspace_id"]),
                    user_id=str(row["user_id"]), agent_id=str(row["agent_id"])),
        session_id=str(row["session_id"]), turn_id=str(row["turn_id"]), state=CycleState(str(row["state"])),
        idempotency_key=row["idempotency_key"], request_hash=str(row["request_hash"]),
        bundle_memory_ids=tuple(orjson.loads(str(row["bundle_memory_ids"]))),
        token_budget=int(str(row["token_budget"])), created_at=datetime.fromisoformat(str(row["created_at"])),
        closed_at=datetime.fromisoformat(str(row["closed_at"])) if row["closed_at"] else None,
        abort_reason=row["abort_reason"], commit_hash=row["commit_hash"],
    )


def unknown_cycle(cycle_id: str) -> UnknownCycle:
    """The one answer for a cycle id the caller may not use, whether it exists elsewhere or not at all."""
    return UnknownCycle(f"unknown cycle {cycle_id!r}: prepare_turn returns the cycle id to commit or abort")


class CycleBook:
    """The cycles this process touched (bounded, most recent kept) and those the writer stored."""

    def __init__(self, shards: ShardSet, capacity: int = 10_000) -> None:
        self._stored = CycleQueries(shards)
        self._memories = MemoryQueries(shards)
        self._capacity = capacity
        self._recent: OrderedDict[str, tuple[RuntimeCycle, ContextBundle | None]] = OrderedDict()
        self.bundle_bytes_kept = BUNDLE_BYTES_KEPT
        self._bundle_bytes = 0

    def get(self, cycle_id: str) -> RuntimeCycle | None:
        """The most advanced state known of a cycle: this process's or the store's (None: unknown, or taken by
        an erasure of its session, agent or user, whichever process published it)."""
        mine = self._recent.get(cycle_id)
        row = self._stored.find(cycle_id)
        stored = _stored(row) if row is not None else None
        if mine is None:
            return stored
        if stored is None and self._taken(mine[0]):
            self._drop(cycle_id)
            return None
        if stored is not None and _ORDER[stored.state] > _ORDER[mine[0].state]:
            return stored
        return mine[0]

    def find(self, cycle_id: str) -> RuntimeCycle:
        cycle = self.get(cycle_id)
        if cycle is None:
            raise unknown_cycle(cycle_id)
        return cycle

    def bundle(self, cycle_id: str) -> ContextBundle | None:
        """The bundle this process returned for the cycle, if it still holds it."""
        entry = self._recent.get(cycle_id)
        return entry[1] if entry is not None else None

    def remember(self, cycle: RuntimeCycle, bundle: ContextBundle | None = None) -> None:
        previous = self._recent.pop(cycle.cycle_id, None)
        self._bundle_bytes -= _size(previous[1] if previous else None)
        kept = bundle if bundle is not None else (previous[1] if previous else None)
        self._recent[cycle.cycle_id] = (cycle, kept)
        self._bundle_bytes += _size(kept)
        while len(self._recent) > self._capacity and self._evict():
            pass
        self._let_bundles_go()

    def _let_bundles_go(self) -> None:
        """The oldest bundles let go (their cycles kept) until what is kept weighs no more than
        ``bundle_bytes_kept``; the newest is kept whatever it weighs (its prepare's retry returns it)."""
        if self._bundle_bytes <= self.bundle_bytes_kept:
            return
        for cycle_id, (cycle, bundle) in list(self._recent.items())[:-1]:
            if bundle is not None:
                self._recent[cycle_id] = (cycle, None)
                self._bundle_bytes -= _size(bundle)
                if self._bundle_bytes <= self.bundle_bytes_kept:
                    return

    def _drop(self, cycle_id: str) -> None:
        _, bundle = self._recent.pop(cycle_id)
        self._bundle_bytes -= _size(bundle)

    def _evict(self) -> bool:
        """Forget the oldest cycle among the first ``EVICT_SCAN`` whose state the writer has stored (the store
        answers for it); one whose prepare or close only this process knows is kept, beyond the capacity while
        the writer is behind (evicted, an acknowledged prepare answered 404, and a commit could be made again)."""
        for cycle_id, (cycle, _) in itertools.islice(self._recent.items(), EVICT_SCAN):
            row = self._stored.find(cycle_id)
            if (row is not None and _ORDER[CycleState(str(row["state"]))] >= _ORDER[cycle.state]) or (
                    row is None and self._taken(cycle)):
                self._drop(cycle_id)  # the store answers for it as this process would (or knows it gone)
                return True
        return False

    def _taken(self, cycle: RuntimeCycle) -> bool:
        """An erasure took the cycle, which the store does not hold: its question's message is buried (the
        writer deletes the cycles of an erased session, agent or user; another process may have published it,
        so this book was not told)."""
        question = TurnEvent(scope=cycle.scope, session_id=cycle.session_id, turn_id=cycle.turn_id, role=Role.USER,
                             content="", timestamp=cycle.created_at)
        return self._memories.buried(cycle.scope, l0_memory_id(question))

    def forget_cycles(self, erased: Callable[[RuntimeCycle], bool]) -> None:
        """Drop the cycles an erasure takes (its writer deletes their stored rows: kept here, they could never
        be evicted, and a commit of one would store its reply in the erased session)."""
        for cycle_id in [c for c, (cycle, _) in self._recent.items() if erased(cycle)]:
            self._drop(cycle_id)

    def forget_bundles(self, quotes_erased: Callable[[RuntimeCycle, ContextBundle], bool]) -> None:
        """Drop the bundles that may quote erased memories (a retry rebuilds them from what is left)."""
        for cycle_id, (cycle, bundle) in list(self._recent.items()):
            if bundle is not None and quotes_erased(cycle, bundle):
                self._recent[cycle_id] = (cycle, None)
                self._bundle_bytes -= _size(bundle)

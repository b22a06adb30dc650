"""A writer's judgement of scene proposals over a real shard: atoms stored directly, scenes rendered as govern
renders them, tombstones made by ``bury`` (as ``benchmarks/_guard.py`` does for single memories)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from altm.core import Kind, Layer, MemoryUnit, Method, Provenance, Role, Scope, content_hash, derive_id, scene
from altm.core.settings import Settings
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.pipeline.writer.guard import GuardVerdict, WriteGuard, bury
from altm.pipeline.writer.ops._base import OpContext, Rejection
from altm.pipeline.writer.ops.memory import _validate
from altm.store import Shard, memory_to_row, shard_path

BENCH = Scope.parse("scene/guard/user/agent")
AT = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def unit(text: str, layer: Layer, kind: Kind, session: str | None, *, evidence: tuple[str, ...] = (),
          attributes: dict[str, object] | None = None, tag: str = "") -> MemoryUnit:
    return MemoryUnit(
        memory_id=derive_id("mem", layer.value, kind.value, text, tag), scope=BENCH, session_id=session,
        layer=layer, kind=kind, content=text, content_hash=content_hash(text), role=Role.USER.value,
        attributes=attributes or {}, evidence=evidence, valid_from=AT,
        provenance=Provenance(method=Method.HEURISTIC, processor="test"))


class SceneBench:
    def __init__(self, shard: Shard, settings: Settings) -> None:
        self.shard, self.settings, self.guard = shard, settings, WriteGuard()

    def erase(self, text: str) -> None:
        with self.shard.transaction() as tx:
            bury(tx, memory_to_row(unit(text, Layer.L0, Kind.MESSAGE, "s1"), AT), reason="session erased: test",
                 at=AT.isoformat())

    def atom(self, session: str | None, kind: Kind, text: str) -> MemoryUnit:
        msg = unit(f"said: {text}", Layer.L0, Kind.MESSAGE, session, tag=str(session))
        atom = unit(text, Layer.L2, kind, session, evidence=(msg.memory_id,), tag=str(session))
        with self.shard.transaction() as tx:
            for m in (msg, atom):
                tx.insert_memory(memory_to_row(m, AT), at=AT.isoformat(), proposal_id="test", actor="test")
        return atom

    def scene(self, anchor: str, atoms: list[MemoryUnit]) -> MemoryUnit:
        """As govern renders it."""
        sessions = sorted({a.session_id or "" for a in atoms})
        lines = [scene.member(a.session_id, a.kind.value, a.content) for a in atoms]
        return unit(scene.render(anchor, sessions, lines), Layer.L3, Kind.SCENE, None,
                    evidence=tuple(a.memory_id for a in atoms),
                    attributes={"anchor": anchor, "anchor_node_id": "node_x", "sessions": sessions})

    def validate(self, mem: MemoryUnit) -> MemoryUnit | Rejection:
        ctx = OpContext(now=AT.isoformat(), settings=self.settings, guard=self.guard, rules=LifecycleRules())
        with self.shard.transaction() as tx:
            try:
                return _validate(tx, mem, ctx)[0]
            except Rejection as exc:
                return exc

    def verdict(self, mem: MemoryUnit) -> GuardVerdict | None:
        """What the guard flagged of ``mem`` (held for review, not refused)."""
        ctx = OpContext(now=AT.isoformat(), settings=self.settings, guard=self.guard, rules=LifecycleRules())
        with self.shard.transaction() as tx:
            return _validate(tx, mem, ctx)[1]


@contextmanager
def scene_bench(settings: Settings) -> Iterator[SceneBench]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    shard = Shard(shard_path(settings.data_dir, 0), 0).open()
    try:
        yield SceneBench(shard, settings)
    finally:
        shard.close()

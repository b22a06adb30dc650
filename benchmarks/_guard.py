"""The real write guard over a real shard, for the guard benchmarks: one user's anti-patterns and erased
messages are stored the way the writer stores them, and a candidate text is checked as a derived memory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from altm.core import Kind, Layer, MemoryUnit, Method, Provenance, Role, Scope, content_hash, derive_id
from altm.pipeline.writer import TextSimilarity
from altm.pipeline.writer.guard import WriteGuard, bury
from altm.store import Shard, memory_to_row, shard_path

SCOPE = Scope.parse("bench/guard/user/agent")
Decision = Literal["refuse", "flag", "admit"]


class GuardBench:
    """A shard with one user's anti-patterns and tombstones, and the writer's guard (with or without meaning)."""

    def __init__(self, data_dir: Path, similarity: TextSimilarity | None) -> None:
        self.shard = Shard(shard_path(data_dir, 0), 0).open()
        self.guard = WriteGuard(similarity=similarity)
        self._at = datetime.now(UTC).isoformat()

    def close(self) -> None:
        self.shard.close()

    def add_anti_pattern(self, pattern: str, why_bad: str) -> str:
        mem = _memory(f"Avoid: {pattern}", Layer.L2, Kind.ANTI_PATTERN,
                      attributes={"pattern": pattern, "why_bad": why_bad}, evidence=("mem_bench_evidence",))
        with self.shard.transaction() as tx:
            tx.insert_memory(memory_to_row(mem, datetime.now(UTC)), at=self._at, proposal_id="bench",
                             actor="bench")
        return mem.memory_id

    def erase(self, text: str) -> None:
        """Bury an L0 message as an erasure does (its keyed hashes only)."""
        mem = _memory(text, Layer.L0, Kind.MESSAGE)
        with self.shard.transaction() as tx:
            bury(tx, memory_to_row(mem, datetime.now(UTC)), reason="session erased: bench", at=self._at)

    def decide(self, text: str, kind: Kind = Kind.FACT) -> tuple[Decision, str]:
        """What the writer would do with ``text`` as a derived memory, and why."""
        mem = _memory(text, Layer.L2, kind, evidence=("mem_bench_evidence",))
        with self.shard.transaction() as tx:
            verdict = self.guard.check(tx, mem)
        if verdict is None:
            return "admit", ""
        return verdict.action, verdict.reason


@contextmanager
def guard_bench(data_dir: Path, similarity: TextSimilarity | None) -> Iterator[GuardBench]:
    bench = GuardBench(data_dir, similarity)
    try:
        yield bench
    finally:
        bench.close()


def _memory(text: str, layer: Layer, kind: Kind, *, attributes: dict[str, str] | None = None,
            evidence: tuple[str, ...] = ()) -> MemoryUnit:
    return MemoryUnit(
        memory_id=derive_id("mem", layer.value, kind.value, text), scope=SCOPE, session_id="bench", layer=layer,
        kind=kind, content=text, content_hash=content_hash(text), role=Role.USER.value,
        attributes=attributes or {}, evidence=evidence, provenance=Provenance(method=Method.HEURISTIC,
                                                                              processor="bench"))

"""A persona facet moved onto another atom of its statement keeps the vector of the words it no longer says.

The user tells the ``coder`` agent "I prefer tabs over spaces in Python." and, later, tells the ``writer`` agent
the same statement in other characters ("... in Ｐｙｔｈｏｎ.": full-width letters, equal once NFKC-normalised
and casefolded, so the same statement and the same facet id). The facet (L4) cites the coder's atom and is
embedded with the coder's words. When that atom goes — the coder agent is erased (``_facets_kept``,
altm/pipeline/writer/ops/erasure.py:53-59), a reviewer rejects it (``_facets_following``,
altm/pipeline/writer/ops/governance.py:194-197) or retention forgets it (``_repair_evidence``,
altm/pipeline/writer/ops/lifecycle.py:193-196) — the writer keeps the facet under the same id, standing on the
writer's atom, with that atom's content ("Preference (tabs): I prefer tabs over spaces in Ｐｙｔｈｏｎ."), its
scope and time. The change that carries the new version is an ``also_changed`` one of the erase / review /
forget op (altm/pipeline/writer/_apply.py:542), and the embed stage only embeds committed ``upsert_memory``
changes and a rollback's (``EmbedProcessor.accepts`` and ``process_batch``,
altm/pipeline/processors/embed.py:88-105). So the facet's point keeps the old content's vector (cosine 0.82
with the new content's), the old ``content_hash`` and the erased agent's ``agent_id`` in its payload; after the
erasure, the vector index still holds the embedding of the erased agent's words for a memory that stays. A
replay (``altm.wiring.replay_into``), which cannot open the erased agent's turns, embeds the facet from the
writer's atom: its point's vector differs from the source's (the state hash, which covers point ids only, is
the same).

Expected: after any committed change, every stored memory's point is the embedding of its current content
(payload ``content_hash`` equal to the row's), as a store that never heard the removed atom has it; e.g. embed
accepts every committed change that carries a memory (``event.memory`` of any op) and re-embeds it when its
content hash differs from the point's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from altm.core import Role, Scope, Settings, TurnEvent
from altm.models import shared_local_minilm
from altm.vectors import VectorPoint
from altm.vectors.edge import EdgeVectorIndex
from altm.wiring import Deployment, replay_into
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
FIRST = "I prefer tabs over spaces in Python."
AGAIN = "I prefer tabs over spaces in Ｐｙｔｈｏｎ."  # the same statement once normalised, other characters


def _turn(scope: Scope, session: str, i: int, text: str, at: datetime) -> TurnEvent:
    return TurnEvent(scope=scope, session_id=session, turn_id=f"{session}-t{i}", role=Role.USER, content=text,
                     timestamp=at)


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"retention_days_l2": 45.0})


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def _stale_points(s: Settings, d: Deployment) -> list[str]:
    """Every stored memory whose point is missing or is not the embedding of its current content."""
    assert d.vectors is not None and d.models.embedding is not None
    stored = rows(s.data_dir, "SELECT memory_id, layer, content, content_hash FROM memories")
    points = d.vectors.points([m["memory_id"] for m in stored])
    fresh = await d.models.embedding.aembed([m["content"] for m in stored])
    stale = []
    for m, vector in zip(stored, fresh, strict=True):
        point = points.get(m["memory_id"])
        if point is None:
            stale.append(f"{m['layer']} {m['content']!r}: no point")
        elif point.payload.get("content_hash") != m["content_hash"] or _cosine(point.vector, vector) < 0.999:
            stale.append(f"{m['layer']} {m['content']!r}: point of other content (cosine "
                         f"{_cosine(point.vector, vector):.3f}, payload agent {point.payload.get('agent_id')})")
    return stale


def _points(data_dir: Path) -> dict[str, VectorPoint]:
    model = shared_local_minilm()
    index = EdgeVectorIndex(data_dir / "vectors", model.collection, model.dim, read_only=True)
    index.open()
    try:
        return index.points(index.ids())
    finally:
        index.close()


async def _recited_after(settings: Settings, how: str) -> tuple[str, list[str]]:
    """The facet's content after the coder's atom went (``how``), and the stale points then."""
    s = _settings(settings)
    async with embedded(s) as d:
        rt, app = runtime_of(d), d.app
        await rt.publish([_turn(SCOPE, "a1", 1, FIRST, T0 - timedelta(days=60))])
        await rt.run_until_idle()
        await rt.publish([_turn(WRITER, "b1", 2, AGAIN, T0)])
        await rt.run_until_idle()
        assert await _stale_points(s, d) == []
        if how == "erase":
            await app.erase(SCOPE, "agent")
        elif how == "reject":
            (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (FIRST,))
            await app.review_decide(SCOPE, atom["memory_id"], "reject", note="mis-heard")
        else:
            assert await app.admin.retention(T0 + timedelta(days=1)) > 0
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L4'")
        return facet["content"], await _stale_points(s, d)


async def test_a_facet_kept_by_an_agent_erasure_is_embedded_again(settings: Settings) -> None:
    content, stale = await _recited_after(settings, "erase")
    assert content == f"Preference (tabs): {AGAIN}"
    assert stale == [], stale


async def test_a_facet_moved_by_a_reviewers_rejection_is_embedded_again(settings: Settings) -> None:
    content, stale = await _recited_after(settings, "reject")
    assert content == f"Preference (tabs): {AGAIN}"
    assert stale == [], stale


async def test_a_facet_repaired_by_retention_is_embedded_again(settings: Settings) -> None:
    content, stale = await _recited_after(settings, "forget")
    assert content == f"Preference (tabs): {AGAIN}"
    assert stale == [], stale


async def test_a_replay_after_the_agent_erasure_has_the_source_s_points(settings: Settings, tmp_path: Path) -> None:
    await _recited_after(settings, "erase")
    await replay_into(settings.data_dir, tmp_path / "rebuilt", settings=_settings(settings))
    source, rebuilt = _points(settings.data_dir), _points(tmp_path / "rebuilt")
    assert source.keys() == rebuilt.keys()
    differing = sorted(m for m in source if _cosine(source[m].vector, rebuilt[m].vector) < 0.999)
    assert differing == [], f"points whose vector the replay computed otherwise: {differing}"

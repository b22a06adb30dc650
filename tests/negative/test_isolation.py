"""Negative evaluation: material of other scopes must never appear in bundles, listings or drilldowns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from altm.app import MemoryApp, NotFound
from altm.core import Scope
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import make_turn

ME = Scope.parse("acme/platform/dana/coder")
OTHER_TENANT = Scope.parse("globex/platform/dana/coder")
OTHER_USER = Scope.parse("acme/platform/erin/coder")
OTHER_AGENT = Scope.parse("acme/platform/dana/reviewer")

QUERY = "zebracanary billing deadline moved decided prefer"
CANARIES = {
    "tenant": (OTHER_TENANT, "s1",
               "Zebracanary tenant: the billing deadline moved to March; we decided on Rust."),
    "user": (OTHER_USER, "s1", "Zebracanary user: the billing deadline moved to April; I prefer tabs."),
    "agent": (OTHER_AGENT, "s1", "Zebracanary agent: the billing deadline moved to May; we decided on Go."),
    "session": (ME, "s0", "Zebracanary session: the billing deadline moved to June."),
}
MINE = "Zebracanary mine: the billing deadline moved to January; we decided on Python."


@pytest.fixture
async def world(settings: Settings) -> AsyncIterator[MemoryApp]:
    turns = [make_turn(i, text, scope=scope, session=session)
             for i, (scope, session, text) in enumerate(CANARIES.values())]
    turns.append(make_turn(10, MINE, scope=ME, session="s1"))
    async with store_with(settings, turns) as (_, app):
        yield app


def _leaks(texts: list[str], allowed: set[str]) -> list[str]:
    leaked = []
    for name, (_, _, text) in CANARIES.items():
        marker = text.split(":")[0]
        if name not in allowed and any(marker in t for t in texts):
            leaked.append(name)
    return leaked


def _texts(rows: list[dict[str, Any]]) -> list[str]:
    return [str(r["content"]) for r in rows]


async def test_bundles_never_contain_other_scopes(world: MemoryApp) -> None:
    for preset in ("lexical", "hybrid+graph", "conversation"):
        prepared = await world.prepare_turn(ME, "s1", f"q-{preset}", QUERY, 4000, preset_name=preset)
        texts = [i.text for i in prepared.bundle.items]
        assert any("Zebracanary mine" in t for t in texts), preset
        # another session of the same agent may contribute L2-L3 atoms (by design), never its L0/L1
        assert _leaks(texts, {"session"}) == [], preset
        l0_l1 = [i for i in prepared.bundle.items if i.layer in ("L0", "L1")]
        if preset != "conversation":  # that preset reads every session's L0, as the LoCoMo figures do
            assert l0_l1 and all(i.session_id == "s1" for i in l0_l1)
            assert _leaks([i.text for i in l0_l1], set()) == []


async def test_strict_session_limits_every_layer(world: MemoryApp) -> None:
    hits = world.search(ME, "s1", QUERY, preset_name="hybrid+graph", strict_session=True).hits
    assert hits and all(h.session_id == "s1" for h in hits)
    assert _leaks([h.content for h in hits], set()) == []


async def test_listings_never_contain_other_scopes(world: MemoryApp) -> None:
    everything = world.list_memories(ME, limit=500)
    assert any("Zebracanary mine" in t for t in _texts(everything))
    assert _leaks(_texts(everything), {"session"}) == []  # no session given: every session of the agent
    session_only = world.list_memories(ME, session_id="s1", limit=500)
    raw = [r for r in session_only if r["layer"] in ("L0", "L1")]
    assert raw and _leaks(_texts(raw), set()) == []


async def test_drilldown_refuses_markers_of_other_scopes(world: MemoryApp) -> None:
    for name, (scope, session, text) in CANARIES.items():
        if name == "session":
            continue
        rows = world.list_memories(scope, session_id=session, layer="L0", limit=10)
        (row,) = [r for r in rows if r["content"] == text]
        marker = f"memory://{row['memory_id']}#{row['content_hash']}"
        assert world.drilldown(marker, scope).content == text  # its owner can read it
        with pytest.raises(NotFound):  # foreign ids answer exactly like unknown ones
            world.drilldown(marker, ME)


async def test_emergence_stays_in_scope(world: MemoryApp) -> None:
    found = world.emerge(ME, QUERY, limit=50)
    assert _leaks([e.content for e in found], {"session"}) == []


async def test_foreign_ids_answer_exactly_like_unknown_ones(world: MemoryApp) -> None:
    """Ids are deterministic: telling "denied" from "not found" told a caller what exists in other tenants
    (issue 12, bug 5)."""
    scope, _, text = CANARIES["tenant"]
    (row,) = [r for r in world.list_memories(scope, layer="L0") if r["content"] == text]
    foreign, unknown = row["memory_id"], "mem_" + "0" * 32
    marker = f"memory://{foreign}#{row['content_hash']}"
    for name in ("feedback", "erase"):
        answers = []
        for mid in (foreign, unknown):
            with pytest.raises(NotFound) as info:
                if name == "feedback":
                    await world.feedback(ME, [mid], "pin")
                else:
                    await world.erase(ME, "memory", memory_id=mid)
            answers.append(str(info.value).replace(mid, "ID"))
        assert answers[0] == answers[1], name
    with pytest.raises(NotFound) as drilled:
        world.drilldown(marker, ME)
    assert "globex" not in str(drilled.value)  # never echoes the other scope

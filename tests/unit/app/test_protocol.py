from __future__ import annotations

import pytest

from altm.app import (
    BadMarker,
    CitationError,
    CycleStateError,
    Feedback,
    IdempotencyConflict,
    NotFound,
    UnknownCycle,
)
from altm.core import Scope
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [
    make_turn(1, "The deadline for the billing migration is December 15.", session="s1"),
    make_turn(2, "We decided to deploy the new service behind nginx on port 8443.", session="s1"),
    make_turn(3, "I prefer small pull requests under 300 lines.", session="s2"),
]


async def _log_events(rt: object, topic: str) -> list[bytes]:
    return [r.value for r in await rt.log.read_all([topic])]  # type: ignore[attr-defined]


async def test_prepare_commit_cycle(settings: Settings) -> None:
    async with store_with(settings, HISTORY) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s3", "s3-t1", "When is the billing deadline?", 800)
        ids = prepared.bundle.memory_ids
        assert ids and prepared.cycle_id.startswith("cyc_")
        assert any("December 15" in i.text for i in prepared.bundle.items)
        done = await app.commit_turn(prepared.cycle_id, "It is December 15.", [ids[0]],
                                     Feedback(helpful=[ids[0]]))
        assert done.cited_memory_ids == [ids[0]] and not done.replayed
        await rt.run_until_idle()
        turns = [b for b in await _log_events(rt, "altm.turns") if b"s3-t1" in b]
        assert len(turns) == 2  # the user message (prepare) and the assistant message (commit)
        controls = await _log_events(rt, "altm.control")
        assert any(b'"cited_by_agent"' in c for c in controls) and any(b'"injected"' in c for c in controls)
        again = await app.commit_turn(prepared.cycle_id, "It is December 15.", [ids[0]],
                                      Feedback(helpful=[ids[0]]))
        assert again.replayed  # same content: a safe retry
        with pytest.raises(IdempotencyConflict):
            await app.commit_turn(prepared.cycle_id, "Something else.", [])
        with pytest.raises(CycleStateError, match="already committed"):
            await app.abort_turn(prepared.cycle_id, "too late")


async def test_prepare_is_idempotent_per_key(settings: Settings) -> None:
    async with store_with(settings, HISTORY) as (_, app):
        a = await app.prepare_turn(SCOPE, "s3", "t1", "deadline?", 500)
        b = await app.prepare_turn(SCOPE, "s3", "t1", "deadline?", 500)
        assert b.replayed and b.cycle_id == a.cycle_id and b.bundle == a.bundle
        with pytest.raises(IdempotencyConflict, match="different prepare_turn request"):
            await app.prepare_turn(SCOPE, "s3", "t1", "another question", 500)
        with pytest.raises(IdempotencyConflict, match="prepared with other content"):  # a turn names one message
            await app.prepare_turn(SCOPE, "s3", "t1", "another question", 500, idempotency_key="k2")
        c = await app.prepare_turn(SCOPE, "s3", "t2", "another question", 500, idempotency_key="k2")
        assert c.cycle_id != a.cycle_id


async def test_citations_must_come_from_the_bundle(settings: Settings) -> None:
    async with store_with(settings, HISTORY) as (_, app):
        prepared = await app.prepare_turn(SCOPE, "s3", "t1", "deadline?", 500)
        with pytest.raises(CitationError, match="not in the bundle"):
            await app.commit_turn(prepared.cycle_id, "answer", ["mem_" + "0" * 32])
        with pytest.raises(CitationError):
            await app.commit_turn(prepared.cycle_id, "answer", [], Feedback(harmful=["mem_" + "1" * 32]))


async def test_aborted_and_unknown_cycles_cannot_commit(settings: Settings) -> None:
    async with store_with(settings, HISTORY) as (_, app):
        prepared = await app.prepare_turn(SCOPE, "s3", "t1", "deadline?", 500)
        aborted = await app.abort_turn(prepared.cycle_id, "user left")
        assert aborted.state.value == "aborted" and aborted.abort_reason == "user left"
        with pytest.raises(CycleStateError, match="was aborted"):
            await app.commit_turn(prepared.cycle_id, "answer", [])
        with pytest.raises(UnknownCycle):
            await app.commit_turn("cyc_" + "f" * 32, "answer", [])


async def test_drilldown_round_trip_and_refusals(settings: Settings) -> None:
    other = Scope.parse("globex/ops/sam/coder")
    history = [*HISTORY, make_turn(9, "Globex runs on Go.", scope=other, session="g1")]
    async with store_with(settings, history) as (_, app):
        prepared = await app.prepare_turn(SCOPE, "s1", "t9", "billing migration deadline", 500)
        item = prepared.bundle.items[0]
        full = app.drilldown(item.marker, SCOPE)
        assert full.content is not None and full.memory_id == item.memory_id
        lines = app.drilldown(item.marker, SCOPE, query="deadline")
        assert lines.lines is not None and all("deadline" in ln.casefold() for ln in lines.lines)
        with pytest.raises(NotFound):  # another tenant's marker: as if it did not exist
            app.drilldown(item.marker, other)
        with pytest.raises(BadMarker, match="stale"):
            app.drilldown(item.marker.split("#")[0] + "#" + "0" * 64, SCOPE)
        with pytest.raises(BadMarker, match="not a marker"):
            app.drilldown("https://example.org", SCOPE)


async def test_session_policy_per_layer(settings: Settings) -> None:
    async with store_with(settings, HISTORY) as (_, app):
        # L0/L1 of session s1 are invisible from session s3; L2 atoms of s1 are visible across sessions
        hits = app.search(SCOPE, "s3", "billing migration deadline December", preset_name="lexical").hits
        assert hits and all(h.layer not in ("L0", "L1") for h in hits)
        assert any(h.layer == "L2" and h.session_id == "s1" for h in hits)
        same = app.search(SCOPE, "s1", "billing migration deadline December", preset_name="lexical").hits
        assert any(h.layer == "L0" for h in same)
        strict = app.search(SCOPE, "s3", "billing migration deadline", preset_name="lexical",
                            strict_session=True).hits
        assert strict == []
        # L4 facets are shared by the user's agents
        reviewer = Scope.parse("acme/platform/dana/reviewer")
        shared = app.search(reviewer, "r1", "pull requests 300 lines", preset_name="lexical").hits
        assert shared and {h.layer for h in shared} == {"L4"}


async def test_emergence_finds_what_the_query_does_not_match(settings: Settings) -> None:
    turns = [
        make_turn(1, "Project Falcon ships the new ledger on BILL-900.", session="a"),
        make_turn(2, "BILL-900 is blocked by the vendor's rate limits.", session="b"),
        make_turn(3, "Lunch options near the office are limited.", session="c"),
    ]
    async with store_with(settings.model_copy(update={"embedder": "none"}), turns) as (_, app):
        lexical = app.search(SCOPE, None, "Project Falcon ledger", preset_name="lexical").hits
        assert not any("vendor" in h.content for h in lexical)
        found = app.emerge(SCOPE, "Project Falcon ledger")
        assert any("vendor's rate limits" in e.content for e in found)
        e = next(e for e in found if "vendor's rate limits" in e.content)
        assert e.matched_by == ["graph"] and len(e.path) >= 3 and e.breakdown["ppr"] > 0
        assert not any("Lunch" in x.content for x in found)

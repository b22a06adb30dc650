"""A scene gathers stored atoms, and one of them may re-assert an anti-pattern stored after it (an atom is
judged when it is stored, against the anti-patterns stored by then). The scene was refused when it was
recomputed after the anti-pattern reached the writer, and kept, never judged again, when it was stored before:
the state depended on batching (a replay batches the log differently), and a scene naming the anti-pattern's
own atom beside the same line was stored (its negation is in its text) while another was refused. As a
capsule is, a scene that re-asserts an anti-pattern is now held for review in either order, and it re-asserts
one when one of its member atoms does."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.core import Kind, Layer, MemoryUnit, Role, Settings, TurnEvent
from altm.store import memory_to_row
from tests.support.memories import embedded, running, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.scenes import AT, SceneBench, scene_bench, unit
from tests.support.turns import SCOPE, make_turn

SAID = [make_turn(1, "I decided to use pickle for the session cache with Marco.", session="s1"),
        make_turn(2, "I decided to review the session cache with Marco on Friday.", session="s2")]
ANTI = make_turn(3, "Never use pickle for the session cache because unpickling untrusted data runs code.",
                 session="s3")
LATER = make_turn(4, "I decided to call Marco about the deploy next week.", session="s4")


async def _scenes(settings: Settings, batches: Sequence[Sequence[TurnEvent]]) -> list[dict[str, Any]]:
    async with running(settings) as runtime:
        for turns in batches:
            await runtime.publish(list(turns))
            await runtime.run_until_idle()
    assert not rows(settings.data_dir, "SELECT reason FROM rejections")
    return rows(settings.data_dir, "SELECT content, trust_status FROM memories WHERE layer='L3' ORDER BY content")


async def test_a_scene_re_asserting_an_anti_pattern_is_held_whichever_comes_first(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    at_once = await _scenes(s.model_copy(update={"data_dir": tmp_path / "at-once"}), [[*SAID, ANTI, LATER]])
    scene_first = await _scenes(s, [SAID, [ANTI], [LATER]])
    assert scene_first == at_once
    # both scenes list the decision; the session cache's lists the anti-pattern's own atom too, which made its
    # whole text read as speaking against the pattern: each member is judged as an atom now
    assert [(str(r["content"]).split(" — ")[0], r["trust_status"]) for r in scene_first] == [
        ("Scene: Marco", "uncertain"), ("Scene: session cache", "uncertain")], scene_first
    await replayed_equal(s, tmp_path / "replayed")

ANTI_TEXT = ANTI.content
PATTERN: dict[str, object] = {"pattern": "use pickle for the session cache",
                              "why_bad": "unpickling untrusted data runs code"}
MARCO = "SELECT memory_id, trust_status, trust_reason, lc_state FROM memories WHERE layer='L3' " \
        "AND content LIKE 'Scene: Marco %'"


@pytest.fixture
def bench(settings: Settings) -> Iterator[SceneBench]:
    with scene_bench(settings) as b:
        yield b


def _s(settings: Settings, name: str | None = None) -> Settings:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    return s if name is None else s.model_copy(update={"data_dir": settings.data_dir.parent / name})


# from a review of cf210f0 and be15ff4 (each failed on be15ff4)

# 1. the whole-text fallback still reads the anti-pattern's own line as the scene speaking against it

def _anti_atom(b: SceneBench, session: str) -> MemoryUnit:
    msg = unit(f"said: {ANTI_TEXT}", Layer.L0, Kind.MESSAGE, session, tag=session)
    atom = unit(ANTI_TEXT, Layer.L2, Kind.ANTI_PATTERN, session, evidence=(msg.memory_id,), attributes=PATTERN,
                tag=session)
    with b.shard.transaction() as tx:
        for m in (msg, atom):
            tx.insert_memory(memory_to_row(m, AT), at=AT.isoformat(), proposal_id="test", actor="test")
    return atom


def test_a_scene_judged_whole_still_reads_the_anti_patterns_own_atom_as_speaking_against_it(bench: SceneBench) -> None:
    a1 = bench.atom("s1", Kind.DECISION, SAID[0].content)
    a2 = bench.atom("s2", Kind.DECISION, SAID[1].content)
    own = _anti_atom(bench, "s3")
    assert bench.verdict(bench.scene("session cache", [a1, a2, own])) is not None  # held: a1 re-asserts it
    # one more member whose own text holds a checklist line ("- [x] ...", as an LLM extractor keeps it): the
    # lines no longer match the evidence one to one, the scene is judged whole, and the anti-pattern's own line
    # negates the whole text. a1 is still a member, yet the scene is stored unflagged
    checklist = bench.atom("s4", Kind.FACT, "The session cache plan:\n- [x] size it for Marco")
    assert bench.verdict(bench.scene("session cache", [a1, a2, own, checklist])) is not None


def test_a_scene_repaired_by_a_forget_is_not_held_when_judged_again(bench: SceneBench) -> None:
    """Retention's _repair_evidence drops a forgotten atom from a scene's evidence and keeps its text: judged
    again (an anti-pattern stored, an erasure's held_again), it is judged whole, as the fallback above."""
    a1 = bench.atom("s1", Kind.DECISION, SAID[0].content)
    a2 = bench.atom("s2", Kind.DECISION, SAID[1].content)
    own = _anti_atom(bench, "s3")
    stored = bench.scene("session cache", [a1, a2, own])
    with bench.shard.transaction() as tx:
        assert bench.guard.reasserts(tx, stored) is not None
        repaired = stored.model_copy(update={"evidence": (a1.memory_id, own.memory_id)})  # a2 forgotten
        assert bench.guard.reasserts(tx, repaired) is not None  # a1 is still a member and re-asserts it


# 2. a tool's anti-pattern approved by a reviewer: the scenes stored before are never judged again

async def _marco_after(s: Settings, batches: list[list[TurnEvent | str]]) -> list[dict[str, Any]]:
    async with embedded(s) as d:
        rt = runtime_of(d)
        for batch in batches:
            if batch == ["approve"]:
                (a,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
                await d.app.review_decide(SCOPE, a["memory_id"], "approve")
            else:
                await rt.publish([t for t in batch if isinstance(t, TurnEvent)])
            await rt.run_until_idle()
    return [{k: r[k] for k in ("trust_status", "trust_reason")} for r in rows(s.data_dir, MARCO)]


async def test_approving_a_tools_anti_pattern_holds_the_scenes_stored_before(settings: Settings) -> None:
    tool = make_turn(3, ANTI_TEXT, session="s3", role=Role.TOOL)
    # the same atoms either way (s1's atom is stored before the approval in both); only when the scene is
    # formed differs: after the approval it is held, before it stays unflagged for good
    formed_after = await _marco_after(_s(settings, "after"), [[SAID[0]], [tool], ["approve"], [SAID[1]]])
    formed_before = await _marco_after(_s(settings, "before"), [[SAID[0]], [SAID[1]], [tool], ["approve"]])
    assert formed_after and formed_after[0]["trust_status"] == "uncertain", formed_after
    assert formed_before == formed_after


# 3. a reviewer's decision on a held scene is undone when the anti-pattern is erased

@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_a_reviewers_decision_on_a_held_scene_survives_erasing_the_anti_pattern(
        settings: Settings, decision: str) -> None:
    s = _s(settings)
    async with embedded(s) as d:
        rt = runtime_of(d)
        for batch in (SAID, [ANTI]):
            await rt.publish(batch)
            await rt.run_until_idle()
        (marco,) = rows(s.data_dir, MARCO)
        assert marco["trust_status"] == "uncertain"
        await d.app.review_decide(SCOPE, marco["memory_id"], decision)
        await rt.run_until_idle()
        (decided,) = rows(s.data_dir, MARCO)
        (anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
        await d.app.erase(SCOPE, "memory", memory_id=anti["memory_id"])
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, MARCO)
    # expected: the reviewer's verdict stands (verified; or contradicted and out of recall). Actual: the
    # approval's row kept trust_contradicting_id = the anti-pattern, so _verdicts_kept reads it as the guard's
    # verdict and resets it to unverified (a rejected scene is left unverified with lc_state 'rejected')
    assert (after["trust_status"], after["trust_reason"]) == (decided["trust_status"], decided["trust_reason"]), \
        (decided, after)

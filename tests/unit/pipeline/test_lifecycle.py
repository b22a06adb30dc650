"""Lifecycle: citations and feedback move weights and ranks; pins exempt from forgetting; evidence repair."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from altm.app import Feedback
from altm.app.stats import state_hash as stored_hash
from altm.core import Role, TurnEvent
from altm.core.settings import Settings
from altm.pipeline.lifecycle_rules import LifecycleRules
from altm.store import state_rows
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
from tests.support.rows import EVIDENCE
from tests.support.rows import rows as _rows
from tests.support.turns import SCOPE, make_turn

TWINS = [
    make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.", session="s1"),
    make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2"),
]


def running_hash(data_dir: Path) -> str:
    """The state hash of a data dir whose pipeline this test runs (idle): ``altm state-hash`` refuses a data dir
    a pipeline holds; there is no vector index here (no embedder)."""
    return stored_hash(data_dir, None)


def memory_state(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The memory tables of the state (what a rollback restores; its governance trail stays)."""
    rows = state_rows(data_dir)
    return {t: rows[t] for t in ("memories", "evidence_edges", "graph_nodes", "graph_edges", "tombstones",
                                 "lifecycle_signals")}


def test_weight_rules() -> None:
    rules = LifecycleRules()
    base = rules.weight(cited=0, helpful=0, harmful=0, injected=0, pinned=False)
    assert base == 1.0
    assert rules.weight(cited=3, helpful=1, harmful=0, injected=3, pinned=False) > base
    harmed = rules.weight(cited=0, helpful=0, harmful=2, injected=0, pinned=False)
    assert harmed < rules.demote_at and rules.state(harmed, pinned=False, current="active") == "demoted"
    assert rules.weight(cited=0, helpful=0, harmful=5, injected=0, pinned=True) == 1.0
    assert rules.state(0.1, pinned=True, current="active") == "active"  # pinned: never demoted


async def test_a_memory_cited_in_several_cycles_rises_and_a_harmful_one_falls(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TWINS) as (rt, app):
        q = "staging cluster Kubernetes"
        first = [h for h in app.search(SCOPE, "s3", q, preset_name="lexical").hits if h.layer == "L2"]
        assert len(first) == 2
        low = first[-1]  # the twin ranked lower: cite it until it leads
        for i in range(3):
            prepared = await app.prepare_turn(SCOPE, "s3", f"c{i}", q, 2000, preset_name="lexical")
            assert low.memory_id in prepared.bundle.memory_ids
            await app.commit_turn(prepared.cycle_id, "answer", [low.memory_id])
            await rt.run_until_idle()
        after = [h for h in app.search(SCOPE, "s3", q, preset_name="lexical").hits if h.layer == "L2"]
        assert after[0].memory_id == low.memory_id and after[0].breakdown["lifecycle"] > 1.0
        (row,) = _rows(s.data_dir, f"SELECT * FROM memories WHERE memory_id='{low.memory_id}'")
        assert row["lc_cited"] == 3 and row["lc_injected"] >= 3 and row["lc_state"] in ("active", "promoted")
        # the agent reports it as harmful: it falls and is flagged in the bundle
        prepared = await app.prepare_turn(SCOPE, "s3", "h1", q, 2000, preset_name="lexical")
        await app.commit_turn(prepared.cycle_id, "that was wrong", [], Feedback(harmful=[low.memory_id]))
        await app.feedback(SCOPE, [low.memory_id], "harmful")
        await rt.run_until_idle()
        final = [h for h in app.search(SCOPE, "s3", q, preset_name="lexical").hits if h.layer == "L2"]
        assert final[-1].memory_id == low.memory_id and final[-1].flag == "harmful"
        bundle = (await app.prepare_turn(SCOPE, "s3", "h2", q, 2000, preset_name="lexical")).bundle
        assert "⚠ harmful: marked harmful 2 time(s)" in bundle.rendered
        await rt.run_until_idle()
    # signals count once however often delivered: replaying the log gives the same weights
    fresh = s.data_dir.parent / "fresh"
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_a_pinned_memory_survives_retention_and_forgetting_repairs_evidence(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})
    async with store_with(s, TWINS) as (rt, app):
        atoms = {r["content"]: r for r in app.list_memories(SCOPE, layer="L2")}
        pinned = atoms["The staging cluster runs on Kubernetes 1.29 in Frankfurt."]
        await app.feedback(SCOPE, [pinned["memory_id"]], "pin")
        await rt.run_until_idle()
        later = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)
        before = running_hash(s.data_dir)
        preview = app.admin.retention_candidates(later)
        assert pinned["memory_id"] not in {c["memory_id"] for c in preview}
        assert running_hash(s.data_dir) == before  # the preview changed nothing
        assert await app.admin.retention(later) == len(preview) > 0
        await rt.run_until_idle()
        remaining = {r["memory_id"]: r for r in _rows(s.data_dir, "SELECT * FROM memories")}
        assert pinned["memory_id"] in remaining  # pinned: exempt
        twin = atoms["The staging cluster runs on Kubernetes 1.30 in Dublin."]
        assert twin["memory_id"] not in remaining  # its unpinned twin is forgotten
        # the pinned atom's L0 evidence was forgotten: it is kept, flagged, and says why
        row = remaining[pinned["memory_id"]]
        assert row["evidence"] == "[]" and row["trust_status"] == "uncertain"
        assert "evidence was forgotten" in row["trust_reason"]
        audits = _rows(s.data_dir, "SELECT old_value FROM audit_log WHERE action='forget'")
        assert audits and any("Dublin" in a["old_value"] for a in audits)  # the removed value is in the audit
    fresh = s.data_dir.parent / "fresh-r"  # the retention decision is on the log: a replay repeats it
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_a_replay_after_a_tombstoned_forget_rebuilds_the_same_state(settings: Settings) -> None:
    """With ``retention_tombstones``, a replay carried the forget's tombstones over before it re-derived the
    turns, so it refused the forgotten turns the original had taken (and then forgot): another state hash.
    A whole replay repeats the forget (its control event is on the log) and makes the tombstones again."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retention_tombstones": True})
    async with store_with(s, TWINS) as (rt, app):
        assert await app.admin.retention(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)) > 0
        await rt.run_until_idle()
    assert _rows(s.data_dir, "SELECT 1 FROM tombstones WHERE reason LIKE 'forgotten%'")
    fresh = s.data_dir.parent / "fresh-t"
    await replay_into(s.data_dir, fresh, settings=s)
    assert _rows(fresh, "SELECT reason FROM rejections") == []
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_rollback_restores_the_exact_prior_rows(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})
    async with store_with(s, TWINS) as (rt, app):
        before = memory_state(s.data_dir)
        later = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)
        assert await app.admin.retention(later) > 0
        await rt.run_until_idle()
        assert memory_state(s.data_dir) != before
        events = app.governance_events(SCOPE)
        stages = [(e["decision"], e["step"]) for e in events]
        assert ("forget", "evaluated") in stages and ("forget", "decided") in stages
        assert ("forget", "applied") in stages
        (decision,) = {e["decision_id"] for e in events if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        assert memory_state(s.data_dir) == before  # the exact prior rows are back
        assert ("forget", "rolled_back") in {
            (e["decision"], e["step"]) for e in app.governance_events(SCOPE)
        }
        after = running_hash(s.data_dir)  # memories as before, plus the decision's governance trail
        fresh = s.data_dir.parent / "fresh-rb"  # forget and rollback both replay
        await replay_into(s.data_dir, fresh, settings=s)
        assert state_hash(fresh) == after
        hits = app.search(SCOPE, "s1", "staging cluster Kubernetes", preset_name="lexical").hits
        assert any("Dublin" in h.content for h in hits)  # searchable again (FTS rows restored)
        # a second rollback of the same decision changes nothing
        await app.rollback(SCOPE, decision)
        await rt.run_until_idle()
        assert memory_state(s.data_dir) == before and running_hash(s.data_dir) == after


async def test_merges_and_deferrals_are_recorded_as_governance_events(settings: Settings) -> None:
    turns = [
        make_turn(1, "I prefer dark mode in every editor.", session="a"),
        make_turn(2, "I prefer dark mode in every editor.", session="b"),
        make_turn(3, "I prefer light mode in every editor.", session="c"),
    ]
    async with store_with(settings.model_copy(update={"embedder": "none"}), turns) as (_, app):
        stages = {(e["decision"], e["step"]) for e in app.governance_events(SCOPE)}
    assert {("merge", "evaluated"), ("merge", "decided"), ("merge", "applied")} <= stages
    assert ("supersede", "held") in stages


async def test_compression_levels_round_trip_through_drilldown(settings: Settings) -> None:
    long_text = (
        "The staging cluster runs on Kubernetes 1.29 in Frankfurt. It has three node pools. "
        "The ingress uses nginx with TLS from cert-manager. Backups run nightly at 02:00."
    )
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(
        s,
        [
            make_turn(1, long_text, session="s1"),
            make_turn(2, "We decided to pin the Postgres version to 15.", session="s1"),
        ],
    ) as (rt, app):
        (pinned,) = [r for r in app.list_memories(SCOPE, layer="L0") if "Postgres" in r["content"]]
        await app.feedback(SCOPE, [pinned["memory_id"]], "pin")
        await rt.run_until_idle()
        later = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=100)
        assert await app.admin.compaction(later) > 0
        await rt.run_until_idle()
        levels = {
            r["content"]: r["lc_compression"]
            for r in _rows(s.data_dir, "SELECT * FROM memories WHERE layer='L0'")
        }
        assert levels[long_text] == 2 and levels[pinned["content"]] == 0  # idle 100 days: C2; pinned: C0
        bundle = (
            await app.prepare_turn(
                SCOPE, "s1", "q1", "staging cluster Kubernetes", 2000, preset_name="lexical"
            )
        ).bundle
        await rt.run_until_idle()
        item = next(i for i in bundle.items if i.layer == "L0" and "Frankfurt" in i.text)
        assert item.compression == "C2" and "node pools" not in item.text  # summary only
        assert app.drilldown(item.marker, SCOPE).content == long_text  # the original, intact
        # a citation brings it back to C0
        prepared = await app.prepare_turn(
            SCOPE, "s1", "q2", "staging cluster Kubernetes", 2000, preset_name="lexical"
        )
        await app.commit_turn(prepared.cycle_id, "ok", [item.memory_id])
        await rt.run_until_idle()
        again = (
            await app.prepare_turn(
                SCOPE, "s1", "q3", "staging cluster Kubernetes", 2000, preset_name="lexical"
            )
        ).bundle
        await rt.run_until_idle()
        full = next(i for i in again.items if i.memory_id == item.memory_id)
        assert full.text == long_text and full.compression is None
    fresh = s.data_dir.parent / "fresh-c"
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_forgetting_takes_the_graph_that_stood_only_on_the_forgotten_memories(settings: Settings) -> None:
    """Retention forgets memories: graph edges whose evidence was only forgotten memories go, and the nodes
    they alone kept go with them (before, forgetting left them: "Dublin" stayed a node nothing mentioned);
    edges that other memories still stand on keep those and lose the forgotten ones."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})
    async with store_with(s, TWINS) as (rt, app):
        atoms = {r["content"]: r for r in app.list_memories(SCOPE, layer="L2")}
        await app.feedback(SCOPE, [atoms["The staging cluster runs on Kubernetes 1.29 in Frankfurt."]["memory_id"]],
                           "pin")
        await rt.run_until_idle()
        names = {r["name"] for r in _rows(s.data_dir, "SELECT name FROM graph_nodes")}
        assert "Dublin" in names and "Frankfurt" in names
        assert await app.admin.retention(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)) > 0
        await rt.run_until_idle()
        kept = {r["memory_id"] for r in _rows(s.data_dir, "SELECT memory_id FROM memories")}
        nodes = {r["node_id"]: r["name"] for r in _rows(s.data_dir, "SELECT node_id, name FROM graph_nodes")}
        edges = _rows(s.data_dir, f"SELECT src_id, dst_id, {EVIDENCE} FROM graph_edges")
    assert "Dublin" not in nodes.values() and "Frankfurt" in nodes.values()
    for edge in edges:  # what is left stands on memories that are still there
        assert set(orjson.loads(edge["evidence"])) <= kept, edge
        assert {edge["src_id"], edge["dst_id"]} <= kept | set(nodes), edge
    ends = {e["src_id"] for e in edges} | {e["dst_id"] for e in edges}
    assert set(nodes) <= ends  # no node is left that nothing stands on


async def test_a_rollback_does_not_put_back_content_erased_since(settings: Settings) -> None:
    """A review of the edge evidence table suspected that a forget's rollback (rows restored from the audit log,
    without the guard) could put back text erased since as another memory (a copy said again later, erased as
    one memory). End to end it does not: the erasure redacts the forget's audit rows and removes the forget's
    record (it names a memory derived from the erased one), and the rollback is refused, saying why. Kept as a
    check of that path."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})
    secret = "My locker combination is 31-07-1999 and the key sits under the blue ZEBRA-4471 mat."
    said_long_ago = TurnEvent(scope=SCOPE, session_id="s-old", turn_id="s-old-t1", role=Role.USER, content=secret,
                              timestamp=datetime(2026, 3, 1, tzinfo=UTC))
    async with store_with(s, [said_long_ago, make_turn(2, secret, session="s-new")]) as (rt, app):
        assert await app.admin.retention(datetime(2026, 11, 3, tzinfo=UTC)) > 0  # the old copy goes
        await rt.run_until_idle()
        (kept,) = _rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content LIKE '%ZEBRA%'")
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.erase(SCOPE, "memory", memory_id=kept["memory_id"])
        await rt.run_until_idle()
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        assert _rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%ZEBRA-4471%'") == []
        refused = _rows(s.data_dir, "SELECT reason FROM rejections")
    assert any("erased" in r["reason"] and decision in r["reason"] for r in refused), refused

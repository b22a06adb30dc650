"""Grouping fused candidates that stand for one memory, and the final score."""

from __future__ import annotations

from dataclasses import replace

from altm.recall.retrieval import SearchConfig
from altm.recall.retrieval._assembly import grouped, scored, single_turn_evidence
from altm.store import CandidateRow

TURN = CandidateRow(
    memory_id="mem_turn", tenant_id="t", workspace_id="w", user_id="u", agent_id="a", session_id="s1", layer="L0",
    kind="message", content="I prefer small PRs.", content_hash="h_turn", source_id="s1-t1", role="user",
    evidence=(), method="heuristic", valid_from="2026-11-02T09:00:00+00:00", trust_status="unverified",
    trust_reason=None, lc_weight=1.0, lc_harmful=0, lc_compression=0,
)
ATOM = replace(TURN, memory_id="mem_atom", layer="L2", kind="preference", content_hash="h_atom", source_id=None,
               evidence=("mem_turn",))
COPY_A = replace(TURN, memory_id="mem_copy_a", content_hash="h_copy", source_id="s1-t2")
COPY_B = replace(COPY_A, memory_id="mem_copy_b", source_id="s1-t3", trust_status="verified")
ROWS = {r.memory_id: r for r in (TURN, ATOM, COPY_A, COPY_B)}


def test_a_derived_memory_stands_for_the_one_turn_it_cites() -> None:
    assert single_turn_evidence(ROWS) == {"mem_atom": "mem_turn"}
    two_turns = replace(ATOM, evidence=("mem_turn", "mem_copy_a"))
    assert single_turn_evidence({**ROWS, "mem_atom": two_turns}) == {}


def test_groups_merge_channels_show_the_turn_and_add_equal_contents() -> None:
    fused = [("mem_atom", 0.9), ("mem_copy_a", 0.5), ("mem_turn", 0.4), ("mem_copy_b", 0.2), ("mem_gone", 0.1)]
    ranked = {"fts": ["mem_turn", "mem_copy_b"], "vector": ["mem_atom", "mem_copy_a", "mem_copy_b"]}
    turn, copies = grouped(fused, ROWS, ranked)
    assert turn.row is TURN and turn.fused == 0.9  # the turn is shown, with the better (the atom's) score
    assert turn.channels == {"vector": 1, "fts": 1}
    assert copies.row is COPY_A and copies.fused == 0.5 + 0.2  # equal contents add up
    assert copies.channels == {"vector": 2, "fts": 2}  # the best rank per channel


def test_final_scores_weigh_trust_and_lifecycle_best_first() -> None:
    faded = replace(TURN, lc_weight=0.01)
    config = SearchConfig(trust_factors={"unverified": 1.0, "verified": 1.5})
    groups = grouped([("mem_turn", 0.8), ("mem_copy_b", 0.6)], {"mem_turn": faded, "mem_copy_b": COPY_B}, {})
    best, worst = scored(groups, config)
    assert best.group.row is COPY_B and best.final == 0.6 * 1.5 and best.trust == 1.5
    assert worst.lifecycle == 0.05 and worst.final == 0.8 * 0.05  # a faded memory keeps a floor
    assert best.breakdown("rrf") == {"rrf": 0.6, "trust": 1.5, "lifecycle": 1.0, "final": 0.9}
    tied = scored(grouped([("mem_copy_a", 0.5), ("mem_turn", 0.5)], ROWS, {}), SearchConfig())
    assert [s.group.row.memory_id for s in tied] == ["mem_copy_a", "mem_turn"]  # ties by id

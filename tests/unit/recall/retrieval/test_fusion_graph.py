from __future__ import annotations

import pytest

from altm.core import Layer, Scope
from altm.recall.retrieval import ScopePolicy, SearchConfig, preset, query_terms
from altm.recall.retrieval._fusion import ordered, rrf
from altm.recall.retrieval._graph import personalised_pagerank
from altm.recall.retrieval._policy import vector_filters

SCOPE = Scope.parse("t/w/u/a")


def test_rrf_sums_weighted_reciprocal_ranks_and_breaks_ties_by_id() -> None:
    config = SearchConfig(rrf_k=60, channel_weights={"fts": 1.0, "vector": 1.0})
    fused = ordered(rrf({"fts": ["m_b", "m_a", "m_c"], "vector": ["m_a", "m_b"]}, config))
    scores = dict(fused)
    assert scores["m_a"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["m_c"] == pytest.approx(1 / 63)
    # m_a and m_b have the same sum: the tie is broken by id, deterministically
    assert [m for m, _ in fused] == ["m_a", "m_b", "m_c"]


def test_channel_weights_matter() -> None:
    config = SearchConfig(channel_weights={"fts": 1.0, "graph": 0.1})
    fused = rrf({"fts": ["x"], "graph": ["y"]}, config)
    assert fused["x"] > fused["y"]


def test_ppr_on_a_small_graph_with_known_answers() -> None:
    # a chain s - a - b - c plus an isolated pair d - e
    adjacency = {
        "s": {"a": 1.0}, "a": {"s": 1.0, "b": 1.0}, "b": {"a": 1.0, "c": 1.0}, "c": {"b": 1.0},
        "d": {"e": 1.0}, "e": {"d": 1.0},
    }
    ranks = personalised_pagerank(adjacency, ["s"], damping=0.85, iterations=100)
    assert ranks["a"] > ranks["b"] > ranks["c"] > 0  # rank decays with distance from the seed
    assert ranks["s"] > ranks["b"]
    assert ranks["d"] == ranks["e"] == 0  # unreachable from the seed
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-6)
    # a heavier edge pulls more rank
    heavy = {"s": {"a": 1.0, "b": 3.0}, "a": {"s": 1.0}, "b": {"s": 3.0}}
    r2 = personalised_pagerank(heavy, ["s"], iterations=100)
    assert r2["b"] > r2["a"]


def test_query_terms_drop_stopwords_and_keep_order() -> None:
    assert query_terms("When is the billing migration deadline?") == ["billing", "migration", "deadline"]


def test_policy_sql_per_layer_group() -> None:
    where, args = ScopePolicy(SCOPE, "s1").sql("m")
    assert "m.superseded_by IS NULL" in where
    assert args[:3] == ["t", "w", "u"]
    assert args.count("s1") == 1  # only L0/L1 are bound to the session
    _, strict_args = ScopePolicy(SCOPE, "s1", strict_session=True).sql("m")
    assert strict_args.count("s1") == 3
    filters = vector_filters(ScopePolicy(SCOPE, "s1"))
    assert [f.any_of["layer"] for f in filters] == [("L0", "L1"), ("L2", "L3"), ("L4",)]
    assert "agent_id" not in filters[2].equals and filters[0].equals["session_id"] == "s1"
    only_l2 = vector_filters(ScopePolicy(SCOPE, "s1", layers=(Layer.L2,)))
    assert [f.any_of["layer"] for f in only_l2] == [("L2",)]
    with pytest.raises(ValueError, match="strict_session needs a session"):
        ScopePolicy(SCOPE, None, strict_session=True)


def test_presets_are_named_models() -> None:
    assert preset("lexical").vector is False and preset("vector").fts is False
    assert preset("hybrid+graph").graph and preset("conversation").l0_across_sessions
    with pytest.raises(ValueError, match="unknown search preset"):
        preset("magic")

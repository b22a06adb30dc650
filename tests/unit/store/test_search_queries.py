"""Recall's store queries on a small store built by the real pipeline (heuristic formation, no models)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from altm.core import Scope
from altm.core.settings import Settings
from altm.store import CandidateRow, ScopePolicy, SearchQueries
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

OTHER_AGENT = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="other-agent")
TURNS = [
    make_turn(1, "I prefer small pull requests under 300 lines.", session="s1"),
    make_turn(2, "We deploy the billing service with Priya on Fridays.", session="s1"),
    make_turn(3, "Priya owns the billing service.", session="s1"),
    make_turn(4, "The deploying team wrote the billing runbook.", session="s1"),
    make_turn(5, "Billing deploys go through Priya too.", session="s2", scope=OTHER_AGENT),
]


@pytest.fixture
async def queries(settings: Settings) -> AsyncIterator[SearchQueries]:
    async with store_with(settings, TURNS) as (runtime, _):
        yield SearchQueries.for_scope(runtime.shards, SCOPE)


def _by_source(queries: SearchQueries, ids: list[str]) -> dict[str | None, CandidateRow]:
    return {row.source_id: row for row in queries.rows(ids).values()}


def _turns(queries: SearchQueries) -> dict[str | None, CandidateRow]:
    """The L0 rows of every turn, by turn id (found through the word index, any agent of the user)."""
    policy = ScopePolicy(SCOPE, None, l0_across_sessions=True)
    mine = [m for m, _ in queries.words(["billing", "prefer"], policy, 50, 0.5)]
    theirs = [m for m, _ in queries.words(["billing"], ScopePolicy(OTHER_AGENT, None, l0_across_sessions=True),
                                          50, 0.5)]
    # an atom carries its message's turn id too: the L0 rows alone
    return {r.source_id: r for r in queries.rows(mine + theirs).values() if r.layer == "L0"}


async def test_the_word_channel_admits_only_what_the_policy_does(queries: SearchQueries) -> None:
    policy = ScopePolicy(SCOPE, "s1")
    found = queries.words(["billing"], policy, 50, 0.5)
    rows = queries.rows([m for m, _ in found])
    assert {r.source_id for r in rows.values() if r.layer == "L0"} == {"s1-t2", "s1-t3", "s1-t4"}
    assert all(r.agent_id == "coder" for r in rows.values())  # the other agent's turn is never scored
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)  # best first
    assert queries.words([], policy, 50, 0.5) == []
    assert queries.words(['"billing" OR x'], policy, 50, 0.5) == []  # query syntax is taken literally
    assert {m for m, _ in queries.trigrams(["illin"], policy, 50)} >= {r.memory_id for r in rows.values()
                                                                        if r.layer == "L0"}


async def test_admitted_keeps_the_given_order_and_drops_what_the_scope_may_not_see(queries: SearchQueries) -> None:
    turns = _turns(queries)
    ids = [turns[s].memory_id for s in ("s1-t3", "s2-t5", "s1-t1", "s1-t2")]
    policy = ScopePolicy(SCOPE, None, l0_across_sessions=True)
    assert queries.admitted([*ids, "mem_missing"], policy) == [ids[0], ids[2], ids[3]]
    assert queries.allowed(ids, ScopePolicy(OTHER_AGENT, "s2")) == {ids[1]}


async def test_rows_are_typed_and_stand_for_their_turns(queries: SearchQueries) -> None:
    turns = _turns(queries)
    first = turns["s1-t1"]
    assert first.scope_path == "acme/platform/dana/coder" and first.evidence == () and first.lc_weight == 1.0
    derived = {r.layer: r for r in queries.rows([m for m, _ in queries.words(
        ["prefer"], ScopePolicy(SCOPE, None, l0_across_sessions=True), 50, 0.5)]).values() if r.layer != "L0"}
    atom, facet, capsule = derived["L2"], derived["L4"], derived["L1"]
    assert atom.evidence == (first.memory_id,) and facet.evidence == (atom.memory_id,)
    sources = queries.source_ids([first, atom, facet, capsule], agent_id=SCOPE.agent_id)
    assert sources[first.memory_id] == sources[atom.memory_id] == ["s1-t1"]
    assert sources[facet.memory_id] == ["s1-t1"]  # down the evidence chain
    # the user's facet seen by a sibling agent: the turns it came from are the other agent's
    assert queries.source_ids([facet], agent_id=OTHER_AGENT.agent_id) == {facet.memory_id: []}
    # a capsule stands for the turns it quotes, in conversation order: t1 (the first; "300 lines") and t2 (a
    # day); t3 and t4 give it nothing
    assert sources[capsule.memory_id] == ["s1-t1", "s1-t2"]


async def test_session_neighbours_follow_the_conversation(queries: SearchQueries) -> None:
    turns = _turns(queries)
    t1, t2, t3, t4 = (turns[f"s1-t{i}"].memory_id for i in range(1, 5))
    around = queries.session_neighbours([t2, "mem_missing", turns["s2-t5"].memory_id], after=5, before=1)
    assert around[t2].following == [t3, t4] and around[t2].preceding == [t1]
    assert around[turns["s2-t5"].memory_id] == ([], [])  # alone in its session (of another agent)
    assert "mem_missing" not in around
    assert queries.session_neighbours([t3], after=0, before=0)[t3] == ([], [])


async def test_edges_of_a_node_are_the_strongest_of_the_home(queries: SearchQueries) -> None:
    t2, t3 = (_turns(queries)[f"s1-t{i}"].memory_id for i in (2, 3))
    mentioned = [{e.dst_id for e in queries.edges_of(t, SCOPE, 25)} for t in (t2, t3)]
    node = min(mentioned[0] & mentioned[1])  # an entity both turns mention (Priya, the billing service)
    edges = queries.edges_of(node, SCOPE, 25)
    assert {t2, t3} <= {e.src_id for e in edges} and all(node in (e.src_id, e.dst_id) for e in edges)
    strongest = queries.edges_of(node, SCOPE, 1)
    assert len(strongest) == len({e.src_id == node for e in edges})  # one per direction
    for edge in strongest:
        same_side = [e.weight * e.confidence for e in edges if (e.src_id == node) == (edge.src_id == node)]
        assert edge.weight * edge.confidence == max(same_side)
    assert queries.edges_of(node, Scope.parse("acme/platform/someone-else/coder"), 25) == []


async def test_term_counts_use_the_word_index_tokenizer(queries: SearchQueries) -> None:
    assert queries.term_frequency("deploying", SCOPE) == queries.term_frequency("deploy", SCOPE) >= 2  # porter
    # what the agent may see: the sibling agent's "Billing deploys go through Priya too." counts for it alone
    assert queries.term_frequency("deploy", OTHER_AGENT) == 1
    assert queries.term_frequency('"', SCOPE) == 0
    assert queries.document_count(SCOPE) >= len(TURNS)
    other = SCOPE.model_copy(update={"tenant_id": "globex"})  # another tenant in the shard: counted apart
    assert queries.term_frequency("deploy", other) == queries.document_count(other) == 0
    assert queries.partition == queries.shard.partition

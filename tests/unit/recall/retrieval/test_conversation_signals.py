"""Score fusion, session prior, time anchors, conversational neighbours and evidence collapse."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from altm.core import Layer, Scope
from altm.core.settings import Settings
from altm.recall.retrieval import SearchConfig, preset
from altm.recall.retrieval._fusion import asks, channel_values, discount_questions, fuse, propagate, session_prior
from altm.recall.retrieval._temporal import TimeAnchor, time_anchors, time_prior
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


def test_score_fusion_normalises_each_channel_and_weights_it() -> None:
    config = SearchConfig(fusion="score", channel_weights={"fts": 1.0, "vector": 0.5})
    ranked = {"fts": ["a", "b", "c"], "vector": ["c", "a"]}
    scores = {"fts": {"a": 9.0, "b": 5.0, "c": 1.0}, "vector": {"c": 0.8, "a": 0.4}}
    fused = fuse(ranked, scores, config)
    assert fused["a"] == pytest.approx(1.0 + 0.5 * 0.0)
    assert fused["b"] == pytest.approx(0.5)
    assert fused["c"] == pytest.approx(0.0 + 0.5 * 1.0)
    # a channel without scores counts linearly by rank; one candidate alone is worth the full weight
    assert channel_values(["x", "y"], None) == {"x": 1.0, "y": 0.5}
    assert channel_values(["x"], {"x": 3.0}) == {"x": 1.0}
    rrf = fuse(ranked, scores, SearchConfig(rrf_k=1, channel_weights={"fts": 1.0, "vector": 1.0}))
    assert rrf["c"] == pytest.approx(1 / 4 + 1 / 2)  # rank fusion ignores the scores


def test_session_prior_lifts_the_whole_session_that_matches_best() -> None:
    fused = {"a1": 1.0, "a2": 0.1, "b1": 0.9, "b2": 0.0}
    sessions: dict[str, str | None] = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "x": None}
    fused["x"] = 0.05
    session_prior(fused, sessions, weight=0.5, top=2)
    assert fused["a2"] == pytest.approx(0.1 + 0.5)  # session A is the best: full prior
    assert fused["b2"] == pytest.approx(0.5 * 0.9 / 1.1)
    assert fused["x"] == 0.05  # memories without a session are left alone


def test_propagation_decays_with_distance_and_keeps_the_best_seed() -> None:
    fused = {"s1": 1.0, "s2": 0.4}
    propagate(fused, {"n1": ("s1", 1), "n2": ("s1", 2), "n3": ("s2", 1)}, weight=0.5, decay=0.5)
    assert fused["n1"] == pytest.approx(0.5) and fused["n2"] == pytest.approx(0.25)
    assert fused["n3"] == pytest.approx(0.2)


def test_a_message_that_ends_by_asking_keeps_part_of_its_score() -> None:
    messages = {"ask": "Nate: Congrats! What genre is it?", "tell": "Joanna: It's a mix of drama and romance!",
                "mid": "Nate: Is it done? I think so."}
    fused = {"ask": 1.0, "tell": 0.8, "mid": 0.5, "atom": 0.7}
    discount_questions(fused, messages, 0.6)
    assert fused == pytest.approx({"ask": 0.6, "tell": 0.8, "mid": 0.5, "atom": 0.7})
    assert asks("What genre is it?  ") and not asks("Is it done? I think so.")


def test_time_anchors_read_dates_months_and_years() -> None:
    assert time_anchors("What did she paint on October 13, 2023?") == [TimeAnchor(2023, 10, 13)]
    assert time_anchors("What did Gina find on 1 February, 2023?") == [TimeAnchor(2023, 2, 1)]
    assert time_anchors("Where did they meet on Aug 15th?") == [TimeAnchor(None, 8, 15)]
    assert time_anchors("When did Melanie go camping in June?") == [TimeAnchor(None, 6, None)]
    assert time_anchors("Which class did Maria start in December 2023?") == [TimeAnchor(2023, 12, None)]
    assert time_anchors("How often did we deploy in 2023?") == [TimeAnchor(2023, None, None)]
    # "may" the verb is not a month, and a day number out of range is no date
    assert time_anchors("May I ask what you may know?") == []
    assert time_anchors("version 45 March") == []


def test_time_prior_favours_memories_recorded_within_the_lookback() -> None:
    anchor = TimeAnchor(2023, 6, 10)
    fused = {"on": 0.5, "after": 0.5, "late": 0.5, "before": 0.5, "none": 0.5}
    stamp = {"on": "2023-06-10T09:00:00+00:00", "after": "2023-06-20T09:00:00+00:00",
             "late": (date(2023, 6, 10) + timedelta(days=30)).isoformat(), "before": "2023-06-09T23:00:00+00:00",
             "none": None}
    time_prior(fused, stamp, [anchor], weight=0.4, lookback_days=14)
    assert fused["on"] == fused["after"] == pytest.approx(0.7)
    assert fused["late"] == fused["before"] == fused["none"] == 0.5


CONVERSATION = [
    make_turn(1, "Joanna: I finally finished my first full screenplay and printed it last Friday.", session="s1"),
    make_turn(2, "Nate: Congrats! What genre is it?", session="s1"),
    make_turn(3, "Joanna: It's a mix of drama and romance!", session="s1"),
    make_turn(4, "Nate: My turtles are doing fine, thanks.", session="s1"),
    make_turn(1, "Joanna: We went hiking near the falls.", session="s2"),
]


async def test_neighbours_bring_the_answer_after_the_matching_turn(settings: Settings) -> None:
    base = preset("conversation").model_copy(update={"vector": False, "time_prior": 0.0, "session_prior": 0.0})
    async with store_with(settings, CONVERSATION) as (_, app):
        without = app.recall.retriever.search(SCOPE, "q", "the screenplay", base.model_copy(
            update={"neighbour_seeds": 0}))
        with_nb = app.recall.retriever.search(SCOPE, "q", "the screenplay", base)
    assert "drama and romance" not in " ".join(h.content for h in without.hits)
    found = {h.content: h for h in with_nb.hits}
    answer = next(h for c, h in found.items() if "drama and romance" in c)
    assert "neighbours" in answer.channels and "fts" not in answer.channels
    # neighbours stay inside the session: the other session's turn is not proposed by this channel
    assert all("neighbours" not in h.channels for h in with_nb.hits if h.session_id == "s2")


async def test_a_question_ranks_below_the_answer_it_still_seeds(settings: Settings) -> None:
    base = preset("conversation").model_copy(update={"vector": False, "time_prior": 0.0, "session_prior": 0.0})
    assert base.question_factor == 0.6  # the conversation preset discounts questions
    plain = base.model_copy(update={"question_factor": 1.0})
    turns = [make_turn(1, "Nate: Which genre is your screenplay?", session="s3"),
             make_turn(2, "Joanna: My screenplay is a mix of drama and romance, not one genre.", session="s3"),
             make_turn(3, "Joanna: We went hiking near the falls, I read a screenplay there.", session="s4")]
    async with store_with(settings, [*turns, *CONVERSATION[1:3]]) as (_, app):
        before = {h.content: h.score for h in app.recall.retriever.search(SCOPE, "q", "genre screenplay", plain).hits}
        after = app.recall.retriever.search(SCOPE, "q", "genre screenplay", base).hits
        # the question alone matches "genre" here; its answer comes through the neighbours channel
        seeded = {h.content: h for h in app.recall.retriever.search(SCOPE, "q", "which genre is it", base).hits}
        seed_plain = {h.content: h.score for h in app.recall.retriever.search(SCOPE, "q", "which genre is it",
                                                                               plain).hits}
    assert before[turns[0].content] > before[turns[1].content]  # the question echoes the words best...
    assert [h.content for h in after][:2] == [turns[1].content, turns[0].content]  # ...the answer ranks first
    scores = {h.content: h.score for h in after}
    assert scores[turns[0].content] == pytest.approx(0.6 * before[turns[0].content])
    assert scores[turns[1].content] == pytest.approx(before[turns[1].content])  # a statement keeps its score
    question, answer = CONVERSATION[1].content, CONVERSATION[2].content
    assert "neighbours" in seeded[answer].channels
    # the discount comes after the neighbours: the answer inherits from the question's undiscounted score
    assert seeded[answer].score == pytest.approx(seed_plain[answer])
    assert seeded[question].score == pytest.approx(0.6 * seed_plain[question])


async def test_neighbours_respect_the_scope(settings: Settings) -> None:
    other = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="other-agent")
    turns = [*CONVERSATION[:2], make_turn(3, "Joanna: It's a mix of drama and romance!", scope=other,
                                           session="s1")]
    config = preset("conversation").model_copy(update={"vector": False})
    async with store_with(settings, turns) as (_, app):
        result = app.recall.retriever.search(SCOPE, "q", "the screenplay", config)
    assert result.hits and all(h.scope.endswith("/coder") for h in result.hits)


async def test_a_derived_memory_and_the_turn_it_cites_take_one_slot(settings: Settings) -> None:
    turns = [make_turn(1, "I prefer small pull requests under 300 lines.", session="s1")]
    config = SearchConfig(layers=(Layer.L0, Layer.L2), l0_across_sessions=True, graph=False, trigram=False)
    async with store_with(settings, turns) as (_, app):
        shard_rows = rows(settings.data_dir, "SELECT layer, source_id FROM memories WHERE layer IN ('L0', 'L2')")
        source = next(r["source_id"] for r in shard_rows if r["layer"] == "L0")
        result = app.recall.retriever.search(SCOPE, "q", "small pull requests", config)
    assert {r["layer"] for r in shard_rows} == {"L0", "L2"}  # the atom exists next to its turn...
    assert len(result.hits) == 1  # ...but they stand for the same message
    assert result.hits[0].source_ids == [source]

"""Document frequencies per user and the pruning of very common word terms."""

from __future__ import annotations

from dataclasses import dataclass, field

from altm.core import Scope
from altm.core.settings import Settings
from altm.recall.retrieval import preset
from altm.recall.retrieval._terms import TermStatistics
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


@dataclass
class Counts:
    """One user's document counts, counting how often each was asked for."""

    documents: list[set[str]]
    partition: int = 0
    asked: list[str] = field(default_factory=list)

    def document_count(self, scope: Scope) -> int:
        self.asked.append("\x00documents")
        return len(self.documents)

    def term_frequency(self, term: str, scope: Scope) -> int:
        self.asked.append(term)
        return sum(term in words for words in self.documents)


OTHER = SCOPE.model_copy(update={"user_id": "sam"})


def _shard(partition: int = 0) -> Counts:
    texts = ["deploy the billing service", "deploy the canary", "deploy on friday", "billing invoice", "refund"]
    return Counts([set(t.split()) for t in texts], partition)


def test_common_terms_are_left_out_keeping_the_rarest() -> None:
    stats, shard = TermStatistics(), _shard()
    assert stats.frequency(shard, "deploy", SCOPE) == 3
    assert stats.documents(shard, SCOPE) == 5
    # deploy is in 3/5 memories, billing in 2/5, refund in 1/5
    assert stats.prune(shard, SCOPE, ["deploy", "billing", "refund"], max_df=0.5, min_terms=1) == ["billing", "refund"]
    assert stats.prune(shard, SCOPE, ["deploy", "billing", "refund"], max_df=0.3, min_terms=2) == ["billing", "refund"]
    assert stats.prune(shard, SCOPE, ["deploy", "billing"], max_df=0.1, min_terms=1) == ["billing"]
    # nothing is pruned when pruning is off or too few terms are asked for
    assert stats.prune(shard, SCOPE, ["deploy", "billing"], max_df=1.0, min_terms=1) == ["deploy", "billing"]
    assert stats.prune(shard, SCOPE, ["deploy"], max_df=0.1, min_terms=1) == ["deploy"]
    # an empty shard prunes nothing
    assert stats.prune(Counts([], partition=1), OTHER, ["deploy", "billing"], max_df=0.1, min_terms=1) == ["deploy",
                                                                                                     "billing"]


def test_counts_are_cached_until_they_expire() -> None:
    stats, shard = TermStatistics(ttl_s=3600), _shard()
    assert stats.frequency(shard, "refund", SCOPE) == 1
    shard.documents.append({"another", "refund"})
    assert stats.frequency(shard, "refund", SCOPE) == 1  # cached
    assert shard.asked == ["refund"]
    assert stats.frequency(Counts(shard.documents, partition=1), "refund", OTHER) == 2  # another user counts anew
    fresh = TermStatistics(ttl_s=0)
    assert fresh.frequency(shard, "refund", SCOPE) == 2
    small = TermStatistics(max_entries=2)
    for term in ("deploy", "billing", "refund"):
        small.frequency(shard, term, SCOPE)
    assert len(small._cache) == 2


async def test_a_query_of_only_common_terms_still_finds_memories(settings: Settings) -> None:
    turns = [make_turn(i, f"deploy note {i} about the service", session="s1") for i in range(1, 6)]
    turns.append(make_turn(6, "the service owner is Priya", session="s1"))
    async with store_with(settings, turns) as (_, app):
        result = app.recall.retriever.search(SCOPE, "s1", "deploy service Priya", preset("lexical"))
    assert result.hits and "Priya" in result.hits[0].content


def test_terms_that_match_nothing_do_not_stand_in_for_the_rarer_terms_kept() -> None:
    """A word the user asks about that is common in a small store, asked beside words the store does not hold (a
    typo, a name it never heard): the matching word is kept (``min_terms`` counts terms found at least once), and
    the others too (the trigram channel may find a typo by its substrings). Before, the two unknown words were the
    "rarest" terms kept and the only word that matched was left out: the word query matched nothing.
    (A lead of the tenth round's red team.)"""
    stats, shard = TermStatistics(), _shard()
    # deploy is in 3/5 memories; zorblax and quimbly in none
    assert stats.prune(shard, SCOPE, ["deploy", "zorblax", "quimbly"], max_df=0.3, min_terms=2) == [
        "deploy", "zorblax", "quimbly"]
    # with matching rarer terms enough, the common one still goes; the unknown ones stay for the trigram channel
    assert stats.prune(shard, SCOPE, ["deploy", "billing", "refund", "zorblax"], max_df=0.5, min_terms=2) == [
        "billing", "refund", "zorblax"]

"""Search settings as pydantic models with named presets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from altm.core import Layer


class SearchConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "custom"
    fts: bool = Field(default=True, description="FTS5 unicode61 channel (bm25)")
    max_term_df: float = Field(
        default=0.3, gt=0.0, le=1.0,
        description="Word terms found in more than this share of a shard's memories are left out of the word "
                    "query (near-zero IDF, yet bm25 would score every memory holding them); 1.0: keep all")
    min_terms: int = Field(default=2, ge=1, le=20, description="Rarest terms kept whatever their frequency")
    trigram: bool = Field(default=True, description="FTS5 trigram channel (substrings, typos in long words)")
    vector: bool = Field(default=True, description="Vector channel (the embedder's collection)")
    graph: bool = Field(default=True, description="Graph channel: bounded BFS + personalised PageRank")
    candidates: int = Field(default=50, ge=1, le=1000, description="Candidates per channel")
    max_scored: int = Field(
        default=2000, ge=10,
        description="Most rows the word channel scores: a query whose terms the user's memories hold more often "
                    "than this scores the newest this many rows that match (bm25 read every matching row)")
    context_weight: float = Field(
        default=0.5, ge=0.0, le=1.0,
        description="bm25 weight of a message's conversational context (the message it follows)")
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal rank fusion constant")
    channel_weights: dict[str, float] = Field(
        default_factory=lambda: {"fts": 1.0, "trigram": 0.5, "vector": 1.0, "graph": 0.5})
    graph_seeds: int = Field(default=5, ge=1, le=50)
    graph_hops: int = Field(default=2, ge=1, le=4, description="Hops in the memory–node graph")
    graph_max_nodes: int = Field(default=400, ge=10)
    graph_fanout: int = Field(default=25, ge=1, le=1000, description="Edges followed per node and direction")
    trigram_mode: str = Field(
        default="fallback", pattern="^(always|fallback)$",
        description="fallback: only for identifier-like terms (digits, '_', '-', '.', '/') or when FTS finds "
                    "fewer than top_k memories")
    neighbour_seeds: int = Field(
        default=0, ge=0, le=50,
        description="Conversational neighbours channel: the best fused L0 hits whose surrounding messages are "
                    "proposed (0: off)")
    neighbours_after: int = Field(default=2, ge=0, le=10, description="Messages after each seed")
    neighbours_before: int = Field(default=1, ge=0, le=10, description="Messages before each seed")
    neighbour_decay: float = Field(default=0.5, gt=0, le=1, description="Share kept per extra turn of distance")
    fusion: str = Field(default="rrf", pattern="^(rrf|score)$",
                        description="rrf: reciprocal ranks; score: min-max normalised channel scores")
    question_factor: float = Field(
        default=1.0, gt=0.0, le=1.0,
        description="Share of its score a raw message keeps when it ends by asking: its answer is usually "
                    "the next message (applied after the neighbours channel, which it still seeds; 1: off)")
    session_prior: float = Field(
        default=0.0, ge=0.0, le=5.0,
        description="Weight of how well a memory's session as a whole matches (0: off)")
    time_prior: float = Field(
        default=0.0, ge=0.0, le=5.0,
        description="Weight for memories recorded at (or shortly after) a date the query names (0: off)")
    time_lookback_days: int = Field(default=14, ge=0, le=366,
                                    description="How long after an event it may still be talked about")
    session_prior_top: int = Field(default=3, ge=1, le=50, description="Best candidates summed per session")
    ppr_damping: float = Field(default=0.85, gt=0, lt=1)
    ppr_iterations: int = Field(default=30, ge=1, le=200)
    top_k: int = Field(default=10, ge=1, le=200)
    layers: tuple[Layer, ...] = tuple(Layer)
    l0_across_sessions: bool = Field(
        default=False, description="Search L0/L1 in every session of the agent, not only the current one")
    trust_factors: dict[str, float] = Field(default_factory=lambda: {
        "verified": 1.1, "unverified": 1.0, "unverifiable": 1.0, "uncertain": 0.9, "contradicted": 0.6})


PRESETS: dict[str, SearchConfig] = {
    "lexical": SearchConfig(name="lexical", vector=False, graph=False),
    "vector": SearchConfig(name="vector", fts=False, trigram=False, graph=False),
    "hybrid": SearchConfig(name="hybrid", graph=False, time_prior=0.4),
    "hybrid+graph": SearchConfig(name="hybrid+graph", time_prior=0.4),
    # Raw turns and typed atoms across every session of the agent (the published LoCoMo figures search
    # raw turns across all sessions of a conversation). Atoms cite one turn each, so every result stands
    # for specific turns rather than whole sessions. Scores rather than ranks are fused (bm25 carries most of
    # the signal on chat turns), then a memory gains from its session's overall match, from a date the
    # query names, and from a strong message right before or after it; a message that ends by asking keeps
    # part of its score (it echoes the words of the topic, its answer follows it).
    "conversation": SearchConfig(
        name="conversation", l0_across_sessions=True, layers=(Layer.L0, Layer.L2), trigram=False, graph=False,
        fusion="score", candidates=100, session_prior=0.3, time_prior=0.4, neighbour_seeds=3, question_factor=0.6,
        channel_weights={"fts": 1.0, "vector": 0.5, "neighbours": 0.3}),
}
DEFAULT_PRESET = "hybrid+graph"


def preset(name: str) -> SearchConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown search preset {name!r}; choose one of {sorted(PRESETS)}") from None

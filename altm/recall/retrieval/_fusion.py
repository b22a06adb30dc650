"""Fusing channel results into one score per memory, and the conversational adjustments on top of it.

- ``rrf``: reciprocal rank fusion, weighted per channel (ranks only).
- ``score``: each channel's own scores (bm25 for the word indexes, cosine for vectors) min-max normalised
  over the channel's candidates and summed with the channel weights; channels without scores (graph,
  neighbours) count by rank, linearly from 1 (first) down to 1/n (last).
- session prior: a memory gains from how well its session as a whole matches (the sum of the best few
  fused scores of that session's candidates, relative to the best session).
- neighbour propagation: the messages around a strong message inherit part of its score, decaying with
  distance in the session.
- question discount: a raw message that ends by asking ("That's great! What got you into painting?") keeps
  part of its score. It echoes the words of the topic, so it matches well, but what it asks about is told in
  the messages after it, which the neighbours channel proposes from it: the discount comes after that channel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from altm.recall.retrieval._config import SearchConfig

Ranked = Mapping[str, Sequence[str]]
Scores = Mapping[str, Mapping[str, float]]


def rrf(ranked: Ranked, config: SearchConfig) -> dict[str, float]:
    out: dict[str, float] = {}
    for channel, ids in ranked.items():
        weight = config.channel_weights.get(channel, 1.0)
        for rank, mid in enumerate(ids, start=1):
            out[mid] = out.get(mid, 0.0) + weight / (config.rrf_k + rank)
    return out


def channel_values(ids: Sequence[str], scores: Mapping[str, float] | None) -> dict[str, float]:
    """A channel's candidates on [0, 1]: min-max normalised scores, or linear in rank without scores."""
    if not ids:
        return {}
    if scores:
        values = [scores[m] for m in ids]
        high, low = max(values), min(values)
        span = high - low
        return {m: (scores[m] - low) / span if span > 0 else 1.0 for m in ids}
    n = len(ids)
    return {m: 1.0 - rank / n for rank, m in enumerate(ids)}


def score_fusion(ranked: Ranked, scores: Scores, config: SearchConfig) -> dict[str, float]:
    out: dict[str, float] = {}
    for channel, ids in ranked.items():
        weight = config.channel_weights.get(channel, 1.0)
        for mid, value in channel_values(ids, scores.get(channel)).items():
            out[mid] = out.get(mid, 0.0) + weight * value
    return out


def fuse(ranked: Ranked, scores: Scores, config: SearchConfig) -> dict[str, float]:
    return score_fusion(ranked, scores, config) if config.fusion == "score" else rrf(ranked, config)


def add_channel(fused: dict[str, float], channel: str, ids: Sequence[str], config: SearchConfig) -> None:
    """Fold one more (rank-only) channel into already fused scores."""
    for mid, value in fuse({channel: ids}, {}, config).items():
        fused[mid] = fused.get(mid, 0.0) + value


def ordered(fused: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))


def session_prior(fused: dict[str, float], sessions: Mapping[str, str | None], weight: float, top: int) -> None:
    """Add ``weight`` × (session strength / best session strength) to every memory of a session."""
    per_session: dict[str, list[float]] = {}
    for mid, score in fused.items():
        session = sessions.get(mid)
        if session is not None:
            per_session.setdefault(session, []).append(score)
    if not per_session:
        return
    strength = {s: sum(sorted(v, reverse=True)[:top]) for s, v in per_session.items()}
    best = max(strength.values())
    if best <= 0:
        return
    scale = max(fused.values())
    for mid in fused:
        session = sessions.get(mid)
        if session is not None:
            fused[mid] += weight * scale * strength[session] / best


def propagate(fused: dict[str, float], around: Mapping[str, tuple[str, int]], weight: float, decay: float
              ) -> None:
    """Each neighbour gains ``weight`` × its seed's score × ``decay`` ** (distance - 1)."""
    gains: dict[str, float] = {}
    for mid, (seed, distance) in around.items():
        gain = weight * fused.get(seed, 0.0) * decay ** (distance - 1)
        gains[mid] = max(gains.get(mid, 0.0), gain)
    for mid, gain in gains.items():
        fused[mid] = fused.get(mid, 0.0) + gain


def asks(content: str) -> bool:
    """The message ends by asking (its last sentence is a question)."""
    return content.rstrip().endswith("?")


def discount_questions(fused: dict[str, float], messages: Mapping[str, str], factor: float) -> None:
    """Each raw message among ``messages`` (memory id → content) that :func:`asks` keeps ``factor`` of its
    fused score."""
    for mid, content in messages.items():
        if mid in fused and asks(content):
            fused[mid] *= factor

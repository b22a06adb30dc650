"""Conversational neighbours: the messages around a recalled message in its session.

An answer often sits a turn or two after the message that matches the question ("What genre is it?" —
"A mix of drama and romance"), and the message a recalled one answers sits just before it. This channel
takes the best fused L0 hits as seeds and proposes the messages right after and before each seed; each
inherits part of its seed's score (see ``_fusion.propagate``). The scope policy is applied to every
neighbour like to any other candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from altm.store import SearchQueries, SessionNeighbours


def neighbours(queries: SearchQueries, seeds: Sequence[str], after: int, before: int) -> dict[str, tuple[str, int]]:
    """Messages within ``after`` turns after and ``before`` turns before each L0 seed → (the best-ranked
    seed it neighbours, distance). Seeds themselves are not included."""
    if not seeds or (after <= 0 and before <= 0):
        return {}
    found = _closest_seeds(seeds, queries.session_neighbours(seeds, after, before))
    seed_set = set(seeds)
    return {m: (seed, distance) for m, (distance, _, seed) in sorted(found.items(), key=lambda x: (x[1][:2], x[0]))
            if m not in seed_set}


def _closest_seeds(seeds: Sequence[str], around: Mapping[str, SessionNeighbours]) -> dict[str, tuple[int, int, str]]:
    """Each neighbour → (distance, seed rank, seed) of its nearest seed; between seeds as near, the better
    ranked one."""
    found: dict[str, tuple[int, int, str]] = {}
    for seed_rank, seed in enumerate(seeds):
        for side in around.get(seed, ()):  # following, then preceding
            for distance, mid in enumerate(side, start=1):
                if mid not in found or (distance, seed_rank) < found[mid][:2]:
                    found[mid] = (distance, seed_rank, seed)
    return found

"""Graph channel: bounded BFS from seed memories over non-rejected edges, then personalised PageRank."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from altm.core import Scope
from altm.store import Edge, SearchQueries


@dataclass
class Subgraph:
    adjacency: dict[str, dict[str, float]]
    parent: dict[str, str | None]
    depth: dict[str, int]

    def path_to(self, node: str) -> list[str]:
        path = [node]
        while (prev := self.parent.get(path[-1])) is not None:
            path.append(prev)
        return list(reversed(path))


def expand(queries: SearchQueries, scope: Scope, seeds: Sequence[str], hops: int, max_nodes: int,
           fanout: int = 25) -> Subgraph:
    """BFS ``hops`` steps from ``seeds`` over the user's non-rejected edges (undirected), at most
    ``fanout`` edges per node and direction."""
    adjacency: dict[str, dict[str, float]] = defaultdict(dict)
    parent: dict[str, str | None] = {s: None for s in seeds}
    depth = {s: 0 for s in seeds}
    frontier = deque(seeds)
    for level in range(hops):
        if not frontier or len(depth) >= max_nodes:
            break
        current = list(frontier)
        frontier.clear()
        edges: list[Edge] = []
        for node in current:
            edges += queries.edges_of(node, scope, fanout)
        for src, dst, weight, confidence in sorted(set(edges)):
            w = float(weight) * float(confidence)
            adjacency[src][dst] = max(adjacency[src].get(dst, 0.0), w)
            adjacency[dst][src] = max(adjacency[dst].get(src, 0.0), w)
            for a, b in ((src, dst), (dst, src)):
                if a in depth and depth[a] == level and b not in depth and len(depth) < max_nodes:
                    depth[b] = level + 1
                    parent[b] = a
                    frontier.append(b)
    return Subgraph(dict(adjacency), parent, depth)


def personalised_pagerank(adjacency: dict[str, dict[str, float]], seeds: Iterable[str], damping: float = 0.85,
                          iterations: int = 30) -> dict[str, float]:
    """PageRank with restarts to ``seeds`` (uniform), over weighted undirected adjacency."""
    seeds = [s for s in seeds]
    nodes = sorted(set(adjacency) | set(seeds))
    if not nodes or not seeds:
        return {}
    restart = {n: (1.0 / len(seeds) if n in set(seeds) else 0.0) for n in nodes}
    rank = dict(restart)
    out_weight = {n: sum(adjacency.get(n, {}).values()) for n in nodes}
    for _ in range(iterations):
        nxt = {n: (1.0 - damping) * restart[n] for n in nodes}
        dangling = 0.0
        for n in nodes:
            total = out_weight[n]
            if total <= 0:
                dangling += rank[n]
                continue
            share = damping * rank[n] / total
            for m, w in adjacency[n].items():
                nxt[m] += share * w
        if dangling:
            for n in nodes:
                nxt[n] += damping * dangling * restart[n]
        rank = nxt
    return rank

"""From fused candidates to ranked results: grouping what stands for the same memory, then the final score.

- grouping: memories sharing a content hash count as one (their scores add up), and so does a memory derived
  from exactly one turn with that turn (the better score counts, the turn is shown); their channel ranks merge
  (the best rank per channel).
- scoring: a group's fused score × its trust factor × its lifecycle weight, best first (ties by memory id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from altm.recall.retrieval._config import SearchConfig
from altm.store import CandidateRow

_MIN_LIFECYCLE = 0.05  # a faded memory still ranks by its match, just far lower


@dataclass
class Group:
    """Candidates that stand for one memory: ``row`` is the one shown."""

    row: CandidateRow
    fused: float
    channels: dict[str, int]

    def absorb(self, row: CandidateRow, score: float, channels: Mapping[str, int], stands_for: Mapping[str, str]
               ) -> None:
        """Fold in one more candidate (fused order: a worse one). A derived memory and the turn it cites count
        once: only the first seen scores, and the turn is shown. Candidates with equal content add up."""
        derived = self.row.memory_id in stands_for
        if derived and stands_for[self.row.memory_id] == row.memory_id:
            self.row = row  # the message itself stands for the pair: the original, not an extract
        self.fused += 0.0 if derived or row.memory_id in stands_for else score
        for channel, rank in channels.items():
            self.channels[channel] = min(self.channels.get(channel, rank), rank)


@dataclass(frozen=True)
class Scored:
    """A group with its final score and the factors that made it."""

    final: float
    group: Group
    trust: float
    lifecycle: float

    def breakdown(self, fusion: str) -> dict[str, float]:
        return {fusion: round(self.group.fused, 6), "trust": self.trust, "lifecycle": self.lifecycle,
                "final": round(self.final, 6)}


def single_turn_evidence(rows: Mapping[str, CandidateRow]) -> dict[str, str]:
    """Derived candidates citing exactly one L0 message that is a candidate too → that message's id."""
    out: dict[str, str] = {}
    for mid, row in rows.items():
        if row.layer == "L0":
            continue
        turn = rows.get(row.evidence[0]) if len(row.evidence) == 1 else None
        if turn is not None and turn.layer == "L0":
            out[mid] = turn.memory_id
    return out


def channel_ranks(memory_id: str, ranked: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """1-based rank of a memory in each channel that found it."""
    return {channel: ids.index(memory_id) + 1 for channel, ids in ranked.items() if memory_id in ids}


def grouped(fused: Sequence[tuple[str, float]], rows: Mapping[str, CandidateRow],
            ranked: Mapping[str, Sequence[str]]) -> list[Group]:
    """Fused candidates (best first) as groups, in the order of each group's best candidate."""
    stands_for = single_turn_evidence(rows)
    groups: dict[str, Group] = {}
    for mid, score in fused:
        row = rows.get(mid)
        if row is None:
            continue
        shown = rows[stands_for[mid]] if mid in stands_for else row
        key = f"{shown.kind}:{shown.content_hash}"
        channels = channel_ranks(mid, ranked)
        group = groups.get(key)
        if group is None:
            groups[key] = Group(row, score, channels)
        else:
            group.absorb(row, score, channels, stands_for)
    return list(groups.values())


def scored(groups: Sequence[Group], config: SearchConfig) -> list[Scored]:
    """Groups by final score, best first (ties by the shown memory's id)."""
    out = []
    for group in groups:
        trust = config.trust_factors.get(group.row.trust_status, 1.0)
        lifecycle = max(_MIN_LIFECYCLE, float(group.row.lc_weight))
        out.append(Scored(group.fused * trust * lifecycle, group, trust, lifecycle))
    out.sort(key=lambda s: (-s.final, s.group.row.memory_id))
    return out

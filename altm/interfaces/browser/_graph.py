"""A memory's graph neighbourhood laid out for an inline SVG drawing (server-side; no script in the page).

Radial: the memory in the centre, its direct neighbours (entities, times, other memories) on a ring, and the
memories that share an entity with it on an outer ring next to that entity. Labels are plain text; the template
escapes them like every other value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from altm.app import GraphLine, GraphPoint

WIDTH, HEIGHT = 760, 560
_CX, _CY = WIDTH / 2, HEIGHT / 2
_R1, _R2 = 150.0, 250.0
LABEL_CHARS = 22


@dataclass(frozen=True)
class Placed:
    point_id: str
    x: float
    y: float
    label: str  # shortened for the drawing
    title: str  # the whole label (a tooltip)
    kind: str
    is_memory: bool
    centre: bool


@dataclass(frozen=True)
class Segment:
    x1: float
    y1: float
    x2: float
    y2: float
    edge_type: str


@dataclass(frozen=True)
class Drawing:
    width: int
    height: int
    points: list[Placed]
    segments: list[Segment]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def layout(points: list[GraphPoint], lines: list[GraphLine]) -> Drawing:
    where: dict[str, tuple[float, float]] = {}
    angle: dict[str, float] = {}
    ring1 = [p for p in points if p.ring == 1]
    for i, p in enumerate(ring1):
        a = 2 * math.pi * i / max(1, len(ring1)) - math.pi / 2
        angle[p.point_id] = a
        where[p.point_id] = (_CX + _R1 * math.cos(a), _CY + _R1 * math.sin(a))
    spread = math.pi / max(4, 2 * len(ring1))
    by_parent: dict[str, list[GraphPoint]] = {}
    for p in points:
        if p.ring == 2 and p.parent in angle:
            by_parent.setdefault(p.parent, []).append(p)
    for parent, children in by_parent.items():
        for j, p in enumerate(children):
            a = angle[parent] + spread * (j - (len(children) - 1) / 2)
            where[p.point_id] = (_CX + _R2 * math.cos(a), _CY + _R2 * math.sin(a))
    for p in points:
        if p.ring == 0:
            where[p.point_id] = (_CX, _CY)
    placed = [Placed(p.point_id, round(where[p.point_id][0], 1), round(where[p.point_id][1], 1), _short(p.label),
                     p.label, p.kind, p.is_memory, p.ring == 0) for p in points if p.point_id in where]
    drawn = [ln for ln in lines if ln.src in where and ln.dst in where]
    segments = [Segment(round(where[ln.src][0], 1), round(where[ln.src][1], 1), round(where[ln.dst][0], 1),
                        round(where[ln.dst][1], 1), ln.edge_type) for ln in drawn]
    return Drawing(WIDTH, HEIGHT, placed, segments)

"""Time anchors in a query ("in June", "on 13 October, 2023", "in December 2023") and the prior they give.

People talk about what happened recently, so a memory recorded on day ``v`` can be about any day from
``v - lookback`` to ``v``. A memory matches an anchor when one of those days has the anchor's year, month
and day (whichever the anchor names). Matching memories gain ``time_prior`` × the best fused score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_MONTHS = {name: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), start=1) for name in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b{_MONTH}\s+{_DAY}\b,?(?:\s+{_YEAR}\b)?",       # October 13, 2023 / Aug 15th
    rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b,?(?:\s+{_YEAR}\b)?",  # 13 October, 2023
    rf"\b(?:in|during|since|by|of)\s+{_MONTH}(?:\s+{_YEAR})?\b",  # in June / in December 2023
    rf"\b{_MONTH}\s+{_YEAR}\b",                          # June 2023
    rf"\b(?:in|during|since|of)\s+{_YEAR}\b",           # in 2023
)]


@dataclass(frozen=True)
class TimeAnchor:
    year: int | None
    month: int | None
    day: int | None

    def matches(self, day: date) -> bool:
        return ((self.year is None or day.year == self.year) and (self.month is None or day.month == self.month)
                and (self.day is None or day.day == self.day))


def time_anchors(text: str) -> list[TimeAnchor]:
    """Anchors named in ``text``; an expression is read once, by the most specific pattern."""
    found: list[TimeAnchor] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            groups = m.groupdict()
            month = _MONTHS[groups["month"].lower().rstrip(".")] if groups.get("month") else None
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            if day is not None and not 1 <= day <= 31:
                continue
            if month is None and year is None:
                continue
            taken.append((m.start(), m.end()))
            anchor = TimeAnchor(year, month, day)
            if anchor not in found:
                found.append(anchor)
    return found


def time_prior(fused: dict[str, float], valid_from: Mapping[str, str | None], anchors: list[TimeAnchor],
               weight: float, lookback_days: int) -> None:
    if not anchors or not fused:
        return
    scale = max(fused.values())
    for mid in fused:
        stamp = valid_from.get(mid)
        if not stamp:
            continue
        recorded = datetime.fromisoformat(stamp).date()
        # near the start of the calendar there are fewer days to look back over (rows of year 1 exist)
        reach = min(lookback_days, (recorded - date.min).days)
        days = [recorded - timedelta(days=k) for k in range(reach + 1)]
        if any(a.matches(d) for a in anchors for d in days):
            fused[mid] += weight * scale

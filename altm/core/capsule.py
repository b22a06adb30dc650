"""The text of a session capsule (L1), which fold writes and the writer's guard reads a statement at a time.

A capsule is a header line ("Session s2 (3 messages, 2026-01-01)"), an optional "Summary: ..." line (a
model's), and one line per section, "Decisions: first | second" — each item a sentence of the session's
messages (or a model's item) — or, for numbers, dates and paths, "Numbers and dates: 4417, March 21". An item
holds no line break and no " | " (:func:`flat`), so every statement of the text is one item of the capsule's
``sections`` attribute, and the writer can leave one out of both.
"""

from __future__ import annotations

from dataclasses import dataclass

SECTION_TITLES = {"decisions": "Decisions", "constraints": "Constraints", "corrections": "Corrections",
                  "open_questions": "Open questions", "numbers": "Numbers and dates", "paths": "Paths"}
VALUE_SECTIONS = frozenset({"numbers", "paths"})
"""Sections of short values, joined with ", " (each item is a value, not a sentence)."""
SUMMARY = "summary"
_ITEMS = " | "
_VALUES = ", "
_TITLE = ": "
_BY_TITLE = {**{title: key for key, title in SECTION_TITLES.items()}, "Summary": SUMMARY}


def _separator(section: str) -> str:
    return _VALUES if section in VALUE_SECTIONS else _ITEMS


def flat(text: str) -> str:
    """An item as the capsule holds it: on one line, without the separator of items."""
    return " ".join(text.split()).replace(_ITEMS, " / ")


def render(header: str, sections: dict[str, list[str]], summary: str | None = None) -> str:
    """The capsule's text; items and summary are expected :func:`flat`."""
    lines = [header]
    if summary:
        lines.append(f"Summary{_TITLE}{summary}")
    for key, title in SECTION_TITLES.items():
        if sections.get(key):
            lines.append(f"{title}{_TITLE}{_separator(key).join(sections[key])}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Statement:
    section: str  # a key of SECTION_TITLES, SUMMARY, or "" for a line of no known section (judged whole)
    text: str

    @property
    def value(self) -> bool:
        return self.section in VALUE_SECTIONS


def _parse(line: str) -> tuple[str, str, list[str]]:
    """(section, title with its separator, items) of one line after the header."""
    title, sep, rest = line.partition(_TITLE)
    section = _BY_TITLE.get(title) if sep else None
    if section is None:
        return "", "", [line]
    if section == SUMMARY:
        return section, title + sep, [rest]
    return section, title + sep, [i for i in rest.split(_separator(section)) if i]


def statements(content: str) -> list[Statement]:
    """The capsule's statements, the header line left out (it names the session, not what was said)."""
    out = []
    for line in content.splitlines()[1:]:
        section, _, items = _parse(line)
        out += [Statement(section, item) for item in items if item.strip()]
    return out


def without(content: str, left_out: frozenset[str]) -> str | None:
    """``content`` without the statements whose text is in ``left_out`` (a section left empty goes as a
    whole); None when no statement is left."""
    lines = content.splitlines()
    kept = lines[:1]
    for line in lines[1:]:
        section, title, items = _parse(line)
        remaining = [item for item in items if item not in left_out and item.strip()]
        if remaining:
            kept.append(title + _separator(section).join(remaining))
    return "\n".join(kept) if len(kept) > 1 else None


def sections_without(sections: object, left_out: frozenset[str]) -> object:
    """A capsule's ``sections`` attribute without the items left out: an item that is one, or holds one (an
    item written before :func:`flat` may be several statements of the text)."""
    if not isinstance(sections, dict):
        return sections
    return {name: [i for i in items if not any(s in i for s in left_out)]
            if isinstance(items, list) and all(isinstance(i, str) for i in items) else items
            for name, items in sections.items()}

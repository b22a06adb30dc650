"""The statements of a session capsule, one by one: what the write guard judges separately and the writer may
leave out of a capsule (see :func:`altm.pipeline.writer.guard.WriteGuard.check`).

A capsule (``altm.pipeline.processors.fold.render_capsule``) is a header line ("Session s2 (3 messages,
2026-01-01)") and one line per section, "Title: first | second", each part a sentence of the session's
messages; a summary, numbers and paths are one statement a line.
"""

from __future__ import annotations

_JOIN = " | "
_TITLE = ": "


def _split(line: str) -> tuple[str, list[str]]:
    title, sep, rest = line.partition(_TITLE)
    if not sep:
        return "", [line]
    return title + _TITLE, [part for part in rest.split(_JOIN) if part.strip()]


def statements(content: str) -> list[str]:
    """The capsule's statements, the header line left out (it names the session, not what was said)."""
    return [part for line in content.splitlines()[1:] for part in _split(line)[1]]


def without(content: str, left_out: frozenset[str]) -> str | None:
    """``content`` without the statements in ``left_out`` (a section left empty goes as a whole); None when no
    statement is left."""
    lines = content.splitlines()
    kept = lines[:1]
    for line in lines[1:]:
        title, parts = _split(line)
        remaining = [part for part in parts if part not in left_out]
        if remaining:
            kept.append(title + _JOIN.join(remaining))
    return "\n".join(kept) if len(kept) > 1 else None


def sections_without(sections: object, left_out: frozenset[str]) -> object:
    """A capsule's ``sections`` attribute (title key → its sentences) without the statements left out: a
    sentence that is one, or a section whose sentences joined ("Numbers and dates: x, y") is one."""
    if not isinstance(sections, dict):
        return sections
    kept: dict[str, object] = {}
    for name, items in sections.items():
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            kept[name] = [] if ", ".join(items) in left_out else [i for i in items if i not in left_out]
        else:
            kept[name] = items
    return kept

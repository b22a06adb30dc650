"""The text of a scene (L3), which govern writes and the writer's guard reads a line at a time.

A scene is a header line ("Scene: Marco — 3 memories across sessions s2, s3"; past twelve sessions, "across 40
sessions: s1, s10, … and 28 more") and one line per member atom,
"- [s2] decision: I decided to help Marco", in the order of the scene's evidence. An atom's content may hold
line breaks: a member is its first line and those after it that do not begin another member.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_SESSIONS = 2
"""A node is a scene's anchor once atoms of this many sessions mention it."""
MAX_ITEMS = 12
"""The atoms a scene lists (its sessions are those of every atom that mentions the anchor)."""
MAX_SESSIONS = 12
"""The sessions a scene names (the first in order of their ids); its header counts the others. A scene named
every session, and was written again at each new one: a colleague named in thousands of sessions made each
version of their scene longer than the last."""
_MEMBER = "- ["


def member(session: str | None, kind: str, content: str) -> str:
    """One member atom's line."""
    return f"{_MEMBER}{session}] {kind}: {content}"


def named(sessions: Sequence[str]) -> list[str]:
    """The sessions a scene of ``sessions`` (sorted) names."""
    return list(sessions[:MAX_SESSIONS])


SESSION_COUNT = "session_count"
"""A scene's attribute: how many sessions it spans, where it names fewer (:func:`named`)."""


def counted(sessions: Sequence[str]) -> dict[str, int]:
    """The attribute that counts ``sessions`` (sorted: all a scene spans) where the scene names fewer of them."""
    return {SESSION_COUNT: len(sessions)} if len(sessions) > MAX_SESSIONS else {}


def render(anchor: str, sessions: Sequence[str], members: Sequence[str], count: int | None = None) -> str:
    """The scene's text: its header and its members' lines (see :func:`member`). ``sessions``: those it names
    (:func:`named`), of ``count`` in all (as many by default)."""
    count = len(sessions) if count is None else count
    across = (f"sessions {', '.join(sessions)}" if count <= len(sessions)
              else f"{count} sessions: {', '.join(sessions)} and {count - len(sessions)} more")
    return "\n".join([f"Scene: {anchor} — {len(members)} memories across {across}", *members])


def members(content: str) -> list[str]:
    """The member lines of a scene's text, the header left out (it names the anchor and the sessions)."""
    out: list[str] = []
    for line in content.splitlines()[1:]:
        if line.startswith(_MEMBER) or not out:
            out.append(line)
        else:
            out[-1] += "\n" + line
    return out

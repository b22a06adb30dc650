"""The text of a scene (L3), which govern writes and the writer's guard reads a line at a time.

A scene is a header line ("Scene: Marco — 3 memories across sessions s2, s3") and one line per member atom,
"- [s2] decision: I decided to help Marco", in the order of the scene's evidence. An atom's content may hold
line breaks: a member is its first line and those after it that do not begin another member.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_SESSIONS = 2
"""A node is a scene's anchor once atoms of this many sessions mention it."""
MAX_ITEMS = 12
"""The atoms a scene lists (its sessions are those of every atom that mentions the anchor)."""
_MEMBER = "- ["


def member(session: str | None, kind: str, content: str) -> str:
    """One member atom's line."""
    return f"{_MEMBER}{session}] {kind}: {content}"


def render(anchor: str, sessions: Sequence[str], members: Sequence[str]) -> str:
    """The scene's text: its header and its members' lines (see :func:`member`)."""
    header = f"Scene: {anchor} — {len(members)} memories across sessions {', '.join(sessions)}"
    return "\n".join([header, *members])


def members(content: str) -> list[str]:
    """The member lines of a scene's text, the header left out (it names the anchor and the sessions)."""
    out: list[str] = []
    for line in content.splitlines()[1:]:
        if line.startswith(_MEMBER) or not out:
            out.append(line)
        else:
            out[-1] += "\n" + line
    return out

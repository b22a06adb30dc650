"""Persona facets (L4): the version of an atom's statement, and which atom a facet stands on.

Govern proposes them; the writer re-cites one when the atom it stands on goes (rejected by a reviewer, erased
with its agent or session) while another atom of the user states the same (another agent heard it too).
"""

from __future__ import annotations

from collections.abc import Iterable

from altm.core import Kind, Layer, LifecycleState, MemoryUnit, Method, derive_id, natural_key
from altm.pipeline.processors._base import derived_memory, norm, said_by_user

GOVERN = "govern"
"""The processor that makes facets (their provenance names it)."""


def facet_label(facet_key: str) -> str:
    family, _, topic = facet_key.partition(":")
    return f"{family.capitalize()} ({topic})" if topic else family.capitalize()


def facet_version(atom: MemoryUnit, facet_key: str) -> MemoryUnit:
    """The facet version of ``atom``'s statement (its id is the statement's, whichever atom it cites)."""
    return derived_memory(
        scope=atom.scope, session_id=None, layer=Layer.L4, kind=Kind.FACET,
        content=f"{facet_label(facet_key)}: {atom.content}", evidence=[atom.memory_id], processor=GOVERN,
        method=Method.HEURISTIC, id_parts=[atom.scope.home, "L4", facet_key, norm(atom.content)],
        valid_from=atom.valid_from, attributes={"facet_key": facet_key, "source_kind": atom.kind.value},
        role=atom.role,
        source_event_id=atom.provenance.source_event_id,
    )


def held_supersede_id(old_id: str, new_id: str) -> str:
    """The id of the held action "replace ``old_id`` by ``new_id``" (govern holds it, the writer voids it)."""
    return derive_id("act", "supersede", old_id, new_id)


def order(m: MemoryUnit) -> tuple[str, str, bool, str]:
    """Valid time, then its message's turn id in natural order, then whether it states a correction, then id:
    which of the atoms of one statement is the earliest, and of two statements which came later. A host that
    dates a session's messages with the session's time says so by its turn ids ("light mode now, actually" had
    been the earlier by its id, and the stale statement was held for review to replace it); within one message,
    a correction comes after what it corrects."""
    turn = m.attributes.get("turn_id")  # its message's turn id (the host's own message id does not order turns)
    said = turn if isinstance(turn, str) else m.source_id
    return (m.valid_from.isoformat() if m.valid_from else "", natural_key(said), bool(m.attributes.get("correction")),
            m.memory_id)


def rejected(atom: MemoryUnit) -> bool:
    """A reviewer rejected the atom: no duplicate folds into it and no facet cites it."""
    return atom.lifecycle.state is LifecycleState.REJECTED


def statement_of(facet: MemoryUnit) -> str:
    """The statement a facet version states (its content without the label)."""
    key = facet.attributes.get("facet_key")
    prefix = f"{facet_label(key)}: " if isinstance(key, str) else ""
    return facet.content.removeprefix(prefix)


def stands_on(facet: MemoryUnit, atoms: Iterable[MemoryUnit], *, besides: frozenset[str] = frozenset()
              ) -> MemoryUnit | None:
    """The atom a facet version of ``facet``'s statement stands on among ``atoms`` (the user's atoms of its
    facet key): the earliest the user said that no reviewer rejected, ``besides`` aside (going with an erasure);
    None when there is none."""
    said = norm(statement_of(facet))
    found = [a for a in atoms if a.memory_id not in besides and norm(a.content) == said and not rejected(a)
             and said_by_user(a) and a.kind in (Kind.PREFERENCE, Kind.FACT)]
    return min(found, key=order, default=None)

"""Scope and session policy, applied inside every query (SQL predicate here; recall turns the same groups
into vector payload filters).

L0/L1: the current session of the agent; L2/L3: every session of the agent; L4: every agent of the user.
``strict_session`` limits every layer to the session (L3/L4 have no session, so they drop out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from altm.core import Layer, Scope
from altm.store._text_index import home_code


@dataclass(frozen=True)
class ScopePolicy:
    scope: Scope
    session_id: str | None
    strict_session: bool = False
    l0_across_sessions: bool = False
    layers: tuple[Layer, ...] = tuple(Layer)
    as_of: datetime | None = None  # validity time: what held in the world then (superseded versions too)
    known_at: datetime | None = None  # record time: what the store believed then
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        if self.strict_session and not self.session_id:
            raise ValueError("strict_session needs a session id")

    def groups(self) -> list[tuple[tuple[str, ...], bool, bool]]:
        """(layers, agent-bound, session-bound) groups: a memory is admitted when it matches one of them."""
        session_l0 = not self.l0_across_sessions or self.strict_session
        groups = [
            (("L0", "L1"), True, session_l0 and self.session_id is not None),
            (("L2", "L3"), True, self.strict_session),
            (("L4",), False, self.strict_session),
        ]
        wanted = {layer.value for layer in self.layers}
        return [(tuple(x for x in layers if x in wanted), agent, sess) for layers, agent, sess in groups
                if any(x in wanted for x in layers)]

    def sql(self, alias: str = "m") -> tuple[str, list[str]]:
        s = self.scope
        parts, args = [], [s.tenant_id, s.workspace_id, s.user_id]
        for layers, agent, session in self.groups():
            clause = f"{alias}.layer IN ({', '.join('?' for _ in layers)})"
            args += list(layers)
            if agent:
                clause += f" AND {alias}.agent_id = ?"
                args.append(s.agent_id)
            if session:
                clause += f" AND {alias}.session_id = ?"
                args.append(self.session_id or "")
            parts.append(f"({clause})")
        when, when_args = self._time(alias)
        where = (f"{alias}.tenant_id = ? AND {alias}.workspace_id = ? AND {alias}.user_id = ? "
                 f"AND {when} AND ({' OR '.join(parts) or '0'})")
        return where, [*args[:3], *when_args, *args[3:]]

    def _time(self, a: str) -> tuple[str, list[str]]:
        """Bitemporal filter. Default: believed now and valid now."""
        if self.as_of is None and self.known_at is None:
            return (f"{a}.superseded_by IS NULL AND ({a}.valid_to IS NULL OR {a}.valid_to > ?) "
                    f"AND {a}.lc_state NOT IN ('rejected', 'forgotten')", [_iso(self.now)])
        clauses, args = [], []
        if self.as_of is not None:
            clauses.append(f"({a}.valid_from IS NULL OR {a}.valid_from <= ?) AND ({a}.valid_to IS NULL OR "
                           f"{a}.valid_to > ?)")
            args += [_iso(self.as_of), _iso(self.as_of)]
        if self.known_at is not None:
            clauses.append(f"{a}.recorded_at <= ? AND ({a}.superseded_at IS NULL OR {a}.superseded_at > ?)")
            args += [_iso(self.known_at), _iso(self.known_at)]
            # believed then: a memory rejected (a reviewer's verdict, dated) is out from its rejection on
            clauses.append(f"({a}.lc_state IS NOT 'rejected' OR {a}.trust_verified_at > ?)")
            args.append(_iso(self.known_at))
        else:
            clauses.append(f"({a}.lc_state IS NOT 'merged')")
        if self.as_of is not None and self.known_at is None:
            clauses.append(f"({a}.lc_state IS NOT 'rejected')")  # judged false: it held at no time
        return " AND ".join(clauses), args

    def fts_filter(self) -> str:
        """The policy's groups as an FTS5 expression over the word index's ``scope_terms`` column, so bm25
        only scores what the policy can admit (time and supersession stay with the SQL predicate)."""
        s = self.scope
        home = home_token(s)
        groups = []
        for layers, agent, session in self.groups():
            parts = ["(" + " OR ".join(f'"l{layer.lower()}"' for layer in layers) + ")"]
            if agent:
                parts.append(_token("a", s.agent_id))
            if session:
                parts.append(_token("s", self.session_id or ""))
            groups.append("(" + " AND ".join(parts) + ")")
        return f"scope_terms : ({home} AND ({' OR '.join(groups) or home}))"


def home_substring(scope: Scope) -> str:
    """The trigram index's filter on ``scope``'s home (schema 29): the code of its home that every row of it holds
    (:func:`altm.store._text_index.home_code`, one length for all), as one phrase (a trigram phrase matches a
    substring: the column holds the code alone, so a phrase of its whole length matches it only)."""
    home = f"{scope.tenant_id}/{scope.workspace_id}/{scope.user_id}".encode().hex()
    return f'scope_terms : "{home_code("h" + home)}"'


def home_token(scope: Scope) -> str:
    """The word index's token of ``scope``'s home (tenant/workspace/user) in its ``scope_terms`` column."""
    return _token("h", f"{scope.tenant_id}/{scope.workspace_id}/{scope.user_id}")


def visible_token(scope: Scope) -> str:
    """The word index's tokens of what an agent of ``scope`` may see of its user's memories at most: its own
    (any layer) and the user's persona (L4), as an FTS5 expression over ``scope_terms``."""
    return f'({home_token(scope)} AND ({_token("a", scope.agent_id)} OR "ll4"))'


def _token(prefix: str, value: str) -> str:
    """One scope part as the word index holds it (``scope_terms``: prefix + hex of the UTF-8 bytes)."""
    return f'"{prefix}{value.encode().hex()}"'


def _iso(value: datetime) -> str:
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()

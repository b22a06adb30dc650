"""Turn events and the scope most tests use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core import Role, Scope, TurnEvent, partition_for

SCOPE = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="coder")
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def make_turn(
    i: int, content: str | None = None, *, scope: Scope = SCOPE, session: str = "s1", role: Role = Role.USER
) -> TurnEvent:
    return TurnEvent(
        scope=scope,
        session_id=session,
        turn_id=f"{session}-t{i}",
        role=role,
        content=content if content is not None else f"message number {i} about the billing migration",
        timestamp=T0 + timedelta(minutes=i),
    )


def colocated_scope(partitions: int, scope: Scope = SCOPE, tenant: str = "globex") -> Scope:
    """A user of another tenant whose memories share the shard of ``scope``'s home (the partition function is
    public: a tenant can pick such user ids)."""
    for n in range(10_000):
        other = Scope.parse(f"{tenant}/ops/user{n}/bot")
        if partition_for(other.home, partitions) == partition_for(scope.home, partitions):
            return other
    raise AssertionError("no co-located user found")

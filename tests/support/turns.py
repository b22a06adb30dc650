"""Turn events and the scope most tests use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core import Role, Scope, TurnEvent

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

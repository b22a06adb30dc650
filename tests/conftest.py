from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from altm.config import Settings
from altm.schemas import Role, Scope, TurnEvent

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


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", partitions=4)


@pytest.fixture
def kafka_bootstrap() -> str:
    """The real Apache Kafka broker started by scripts/kafka.sh (ALTM_TEST_KAFKA=host:port)."""
    addr = os.environ.get("ALTM_TEST_KAFKA")
    if not addr:
        if os.environ.get("CI"):
            pytest.fail("ALTM_TEST_KAFKA is not set in CI: scripts/kafka.sh must start the broker")
        pytest.skip("no Kafka broker: run `scripts/kafka.sh start` and set ALTM_TEST_KAFKA=127.0.0.1:19092")
    return addr
